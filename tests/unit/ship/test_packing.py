"""Packing the environment (tfyarn_jupyter.ship.packing), on fake venvs in tmp_path: no cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tfyarn_jupyter.ship import packing
from tfyarn_jupyter.ship.packing import PackingError


def _site_rel() -> Path:
    """Where site-packages sits inside a venv of this interpreter (lib/python3.X/site-packages)."""
    return Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)


def add_dist(sp: Path, name: str, record: str, direct_url: dict | None = None) -> Path:
    info = sp / f"{name}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "RECORD").write_text(record)
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return info


@pytest.fixture
def fake_venv(tmp_path) -> Path:
    """A venv layout: bin/python -> this interpreter, one installed distribution."""
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    sp = prefix / _site_rel()
    sp.mkdir(parents=True)
    add_dist(sp, "foo-1", "foo/__init__.py,sha256=aaa,10\nfoo-1.dist-info/RECORD,,\n")
    (sp / "foo").mkdir()
    (sp / "foo" / "__init__.py").write_text("VALUE = 1\n")
    return prefix


# -- env_key ----------------------------------------------------------------------------
def test_site_packages_of_a_prefix(fake_venv):
    assert packing.site_packages(fake_venv) == fake_venv / _site_rel()
    assert packing.site_packages(fake_venv).is_dir()


def test_env_key_is_stable(fake_venv):
    key = packing.env_key(fake_venv)
    assert key == packing.env_key(fake_venv)
    assert len(key) == 24 and all(c in "0123456789abcdef" for c in key)


def test_env_key_changes_when_a_record_changes(fake_venv):
    sp = packing.site_packages(fake_venv)
    before = packing.env_key(fake_venv)
    (sp / "foo-1.dist-info" / "RECORD").write_text(
        "foo/__init__.py,sha256=bbb,11\nfoo-1.dist-info/RECORD,,\n"
    )
    after = packing.env_key(fake_venv)
    assert after != before
    # Back to the same content: back to the same key (content, not mtime).
    (sp / "foo-1.dist-info" / "RECORD").write_text(
        "foo/__init__.py,sha256=aaa,10\nfoo-1.dist-info/RECORD,,\n"
    )
    assert packing.env_key(fake_venv) == before


def test_env_key_changes_when_a_distribution_is_added_or_upgraded(fake_venv):
    sp = packing.site_packages(fake_venv)
    k1 = packing.env_key(fake_venv)
    add_dist(sp, "bar-2.0", "bar.py,sha256=ccc,5\n")
    k2 = packing.env_key(fake_venv)
    assert k2 != k1
    # An upgrade with an identical RECORD text still renames the dist-info folder.
    (sp / "bar-2.0.dist-info").rename(sp / "bar-2.1.dist-info")
    assert packing.env_key(fake_venv) not in (k1, k2)


def test_env_key_ignores_files_that_are_not_records(fake_venv):
    sp = packing.site_packages(fake_venv)
    before = packing.env_key(fake_venv)
    (sp / "foo" / "__pycache__").mkdir()
    (sp / "foo" / "__pycache__" / "__init__.cpython.pyc").write_bytes(b"\0" * 16)
    (sp / "foo-1.dist-info" / "INSTALLER").write_text("pip\n")
    assert packing.env_key(fake_venv) == before


def test_env_key_depends_on_the_prefix(fake_venv, tmp_path):
    other = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(fake_venv), str(other)], check=True)
    assert packing.env_key(other) != packing.env_key(fake_venv)


def test_base_interpreter_resolves_the_venv_symlink(fake_venv):
    assert packing.base_interpreter(fake_venv) == os.path.realpath(sys.executable)


# -- venv_prefix --------------------------------------------------------------------------
def test_venv_prefix_outside_a_venv_explains(monkeypatch):
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)
    with pytest.raises(PackingError, match="virtual environment") as exc:
        packing.venv_prefix()
    assert "pyenv_archive" in str(exc.value)


def test_venv_prefix_inside_a_venv(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "v"))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert packing.venv_prefix() == tmp_path / "v"


# -- editable installs ---------------------------------------------------------------------
def test_editable_roots_finds_the_pth_folders_of_editable_installs(fake_venv, tmp_path):
    sp = packing.site_packages(fake_venv)
    src = tmp_path / "projects" / "bar" / "src"
    src.mkdir(parents=True)
    (sp / "__editable__.bar-0.1.pth").write_text(f"# comment\n{src}\nimport os\n")
    add_dist(
        sp,
        "bar-0.1",
        "__editable__.bar-0.1.pth,sha256=x,40\nbar-0.1.dist-info/RECORD,,\n",
        {"url": f"file://{src.parent}", "dir_info": {"editable": True}},
    )
    # Not editable: a local directory install whose .pth must be ignored.
    other = tmp_path / "projects" / "baz"
    other.mkdir()
    (sp / "baz.pth").write_text(f"{other}\n")
    add_dist(sp, "baz-1", "baz.pth,sha256=y,10\n", {"url": f"file://{other}", "dir_info": {}})
    # Editable, but its .pth names a folder that is gone.
    (sp / "gone.pth").write_text(f"{tmp_path / 'gone'}\n")
    add_dist(
        sp, "gone-1", "gone.pth,sha256=z,10\n", {"url": "file:///x", "dir_info": {"editable": True}}
    )
    # A broken direct_url.json is skipped, not an error.
    (sp / "foo-1.dist-info" / "direct_url.json").write_text("{not json")

    assert packing.editable_roots(fake_venv) == [src.resolve()]


def test_editable_roots_of_a_venv_without_any(fake_venv):
    assert packing.editable_roots(fake_venv) == []


def test_editable_roots_of_this_venv_include_the_project():
    # tfyarn_jupyter itself is installed editable in the test venv.
    import tfyarn_jupyter

    roots = packing.editable_roots(packing.venv_prefix())
    assert Path(tfyarn_jupyter.__file__).resolve().parent.parent in roots


# -- zip_sources ------------------------------------------------------------------------
def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_zip_sources_includes_packages_and_skips_caches(tmp_path):
    root = tmp_path / "src"
    _tree(
        root,
        {
            "top.py": "X = 1\n",
            "mypkg/__init__.py": "",
            "mypkg/mod.py": "VALUE = 42\n",
            "mypkg/data.json": "{}",
            "mypkg/sub/__init__.py": "",
            "mypkg/sub/deep.py": "D = 1\n",
            "mypkg/__pycache__/mod.cpython-311.pyc": "junk",
            "mypkg/node_modules/left_pad.py": "junk",
            "mypkg/stale.pyc": "junk",
            "node_modules/pkg/__init__.py": "junk",
            "__pycache__/top.cpython-311.pyc": "junk",
            ".hidden/__init__.py": "junk",
            "notapkg/helper.py": "junk",  # no __init__.py: not importable from the root
            "README.md": "junk",
        },
    )
    other = tmp_path / "other"
    _tree(other, {"second.py": "S = 2\n"})
    dest = tmp_path / "sources.zip"
    packing.zip_sources({"a": root, "b": other}, dest)
    names = set(zipfile.ZipFile(dest).namelist())
    assert names == {
        "top.py",
        "mypkg/__init__.py",
        "mypkg/mod.py",
        "mypkg/data.json",
        "mypkg/sub/__init__.py",
        "mypkg/sub/deep.py",
        "second.py",
    }
    # The zip works as a PYTHONPATH entry, as in the containers.
    out = subprocess.run(
        [sys.executable, "-c", "import mypkg.mod, mypkg.sub.deep, second; print(mypkg.mod.VALUE)"],
        env={**os.environ, "PYTHONPATH": str(dest)},
        capture_output=True,
        text=True,
        cwd=tmp_path / "other" / "..",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"


def test_sources_digest_changes_when_a_source_changes(tmp_path):
    root = tmp_path / "src"
    _tree(root, {"mypkg/__init__.py": "", "mypkg/mod.py": "A = 1\n"})
    d1 = packing.sources_digest([root])
    assert d1 == packing.sources_digest([root])
    (root / "mypkg" / "mod.py").write_text("A = 22\n")
    assert packing.sources_digest([root]) != d1


# -- pack / ensure_env (HDFS faked) --------------------------------------------------------
def test_pack_writes_a_tar_of_the_prefix(fake_venv, tmp_path):
    dest = tmp_path / "out" / "env.tar"
    packing.pack(fake_venv, dest)
    assert dest.exists()
    assert not list(dest.parent.glob("*.part-*"))
    with tarfile.open(dest) as tar:
        names = {n.lstrip("./") for n in tar.getnames()}
        link = tar.getmember("./bin/python")
    assert f"{_site_rel()}/foo/__init__.py" in names
    assert link.issym()  # the interpreter link is kept, not copied


def test_tar_chunks_stream_the_same_archive_that_pack_writes(fake_venv, tmp_path):
    sizes: list[int] = []
    streamed = b"".join(packing.tar_chunks(fake_venv, sizes.append))
    assert sizes == [len(streamed)]  # on_end is told the size, once, after the last chunk
    out = tmp_path / "streamed.tar"
    out.write_bytes(streamed)
    packing.pack(fake_venv, tmp_path / "packed.tar")
    with tarfile.open(out) as a, tarfile.open(tmp_path / "packed.tar") as b:
        assert sorted(a.getnames()) == sorted(b.getnames())
        assert a.getmember("./bin/python").issym()


def test_tar_chunks_raise_with_tars_message_when_tar_fails(tmp_path):
    ends: list[int] = []
    with pytest.raises(PackingError, match=r"with tar failed(.|\n)*missing"):
        b"".join(packing.tar_chunks(tmp_path / "missing", ends.append))
    assert ends == []


def test_pack_with_an_unknown_packer(fake_venv, tmp_path):
    with pytest.raises(PackingError, match="unknown packer"):
        packing.pack(fake_venv, tmp_path / "e.tar", packer="zip")


class FakeHdfs:
    def __init__(self):
        self.files: dict[str, int] = {}
        self.uploads: list[str] = []

    def exists(self, path):
        return path in self.files

    def upload(self, local, path, permission="600"):
        return self.upload_stream([Path(local).read_bytes()], path, permission)

    def upload_stream(self, chunks, path, permission="600"):
        self.files[path] = sum(len(c) for c in chunks)
        self.uploads.append(path)
        return "hdfs://nn" + path


@pytest.fixture
def fake_hdfs(monkeypatch, fake_venv, tmp_path):
    fs = FakeHdfs()
    monkeypatch.setattr(packing.filesystem, "exists", fs.exists)
    monkeypatch.setattr(packing.filesystem, "upload", fs.upload)
    monkeypatch.setattr(packing.filesystem, "upload_stream", fs.upload_stream)
    monkeypatch.setattr(packing.filesystem, "qualify", lambda p: "hdfs://nn" + p)
    monkeypatch.setattr(packing.filesystem, "home", lambda: "/user/tester")
    monkeypatch.setattr(packing, "venv_prefix", lambda: fake_venv)
    monkeypatch.setenv("TFYARN_CACHE", str(tmp_path / "cache"))
    return fs


def test_ensure_env_packs_and_uploads_once(fake_hdfs, fake_venv, tmp_path):
    first = packing.ensure_env()
    key = packing.env_key(fake_venv)
    assert first.key == key
    assert first.archive == f"hdfs://nn/user/tester/.tfyarn/envs/{key}.tar"
    assert (first.packed, first.uploaded) == (True, True)
    assert first.size > 0
    assert first.size == fake_hdfs.files[f"/user/tester/.tfyarn/envs/{key}.tar"]
    assert set(first.times) >= {"key", "check", "pack", "upload"}
    assert fake_hdfs.uploads == [f"/user/tester/.tfyarn/envs/{key}.tar"]
    assert not (tmp_path / "cache" / "envs" / f"{key}.tar").exists()  # local copy removed

    second = packing.ensure_env()
    assert (second.packed, second.uploaded) == (False, False)
    assert second.archive == first.archive
    assert len(fake_hdfs.uploads) == 1

    # A changed environment gets a new archive.
    add_dist(packing.site_packages(fake_venv), "new-1", "new.py,sha256=n,1\n")
    third = packing.ensure_env()
    assert third.archive != first.archive and third.uploaded
    assert len(fake_hdfs.uploads) == 2


def test_ensure_env_reuses_a_local_pack_when_only_the_upload_is_missing(
    fake_hdfs, fake_venv, tmp_path
):
    key = packing.env_key(fake_venv)
    local = tmp_path / "cache" / "envs" / f"{key}.tar"
    packing.pack(fake_venv, local)
    report = packing.ensure_env()
    assert (report.packed, report.uploaded) == (False, True)


def test_pip_key_depends_on_the_wheel_content(tmp_path):
    wheel = tmp_path / "x-1-py3-none-any.whl"
    wheel.write_bytes(b"one")
    k1 = packing._pip_key("env", [str(wheel)])
    assert k1 == packing._pip_key("env", [str(wheel)])
    assert packing._pip_key("other-env", [str(wheel)]) != k1
    wheel.write_bytes(b"two")
    assert packing._pip_key("env", [str(wheel)]) != k1
    assert packing._pip_key("env", ["requests==2.0"]) != packing._pip_key("env", ["requests==2.1"])
