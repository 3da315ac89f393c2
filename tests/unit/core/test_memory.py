"""Memory levels from the tasks' reported figures (tfyarn_jupyter.core.memory): pure."""

from __future__ import annotations

from tfyarn_jupyter.core import memory as resources


def test_memory_levels_from_80_and_90_percent_of_the_limit():
    gib = 1 << 30
    assert resources.memory_level(0.79 * gib, gib) == "ok"
    assert resources.memory_level(0.8 * gib, gib) == "high"
    assert resources.memory_level(0.9 * gib, gib) == "critical"
    assert resources.memory_level(None, gib) == resources.memory_level(gib, None) == ""
    assert resources.memory_level(gib, 0) == ""


def test_levels_against_the_reported_limit_else_the_request_and_the_warnings():
    progress = {
        "chief:0": {"step": 5, "rss_bytes": 900 << 20, "memory_limit_bytes": 2 << 30},
        "worker:0": {"rss_bytes": 950 << 20},  # no cgroup limit: its 1 GiB request
        "evaluator:0": {"rss_bytes": 850 << 20},
        "ps:0": {"step": 1},  # no resources reported: no level
    }
    memory_mb = {"chief:0": 1024, "worker:0": 1024, "evaluator:0": 1024}
    out = resources.with_memory_levels(progress, memory_mb)
    assert {t: p.get("memory_level") for t, p in out.items()} == {
        "chief:0": "ok", "worker:0": "critical", "evaluator:0": "high", "ps:0": None,
    }  # fmt: skip
    assert out["chief:0"]["step"] == 5 and "memory_level" not in progress["chief:0"]
    assert resources.memory_warnings({"progress": out}) == {
        "worker:0": "critical", "evaluator:0": "high",
    }  # fmt: skip


def test_the_status_carries_the_levels_and_the_run_logs_critical_once_per_task(caplog):
    from tfyarn_jupyter.core.state import AppInfo, RunStatus, TaskState
    from tfyarn_jupyter.run.launch import Run

    tasks = [TaskState("chief:0", "chief", 0, "running", memory_mb=512)]
    st = RunStatus(AppInfo("application_1_0001"), tasks, [], [], None,
                   progress={"chief:0": {"rss_bytes": 470 << 20}})  # fmt: skip
    assert st.to_dict()["progress"]["chief:0"]["memory_level"] == "critical"
    assert resources.memory_warnings(st) == {"chief:0": "critical"}
    assert RunStatus.from_dict(st.to_dict()).to_dict() == st.to_dict()
    run = Run.__new__(Run)  # only the log's memory of which tasks it warned about
    run._memory_warned = set()
    with caplog.at_level("WARNING", logger="tfyarn_jupyter"):
        run._warn_memory(st)
        run._warn_memory(st)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "application_1_0001 chief:0 uses 470 MiB, over 90% of its memory limit: "
        "YARN kills it past it"
    ]
