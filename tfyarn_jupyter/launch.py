"""Launching a run: validate, serialise, ship, submit through skein; and the ``Run`` handle.

:func:`submit` returns at once with a :class:`Run`; :func:`run_on_yarn` is
``submit(...).wait()``. Everything that can be checked locally is checked
before YARN is asked for anything: the topology, the files, that the
experiment serialises *and* loads back in a fresh interpreter, the queue.
If submission fails half-way, the application is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import skein

from . import events, filesystem, packing, poller
from .spec import SpecError, TaskSpec, validate_task_specs
from .state import ENDED_APP, RunStatus, redact_env

PAYLOAD = "experiment.pkl"
SOURCES = "tfyarn_sources.zip"
HEARTBEAT_INTERVAL_S = 5.0
HEARTBEAT_TIMEOUT_S = 60.0


class RunFailed(RuntimeError):
    """A run ended without success; carries the failing task and its remote traceback."""

    def __init__(self, message: str, *, task: str = "", traceback: str = "", status=None):
        super().__init__(message)
        self.task = task
        self.traceback = traceback
        self.status = status


@dataclasses.dataclass
class RunResult:
    """What a finished run reports: per-task status and durations, metrics, where logs are."""

    app_id: str
    final_status: str
    tasks: dict[str, dict[str, Any]]
    metrics: dict[str, Any]
    training_time_s: float
    eval_time_s: float
    duration_s: float
    attempts: list[str]
    logs: str

    def __repr__(self) -> str:
        return (
            f"RunResult(app_id={self.app_id!r}, final_status={self.final_status!r}, "
            f"metrics={self.metrics!r}, duration_s={self.duration_s})"
        )


# -- the skein driver --------------------------------------------------------
_client_lock = threading.Lock()
_client: skein.Client | None = None


def get_client() -> skein.Client:
    """One skein driver per process: starting one costs a JVM (about 2 s)."""
    global _client
    with _client_lock:
        if _client is None:
            # A clear error if HADOOP_CONF_DIR is wrong, or names a ResourceManager that is
            # not there (the driver would otherwise retry for minutes per call).
            check_resourcemanager(filesystem.read_conf("yarn-site.xml"))
            try:
                _client = skein.Client(log=False)
            except (skein.exceptions.DriverError, FileNotFoundError) as exc:
                raise filesystem.ClusterConfigError(
                    f"cannot start skein's driver ({exc}): check JAVA_HOME and that `yarn` "
                    'is on PATH (for the sandbox: eval "$(tfyarn-sandbox env)")'
                ) from exc
            weakref.finalize(_client, _client.close)
        return _client


def resourcemanager_addresses(yarn_site: Mapping[str, str]) -> list[str]:
    """``host:port`` of each ResourceManager the configuration names (several with HA)."""
    ids = [""]
    if yarn_site.get("yarn.resourcemanager.ha.enabled", "").lower() == "true":
        rm_ids = yarn_site.get("yarn.resourcemanager.ha.rm-ids", "").split(",")
        ids = [f".{i.strip()}" for i in rm_ids if i.strip()] or [""]
    out = []
    for i in ids:
        addr = yarn_site.get(f"yarn.resourcemanager.address{i}")
        if not addr:
            host = yarn_site.get(f"yarn.resourcemanager.hostname{i}", "0.0.0.0")
            addr = f"{host}:8032"
        out.append(addr)
    return out


def check_resourcemanager(yarn_site: Mapping[str, str], timeout: float = 5.0) -> None:
    """Raise :class:`~.filesystem.ClusterConfigError` unless some ResourceManager accepts."""
    addrs = resourcemanager_addresses(yarn_site)
    errors = []
    for addr in addrs:
        host, _, port = addr.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{addr}: {exc}")
    conf = os.environ.get("HADOOP_CONF_DIR", "?")
    raise filesystem.ClusterConfigError(
        f"cannot reach the ResourceManager ({'; '.join(errors)}): is it running? Check "
        f"yarn.resourcemanager.address in {conf}/yarn-site.xml, or set HADOOP_CONF_DIR to "
        'your cluster\'s configuration (for the sandbox: eval "$(tfyarn-sandbox env)")'
    )


# -- validation -----------------------------------------------------------------
def _check_files(files: Mapping[str, str | os.PathLike] | None) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for target, source in (files or {}).items():
        path = Path(source).expanduser()
        if not path.exists():
            raise SpecError(f"files[{target!r}]: {source} does not exist")
        if "/" in target.strip("/") or target in (
            "",
            ".",
            "..",
            "env",
            ENV_TAR,
            "overlay",
            PAYLOAD,
        ):
            raise SpecError(f"files: {target!r} is not a plain name for the container's folder")
        out[target] = path.absolute()
    return out


def _check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    out = {}
    for k, v in (env or {}).items():
        if not isinstance(k, str) or not k.isidentifier() or not isinstance(v, str):
            raise SpecError(f"env: {k!r} must map a variable name to a string")
        if '"' in v or "\n" in v:
            # YARN pastes values into its launch script between double quotes.
            raise SpecError(
                f"env: the value of {k} contains a double quote or a newline, "
                "which YARN's launch script cannot carry; encode it (e.g. base64)"
            )
        out[k] = v
    bounds = {"TFYARN_PEER_TIMEOUT": 1.0, "TFYARN_HEARTBEAT_TIMEOUT": 3 * HEARTBEAT_INTERVAL_S}
    for key, least in bounds.items():
        if key not in out:
            continue
        try:
            ok = float(out[key]) >= least
        except ValueError:
            ok = False
        if not ok:
            raise SpecError(f"env: {key}={out[key]!r} must be a number of seconds >= {least:g}")
    return out


def serialise(experiment_fn: Callable[[], Any]) -> bytes:
    if not callable(experiment_fn):
        raise SpecError(f"experiment_fn must be a function, got {type(experiment_fn).__name__}")
    try:
        return cloudpickle.dumps(experiment_fn)
    except Exception as exc:
        name = getattr(experiment_fn, "__name__", repr(experiment_fn))
        raise SpecError(
            f"experiment_fn {name!r} cannot be serialised ({type(exc).__name__}: {exc}); "
            "build unpicklable objects (sessions, open files, locks) inside the function"
        ) from exc


def start_load_check(payload: Path, pythonpath: Sequence[str]) -> subprocess.Popen:
    """Load the payload in a fresh interpreter: what the containers will do first."""
    code = "import sys, cloudpickle; cloudpickle.load(open(sys.argv[1], 'rb'))"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([*pythonpath, os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(payload)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=payload.parent,
    )


def finish_load_check(proc: subprocess.Popen) -> None:
    _, err = proc.communicate()
    if proc.returncode != 0:
        last = err.strip().splitlines()[-1] if err.strip() else f"exit code {proc.returncode}"
        raise SpecError(
            f"experiment_fn pickles but does not load in a fresh interpreter ({last}). "
            "Ship the modules it needs with files= (or import them inside the function)."
        )


def check_queue(client: skein.Client, queue: str, task_specs: Mapping[str, TaskSpec]) -> None:
    """A queue that exists and tasks that fit a node, before anything is submitted."""
    try:
        queue_info = client.get_queue(queue)
    except (ValueError, skein.exceptions.SkeinError) as exc:
        try:
            names = sorted(q.name for q in client.get_all_queues())
        except skein.exceptions.SkeinError:
            names = []
        raise SpecError(
            f"queue {queue!r} does not exist ({exc}); queues here: {', '.join(names) or '?'}"
        ) from exc
    # Lost or decommissioned nodes would never run anything: count the live ones only.
    nodes = client.get_nodes(states=["RUNNING"])
    reachable = set(queue_info.node_labels)
    for ttype, spec in task_specs.items():
        if spec.label.value and not reachable & {spec.label.value, "*"}:
            # YARN would fail the run at allocation time; say so before submitting.
            raise SpecError(
                f"{ttype}: queue {queue!r} cannot use nodes labelled {spec.label.value!r} "
                f"(it reaches: {', '.join(sorted(reachable)) or 'unlabelled nodes only'}); "
                "pick a queue that reaches them"
            )
        fits = [
            n for n in nodes
            if (spec.label.value in n.labels if spec.label.value else not n.labels)
        ]  # fmt: skip
        if not fits:
            raise SpecError(
                f"{ttype}: no running node carries the label {spec.label.value or '(none)'!r}"
            )
        if not any(
            n.total_resources.memory >= spec.memory and n.total_resources.vcores >= spec.vcores
            for n in fits
        ):
            biggest = max(fits, key=lambda n: n.total_resources.memory).total_resources
            raise SpecError(
                f"{ttype}: {spec.memory} MiB / {spec.vcores} vcores does not fit any node "
                f"(largest: {biggest.memory} MiB / {biggest.vcores} vcores)"
            )


def _acls(user: str, acls: skein.ACLs | Mapping[str, Sequence[str]] | None) -> skein.ACLs:
    """View and modify for the submitting user only, plus whatever ``acls`` grants."""
    if isinstance(acls, skein.ACLs):
        return acls
    extra = dict(acls or {})
    unknown = set(extra) - {"view", "modify", "ui"}
    if unknown:
        raise SpecError(f"acls: unknown key(s) {sorted(unknown)}: use view, modify, ui")
    return skein.ACLs(
        enable=True,
        view_users=sorted({user, *extra.get("view", ())}),
        modify_users=sorted({user, *extra.get("modify", ())}),
        ui_users=sorted({user, *extra.get("ui", ())}),
    )


# -- the application spec ------------------------------------------------------
def task_env(
    user_env: Mapping[str, str],
    specs: Mapping[str, TaskSpec],
    *,
    peer_timeout_s: float,
    heartbeat: bool,
) -> dict[str, str]:
    """The tasks' environment: the user's, the topology, and the two bounds.

    The bounds are the user's to tune (``--env TFYARN_PEER_TIMEOUT=600``); a
    detached run has no client to watch, whatever the env says.
    """
    out = {
        **user_env,
        # YARN writes env values into a shell script between double quotes
        # without escaping them, so this stays free of quotes.
        "TFYARN_TASKS": ",".join(f"{t}={s.instances}" for t, s in specs.items()),
        "TFYARN_PEER_TIMEOUT": user_env.get("TFYARN_PEER_TIMEOUT", str(peer_timeout_s)),
        "TFYARN_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT_S if heartbeat else 0),
        "PYTHONUNBUFFERED": "1",
    }
    if heartbeat and "TFYARN_HEARTBEAT_TIMEOUT" in user_env:
        out["TFYARN_HEARTBEAT_TIMEOUT"] = user_env["TFYARN_HEARTBEAT_TIMEOUT"]
    return out


#: The packed environment as shipped: a plain file, unpacked by the service script.
ENV_TAR = "env.tar"

#: Unpacks ``env.tar`` once per node and environment key into a per-user cache beside
#: the NodeManager's, and links it as ``./env``. YARN's own unpacking of an archive
#: resource sets the permissions of every file it holds one by one, which without
#: Hadoop's native library is a ``chmod`` process per file: minutes for a TensorFlow
#: venv. Unpacked here, a cold start costs one ``tar -x``, a warm one a symlink.
UNPACK_ENV = r"""
if [ -f ./env.tar ]; then
  root="${TFYARN_ENV_CACHE:-${TMPDIR:-/tmp}/tfyarn-envs-$(id -u)}"
  dest="$root/$TFYARN_ENV_KEY"
  mkdir -p "$root" 2>/dev/null && chmod 700 "$root" 2>/dev/null
  if [ -O "$root" ] && [ ! -f "$dest/.tfyarn-unpacked" ]; then
    (
      flock 9 2>/dev/null
      if [ ! -f "$dest/.tfyarn-unpacked" ]; then
        part="$dest.part.$$"
        rm -rf "$part" && mkdir "$part" && tar -xf ./env.tar -C "$part" \
          && touch "$part/.tfyarn-unpacked" && { [ -e "$dest" ] || mv "$part" "$dest"; }
        rm -rf "$part"
      fi
    ) 9>"$dest.unpack.lock"
  fi
  if [ -O "$root" ] && [ -f "$dest/.tfyarn-unpacked" ]; then
    exec 8>"$dest.lock" && flock -s 8 2>/dev/null  # held while this container runs
    touch "$dest/.tfyarn-used"
    ln -sfn "$dest" ./env
    # Keep this node's newest few environments; an older one goes once no container
    # holds its lock (each env is a TensorFlow venv: gigabytes).
    ls -1t "$root"/*/.tfyarn-used 2>/dev/null | tail -n +"$((${TFYARN_ENV_KEEP:-3} + 1))" \
      | while read -r used; do
          old=$(dirname "$used")
          [ "$old" = "$dest" ] && continue
          ( flock -n 7 && rm -rf "$old" "$old.unpack.lock" ) 7>"$old.lock" 2>/dev/null
        done
  else  # no usable cache folder on this node: unpack into the container itself
    mkdir -p ./env && tar -xf ./env.tar -C ./env
  fi
fi
"""


def service_script(interpreter: str, pythonpath: Sequence[str]) -> str:
    path = ":".join(pythonpath)
    # skein sends a service's stdout and stderr to one <service>.log; stderr goes to its
    # own file in the container's log folder so the panel and `logs` can tell them apart.
    return f"""\
if [ -n "${{LOG_DIRS:-}}" ]; then exec 2>>"${{LOG_DIRS%%,*}}/stderr"; fi
if [ ! -x {shlex.quote(interpreter)} ]; then
  echo "tfyarn: this node ($(hostname)) lacks the interpreter {interpreter} that the shipped \
virtual environment runs on; install the same Python at the same path on every node, or \
pass pyenv_archive= an environment built for the nodes" >&2
  exit 127
fi
{UNPACK_ENV.strip()}
export PYTHONPATH="{path}${{PYTHONPATH:+:$PYTHONPATH}}"
./env/bin/python -u -m tfyarn_jupyter.tasks
rc=$?
# A process killed from outside (kill -9, the OOM killer) reports nothing itself;
# 143 is YARN stopping the container (SIGTERM), which is not the task's failure.
if [ $rc -ne 0 ] && [ $rc -ne 143 ]; then
  ./env/bin/python -m tfyarn_jupyter.tasks --exited $rc || true
fi
exit $rc
"""


@dataclasses.dataclass
class _Prepared:
    spec: skein.ApplicationSpec
    task_specs: dict[str, TaskSpec]
    phases: dict[str, float]
    env_report: packing.EnvReport | None
    workdir: tempfile.TemporaryDirectory


def prepare(
    experiment_fn: Callable[[], Any],
    task_specs: Mapping[str, TaskSpec],
    *,
    files: Mapping[str, str | os.PathLike] | None = None,
    env: Mapping[str, str] | None = None,
    queue: str = "default",
    pip_packages: Sequence[str] | None = None,
    file_systems: Sequence[str] | None = None,
    name: str = "tfyarn",
    acls: skein.ACLs | Mapping[str, Sequence[str]] | None = None,
    pyenv_archive: str | None = None,
    source_roots: Mapping[str, Path] | None = None,
    heartbeat: bool = True,
    peer_timeout_s: float = 300.0,
) -> _Prepared:
    """Everything up to submission: checks, payload, environment, the skein spec."""
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    specs = validate_task_specs(task_specs)
    local_files = _check_files(files)
    user_env = _check_env(env)
    if not isinstance(queue, str) or not queue:
        raise SpecError(f"queue must be a queue name, got {queue!r}")
    payload = serialise(experiment_fn)
    workdir = tempfile.TemporaryDirectory(prefix="tfyarn-launch-")
    wd = Path(workdir.name)
    (wd / PAYLOAD).write_bytes(payload)
    (wd / PAYLOAD).chmod(0o600)
    roots = dict(source_roots or {})
    if pyenv_archive is None:
        for root in packing.editable_roots(packing.venv_prefix()):
            roots.setdefault(str(root), root)
    sources = None
    if roots:
        sources = wd / SOURCES
        packing.zip_sources(roots, sources)
    # The fresh-interpreter check sees what a container sees: the files' targets.
    stage = wd / "stage"
    stage.mkdir()
    for target, src in local_files.items():
        (stage / target).symlink_to(src)
    check = start_load_check(wd / PAYLOAD, [str(stage), *([str(sources)] if sources else [])])
    phases["validate"] = time.perf_counter() - t0
    try:
        report = None
        if pyenv_archive is None:
            report = packing.ensure_env()
            archive = report.archive
            interpreter = packing.base_interpreter(packing.venv_prefix())
            phases.update({f"env_{k}": v for k, v in report.times.items()})
        else:
            archive = pyenv_archive
            interpreter = os.environ.get("TFYARN_INTERPRETER", "/usr/bin/env")
        t1 = time.perf_counter()
        client = get_client()
        phases["client"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        check_queue(client, queue, specs)
        phases["queue_check"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        finish_load_check(check)
        phases["load_check_wait"] = time.perf_counter() - t3
    except BaseException:
        check.kill()
        workdir.cleanup()
        raise
    pythonpath = ["."]
    shipped: dict[str, skein.File] = {
        PAYLOAD: skein.File(source=str(wd / PAYLOAD), type="file"),
    }
    if report is not None:
        # Our own tar: shipped as a file (kept by each NodeManager between runs, as the
        # visibility says) and unpacked by the service script, see UNPACK_ENV.
        shipped[ENV_TAR] = skein.File(source=archive, type="file", visibility="private")
    else:
        shipped["env"] = skein.File(
            source=_file_source(archive), type="archive", visibility="private"
        )
    if sources:
        shipped[SOURCES] = skein.File(source=str(sources), type="file")
        pythonpath.append(SOURCES)
    if pip_packages:
        t4 = time.perf_counter()
        overlay, _ = packing.ensure_overlay(list(pip_packages), report.key if report else archive)
        phases["pip_overlay"] = time.perf_counter() - t4
        shipped["overlay"] = skein.File(source=overlay, type="archive", visibility="private")
        pythonpath.append("overlay")
    for target, src in local_files.items():
        shipped[target] = skein.File(source=str(src))
    env_vars = task_env(user_env, specs, peer_timeout_s=peer_timeout_s, heartbeat=heartbeat)
    if report is not None:
        env_vars["TFYARN_ENV_KEY"] = report.key
    script = service_script(interpreter, pythonpath)
    services = {
        ttype: skein.Service(
            resources=skein.Resources(memory=s.memory, vcores=s.vcores),
            script=script,
            instances=s.instances,
            files=shipped,
            env=env_vars,
            node_label=s.label.value,
        )
        for ttype, s in specs.items()
    }
    user = filesystem.hadoop_user()
    app_spec = skein.ApplicationSpec(
        name=name,
        queue=queue,
        services=services,
        file_systems=list(file_systems or []),
        acls=_acls(user, acls),
        max_attempts=1,
        tags=["tfyarn"],
    )
    return _Prepared(app_spec, specs, phases, report, workdir)


def _file_source(path: str) -> str:
    if "://" in path:
        return path
    if path.startswith("/user/") or path.startswith("/tmp/"):
        return filesystem.qualify(path)
    return str(Path(path).expanduser().absolute())


def with_attempt(spec: skein.ApplicationSpec, attempt: int) -> skein.ApplicationSpec:
    d = spec.to_dict()
    for svc in d["services"].values():
        svc["env"]["TFYARN_ATTEMPT"] = str(attempt)
    return skein.ApplicationSpec.from_dict(d)


def submit_spec(client: skein.Client, spec: skein.ApplicationSpec) -> str:
    """Submit; if anything fails after YARN knows the application, kill it."""
    app_id = None
    try:
        app_id = client.submit(spec)
        return app_id
    except BaseException:
        if app_id is not None:
            with contextlib.suppress(Exception):
                client.kill_application(app_id)
        raise


# -- the handle ---------------------------------------------------------------------
_live_runs: weakref.WeakSet[Run] = weakref.WeakSet()


@atexit.register
def _kill_undetached_runs() -> None:
    """No orphans: when the kernel exits, end the runs it launched (unless detached)."""
    for run in list(_live_runs):
        if not run.detached:
            with contextlib.suppress(Exception):
                run.cancel()


class Run:
    """A run on YARN, live or finished: poll it, wait for it, stop it, read its logs."""

    def __init__(
        self,
        client: skein.Client,
        app_id: str,
        task_specs: Mapping[str, TaskSpec],
        *,
        spec: skein.ApplicationSpec | None = None,
        nb_retries: int = 0,
        phases: Mapping[str, float] | None = None,
        env_report: packing.EnvReport | None = None,
        detached: bool = False,
        heartbeat: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.task_specs = dict(task_specs)
        self.attempts = [app_id]
        self.nb_retries = nb_retries
        self.detached = detached
        self.phases = dict(phases or {})
        self.env_report = env_report
        self.submitted_at = time.time()
        self._spec = spec
        self._env = redact_env(env or {})
        self._lock = threading.RLock()
        self._poller = poller.StatusSource(client, app_id, self.task_specs)
        self._result: RunResult | None = None
        self._workdir: tempfile.TemporaryDirectory | None = None  # kept for retries
        self._heartbeat_stop = threading.Event()
        _live_runs.add(self)
        if heartbeat and not detached:
            self._start_heartbeat()

    # -- identity --
    @property
    def app_id(self) -> str:
        return self.attempts[-1]

    @property
    def attempt(self) -> int:
        return len(self.attempts) - 1

    def __repr__(self) -> str:
        return f"<Run {self.app_id} attempt={self.attempt}>"

    def _repr_html_(self) -> str:
        from .widget import status_html

        return status_html(self.status())

    # -- heartbeat --
    def _start_heartbeat(self) -> None:
        ref = weakref.ref(self)
        stop = self._heartbeat_stop

        def beat() -> None:
            while True:
                run = ref()
                # The whole run, not the current attempt: a failed attempt that will be
                # retried has ended too, and its successor needs the heartbeat.
                if run is None or run.ended:
                    return
                run._poller.heartbeat()
                del run
                if stop.wait(HEARTBEAT_INTERVAL_S):
                    return

        threading.Thread(target=beat, name="tfyarn-heartbeat", daemon=True).start()
        weakref.finalize(self, stop.set)

    # -- state --
    @property
    def last_status(self) -> RunStatus | None:
        return self._poller.last

    def status(self) -> RunStatus:
        """One fresh snapshot (a fixed, small number of calls whatever the size)."""
        with self._lock:
            was_ended = self._poller.ended
            st = self._poller.poll()
            st.attempt = self.attempt
            if st.ended and not was_ended:
                self._persist(st)
            if st.ended and not st.succeeded and self.attempt < self.nb_retries:
                self._retry()
                st = self._poller.poll()
                st.attempt = self.attempt
            return st

    def _persist(self, st: RunStatus) -> None:
        """Keep the run's history (states, times, tracebacks, metrics) on HDFS, owner-only."""
        record = {
            "version": 1,
            "status": st.to_dict(),
            "task_specs": {t: s.to_dict() for t, s in self.task_specs.items()},
            "events": {"tasks": self._poller.events.tasks},
            "attempts": list(self.attempts),
            "env": self._env,
        }
        with contextlib.suppress(Exception):
            filesystem.write_bytes(
                event_log_path(st.app.app_id), json.dumps(record).encode(), permission="600"
            )

    def _retry(self) -> None:
        assert self._spec is not None
        spec = with_attempt(self._spec, self.attempt + 1)
        app_id = submit_spec(self.client, spec)
        self.attempts.append(app_id)
        self._poller = poller.StatusSource(self.client, app_id, self.task_specs)

    @property
    def ended(self) -> bool:
        return (self._poller.ended and self.attempt >= self.nb_retries) or (
            self._poller.ended and self._poller.last is not None and self._poller.last.succeeded
        )

    def wait(self, timeout: float | None = None, interval: float = 1.0) -> RunResult:
        """Block until the run (and its retries) ended; raise :class:`RunFailed` on failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.status()
            if st.ended and (st.succeeded or self.attempt >= self.nb_retries):
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{self.app_id} still {st.app.state} after {timeout}s")
            time.sleep(interval)
        self._heartbeat_stop.set()
        result = self._make_result(st)
        if not st.succeeded:
            failure = st.failure or {}
            task = failure.get("task", "")
            tb = failure.get("traceback", "") or st.app.diagnostics
            where = f" in task {task}" if task else ""
            raise RunFailed(
                f"{self.app_id} ended {st.app.state}/{st.app.final_status}{where}:\n{tb}",
                task=task,
                traceback=tb,
                status=st,
            )
        return result

    def _make_result(self, st: RunStatus) -> RunResult:
        ev = self._poller.events

        def span(task: str, a: str, b: str) -> float:
            d = ev.task(task)
            return round(d[b]["t"] - d[a]["t"], 2) if a in d and b in d else 0.0

        summary = st.summary() or {}
        self._result = RunResult(
            app_id=self.app_id,
            final_status=summary.get("final_status", st.app.final_status),
            tasks=summary.get("tasks", {}),
            metrics=dict(st.metrics[-1]) if st.metrics else {},
            training_time_s=span("chief:0", "train_start", "train_stop"),
            eval_time_s=span("evaluator:0", "eval_start", "eval_stop"),
            duration_s=summary.get("duration_s", 0.0),
            attempts=list(self.attempts),
            logs=f"yarn logs -applicationId {self.app_id}",
        )
        return self._result

    @property
    def result(self) -> RunResult | None:
        return self._result

    # -- actions --
    def cancel(self) -> None:
        """Kill the application (checkpoints already written stay in ``model_dir``)."""
        self.nb_retries = self.attempt
        self._heartbeat_stop.set()
        if self._poller.ended:
            return
        self.client.kill_application(self.app_id)

    def kill_task(self, task: str) -> None:
        """Kill one task's container (``"worker:1"``)."""
        self._poller.kill_task(task)

    def logs(self, task: str | None = None, tail: int = 65536) -> dict[str, str]:
        """The task's stdout/stderr: live from its NodeManager, else from aggregated logs."""
        return self._poller.logs(task, tail=tail)

    @property
    def env(self) -> dict[str, str]:
        """The environment the tasks got, secrets masked."""
        return dict(self._env)


def submit(
    experiment_fn: Callable[[], Any],
    task_specs: Mapping[str, TaskSpec],
    *,
    files: Mapping[str, str | os.PathLike] | None = None,
    env: Mapping[str, str] | None = None,
    queue: str = "default",
    pip_packages: Sequence[str] | None = None,
    file_systems: Sequence[str] | None = None,
    name: str = "tfyarn",
    acls: skein.ACLs | Mapping[str, Sequence[str]] | None = None,
    nb_retries: int = 0,
    pyenv_archive: str | None = None,
    detach: bool = False,
    source_roots: Mapping[str, Path] | None = None,
    peer_timeout_s: float = 300.0,
) -> Run:
    """Launch a run and return its handle at once."""
    if isinstance(nb_retries, bool) or not isinstance(nb_retries, int) or nb_retries < 0:
        raise SpecError(f"nb_retries must be an int >= 0, got {nb_retries!r}")
    t0 = time.perf_counter()
    prep = prepare(
        experiment_fn,
        task_specs,
        files=files,
        env=env,
        queue=queue,
        pip_packages=pip_packages,
        file_systems=file_systems,
        name=name,
        acls=acls,
        pyenv_archive=pyenv_archive,
        source_roots=source_roots,
        heartbeat=not detach,
        peer_timeout_s=peer_timeout_s,
    )
    try:
        client = get_client()
        t1 = time.perf_counter()
        spec = with_attempt(prep.spec, 0)
        app_id = submit_spec(client, spec)
        prep.phases["submit"] = time.perf_counter() - t1
        prep.phases["total"] = time.perf_counter() - t0
    finally:
        if not nb_retries:
            prep.workdir.cleanup()
    run = Run(
        client,
        app_id,
        prep.task_specs,
        spec=prep.spec,
        nb_retries=nb_retries,
        phases=prep.phases,
        env_report=prep.env_report,
        detached=detach,
        heartbeat=not detach,
        env=env,
    )
    if nb_retries:
        # A retry submits the same spec again: its local files (payload, sources) must stay.
        # The folder goes when the run handle does (TemporaryDirectory's finalizer).
        run._workdir = prep.workdir
    if detach:
        with contextlib.suppress(Exception):
            run._poller.mark_detached()
    return run


def run_on_yarn(
    experiment_fn: Callable[[], Any],
    task_specs: Mapping[str, TaskSpec],
    *,
    files: Mapping[str, str | os.PathLike] | None = None,
    env: Mapping[str, str] | None = None,
    queue: str = "default",
    pip_packages: Sequence[str] | None = None,
    file_systems: Sequence[str] | None = None,
    name: str = "tfyarn",
    acls: skein.ACLs | Mapping[str, Sequence[str]] | None = None,
    nb_retries: int = 0,
    pyenv_archive: str | None = None,
) -> RunResult:
    """Train ``experiment_fn``'s Experiment on YARN and wait for the end (the seed's API)."""
    run = submit(
        experiment_fn,
        task_specs,
        files=files,
        env=env,
        queue=queue,
        pip_packages=pip_packages,
        file_systems=file_systems,
        name=name,
        acls=acls,
        nb_retries=nb_retries,
        pyenv_archive=pyenv_archive,
    )
    try:
        return run.wait()
    except KeyboardInterrupt:
        run.cancel()
        raise


def event_log_path(app_id: str) -> str:
    return f"{filesystem.home()}/.tfyarn/runs/{app_id}.json"


def read_event_log(app_id: str) -> dict[str, Any] | None:
    try:
        return json.loads(filesystem.read_bytes(event_log_path(app_id)))
    except filesystem.HdfsError:
        return None


def attach(app_id: str) -> Run:
    """A handle on a run launched earlier (another kernel, detached, or finished).

    A live run's topology comes from its application master; a finished
    run's final state from the event log it left on HDFS.
    """
    client = get_client()
    report = client.application_report(app_id)
    state = poller.app_info(report).state
    if state in ENDED_APP:
        record = read_event_log(app_id)
        if record is None:
            raise RunFailed(
                f"{app_id} ended {state} and left no tfyarn event log "
                f"({event_log_path(app_id)}): was it launched by tfyarn_jupyter?"
            )
        specs = {t: TaskSpec.from_dict(d) for t, d in record["task_specs"].items()}
        run = Run(client, app_id, specs, heartbeat=False, detached=True)
        run._poller.restore(record)
        return run
    specs = poller.task_specs_of(client, app_id, report)
    # Attaching does not take ownership: the new kernel leaves the run running on exit.
    return Run(client, app_id, specs, heartbeat=True, detached=True)


def events_snapshot(run: Run) -> events.Events:
    return run._poller.events
