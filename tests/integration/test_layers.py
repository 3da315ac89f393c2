"""Layered environments on a sandbox whose NodeManagers cannot see the client's Python.

The suite starts its own ``tfyarn-sandbox start --nodes-without-python`` (or reuses
a running one at ``TFYARN_NWP_SANDBOX_DIR``, left running) and stops the one it
started. Each launch runs ``layers_driver.py`` in a subprocess, from the venv it
ships: this repository's, or a hard-linked copy that ``pip`` changes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tfyarn_sandbox.fixtures import shaped_sandbox
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes import shape as sandbox_shape
from tfyarn_sandbox.shapes.shape import Shape

from .conftest import NOTEBOOKS
from .helpers import unique

pytestmark = pytest.mark.sandbox

DRIVER = Path(__file__).with_name("layers_driver.py")
SHAPE = Shape(nodes_without_python=True)
HIDDEN = [str(p) for p in sandbox_shape.python_paths()]
#: What the kernel test reads back from the magic's Run handle.
SUMMARY = (
    "{'final': str(run.status().app.final_status), 'layered': hasattr(run.env_report, 'layers'), "
    "'layers': len(run.env_report.layers), 'uploaded': run.env_report.uploaded}"
)


@pytest.fixture(scope="module")
def nwp_box(tmp_path_factory) -> Iterator[Sandbox]:
    """The ``--nodes-without-python`` sandbox (each launch gets its env explicitly)."""
    given = os.environ.get("TFYARN_NWP_SANDBOX_DIR")
    root = Path(given) if given else tmp_path_factory.mktemp("nwp")
    with shaped_sandbox(root, SHAPE, reuse=bool(given), export=False) as box:
        yield box


def launch(box: Sandbox, python: Path, tmp: Path, user: str | None = None, **args) -> dict:
    """Run the driver with ``python``; its JSON result."""
    result = tmp / f"{unique('result')}.json"
    args = {"name": unique("tfyarn-test-layers"), "result": str(result), "hidden": HIDDEN,
            "notebooks": str(NOTEBOOKS), **args}  # fmt: skip
    env = {**os.environ, **box.env(user)}
    proc = subprocess.run([str(python), str(DRIVER), json.dumps(args)], env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(result.read_text())


def localised(box: Sandbox) -> dict[str, list[Path]]:
    """Every layer file the NodeManagers localised: ``{name: [paths]}``."""
    found: dict[str, list[Path]] = {}
    for path in (box.root / "nm").glob("*/local/**/filecache/*/[LI]-*.tar"):
        found.setdefault(path.name, []).append(path)
    return found


def test_nodemanagers_run_where_the_clients_python_is_hidden(nwp_box: Sandbox) -> None:
    pids = [p for n, p in (nwp_box._state() or {})["pids"].items() if n.startswith("nodem")]
    assert len(pids) == 2
    for pid in pids:
        mounts = Path(f"/proc/{pid}/mountinfo").read_text()
        for path in HIDDEN:
            assert f" {path} " in mounts, (pid, path)
    assert os.path.realpath(sys.base_prefix) in HIDDEN and os.path.realpath(sys.prefix) in HIDDEN


def test_quickstart_succeeds_with_a_shipped_interpreter(nwp_box: Sandbox, tmp_path: Path) -> None:
    out = launch(nwp_box, Path(sys.executable), tmp_path, kind="quickstart",
                 model_dir=str(tmp_path / "model"))  # fmt: skip
    assert out["status"] == "SUCCEEDED", out["status"]
    assert any(name.startswith("I-") for name in out["sizes"])  # the interpreter went along
    assert "tensorflow-cpu" in out["layers"] and "jupyterlab" not in out["layers"]
    assert (tmp_path / "model" / "checkpoint").exists()
    # Each node looked (once) for the shared libraries the interpreter loads from its
    # system; both have them all here: they share this host's /usr/lib.
    checked = list((nwp_box.root / "nm").glob(
        "*/local/usercache/*/tfyarn-layers/layers/I-*/.tfyarn-missing-libraries"))  # fmt: skip
    assert len(checked) >= 1, list((nwp_box.root / "nm").glob("*/local/usercache/*/*"))
    assert [p.read_text() for p in checked] == [""] * len(checked)


@pytest.fixture
def venv_copy(tmp_path: Path) -> Iterator[Path]:
    """The python of a copy of this venv (hard links: seconds, no disk) that pip may change.

    Removed when the test ends: unlinking the copy changes the originals' ctime, and a
    ``tar`` of this venv running then (a later launch) would stop on "file changed as we
    read it"."""
    dest = tmp_path / "venv"
    subprocess.run(["cp", "-al", sys.prefix, str(dest)], check=True)
    try:
        yield dest / "bin" / "python"
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def pip(python: Path, *args: str) -> None:
    proc = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q",
                           *args], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_one_package_changed_moves_only_its_layer(
    nwp_box: Sandbox, tmp_path: Path, build_wheel, venv_copy: Path
) -> None:
    wheel = build_wheel("tfyarn-layer-probe", "layer_probe", "VALUE = 42\n")
    python = venv_copy
    out_file = tmp_path / "probe.json"
    args = {"kind": "import", "module": "layer_probe", "out": str(out_file)}

    before = launch(nwp_box, python, tmp_path, **args)
    assert before["status"] == "SUCCEEDED", before["status"]
    probe = json.loads(out_file.read_text())
    assert probe["module"].startswith("ImportError"), probe
    assert probe["hidden"] == {p: False for p in HIDDEN}  # the container sees no client Python
    assert not probe["executable"].startswith(tuple(HIDDEN)), probe
    seen = localised(nwp_box)

    pip(python, "install", "--no-deps", "--no-index", str(wheel))
    added = launch(nwp_box, python, tmp_path, **args)
    assert added["status"] == "SUCCEEDED", added["status"]
    layer = added["layers"]["tfyarn-layer-probe"]
    assert added["uploaded"] == [layer]
    assert 0 < added["bytes_uploaded"] < 64 * 1024, added["bytes_uploaded"]
    new = {n: p for n, p in localised(nwp_box).items() if n not in seen}
    assert list(new) == [layer]
    assert sum(p.stat().st_size for p in new[layer]) == added["bytes_uploaded"] * len(new[layer])
    probe = json.loads(out_file.read_text())
    assert probe["module"].endswith("/env/lib/python3.11/site-packages/layer_probe/__init__.py")
    print(f"one package: uploaded {added['bytes_uploaded']} B, localised on {len(new[layer])} "
          f"node(s); phases {added['phases']}")  # fmt: skip

    pip(python, "uninstall", "-y", "tfyarn-layer-probe")
    removed = launch(nwp_box, python, tmp_path, **args)
    assert removed["status"] == "SUCCEEDED", removed["status"]
    assert removed["uploaded"] == [] and removed["bytes_uploaded"] == 0
    assert removed["key"] == before["key"] != added["key"]
    assert json.loads(out_file.read_text())["module"].startswith("ImportError")


def test_a_cold_launch_of_zstd_layers_ships_a_third_of_the_bytes_and_trains_to_succeeded(
    nwp_box: Sandbox, tmp_path: Path
) -> None:
    """A cold launch of compressed layers (``layer_codec="zstd"``): every layer, the shipped
    interpreter's too, uploaded as ``.tar.zst`` and unpacked by nodes whose layer cache is
    new (``TFYARN_ENV_CACHE``), with the client's zstd that travels with them; the
    quickstart's Estimator trains on it (chief + evaluator)."""
    cache = tmp_path / "node-cache"
    args = {"kind": "quickstart", "model_dir": str(tmp_path / "model"), "layer_codec": "zstd",
            "env": {"TFYARN_ENV_CACHE": str(cache)}}  # fmt: skip
    admin = {**os.environ, **nwp_box.env()}
    out: dict = {}
    try:
        out = launch(nwp_box, Path(sys.executable), tmp_path, **args)
        assert out["status"] == "SUCCEEDED", out["status"]
        names = list(out["uris"])
        assert names and all(n.endswith(".tar.zst") for n in names if n != "tfyarn-zstd"), names
        assert any(n.startswith("I-") for n in names), "the interpreter is compressed too"
        plain = sum(out["sizes"].values())
        uploaded = out["bytes_uploaded"]
        print(f"zstd layers: {uploaded / 1e6:.0f} MB uploaded for {plain / 1e6:.0f} MB of "
              f"files ({uploaded / plain:.2f}); phases {out['phases']}")  # fmt: skip
        assert set(out["uploaded"]) == set(names), "cold: every compressed layer uploaded"
        assert 0 < uploaded < 0.5 * plain, (uploaded, plain)
        unpacked = sorted(p.parent.name for p in cache.glob("layers/*/.tfyarn-unpacked"))
        assert unpacked == sorted(n.removesuffix(".tar.zst") for n in names), unpacked
        # TensorFlow's 853 MiB came as parts, each uploaded and unpacked on its own.
        parts = sorted(k for k in out["parts"] if k.startswith("tensorflow-cpu "))
        assert parts == [f"tensorflow-cpu {i}/4" for i in range(1, 5)], out["parts"]
        assert {out["parts"][k] for k in parts} <= set(out["uploaded"])
        assert (tmp_path / "model" / "checkpoint").exists(), "the chief trained and saved"
    finally:
        shutil.rmtree(cache, ignore_errors=True)  # the environment unpacked: 2 GB
        for uri in out.get("uris", {}).values():  # the compressed layers: 0.6 GB of HDFS
            subprocess.run(["hdfs", "dfs", "-rm", "-f", "-skipTrash", uri], env=admin,
                           capture_output=True)  # fmt: skip


def test_two_users_share_the_public_layers(nwp_box: Sandbox, tmp_path: Path) -> None:
    shared = f"/shared/{unique('layers')}"
    admin = {**os.environ, **nwp_box.env()}
    for cmd in (["-mkdir", "-p", shared], ["-chmod", "1777", shared]):
        subprocess.run(["hdfs", "dfs", *cmd], env=admin, check=True, capture_output=True)
    subprocess.run(["hdfs", "dfs", "-chmod", "755", "/shared"], env=admin, check=True)
    args = {"kind": "import", "module": "numpy", "shared_layer_cache": shared}
    earlier = {p for paths in localised(nwp_box).values() for p in paths}
    first = launch(nwp_box, Path(sys.executable), tmp_path, out=str(tmp_path / "a.json"), **args)
    time.sleep(1)
    second = launch(nwp_box, Path(sys.executable), tmp_path, user="alice",
                    out=str(tmp_path / "b.json"), **args)  # fmt: skip
    assert first["status"] == second["status"] == "SUCCEEDED", (first, second)
    numpy = first["layers"]["numpy"]
    assert first["uris"][numpy] == second["uris"][numpy] and shared in first["uris"][numpy]
    assert numpy in first["uploaded"] and numpy not in second["uploaded"]
    # alice uploads only her private layers (the venv's own files, editable and local
    # installs), none of the shared ones.
    shared_names = {n for n, uri in first["uris"].items() if shared in uri}
    assert shared_names and not shared_names & set(second["uploaded"]), second["uploaded"]
    assert all(shared not in second["uris"][n] for n in second["uploaded"])
    copies = [p for p in localised(nwp_box)[numpy] if p not in earlier]
    public = [p for p in copies if "usercache" not in p.parts]
    nodes = [p.relative_to(nwp_box.root / "nm").parts[0] for p in public]
    assert public and len(nodes) == len(set(nodes)), public  # once per node, for both users
    assert not [p for p in copies if "alice" in p.parts], copies
    assert json.loads((tmp_path / "b.json").read_text())["module"].endswith("__init__.py")


def test_the_magic_reports_the_layers_and_launches_with_them_by_default_from_a_kernel(
    nwp_box: Sandbox, tmp_path: Path
) -> None:
    from nbformat.v4 import new_code_cell, new_notebook

    from .test_notebook import execute, report, reported, stream

    shutil.copy(NOTEBOOKS / "cancer.py", tmp_path / "cancer.py")
    name = unique("tfyarn-test-layers-magic")
    nb = new_notebook()
    nb.cells = [
        new_code_cell(f"import os\nos.environ.update({nwp_box.env()!r})"),
        new_code_cell("%load_ext tfyarn_jupyter"),
        new_code_cell("%tfyarn env"),
        new_code_cell(f"import cancer\nmodel_dir = {str(tmp_path / 'model')!r}"),
        new_code_cell(
            f"%%tfyarn --chief 1G/1 --wait --var run --name {name}\n"
            "def experiment_fn():\n"
            "    return cancer.experiment(model_dir, max_steps=100)"
        ),
        new_code_cell(report(SUMMARY)),
    ]
    execute(nb, tmp_path)

    table = stream(nb.cells[2].outputs, "stdout")
    print(table)
    head, *rows = table.splitlines()
    assert " layers, " in head and " MiB (key " in head, head
    assert any("tensorflow-cpu" in r for r in rows), table
    assert any(" group " in r and "group-" in r for r in rows), table
    assert any("left out" in r and r.endswith(" playwright") for r in rows), table
    at = next(i for i, r in enumerate(rows) if r.startswith("interpreter "))
    assert rows[at].endswith(": shipped"), rows[at]
    # What the shipped (pyenv-built) interpreter still needs from each node's system.
    assert "each node's system" in rows[at + 1], rows[at + 1 :]
    assert "libssl.so.3 (_ssl)" in "\n".join(rows[at + 2 :]), rows[at + 2 :]
    out = reported(nb.cells[-1].outputs)
    assert out["final"] == "SUCCEEDED", out
    # Earlier launches from this venv on this sandbox uploaded every layer already.
    assert out["layered"] and out["layers"] > 10 and out["uploaded"] == [], out
    assert (tmp_path / "model" / "checkpoint").exists()
