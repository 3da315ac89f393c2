"""A task nearing its memory limit is warned about on the sandbox, and is not killed for it.

A function-mode chief (1 GiB container, ``tfyarn_jupyter.distributed.submit``) measures its
own process tree (the tree the task's resource sampler reports), then fills a bytearray up
to ~85% of its limit (the cgroup's, else the request: the sandbox's NodeManagers enforce
none), reports step 1 and holds it; adds ~8% more (~93%), reports step 2 and holds; frees
everything, reports step 3 and returns. The status the panel shows (``to_dict()``'s
``progress[task]["memory_level"]``, read with :func:`resources.memory_warnings`) says
"high" during step 1, "critical" during step 2 and nothing after; ``run_on_yarn``'s driver
step logs one warning line for the task, once; the task ends SUCCEEDED.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from tfyarn_jupyter import TaskSpec, distributed
from tfyarn_jupyter.core import memory as resources

from .helpers import unique

pytestmark = pytest.mark.sandbox

RUN_TIMEOUT_S = 300
#: Seconds each phase is held: the task's resources are written at least every 5 s.
HOLD_S = 15.0


def make_hog(hold_s: float) -> Any:
    """The task's function: ~85% of the memory limit, then ~93%, then nothing (nested:
    cloudpickle ships it by value, this test module being unknown to the container)."""

    def hog() -> str:
        import time

        import psutil

        # The task imports TensorFlow in the background (about 0.4 GiB): wait for it, so that
        # the base counts it. A loaded CI machine once measured the base before it, and the
        # 85% phase reached 125% (2026-12-06).
        import tensorflow  # noqa: F401

        from tfyarn_jupyter.container import progress, sampling

        me = psutil.Process()
        limit = sampling.cgroup_memory_limit() or (1024 << 20)

        def rss() -> int:
            return sum(p.memory_info().rss for p in [me, *me.children(recursive=True)])

        def mark(step: int) -> None:  # written now, whatever the least interval
            progress.report(step)
            reporter = progress.current()
            if reporter is not None:
                reporter.flush()

        base = rss()
        high = bytearray(b"\x01") * int(0.85 * limit - base)  # written: resident, not just mapped
        print(f"hog: base {base >> 20} MiB, limit {limit >> 20} MiB, now {rss() >> 20} MiB")
        mark(1)
        time.sleep(hold_s)
        critical = bytearray(b"\x01") * int(0.08 * limit)
        print(f"hog: now {rss() >> 20} MiB", flush=True)
        mark(2)
        time.sleep(hold_s)
        del high, critical
        mark(3)
        print(f"hog: freed, now {rss() >> 20} MiB", flush=True)
        time.sleep(8)  # the driver reads the last report before the task ends
        return "freed"

    return hog


def test_a_task_past_80_percent_of_its_memory_limit_is_warned_about_and_not_killed(
    sandbox, runs, caplog
):
    hog = make_hog(HOLD_S)
    run = distributed.submit(hog, {"chief": TaskSpec("1G", 1)}, name=unique("tfyarn-test-mem"))
    runs.append(run)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    seen: dict[int, set[str]] = {}  # step reported -> levels the status gave
    ratios: dict[int, float] = {}
    with caplog.at_level(logging.WARNING, logger="tfyarn_jupyter"):
        while not (st := run.advance()).ended:
            assert time.monotonic() < deadline, f"{run.app_id} still {st.app.state}"
            p = st.to_dict()["progress"].get("chief:0", {})
            if "step" in p and "rss_bytes" in p:
                level = resources.memory_warnings(st).get("chief:0", "none")
                seen.setdefault(p["step"], set()).add(level)
                ratios[p["step"]] = max(ratios.get(p["step"], 0), p["rss_bytes"] / (1 << 30))
            time.sleep(1.0)
    print(f"\nlevels by step: {seen}; highest RSS / 1 GiB by step: {ratios}")
    # a resources tick may land between the second allocation and step 2's report
    assert "high" in seen.get(1, set()) and seen[1] <= {"high", "critical"}, seen
    assert seen.get(2) == {"critical"}, seen
    assert seen.get(3) == {"none"}, seen  # freed: no warning any more
    assert st.to_dict()["app"]["final_status"] == "SUCCEEDED"
    (chief,) = st.tasks
    assert chief.state == "succeeded", chief
    warned = [r.getMessage() for r in caplog.records if "of its memory limit" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith(f"{run.app_id} chief:0 uses "), warned
    assert "over 90% of its memory limit" in warned[0]
