"""The container's assembly of a layered environment (assemble.sh), on a fake layer set."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from tfyarn_jupyter.run import skein_app
from tfyarn_jupyter.ship import layered_launch
from tfyarn_jupyter.ship.layers import Layer, LayerError, Plan

CLIENT_BASE = "/opt/client-python"


def make_tar(dest: Path, files: dict[str, bytes], links: dict[str, str] | None = None) -> None:
    src = dest.with_suffix(".src")
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
        (src / rel).chmod(0o755)
    for rel, target in (links or {}).items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).symlink_to(target)
    with tarfile.open(dest, "w") as tar:
        for entry in sorted(src.rglob("*")):
            if not entry.is_dir() or entry.is_symlink():
                tar.add(entry, entry.relative_to(src).as_posix(), recursive=False)


@pytest.fixture
def layer_set(tmp_path: Path) -> Path:
    """A base layer (pyvenv.cfg, bin/python), two packages sharing a namespace folder,
    and an interpreter whose python3.11 is a shell script saying where it runs from."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    make_tar(
        shipped / "L-base1.tar",
        {"pyvenv.cfg": f"home = {CLIENT_BASE}/bin\nversion = 3.11.7\n".encode()},
        {"bin/python": "python3", "bin/python3": f"{CLIENT_BASE}/bin/python3.11"},
    )
    site = "lib/python3.11/site-packages"
    make_tar(shipped / "L-aaa1.tar", {f"{site}/ns/a/__init__.py": b"A = 1\n"})
    make_tar(shipped / "L-bbb1.tar", {f"{site}/ns/b/__init__.py": b"B = 1\n"})
    make_tar(shipped / "I-py1.tar", {"bin/python3.11": b"#!/bin/sh\necho interp $0\n"})
    return shipped


def script_for(tmp_path: Path) -> Path:
    plan = Plan(tmp_path, ())
    report = layered_launch.LayersReport("k", plan, None, CLIENT_BASE)
    script = tmp_path / "assemble.sh"
    script.write_text(skein_app.node_cache_script() + layered_launch.assembly_script(report))
    return script


def run_in(container: Path, script: Path, key: str, cache: Path, keep: int = 3) -> str:
    """Run the assembly in ``container`` (a folder holding the layer files); its output."""
    code = f'. {script}; echo "base=$TFYARN_BASE_PYTHON"; echo "ld=$LD_LIBRARY_PATH"'
    env = {"PATH": "/usr/bin:/bin", "TFYARN_ENV_KEY": key, "TFYARN_ENV_CACHE": str(cache),
           "TFYARN_ENV_KEEP": str(keep), "TFYARN_BASE_PYTHON": "/missing/python3"}  # fmt: skip
    proc = subprocess.run(
        ["bash", "-c", code], cwd=container, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def container_with(tmp_path: Path, layer_set: Path, name: str, tars: list[str]) -> Path:
    container = tmp_path / name
    container.mkdir()
    for t in tars:
        (container / t).symlink_to(layer_set / t)
    return container


def test_assembly_merges_layers_as_hard_links_and_points_at_the_interpreter(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache = script_for(tmp_path), tmp_path / "cache"
    tars = ["L-base1.tar", "L-aaa1.tar", "L-bbb1.tar", "I-py1.tar"]
    container = container_with(tmp_path, layer_set, "c1", tars)
    out = run_in(container, script, "env1", cache)
    env = container / "env"
    assert env.resolve() == cache / "envs" / "env1"
    site = env / "lib/python3.11/site-packages/ns"
    assert (site / "a/__init__.py").read_text() == "A = 1\n"
    assert (site / "b/__init__.py").read_text() == "B = 1\n"
    unpacked = cache / "layers" / "L-aaa1" / "lib/python3.11/site-packages/ns/a/__init__.py"
    assert (site / "a/__init__.py").stat().st_ino == unpacked.stat().st_ino
    interp = cache / "layers" / "I-py1"
    assert (env / "bin/python3").readlink() == interp / "bin/python3.11"
    assert f"home = {interp}/bin" in (env / "pyvenv.cfg").read_text()
    # The layer's own pyvenv.cfg is untouched: the env's is a file of its own.
    assert CLIENT_BASE in (cache / "layers" / "L-base1" / "pyvenv.cfg").read_text()
    assert f"base={interp}/bin/python3" in out and f"ld={interp}/lib" in out
    assert subprocess.run([env / "bin/python"], capture_output=True, text=True).stdout.startswith(
        "interp"
    )


def test_a_second_environment_unpacks_only_its_new_layer(tmp_path: Path, layer_set: Path) -> None:
    script, cache = script_for(tmp_path), tmp_path / "cache"
    run_in(container_with(tmp_path, layer_set, "c1", ["L-base1.tar", "L-aaa1.tar"]), script,
           "env1", cache)  # fmt: skip
    marker = cache / "layers" / "L-aaa1" / ".tfyarn-unpacked"
    first = (cache / "layers" / "L-aaa1" / "lib").stat().st_ino
    tars = ["L-base1.tar", "L-aaa1.tar", "L-bbb1.tar"]
    out = run_in(container_with(tmp_path, layer_set, "c2", tars), script, "env2", cache)
    assert (cache / "layers" / "L-aaa1" / "lib").stat().st_ino == first and marker.exists()
    assert (cache / "envs" / "env2" / "lib/python3.11/site-packages/ns/b").is_dir()
    assert "base=/missing/python3" in out  # no interpreter shipped: the nodes' own


def test_old_environments_and_their_unused_layers_are_evicted(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache = script_for(tmp_path), tmp_path / "cache"
    run_in(container_with(tmp_path, layer_set, "c1", ["L-base1.tar", "L-aaa1.tar"]), script,
           "env1", cache, keep=1)  # fmt: skip
    old = cache / "layers" / "L-aaa1" / ".tfyarn-unpacked"
    subprocess.run(["touch", "-d", "1 hour ago", str(old)], check=True)
    (cache / "envs" / "env1" / ".tfyarn-used").touch()
    subprocess.run(
        ["touch", "-d", "2 hours ago", str(cache / "envs/env1/.tfyarn-used")], check=True
    )
    run_in(container_with(tmp_path, layer_set, "c2", ["L-base1.tar", "L-bbb1.tar"]), script,
           "env2", cache, keep=1)  # fmt: skip
    assert not (cache / "envs" / "env1").exists()
    assert not (cache / "layers" / "L-aaa1").exists()
    assert (cache / "layers" / "L-base1").exists() and (cache / "envs" / "env2").exists()


def test_a_broken_layer_fails_with_a_message(tmp_path: Path, layer_set: Path) -> None:
    script, cache = script_for(tmp_path), tmp_path / "cache"
    container = tmp_path / "c1"
    container.mkdir()
    (container / "L-bad.tar").write_bytes(b"not a tar")
    env = {"PATH": "/usr/bin:/bin", "TFYARN_ENV_KEY": "e", "TFYARN_ENV_CACHE": str(cache)}
    proc = subprocess.run(["bash", str(script)], cwd=container, env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 1 and "assembling the environment's layers" in proc.stderr


def unpacks_at_once(tmp_path: Path, layer_set: Path, jobs: str) -> int:
    """The most layers the assembly unpacked at the same time with ``TFYARN_UNPACK_JOBS=jobs``,
    seen through a ``tar`` on the PATH that logs its start and end around the real one."""
    bin_dir = tmp_path / f"bin{jobs}"
    bin_dir.mkdir()
    log = tmp_path / f"tar{jobs}.log"
    (bin_dir / "tar").write_text(
        f'#!/bin/sh\necho start >>{log}\nsleep 0.4\n/usr/bin/tar "$@"\nrc=$?\n'
        f"echo end >>{log}\nexit $rc\n"
    )
    (bin_dir / "tar").chmod(0o755)
    tars = ["L-base1.tar", "L-aaa1.tar", "L-bbb1.tar", "I-py1.tar"]
    container = container_with(tmp_path, layer_set, f"c{jobs}", tars)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "TFYARN_ENV_KEY": "e",
        "TFYARN_ENV_CACHE": str(tmp_path / f"cache{jobs}"),
        "TFYARN_UNPACK_JOBS": jobs,
    }
    proc = subprocess.run(["bash", str(script_for(tmp_path))], cwd=container, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (container / "env" / "lib/python3.11/site-packages/ns/b/__init__.py").exists()
    running = most = 0
    for line in log.read_text().split():
        running += 1 if line == "start" else -1
        most = max(most, running)
    assert log.read_text().split().count("start") == len(tars)
    return most


def test_a_node_unpacks_layers_several_at_once_up_to_its_bound(
    tmp_path: Path, layer_set: Path
) -> None:
    assert unpacks_at_once(tmp_path, layer_set, "2") == 2
    assert unpacks_at_once(tmp_path, layer_set, "1") == 1


def test_a_broken_layer_among_several_unpacked_at_once_fails_the_assembly(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache = script_for(tmp_path), tmp_path / "cache"
    container = container_with(tmp_path, layer_set, "c1", ["L-base1.tar", "L-aaa1.tar"])
    (container / "L-bad.tar").write_bytes(b"not a tar")
    env = {"PATH": "/usr/bin:/bin", "TFYARN_ENV_KEY": "e", "TFYARN_ENV_CACHE": str(cache),
           "TFYARN_UNPACK_JOBS": "3"}  # fmt: skip
    proc = subprocess.run(["bash", str(script)], cwd=container, env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 1 and "assembling the environment's layers" in proc.stderr
    assert (cache / "layers" / "L-aaa1" / ".tfyarn-unpacked").exists()
    assert not (cache / "layers" / "L-bad").exists() and not (container / "env").exists()


def compile_so(dest: Path, source: str, *flags: str) -> None:
    src = dest.with_suffix(".c")
    src.write_text(source)
    proc = subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(dest), str(src), *flags],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, f"gcc (Debian's gcc package) could not build {dest}: {proc}"


def test_a_node_lacking_a_library_of_the_shipped_interpreter_is_warned_about_once_checked(
    tmp_path: Path, layer_set: Path
) -> None:
    # _needy loads libtfyarnabsent.so, which the "node" lacks; _fine loads only glibc;
    # _tkinter lacks it too, but tkinter is not shipped, so it is not named.
    build = tmp_path / "build"
    build.mkdir()
    compile_so(build / "libtfyarnabsent.so", "int absent(void) { return 1; }\n")
    dynload = "lib/python3.11/lib-dynload"
    files = {"bin/python3.11": b"#!/bin/sh\necho interp $0\n"}
    for name, needy in (("_needy", True), ("_fine", False), ("_tkinter", True)):
        so = build / f"{name}.cpython-311-x86_64-linux-gnu.so"
        code = (
            "int absent(void);\nint f(void) { return absent(); }\n"
            if needy
            else "int f(void) { return 2; }\n"
        )
        compile_so(so, code, *((f"-L{build}", "-ltfyarnabsent") if needy else ()))
        files[f"{dynload}/{so.name}"] = so.read_bytes()
    make_tar(layer_set / "I-py2.tar", files)
    script, cache = script_for(tmp_path), tmp_path / "cache"
    tars = ["L-base1.tar", "L-aaa1.tar", "I-py2.tar"]
    env = {"PATH": "/usr/bin:/bin", "TFYARN_ENV_KEY": "e1", "TFYARN_ENV_CACHE": str(cache)}
    for n in (1, 2):
        container = container_with(tmp_path, layer_set, f"c{n}", tars)
        proc = subprocess.run(["bash", str(script)], cwd=container, env=env,
                              capture_output=True, text=True)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        warning = proc.stderr
        assert "lacks shared libraries the shipped interpreter loads: " in warning, warning
        assert "libtfyarnabsent.so (_needy)." in warning and "_tkinter" not in warning, warning
        assert "_fine" not in warning and "python-build-standalone" in warning, warning
    found = cache / "layers" / "I-py2" / ".tfyarn-missing-libraries"
    assert found.read_text() == "libtfyarnabsent.so (_needy)\n"


def test_a_node_with_every_library_of_the_shipped_interpreter_is_not_warned(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache = script_for(tmp_path), tmp_path / "cache"
    container = container_with(tmp_path, layer_set, "c1", ["L-base1.tar", "I-py1.tar"])
    env = {"PATH": "/usr/bin:/bin", "TFYARN_ENV_KEY": "e1", "TFYARN_ENV_CACHE": str(cache)}
    proc = subprocess.run(["bash", str(script)], cwd=container, env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert (cache / "layers" / "I-py1" / ".tfyarn-missing-libraries").read_text() == ""


# -- compressed layers (layer_codec="zstd") -------------------------------------------------------
def zstd_of(tar: Path) -> Path:
    out = tar.with_name(tar.name + ".zst")
    subprocess.run(["zstd", "-q", "-1", str(tar), "-o", str(out)], check=True)
    return out


def path_without_zstd(tmp_path: Path) -> str:
    """A PATH with every program of /usr/bin and /bin but zstd's: a node without zstd."""
    bin_dir = tmp_path / "node-bin"
    bin_dir.mkdir()
    for folder in (Path("/usr/bin"), Path("/bin")):
        for prog in folder.iterdir():
            target = bin_dir / prog.name
            if "zstd" not in prog.name and not target.exists():
                target.symlink_to(prog)
    return str(bin_dir)


def zstd_container(tmp_path: Path, layer_set: Path) -> tuple[Path, Path, Path]:
    """The assembly script, a node cache, and a container with a plain base layer and a
    zstd-compressed package layer (no decoder shipped yet)."""
    zstd_of(layer_set / "L-aaa1.tar")
    container = container_with(tmp_path, layer_set, "c1", ["L-base1.tar", "L-aaa1.tar.zst"])
    return script_for(tmp_path), tmp_path / "cache", container


def test_compressed_layers_assemble_the_same_environment_with_the_shipped_zstd(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache, container = zstd_container(tmp_path, layer_set)
    (container / layered_launch.ZSTD_FILE).symlink_to(layered_launch.zstd_binary())
    code = f". {script}"
    env = {"PATH": path_without_zstd(tmp_path), "TFYARN_ENV_KEY": "env1",
           "TFYARN_ENV_CACHE": str(cache)}  # fmt: skip
    proc = subprocess.run(["bash", "-c", code], cwd=container, env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    site = container / "env/lib/python3.11/site-packages/ns"
    assert (site / "a/__init__.py").read_text() == "A = 1\n"
    # the same layer folder as a plain tar's: a node that unpacked one reuses it for the other
    assert (cache / "layers" / "L-aaa1" / ".tfyarn-unpacked").exists()
    layers_used = (cache / "envs" / "env1" / ".tfyarn-layers").read_text().split()
    assert sorted(layers_used) == ["L-aaa1", "L-base1"]


def test_a_node_that_cannot_run_the_shipped_zstd_uses_its_own(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache, container = zstd_container(tmp_path, layer_set)
    broken = container / layered_launch.ZSTD_FILE
    broken.write_text("#!/bin/sh\nexit 127\n")  # as a binary for another libc would
    broken.chmod(0o755)
    run_in(container, script, "env1", cache)  # PATH=/usr/bin:/bin, where zstd is
    assert (container / "env/lib/python3.11/site-packages/ns/a/__init__.py").exists()


def test_a_node_with_no_zstd_to_run_fails_saying_what_to_install(
    tmp_path: Path, layer_set: Path
) -> None:
    script, cache, container = zstd_container(tmp_path, layer_set)
    env = {"PATH": path_without_zstd(tmp_path), "TFYARN_ENV_KEY": "e",
           "TFYARN_ENV_CACHE": str(cache)}  # fmt: skip
    proc = subprocess.run(["bash", str(script)], cwd=container, env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 1
    assert "has none of its own: install zstd on the nodes" in proc.stderr
    assert not (cache / "layers" / "L-aaa1").exists(), "no half-unpacked layer left"


def test_a_compressed_layer_is_named_for_its_codec_and_unpacks_to_the_same_files(
    tmp_path: Path,
) -> None:
    root = tmp_path / "venv"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("X = 1\n" * 1000)
    layer = Layer("pkg", "dist", "k1", root, ("pkg", "pkg/m.py"), 6000)
    assert layered_launch.archive_name(layer, None) == "L-k1.tar"
    assert layered_launch.archive_name(layer, "zstd") == "L-k1.tar.zst"
    packed = b"".join(layered_launch.tar_layer(layer, "zstd"))
    plain = b"".join(layered_launch.tar_layer(layer))
    assert packed[:4] == b"\x28\xb5\x2f\xfd" and len(packed) < len(plain) / 10  # zstd's magic
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "--zstd", "-xf", "-", "-C", str(out)], input=packed, check=True)
    assert (out / "pkg" / "m.py").read_text() == "X = 1\n" * 1000


def test_compressed_layers_ship_the_clients_zstd_and_a_machine_without_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = Plan(tmp_path, ())
    plain = layered_launch.LayersReport("k", plan, None, CLIENT_BASE)
    packed = layered_launch.LayersReport("k", plan, None, CLIENT_BASE, codec="zstd")
    assert layered_launch.ZSTD_FILE not in layered_launch.spec_files(plain)
    shipped = layered_launch.spec_files(packed)[layered_launch.ZSTD_FILE]
    assert Path(shipped.source.partition("file://")[2] or shipped.source).name.startswith("zstd")
    monkeypatch.setattr(layered_launch.shutil, "which", lambda _name: None)
    with pytest.raises(LayerError, match=r"needs the zstd program on this machine .* unset"):
        layered_launch.ensure_layers(plan, None, tmp_path, codec="zstd")
