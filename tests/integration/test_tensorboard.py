"""The tensorboard task on the sandbox: an Estimator's hdfs:// model dir, served through YARN.

A chief trains the quickstart's Estimator (TensorFlow 2.15) into an ``hdfs://``
model dir; a tensorboard task beside it mirrors that folder and serves it. The
page and TensorBoard's data API answer through the ResourceManager's web proxy
at ``Run.tensorboard_url``: GETs as they are, the front end's POSTs as the PUTs
its shim turns them into (the proxy refuses POST), and the task stays up
``tb_termination_timeout_seconds`` after the chief ended.
Prints the seconds from the tensorboard container's start to its page being
served through the proxy, and to the run's scalars being listed there.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from urllib.parse import urlencode, urlsplit

import pytest
import requests

from tfyarn_jupyter import TaskSpec
from tfyarn_jupyter.hadoop import filesystem

from .helpers import unique

pytestmark = [pytest.mark.sandbox, pytest.mark.tf215_only]

TIMEOUT_S = 20
RUN_TIMEOUT_S = 600


@pytest.fixture
def hdfs_dir(sandbox) -> Iterator[str]:
    path = f"{filesystem.home()}/tfyarn-test/{unique('tb')}"
    yield filesystem.qualify(path)
    filesystem.client().delete(path, recursive=True)


def drive_until(run, until, what: str, timeout: float = RUN_TIMEOUT_S):
    """Advance the run until ``until(status)`` holds; that status."""
    deadline = time.monotonic() + timeout
    while True:
        st = run.advance()
        if until(st):
            return st
        assert not st.ended, f"{run.app_id} ended {st.app.final_status} before {what}: {st.failure}"
        assert time.monotonic() < deadline, f"{run.app_id}: no {what} within {timeout}s"
        time.sleep(1.0)


SESSION = requests.Session()  # keeps the ResourceManager's hadoop.auth cookie, as a browser


def get(url: str, **params) -> requests.Response:
    resp = SESSION.get(url, params=params, timeout=30)
    assert resp.status_code == 200, f"GET {url}: {resp.status_code} {resp.text[:300]}"
    return resp


def test_tensorboard_serves_the_runs_scalars_through_the_rm_proxy_then_outlives_training(
    sandbox, launch, cancer, hdfs_dir
):
    def experiment_fn():
        return cancer.experiment(hdfs_dir, max_steps=600, save_checkpoints_steps=100)

    tb = TaskSpec("1G", 1, tb_termination_timeout_seconds=TIMEOUT_S)
    specs = {"chief": TaskSpec("1G", 1), "tensorboard": tb}
    run = launch(experiment_fn, specs, "tb")
    assert run.tensorboard_url is None  # nothing serves yet
    st = drive_until(run, lambda st: st.tensorboard_url, "TensorBoard link")
    url = run.tensorboard_url
    assert url == st.tensorboard_url == st.to_dict()["tensorboard_url"]
    # Under the application's tracking URL: YARN's proxy, on the ResourceManager's web port.
    assert st.app.tracking_url.endswith(f"/proxy/{run.app_id}/"), st.app.tracking_url
    assert url.startswith(st.app.tracking_url + "pages/tensorboard/"), url
    parts = urlsplit(url)
    assert parts.port != urlsplit(run.source.events.task("tensorboard:0")["start"]["target"]).port
    assert parts.query == f"user.name={st.app.user}"  # for the proxy's ACL check
    base = url.split("?")[0]

    page = get(url)
    started = run.source.events.task("tensorboard:0")["container"]["t"]
    print(f"\ntensorboard container start -> page through the proxy: {time.time() - started:.1f}s")
    assert "tb-relative-root" in page.text and "TensorBoard" in page.text
    assert '<script src="./tfyarn-shim.js">' in page.text
    assert "XMLHttpRequest" in get(base + "tfyarn-shim.js").text
    mirror = filesystem.strip_scheme(hdfs_dir).rsplit("/", 1)[-1] + "-" + _digest(hdfs_dir)
    assert get(base + "data/environment").json()["data_location"].endswith(mirror)

    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:  # the chief pushes its event file with each checkpoint; the task mirrors it
        tags = get(base + "data/plugin/scalars/tags").json()
        if any("loss" in t for t in tags.values()):
            break
        assert time.monotonic() < deadline, f"no loss scalar listed: {tags}"
        run.advance()
        time.sleep(2)
    print(f"tensorboard container start -> loss listed: {time.time() - started:.1f}s")
    (train,) = [r for r, t in tags.items() if "loss" in t]
    # What TensorBoard's front end POSTs for its charts, as the shim sends it: a PUT.
    form = urlencode({"requests": json.dumps([{"plugin": "scalars", "tag": "loss"}])})
    wrapped = b"tfyarn:" + base64.b64encode(b"application/x-www-form-urlencoded\n" + form.encode())
    route = "experiment/defaultExperimentId/data/plugin/timeseries/timeSeries"
    series = SESSION.put(base + route, data=wrapped, headers={"Content-Type": "text/plain"},
                         timeout=30)  # fmt: skip
    assert series.status_code == 200, series.text[:300]
    points = series.json()[0]["runToSeries"][train]
    assert points and all(p["step"] >= 0 and p["value"] > 0 for p in points)
    refused = SESSION.post(base + "data/plugin/scalars/scalars_multirun",
                           data={"tag": "loss", "runs": train}, timeout=30)  # fmt: skip
    assert refused.status_code == 405  # why the shim is there

    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert result.final_status == "SUCCEEDED"
    events = run.source.events
    chief_stop = events.task("chief:0")["stop"]["t"]
    tb_stop = events.task("tensorboard:0")["stop"]
    assert tb_stop["traceback"] == ""
    outlived = tb_stop["t"] - chief_stop
    print(f"tensorboard stopped {outlived:.1f}s after the chief (timeout {TIMEOUT_S}s)")
    assert TIMEOUT_S <= outlived < TIMEOUT_S + 30
    final = run.status()
    assert {t.task: t.state for t in final.tasks}["tensorboard:0"] == "succeeded"
    assert run.tensorboard_url is None and final.tensorboard_url is None
    final_steps = [p["step"] for p in get_after_end_is_impossible(base)]
    assert final_steps == []


def get_after_end_is_impossible(base: str) -> list:
    """Once the application ended, the proxy has nothing to reach: no TensorBoard data."""
    resp = SESSION.get(base + "data/plugin/scalars/tags", timeout=30)
    return [] if resp.status_code != 200 or "loss" not in resp.text else [{"step": 0}]


def _digest(uri: str) -> str:
    import hashlib

    return hashlib.sha1(uri.encode()).hexdigest()[:8]
