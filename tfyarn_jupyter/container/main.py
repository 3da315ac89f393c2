"""The container's entry point: ``python -m tfyarn_jupyter.container``, started by
``sh/service.sh``; and, when the task's process died without reporting its stop,
``--exited STATUS`` to report it on its behalf.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

from tfyarn_jupyter.container import gpus, hygiene, regroup, roles
from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.container.task import Task


def report_exit(code: int) -> int:
    """After the task's process died without reporting its stop (killed): report its status.

    Its container lived on to run this, so the task failed (``kill -9``, the OOM killer);
    the marker, written first, tells the cluster's watchers so (``regroup.loss_of``)."""
    task = Task()
    regroup.ended_by_itself(task)
    if "stop" not in task.snapshot().task(task.name):
        why = f"{task.name}: its process exited with status {code}"
        if code > 128:
            with contextlib.suppress(ValueError):
                why += f" (killed by signal {code - 128}, {signal.Signals(code - 128).name})"
        log(why)
        task.put("stop", traceback=why, exit_code=code)
        task.wait_for_ack()
    if task.type in regroup.CLUSTER:
        # Ended by itself, not lost: no restart (skein's would come once the container ended).
        regroup.end_application(task, f"Failure in service {task.type}, see logs for more "
                                "information.")  # fmt: skip
    return code


def main(argv: list[str] | None = None, app: Any = None) -> int:
    """The container's entry point (``app`` stands in for skein's client in local tests)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--exited"]:
        return report_exit(int(argv[1]))
    hygiene.use_container_tmp()  # before TensorFlow is imported
    devices = gpus.use_assigned_gpus()  # before TensorFlow is imported, too
    if devices:
        log(f"GPUs: {','.join(devices)}")
    task = Task(app)
    code = roles.run(task)
    sys.stdout.flush()
    sys.stderr.flush()
    # TensorFlow's gRPC server threads never end by themselves (a ps blocks
    # on join); leave without waiting for them.
    os._exit(code)
