"""The benchmark's driver for criteo/tf-yarn 0.7.0, run by tf-yarn's own venv.

``python -m benchmarks.tfyarn070_driver CONFIG_JSON`` ships the benchmark
experiment (:func:`benchmarks.steps.bench_experiment`: ``notebooks/cancer.py``'s
estimator with the shared step-timing hook) with tf-yarn's ``run_on_yarn``
and prints one line ``TFYARN070 {json}`` with the same moments the
tfyarn_jupyter side records: submit -> all containers RUNNING, -> first
training step, -> run finished (YARN's finish time), and the pack / upload
time of tf-yarn's packer on a cold run.

It imports nothing of tfyarn_jupyter (that venv does not have it), only
:mod:`benchmarks.steps`, which it has cloudpickle ship by value. The one
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

from .steps import bench_experiment, read_steps, ship_by_value

PREFIX = "TFYARN070 "


def _conf(name: str) -> dict[str, str]:
    root = ET.parse(Path(os.environ["HADOOP_CONF_DIR"]) / name).getroot()
    return {(p.findtext("name") or ""): (p.findtext("value") or "") for p in root.iter("property")}


def experiment_fn_factory(cancer_path: str, model_dir: str, max_steps: int, stats: str) -> Any:
    """The benchmark experiment, built in the container (pickled by value)."""

    def experiment_fn() -> Any:
        from tf_yarn.tensorflow import Experiment, KerasExperiment

        # cancer.py builds tfyarn_jupyter's Experiment, an (estimator, train_spec,
        # eval_spec) tuple like tf-yarn's; give it tf-yarn's classes under that name.
        sys.modules.setdefault(
            "tfyarn_jupyter",
            types.SimpleNamespace(Experiment=Experiment, KerasExperiment=KerasExperiment),  # type: ignore[arg-type]
        )
        exp = bench_experiment(model_dir, max_steps, stats)
        return Experiment(exp.estimator, exp.train_spec, exp.eval_spec)

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


def upload_env(cfg: dict[str, Any], out: dict[str, Any]) -> None:
    """tf-yarn's packer (cluster-pack's pex) through WebHDFS, its phases timed."""
    import cluster_pack
    from cluster_pack import uploader

    http = _conf("hdfs-site.xml")["dfs.namenode.http-address"]
    host, port = http.rsplit(":", 1)
    user = os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER") or "root"
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
        package_path=f"webhdfs://{host}:{port}{cfg['env_path']}",
        force_upload=bool(cfg["cold"]),
        fs_args={"host": host, "port": int(port), "user": user},
    )
    phases["env_total"] = time.time() - t0
    if "pack" in phases:
        phases["upload"] = phases["env_total"] - phases["pack"]
    out["phases"] = phases


def run(cfg: dict[str, Any], default_fs: str, out: dict[str, Any]) -> None:
    """tf-yarn's ``run_on_yarn`` on the uploaded pex, its containers watched from a thread."""
    from tf_yarn.tensorflow import TaskSpec, run_on_yarn

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
            pyenv_zip_path=f"{default_fs}{cfg['env_path']}",
            files={"cancer.py": cfg["cancer"]},
            name=name,
        )
    except Exception:
        out["error"] = traceback.format_exc()[-1500:]
    finally:
        stop.set()
        watcher.join()
    out.update(seen)


def final_state(name: str, out: dict[str, Any]) -> None:
    """The application's end as YARN tells it (tf-yarn closes its client when a run fails)."""
    import skein

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


def main(cfg: dict[str, Any]) -> dict[str, Any]:
    import tf_yarn.client

    ship_by_value()
    # After a run, tf-yarn retries reading the aggregated logs 15 times, 3 s apart,
    # and skein 0.8 cannot read Hadoop 3.5's layout; that is after YARN's finish time,
    # which is what is timed, so one try is enough and saves the bench a minute a run.
    tf_yarn.client.YARN_LOG_TRIES = 1
    # tf-yarn gives each run a fresh PEX_ROOT, /tmp/<uuid>, where every container
    # unzips the pex (~2 GiB) and which nothing deletes; the same, at a path the
    # bench knows, so that it can delete it after the run.
    tf_yarn.client._get_pex_root = lambda: cfg["pex_root"]

    out: dict[str, Any] = {}
    default_fs = _conf("core-site.xml")["fs.defaultFS"].rstrip("/")
    upload_env(cfg, out)
    run(cfg, default_fs, out)
    final_state(cfg["name"], out)
    out["steps"] = read_steps(cfg["stats"], "chief-0")
    return out


if __name__ == "__main__":
    result = main(json.loads(sys.argv[1]))
    print(PREFIX + json.dumps(result, default=str), flush=True)
