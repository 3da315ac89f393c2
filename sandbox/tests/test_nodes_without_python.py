"""``tfyarn-sandbox start --nodes-without-python``: the shape and the NodeManagers' command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tfyarn_sandbox import cli
from tfyarn_sandbox.shapes.shape import Shape, hiding_prefix, java_command, port_names, python_paths
from tfyarn_sandbox.site_xml import Layout

SHAPE = Shape(nodes_without_python=True)


def layout(root: Path) -> Layout:
    ports = {name: 46000 + i for i, name in enumerate(port_names(SHAPE))}
    return Layout(root, Path("/lib"), ports, "root")


def test_the_option_is_a_shape_kept_in_the_state() -> None:
    assert not SHAPE.is_default and SHAPE.flags() == ["--nodes-without-python"]
    assert Shape.from_state({"shape": SHAPE.to_state()}) == SHAPE
    args = cli.parser().parse_args(["start", "--nodes-without-python"])
    assert cli._shape(args) == SHAPE


def test_the_clients_pythons_are_hidden_once_each() -> None:
    paths = python_paths()
    assert Path(os.path.realpath(sys.prefix)) in paths
    assert Path(os.path.realpath(sys.base_prefix)) in paths
    assert all(p.is_absolute() and p != Path("/") for p in paths)
    for p in paths:  # nothing hidden twice: no folder inside another hidden one
        assert not any(q in p.parents for q in paths)


def test_only_nodemanagers_start_in_a_namespace_that_hides_them(tmp_path: Path) -> None:
    lay = layout(tmp_path)
    nm = java_command(lay, Path("/jdk"), SHAPE, "nodemanager-cpu")
    plain = java_command(lay, Path("/jdk"), Shape(), "nodemanager-cpu")
    assert nm[:5] == ["unshare", "--mount", "--propagation", "private", "--"]
    assert nm[-len(plain) :] == plain
    script = nm[nm.index("-c") + 1]
    for p in python_paths():
        assert str(p) in script
    assert script.endswith('exec "$@"')
    assert java_command(lay, Path("/jdk"), SHAPE, "namenode")[0] != "unshare"


def test_folders_get_a_tmpfs_and_files_dev_null(tmp_path: Path) -> None:
    folder, binary = tmp_path / "py", tmp_path / "python3"
    folder.mkdir()
    binary.write_text("")
    script = hiding_prefix([folder, binary])[7]
    assert f"mount -t tmpfs -o size=1m,mode=755 tfyarn-hidden {folder}" in script
    assert f"mount --bind /dev/null {binary}" in script
