"""The counting proxy the watching cost is measured through (fake skein clients, no cluster)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from skein.model import ApplicationState, ContainerState, FinalStatus

from benchmarks.watching import Tally, counting
from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.run.polling import CALLS_PER_POLL, StatusSource


class FakeKV:
    def get_range(self):
        return {"k": b"v"}

    def transaction(self, on_success=()):
        return None


class FakeMaster:
    def __init__(self):
        self.kv = FakeKV()

    def get_containers(self, states=()):
        return ["c"]


class FakeClient:
    name = "fake"

    def application_report(self, app_id):
        return app_id

    def get_nodes(self):
        return []

    def connect(self, app_id, wait=True):
        return FakeMaster()


def test_counting_tallies_the_resourcemanager_and_master_calls_but_not_connect():
    tally = Tally()
    client = counting(FakeClient(), tally)
    assert client.application_report("app_1") == "app_1"
    am = client.connect("app_1", wait=False)
    assert tally.calls == 1
    assert am.get_containers(states=["RUNNING"]) == ["c"]
    assert am.kv.get_range() == {"k": b"v"}
    am.kv.transaction(on_success=[])
    client.get_nodes()
    assert tally.calls == 5


def test_counting_passes_attributes_through_uncounted():
    tally = Tally()
    assert counting(FakeClient(), tally).name == "fake"
    assert tally.calls == 0


def test_a_call_that_fails_is_still_a_call():
    class Failing(FakeClient):
        def get_nodes(self):
            raise ConnectionError("down")

    tally = Tally()
    client = counting(Failing(), tally)
    with pytest.raises(ConnectionError):
        client.get_nodes()
    assert tally.calls == 1


def test_a_status_poll_through_the_proxy_is_calls_per_poll_calls():
    report = SimpleNamespace(
        id="app_1", name="n", queue="default", user="u", state=ApplicationState.RUNNING,
        final_status=FinalStatus.UNDEFINED, start_time=None, finish_time=None,
        tracking_url="", diagnostics="",
    )  # fmt: skip
    container = SimpleNamespace(
        service_name="chief", instance=0, state=ContainerState.RUNNING,
        yarn_container_id="c_1", yarn_node_http_address="node:8042", start_time=None,
        finish_time=None, exit_message="",
    )  # fmt: skip

    class Master(FakeMaster):
        def get_containers(self, states=()):
            return [container]

    class Client(FakeClient):
        def application_report(self, app_id):
            return report

        def get_nodes(self, states=()):
            return [SimpleNamespace(http_address="node:8042", labels=[])]

        def connect(self, app_id, wait=True):
            return Master()

    tally = Tally()
    source = StatusSource(counting(Client(), tally), "app_1", {"chief": TaskSpec(128, 1)})
    source.poll()  # the first poll also reads the node labels
    before = tally.calls
    source.poll()
    source.acknowledge()
    assert tally.calls - before == CALLS_PER_POLL
