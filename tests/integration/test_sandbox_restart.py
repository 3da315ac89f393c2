"""What real clusters do to running containers, on a ``--preemption`` sandbox (issue 25).

The sandbox is started with ``--preemption`` (queues ``low`` and ``high``, the
CapacityScheduler's preemption monitor); like every sandbox it runs a
ResourceManager with work-preserving recovery. Plain skein applications (``sleep``
services, no TensorFlow) show that a container keeps running through
``tfyarn-sandbox restart resourcemanager``, and that YARN itself preempts a
container of ``low`` when ``high`` asks for its guarantee.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import skein
from tfyarn_sandbox.fixtures import AppTracker, killing_leftovers, skein_driver, suite_sandbox
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import NM_VCORES, PREEMPTION_GUARANTEES

from .helpers import unique

APP_TIMEOUT_S = 180.0
#: Queue ``high``'s guarantee on the unlabelled node, in vcores (one of them for its master).
HIGH_VCORES = int(NM_VCORES * PREEMPTION_GUARANTEES["high"] // 100)
#: What YARN tells an application master about a container it preempted (exit status -102).
PREEMPTED = "Container preempted by scheduler"


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A ``--preemption`` sandbox, its environment exported: the session's when it is one,
    else one of this module's own."""
    root = tmp_path_factory.mktemp("restart") / "box"
    with suite_sandbox(root, Shape(preemption=True)) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def client(box: Sandbox) -> Iterator[skein.Client]:
    with skein_driver(box, "restart") as skein_client:
        yield skein_client


@pytest.fixture
def apps(client: skein.Client) -> Iterator[AppTracker]:
    with killing_leftovers(client) as tracker:
        yield tracker


def rm_url(box: Sandbox, path: str) -> str:
    return f"http://{box.layout().addr('rm_http')}/ws/v1/cluster/{path}"


def wait_for(what: str, check: Callable[[], Any], timeout: float = APP_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (out := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not after {timeout}s: {what}")
        time.sleep(0.5)
    return out


def sleepers(queue: str, instances: int, prefix: str) -> skein.ApplicationSpec:
    """``instances`` containers of ``sleep 600``, 512 MiB and one vcore each; one
    that ends does not end the application."""
    service = skein.Service(
        resources=skein.Resources(memory=512, vcores=1),
        script="sleep 600",
        instances=instances,
        allow_failures=True,
    )
    return skein.ApplicationSpec(
        name=unique(prefix), queue=queue, services={"sleep": service}, max_attempts=1
    )


def running(app: skein.ApplicationClient) -> list[Any]:
    return app.get_containers(services=["sleep"], states=["RUNNING"])


class Unreachable:
    """Polls the ResourceManager's REST API every 0.2 s in a thread while held; ``seconds``:
    from its first unanswered request to the first answered one after."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.failed: list[float] = []
        self.answered_after: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                requests.get(self.url, timeout=2).raise_for_status()
                if self.failed and self.answered_after is None:
                    self.answered_after = time.monotonic()
            except requests.RequestException:
                self.failed.append(time.monotonic())
            time.sleep(0.2)

    def __enter__(self) -> Unreachable:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def seconds(self) -> float:
        if not self.failed or self.answered_after is None:
            return 0.0
        return self.answered_after - self.failed[0]


def test_a_container_keeps_running_through_a_resourcemanager_restart(box, client, apps):
    app_id = apps.submit(sleepers("low", 1, "tfyarn-rm-restart"))
    app = client.connect(app_id)
    (before,) = wait_for("the sleep container RUNNING", lambda: running(app))

    began = time.monotonic()
    with Unreachable(rm_url(box, "info")) as outage:
        proc = subprocess.run(
            [sys.executable, "-m", "tfyarn_sandbox", "--dir", str(box.root),
             "restart", "resourcemanager"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    print(proc.stdout.strip())
    print(f"FIGURE rm-restart unreachable_s={outage.seconds:.1f}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("resourcemanager restarted: down ")
    assert outage.failed, "the ResourceManager never stopped answering"

    # Until its master registers again, the recovered application reads ACCEPTED
    # ("Attempt recovered after RM restart"), then RUNNING, under the same id.
    seen: set[tuple[str, str]] = set()

    def recovered() -> bool:  # RUNNING again, and both containers known to the new RM
        again = client.application_report(app_id)
        seen.add((str(again.state), again.diagnostics))
        assert again.id == app_id and str(again.state) in ("ACCEPTED", "RUNNING"), again
        return str(again.state) == "RUNNING" and again.usage.num_used_containers == 2

    wait_for("the application RUNNING again with its two containers", recovered, 120)
    again_s = time.monotonic() - began
    print(f"FIGURE rm-restart app_running_again_s={again_s:.1f} (from the restart command); {seen}")
    (after,) = running(app)
    assert after.yarn_container_id == before.yarn_container_id
    # The master registered with the new ResourceManager: it is granted a new container.
    app.scale("sleep", 2)
    wait_for("a container from the new ResourceManager", lambda: len(running(app)) == 2)


def test_high_takes_its_guarantee_back_from_low_by_preemption(box, client, apps):
    low_id = apps.submit(sleepers("low", NM_VCORES - 1, "tfyarn-low"))  # with its master: all
    low = client.connect(low_id)
    wait_for("low filling the unlabelled node", lambda: len(running(low)) == NM_VCORES - 1)

    t0 = time.monotonic()
    high_id = apps.submit(sleepers("high", HIGH_VCORES - 1, "tfyarn-high"))  # its guarantee
    preempted = wait_for(
        "a container of low preempted",
        lambda: low.get_containers(services=["sleep"], states=["FAILED"]),
        timeout=60,
    )
    seconds = time.monotonic() - t0
    print(f"FIGURE preemption first_container_s={seconds:.1f}")
    assert {c.exit_message for c in preempted} == {PREEMPTED}, preempted
    # YARN counts a container as preempted only when it ended with exit status -102.
    info = requests.get(rm_url(box, f"apps/{low_id}"), timeout=10).json()["app"]
    assert info["numNonAMContainerPreempted"] >= 1 and info["numAMContainerPreempted"] == 0
    high = client.connect(high_id)
    wait_for("high running its guarantee", lambda: len(running(high)) == HIGH_VCORES - 1)
    lost = info["numNonAMContainerPreempted"]
    print(f"high running {time.monotonic() - t0:.1f}s after its submission; low lost {lost} so far")
    assert str(client.application_report(low_id).state) == "RUNNING"
