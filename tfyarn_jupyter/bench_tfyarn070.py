"""The benchmark's driver for criteo/tf-yarn 0.7.0, run by tf-yarn's own venv.

``python bench_tfyarn070.py CONFIG_JSON`` ships the benchmark experiment
(``notebooks/cancer.py``'s estimator with a step-timing hook) with tf-yarn's
``run_on_yarn`` and prints one line ``TFYARN070 {json}`` with the same moments
the tfyarn_jupyter side records: submit -> all containers RUNNING, -> first
training step, -> run finished (YARN's finish time), and the pack / upload
time of tf-yarn's packer on a cold run.

It imports nothing of tfyarn_jupyter (that venv does not have it). The one
substitution: tf-yarn calls ``cluster_pack.upload_env()`` with an ``hdfs://``
path, which needs pyarrow's libhdfs; no registry here ships that native
library, so this driver calls the same ``upload_env`` with a ``webhdfs://``
path (fsspec's WebHDFS filesystem), then hands the resulting ``hdfs://`` path
to ``run_on_yarn`` as ``pyenv_zip_path``, as tf-yarn itself does.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

PREFIX = "TFYARN070 "


def _conf(name: str) -> dict[str, str]:
    root = ET.parse(Path(os.environ["HADOOP_CONF_DIR"]) / name).getroot()
    return {(p.findtext("name") or ""): (p.findtext("value") or "") for p in root.iter("property")}


def experiment_fn_factory(cancer_path: str, model_dir: str, max_steps: int, stats: str) -> Any:
    """The benchmark experiment, built in the container (pickled by value from ``__main__``)."""

    def experiment_fn() -> Any:
        import tensorflow as tf
        from tf_yarn.tensorflow import Experiment

        # cancer.py builds a tfyarn_jupyter.Experiment, a (estimator, train_spec,
        # eval_spec) tuple like tf-yarn's; give it tf-yarn's under that name.
        sys.modules.setdefault("tfyarn_jupyter", types.SimpleNamespace(Experiment=Experiment))  # type: ignore[arg-type]
        import cancer  # shipped with files=

        class StepTimes(tf.estimator.SessionRunHook):
            def begin(self) -> None:
                self.ends: list[float] = []
                self.durations: list[float] = []
                self.before = 0.0

            def before_run(self, run_context: Any) -> None:
                self.before = time.time()

            def after_run(self, run_context: Any, run_values: Any) -> None:
                self.ends.append(time.time())
                self.durations.append(self.ends[-1] - self.before)

            def end(self, session: Any) -> None:
                task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
                name = f"{task.get('type', 'local')}-{task.get('index', 0)}"
                Path(f"{stats}.{name}.json").write_text(
                    json.dumps({
                        "first_step": self.ends[0] if self.ends else None,
                        "steps": len(self.ends),
                        "durations": self.durations,
                    })
                )  # fmt: skip

        exp = cancer.experiment(model_dir, max_steps=max_steps)
        train = exp.train_spec._replace(hooks=(*(exp.train_spec.hooks or ()), StepTimes()))
        return Experiment(exp.estimator, train, exp.eval_spec)

    return experiment_fn


def watch_containers(name: str, n_tasks: int, out: dict[str, Any], stop: threading.Event) -> None:
    """Record when each of the app's containers is first seen RUNNING (skein's start times)."""
    import skein

    client = skein.Client()
    app_id = None
    try:
        while not stop.is_set() and app_id is None:
            apps = client.get_applications(states=["SUBMITTED", "ACCEPTED", "RUNNING"])
            app_id = next((a.id for a in apps if a.name == name), None)
            stop.wait(0.25)
        if app_id is None:
            return
        app = client.connect(app_id)
        starts: dict[str, float] = {}
        while not stop.is_set() and len(starts) < n_tasks:
            for c in app.get_containers(states=["RUNNING", "SUCCEEDED", "FAILED", "KILLED"]):
                if c.start_time:
                    starts.setdefault(c.id, c.start_time.timestamp())
            stop.wait(0.25)
        if len(starts) >= n_tasks:
            out["all_containers_running"] = max(starts.values())
    except Exception as exc:  # the app may end between two calls
        out.setdefault("watch_error", f"{type(exc).__name__}: {exc}"[:300])
    finally:
        client.close()


def main(cfg: dict[str, Any]) -> dict[str, Any]:
    import cluster_pack
    import skein
    import tf_yarn.client
    from cluster_pack import uploader
    from tf_yarn.tensorflow import TaskSpec, run_on_yarn

    # After a run, tf-yarn retries reading the aggregated logs 15 times, 3 s apart,
    # and skein 0.8 cannot read Hadoop 3.5's layout; that is after YARN's finish time,
    # which is what is timed, so one try is enough and saves the bench a minute a run.
    tf_yarn.client.YARN_LOG_TRIES = 1
    # tf-yarn gives each run a fresh PEX_ROOT, /tmp/<uuid>, where every container
    # unzips the pex (~2 GiB) and which nothing deletes; the same, at a path the
    # bench knows, so that it can delete it after the run.
    tf_yarn.client._get_pex_root = lambda: cfg["pex_root"]

    out: dict[str, Any] = {}
    http = _conf("hdfs-site.xml")["dfs.namenode.http-address"]
    host, port = http.rsplit(":", 1)
    default_fs = _conf("core-site.xml")["fs.defaultFS"].rstrip("/")
    user = os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER") or "root"
    env_path = cfg["env_path"]  # e.g. /user/<u>/.tfyarn/bench/tfyarn070-<key>.pex

    phases: dict[str, float] = {}
    pack_from_venv = uploader._pack_from_venv

    def timed_pack(*args: Any, **kwargs: Any) -> str:
        t = time.time()
        local = pack_from_venv(*args, **kwargs)
        phases["pack"] = time.time() - t
        out["env_size"] = os.path.getsize(local)
        return local

    uploader._pack_from_venv = timed_pack

    t0 = time.time()
    out["t0"] = t0
    cluster_pack.upload_env(
        package_path=f"webhdfs://{host}:{port}{env_path}",
        force_upload=bool(cfg["cold"]),
        fs_args={"host": host, "port": int(port), "user": user},
    )
    phases["env_total"] = time.time() - t0
    if "pack" in phases:
        phases["upload"] = phases["env_total"] - phases["pack"]
    out["phases"] = phases

    name = cfg["name"]
    specs = {t: TaskSpec(**s) for t, s in cfg["specs"].items()}
    n_tasks = sum(s.get("instances", 1) for s in cfg["specs"].values())
    stop = threading.Event()
    seen: dict[str, Any] = {}
    watcher = threading.Thread(target=watch_containers, args=(name, n_tasks, seen, stop))
    watcher.start()
    try:
        run_on_yarn(
            experiment_fn_factory(cfg["cancer"], cfg["model_dir"], cfg["max_steps"], cfg["stats"]),
            specs,
            pyenv_zip_path=f"{default_fs}{env_path}",
            files={"cancer.py": cfg["cancer"]},
            name=name,
        )
    except Exception:
        out["error"] = traceback.format_exc()[-1500:]
    finally:
        stop.set()
        watcher.join()
    out.update(seen)

    # tf-yarn closes its client when a run fails; ask YARN through a new one.
    with skein.Client() as client:
        apps = client.get_applications(states=["FINISHED", "FAILED", "KILLED"])
        mine = [a for a in apps if a.name == name]
    if mine:
        app = mine[0]
        out["app_id"] = app.id
        out["final"] = f"{app.state}/{app.final_status}"
        out["finished"] = app.finish_time.timestamp() if app.finish_time else None
        if "error" in out and out["final"] == "FINISHED/SUCCEEDED" and "logs" in out["error"]:
            # The run trained and succeeded; tf-yarn's client then failed reading the
            # aggregated logs (skein 0.8 predates Hadoop 3.5's log layout).
            out["note"] = "tf-yarn's run SUCCEEDED; its client then failed reading the logs"
            del out["error"]
    try:
        out["steps"] = json.loads(Path(f"{cfg['stats']}.chief-0.json").read_text())
    except (OSError, ValueError):
        out["steps"] = {}
    return out


if __name__ == "__main__":
    result = main(json.loads(sys.argv[1]))
    print(PREFIX + json.dumps(result, default=str), flush=True)
