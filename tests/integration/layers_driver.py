"""A launch with a layered environment, run by ``test_layers.py`` in the venv it ships.

``python layers_driver.py '<json>'`` submits one run from the interpreter that runs
it (so a copy of the venv ships that copy), waits for it and prints one JSON line:
the final status, what the layers' upload did, and the run's phases. The JSON asks for
``kind`` "quickstart" (the quickstart's Estimator on chief + evaluator) or "import"
(a function that writes whether ``module`` imports, and from where, to ``out``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(args: dict) -> dict:
    from tfyarn_jupyter import TaskSpec, submit
    from tfyarn_jupyter.ship import layered_launch

    small = TaskSpec("1G", 1)
    given = ("shared_layer_cache", "ship_interpreter", "layer_codec", "env")
    options = {k: args[k] for k in given if k in args}
    if args["kind"] == "quickstart":
        sys.path.insert(0, args["notebooks"])
        import cancer

        model_dir = args["model_dir"]

        def experiment_fn():
            return cancer.experiment(model_dir, max_steps=300)

        specs = {"chief": small, "evaluator": small}
        options["files"] = {"cancer.py": cancer.__file__}
    else:
        module, out = args["module"], args["out"]

        def experiment_fn():
            import importlib
            import os
            import sys

            try:
                where = importlib.import_module(module).__file__
            except ImportError as exc:
                where = f"ImportError: {exc}"
            # Hidden: an empty folder where the Python was, /dev/null over a binary.
            seen = {
                p: bool(os.listdir(p)) if os.path.isdir(p) else os.access(p, os.X_OK)
                for p in args["hidden"]
            }
            exe = os.path.realpath(sys.executable)
            with open(out, "w") as f:
                json.dump({"module": where, "executable": exe, "hidden": seen}, f)

        specs = {"worker": TaskSpec("512M", 1)}
        options["mode"] = "function"
    run = submit(experiment_fn, specs, name=args["name"], layers=True, **options)
    try:
        result = run.wait(timeout=600)
        status = result.final_status
    except Exception as exc:  # RunFailed: its status and message are the test's to judge
        status = f"{type(exc).__name__}: {exc}"
    report = run.env_report
    return {
        "status": status,
        "app_id": run.app_id,
        "key": report.key,
        "uploaded": report.uploaded,
        "bytes_uploaded": report.bytes_uploaded,
        "layers": {layer.name: layer.archive_name for layer in report.layers},
        "sizes": {layer.archive_name: layer.size for layer in report.layers},
        "parts": {
            f"{layer.name} {layer.part}": layered_launch.archive_name(layer, report.codec)
            for layer in report.layers
            if layer.part
        },
        "uris": {name: uri for name, (uri, _) in report.uris.items()},
        "phases": run.phases,
    }


if __name__ == "__main__":
    out = main(json.loads(sys.argv[1]))
    Path(json.loads(sys.argv[1])["result"]).write_text(json.dumps(out))
