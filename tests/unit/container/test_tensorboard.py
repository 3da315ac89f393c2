"""The tensorboard task type: its spec, contract, the log folder's mirror, the link, the task.

The mirror (:class:`~tfyarn_jupyter.container.tensorboard.LogSync`) is pure logic over a
listing and byte ranges: its HDFS client is a dict here (the sandbox test runs
it against HDFS). The task runs with a fake skein application whose key-value
store is a dict, TensorBoard and the web UI replaced where named.
"""

from __future__ import annotations

import base64
import dataclasses
import http.server
import json
import os
import threading
import types

import pytest
import requests
import skein

from tfyarn_jupyter.container import roles, tensorboard
from tfyarn_jupyter.container import task as tasks
from tfyarn_jupyter.container.tensorboard import LogSync, wanted
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec, task_names, validate_task_specs
from tfyarn_jupyter.core.state import AppInfo
from tfyarn_jupyter.protocol import contract, events
from tfyarn_jupyter.protocol.contract import TaskContract, TensorBoardContract
from tfyarn_jupyter.run import checks, skein_app
from tfyarn_jupyter.run.polling import tensorboard_url

CHIEF = TaskSpec("1G", 1)


# -- the spec -----------------------------------------------------------------------------------
def test_a_tensorboard_task_is_a_supported_task_type_listed_last():
    specs = validate_task_specs({"tensorboard": TaskSpec("1G", 1), "chief": CHIEF})
    assert list(specs) == ["chief", "tensorboard"]
    assert task_names(specs) == ["chief:0", "tensorboard:0"]


def test_tensorboard_fields_round_trip_through_plain_data():
    args = "--samples_per_plugin 'scalars=500' --reload_interval 2"
    tb = TaskSpec("1G", 1, tb_termination_timeout_seconds=0, tb_model_dir="hdfs:///m",
                  tb_extra_args=args)  # fmt: skip
    d = tb.to_dict()
    assert d["tb_termination_timeout_seconds"] == 0 and d["tb_model_dir"] == "hdfs:///m"
    assert TaskSpec.from_dict(d) == tb
    assert "tb_model_dir" not in TaskSpec("1G", 1).to_dict()  # defaults stay out
    validate_task_specs({"chief": CHIEF, "tensorboard": tb})


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, 2)}, "at most one tensorboard"),
        ({"tensorboard": TaskSpec("1G", 1)}, "needs something that trains"),
        ({"chief": TaskSpec("1G", 1, tb_model_dir="/m")}, r"tb_model_dir belong to the 'tens"),
        ({"chief": TaskSpec("1G", 1, tb_termination_timeout_seconds=5)}, "tensorboard"),
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_extra_args="--port 6006")},
         "--port is set by the tensorboard task"),
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_extra_args="--logdir=/x")},
         "--logdir is set"),
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_extra_args="--bind_all")},
         "--bind_all is set"),
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_extra_args="'open")},
         "cannot be split"),
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_extra_args='--x "y"')},
         "double quote"),
        ({"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_model_dir=" ")}, "is empty"),
    ],
)  # fmt: skip
def test_a_bad_tensorboard_request_is_refused_saying_how_to_fix_it(specs, message):
    with pytest.raises(SpecError, match=message):
        validate_task_specs(specs)


def test_a_termination_timeout_below_minus_one_is_refused():
    with pytest.raises(SpecError, match="must be >= 0"):
        TaskSpec("1G", 1, tb_termination_timeout_seconds=-2)


# -- the contract and the service's environment --------------------------------------------------
def test_the_tensorboard_contract_round_trips_through_the_services_environment():
    env = skein_app.tensorboard_env(TaskSpec("1G", 1, tb_extra_args="--reload_interval 2"))
    assert env == {contract.TB_TIMEOUT_VAR: "30", contract.TB_ARGS_VAR: "--reload_interval 2"}
    back = TensorBoardContract.from_env(env)
    assert back == TensorBoardContract("", 30, "--reload_interval 2")
    assert back.argv == ["--reload_interval", "2"]
    spec = TaskSpec("1G", 1, tb_termination_timeout_seconds=0, tb_model_dir="hdfs://nn/m")
    assert TensorBoardContract.from_env(skein_app.tensorboard_env(spec)) == TensorBoardContract(
        "hdfs://nn/m", 0, ""
    )
    with pytest.raises(contract.ContractError, match="whole number"):
        TensorBoardContract.from_env({contract.TB_TIMEOUT_VAR: "soon"})


def test_only_the_tensorboard_service_gets_its_variables():
    specs = {"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_model_dir="/m")}
    spec = skein_app.application_spec(
        specs, LaunchOptions(), TaskContract({"chief": 1, "tensorboard": 1}), {}, "true"
    )
    assert spec.services["tensorboard"].env[contract.TB_MODEL_DIR_VAR] == "/m"
    assert contract.TB_MODEL_DIR_VAR not in spec.services["chief"].env
    assert spec.services["tensorboard"].env[contract.TASKS_VAR] == "chief=1,tensorboard=1"


def test_a_function_run_needs_tb_model_dir_and_a_custom_module_excludes_tensorboard():
    specs = {"chief": CHIEF, "tensorboard": TaskSpec("1G", 1)}
    with pytest.raises(SpecError, match="tb_model_dir="):
        checks.check_tensorboard(specs, LaunchOptions(mode="function"))
    checks.check_tensorboard(
        {"chief": CHIEF, "tensorboard": TaskSpec("1G", 1, tb_model_dir="/m")},
        LaunchOptions(mode="function"),
    )
    with pytest.raises(SpecError, match="custom_task_module"):
        checks.check_tensorboard(specs, LaunchOptions(custom_task_module="my.task"))


# -- the link -----------------------------------------------------------------------------------
def test_the_link_is_there_only_while_tensorboard_serves():
    running = AppInfo("application_1_0001", state="RUNNING")
    url = "http://rm:8088/proxy/application_1_0001/pages/tensorboard/"
    ev = events.Events()
    assert tensorboard_url(running, ev) is None
    ev.tasks["tensorboard:0"] = {"container": {"t": 1.0}, "start": {"url": url, "t": 2.0}}
    assert tensorboard_url(running, ev) == url + "#timeseries"
    # The run's user, for the proxy's ACL check on a cluster without Kerberos; the query
    # goes before the fragment, or the proxy never sees it.
    owned = dataclasses.replace(running, user="alice")
    assert tensorboard_url(owned, ev) == url + "?user.name=alice#timeseries"
    assert tensorboard_url(dataclasses.replace(running, state="FINISHED"), ev) is None
    ev.tasks["tensorboard:0"]["stop"] = {"traceback": "", "t": 3.0}
    assert tensorboard_url(running, ev) is None


# -- the mirror ---------------------------------------------------------------------------------
class FakeHdfs:
    """An HDFS client over a dict of path -> bytes (listing, whole and ranged reads)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.ranged: list[tuple[str, int, int]] = []

    def list_status(self, path: str, recursive: bool = False):
        if not any(p.startswith(path + "/") for p in self.files):
            raise FileNotFoundError(path)
        return [types.SimpleNamespace(path=p, length=len(b), isdir=False)
                for p, b in self.files.items() if p.startswith(path + "/")]  # fmt: skip

    def read(self, path: str):
        fake = self

        class Reader:
            def __init__(self) -> None:
                self.pos = 0

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                pass

            def read(self, n: int = -1) -> bytes:
                data = fake.files[path][self.pos : None if n < 0 else self.pos + n]
                self.pos += len(data)
                return data

            def read_range(self, offset: int, length: int) -> bytes:
                fake.ranged.append((path, offset, length))
                return fake.files[path][offset : offset + length]

        return Reader()


def read(*parts: str) -> bytes:
    with open(os.path.join(*parts), "rb") as fh:
        return fh.read()


def test_wanted_leaves_out_checkpoints_and_temporaries():
    assert wanted("events.out.tfevents.1.host") and wanted("eval/events.out.tfevents.2.host")
    assert wanted("graph.pbtxt") and wanted("projector_config.pbtxt")
    for name in ("checkpoint", "model.ckpt-100.index", "model.ckpt-100.meta",
                 "model.ckpt-100.data-00000-of-00001", "ckpt-25.index",
                 "export/1/variables/variables.data-00000-of-00001",
                 "events.out.tfevents.1.host.tfyarn-tmp-abc"):  # fmt: skip
        assert not wanted(name), name


def test_the_mirror_copies_new_files_appends_grown_ones_and_recopies_replaced_ones(tmp_path):
    hdfs = FakeHdfs({"/m/events.out.tfevents.1": b"A" * 10, "/m/eval/events.out.tfevents.2": b"E",
                     "/m/model.ckpt-1.index": b"x" * 100, "/m/checkpoint": b"c"})  # fmt: skip
    sync = LogSync("hdfs://nn:8020/m", tmp_path, client=hdfs)
    assert sync.once() == 11
    local = sync.local
    assert sorted(os.listdir(local)) == ["eval", "events.out.tfevents.1"]
    assert read(local, "eval", "events.out.tfevents.2") == b"E"
    assert sync.once() == 0  # nothing changed: nothing fetched
    hdfs.files["/m/events.out.tfevents.1"] = b"A" * 10 + b"B" * 5  # the writer appended
    assert sync.once() == 5
    assert hdfs.ranged == [("/m/events.out.tfevents.1", 10, 5)]
    assert read(local, "events.out.tfevents.1") == b"A" * 10 + b"B" * 5
    hdfs.files["/m/events.out.tfevents.1"] = b"C" * 3  # replaced by a shorter file
    assert sync.once() == 3
    assert read(local, "events.out.tfevents.1") == b"CCC"
    assert (sync.stats.files, sync.stats.copied_bytes, sync.stats.appended_bytes) == (3, 14, 5)
    assert not [n for n in os.listdir(local) if "tmp" in n]


def test_a_folder_not_written_yet_mirrors_nothing_and_two_uris_get_two_folders(tmp_path):
    hdfs = FakeHdfs({})
    assert LogSync("hdfs:///m", tmp_path, client=hdfs).once() == 0
    mirrors = {LogSync(uri, tmp_path, hdfs).local for uri in ("hdfs:///m", "viewfs:///m")}
    assert len(mirrors) == 2


# -- the task -----------------------------------------------------------------------------------
class FakeKV(dict):
    def get_range(self) -> dict[str, bytes]:
        return dict(self)


class FakeUI:
    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.targets: dict[str, str] = {}

    def add_page(self, route: str, target: str, link_name: str | None = None):
        self.pages[route] = self.targets[route] = target
        address = f"http://rm:8088/proxy/application_1_0001/pages/{route}/"
        return types.SimpleNamespace(address=address)

    def remove_page(self, route: str) -> None:
        del self.pages[route]


class FakeApp:
    def __init__(self) -> None:
        self.kv = FakeKV()
        self.ui = FakeUI()

    def get_containers(self, **_kwargs):
        return []


@pytest.fixture
def tb_task(monkeypatch):
    """A tensorboard task beside a chief, in a fake application; TensorBoard not started."""
    app = FakeApp()
    monkeypatch.setattr(skein.ApplicationClient, "from_current", staticmethod(lambda: app))
    env = {**TaskContract({"chief": 1, "tensorboard": 1}, ack_timeout_s=0.1).to_env(),
           **TensorBoardContract("/models/m", 0).to_env(),
           "SKEIN_CONTAINER_ID": "tensorboard_0"}  # fmt: skip
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    monkeypatch.setattr(tensorboard, "WATCH_INTERVAL_S", 0.01)
    return tasks.Task(app)


def test_the_task_serves_the_folder_publishes_the_link_and_ends_after_the_others(
    tb_task, monkeypatch
):
    served: list[tuple[str, list[str]]] = []

    def serve(logdir: str, argv: list[str]) -> int:
        served.append((logdir, argv))
        tb_task.app.kv[events.task_key("chief:0", "stop")] = events.encode({"traceback": ""})
        return 6006

    monkeypatch.setattr(tensorboard, "serve", serve)
    assert roles.run(tb_task) == 0
    assert served == [("/models/m", [])]
    ev = tb_task.snapshot().task("tensorboard:0")
    assert ev["start"]["url"] == "http://rm:8088/proxy/application_1_0001/pages/tensorboard/"
    # The page's target is the adapter in front of TensorBoard, on another port.
    assert ev["start"]["target"] == tb_task.app.ui.targets["tensorboard"]
    assert not ev["start"]["target"].endswith(":6006") and ev["start"]["logdir"] == "/models/m"
    assert ev["stop"]["traceback"] == ""
    assert tb_task.app.ui.pages == {}  # the page went with TensorBoard


def test_tensorboard_failing_is_reported_but_never_fails_the_application(tb_task, monkeypatch):
    def serve(logdir: str, argv: list[str]) -> int:
        raise OSError("no port")

    monkeypatch.setattr(tensorboard, "serve", serve)
    assert roles.run(tb_task) == 0  # a container exiting 1 would end the whole application
    stop = tb_task.snapshot().task("tensorboard:0")["stop"]
    assert "OSError: no port" in stop["traceback"] and stop["exit_code"] == 1
    assert "init" not in tb_task.snapshot().task("tensorboard:0")  # never joined the cluster


# -- the adapter in front of TensorBoard ---------------------------------------------------------
class Echo(http.server.BaseHTTPRequestHandler):
    """Stands for TensorBoard: answers what it got (an HTML page at /)."""

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/":
            out, kind = b"<!doctype html><html><head><title>TB</title></head></html>", "text/html"
        else:
            seen = {"method": self.command, "path": self.path, "body": body.decode(),
                    "type": self.headers.get("Content-Type"),
                    "xsrf": self.headers.get("X-XSRF-Protected")}  # fmt: skip
            out, kind = json.dumps(seen).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def adapter() -> str:
    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{tensorboard.adapt(backend.server_address[1])}"
    backend.shutdown()


def test_the_page_loads_the_shim_first_and_the_adapter_serves_it(adapter):
    page = requests.get(adapter + "/", timeout=10).text
    assert page.index('<script src="./tfyarn-shim.js">') < page.index("<title>")
    shim = requests.get(adapter + "/tfyarn-shim.js", timeout=10)
    assert shim.headers["Content-Type"].startswith("text/javascript")
    assert "XMLHttpRequest.prototype" in shim.text and "'PUT'" in shim.text
    assert tensorboard.with_shim(b"<p>no head</p>").startswith(tensorboard.SHIM_TAG)


def test_a_wrapped_put_reaches_tensorboard_as_the_post_it_was(adapter):
    form = "requests=%5B%7B%22tag%22%3A%22loss%22%7D%5D"
    wrapped = b"tfyarn:" + base64.b64encode(b"application/x-www-form-urlencoded\n" + form.encode())
    got = requests.put(adapter + "/data/x?a=1", data=wrapped,
                       headers={"Content-Type": "text/plain"}, timeout=10).json()  # fmt: skip
    assert got == {"method": "POST", "path": "/data/x?a=1", "body": form, "xsrf": "1",
                   "type": "application/x-www-form-urlencoded"}  # fmt: skip
    # Sent in chunks, as YARN's proxy sends a PUT's body.
    chunked = requests.put(adapter + "/data/x", data=iter([wrapped[:9], wrapped[9:]]),
                           headers={"Content-Type": "text/plain"}, timeout=10).json()  # fmt: skip
    assert chunked["body"] == form and chunked["method"] == "POST"


def test_other_requests_pass_as_they_are(adapter):
    plain = requests.put(adapter + "/p", data=b"raw", timeout=10).json()
    assert (plain["method"], plain["body"], plain["xsrf"]) == ("PUT", "raw", None)
    post = requests.post(adapter + "/p", data=b"direct", timeout=10).json()
    assert (post["method"], post["body"], post["xsrf"]) == ("POST", "direct", None)
    assert requests.get(adapter + "/q?x=%7B%7D", timeout=10).json()["path"] == "/q?x=%7B%7D"


# -- the magic ----------------------------------------------------------------------------------
def test_the_magic_adds_a_tensorboard_task_with_defaults_or_the_resources_given():
    from IPython.core.error import UsageError

    from tfyarn_jupyter.magic.extension import parse_launch

    args = parse_launch("--tensorboard --mlflow")
    assert list(args.task_specs) == ["chief", "tensorboard"]
    assert args.task_specs["tensorboard"] == TaskSpec("1G", 1)
    assert args.options.mlflow is True
    args = parse_launch("--tensorboard 2G/2 --evaluator 1G/1")
    assert list(args.task_specs) == ["chief", "evaluator", "tensorboard"]
    assert str(args.task_specs["tensorboard"]) == "2048M/2"
    plain = parse_launch("")
    assert "tensorboard" not in plain.task_specs and plain.options.mlflow is None
    with pytest.raises(UsageError, match=r"--tensorboard .* exactly one tensorboard"):
        parse_launch("--tensorboard 1G/1x2")
