"""One launch for the ``layers`` section, run in the venv it ships (a copy pip changes).

``python layers_driver.py '<json>'`` submits the quickstart (chief + evaluator),
waits until every task runs, cancels it and writes one JSON object to ``result``:
seconds from submit to every task running, the launch's phases, each task's seconds from
its container's allocation to its process reporting in (localisation, the layers'
unpacking, the interpreter's start), and what the environment's upload did (layers
uploaded and their bytes, or the tar's). ``part_size`` (optional) overrides
:data:`tfyarn_jupyter.ship.layers.PART_SIZE` (0: no layer split).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def main(args: dict) -> dict:
    sys.path.insert(0, args["notebooks"])
    import cancer

    from tfyarn_jupyter import TaskSpec, submit
    from tfyarn_jupyter.ship import layers
    from tfyarn_jupyter.ship.layered_launch import LayersReport

    if "part_size" in args:
        layers.PART_SIZE = int(args["part_size"])

    model_dir = args["model_dir"]

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=100000)

    small = TaskSpec("1G", 1)
    t0 = time.time()
    run = submit(experiment_fn, {"chief": small, "evaluator": small}, name=args["name"],
                 files={"cancer.py": cancer.__file__}, env=args.get("env") or {},
                 **args.get("options", {}))  # fmt: skip
    submitted = time.time()
    running = None
    started: dict[str, float] = {}
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            st = run.advance()
            if st.ended:
                break
            if len(st.tasks) == 2 and all(t.state == "running" for t in st.tasks):
                running = time.time()
                started = {t.task: (t.running_time - t.allocated_time) / 1000 for t in st.tasks}
                break
            time.sleep(0.25)
    finally:
        run.cancel()
    report: Any = run.env_report
    layered = isinstance(report, LayersReport)
    if layered:
        uploaded, size = report.uploaded, report.bytes_uploaded
        sizes = {layer.archive_name: layer.size for layer in report.layers}
    else:
        uploaded = [report.key] if report.uploaded else []
        size, sizes = (report.size if report.uploaded else 0), {}
    return {
        "all_running": None if running is None else running - t0,
        "prepare": submitted - t0,
        "phases": run.phases,
        "allocated_to_running": started,
        "uploaded": uploaded,
        "bytes_uploaded": size,
        "sizes": sizes,
        "env_size": report.size,
    }


if __name__ == "__main__":
    given = json.loads(sys.argv[1])
    Path(given["result"]).write_text(json.dumps(main(given)))
