"""``tfyarn-sandbox start --gpus N`` (issue 24): the configuration it writes and its option.

The gpu NodeManager declares N ``yarn.io/gpu`` as a countable resource; every
daemon and client learns the resource type from ``resource-types.xml``. Plain data
from a Layout: nothing is started.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tfyarn_sandbox import cli
from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox import site_xml as hadoop_conf
from tfyarn_sandbox.sandbox import Sandbox, SandboxError
from tfyarn_sandbox.shapes.shape import Shape, conf_folders
from tfyarn_sandbox.site_xml import GPU_LABEL, GPU_RESOURCE, PORT_NAMES, Layout

from tfyarn_jupyter.hadoop.filesystem import read_conf


@pytest.fixture
def layout(tmp_path) -> Layout:
    ports = {name: 46000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(tmp_path / "box", Path("/lib"), ports, "alice")


def files_of(layout: Layout, shape: Shape) -> dict[str, dict[str, dict[str, str]]]:
    """Folder name -> file name -> properties."""
    return {d.name: files for d, files in conf_folders(layout, shape).items()}


# -- the XML --------------------------------------------------------------------------------
def test_the_resource_type_is_hadoops_gpu():
    assert GPU_RESOURCE == "yarn.io/gpu"
    assert hadoop_conf.resource_types() == {"yarn.resource-types": "yarn.io/gpu"}


@pytest.mark.parametrize("gpus", [1, 2, 8])
def test_the_gpu_node_declares_its_count(gpus):
    assert hadoop_conf.node_resources(gpus) == {
        "yarn.nodemanager.resource-type.yarn.io/gpu": str(gpus)
    }


def test_the_scheduler_counts_every_resource_type(layout):
    """DominantResourceCalculator: GPUs count in the queues' shares, not memory alone."""
    calculator = hadoop_conf.capacity_scheduler(layout)[
        "yarn.scheduler.capacity.resource-calculator"
    ]
    assert calculator == "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"


@pytest.mark.parametrize("fname", ["resource-types.xml", "node-resources.xml"])
def test_the_gpu_files_read_back(tmp_path, monkeypatch, fname):
    props = {"resource-types.xml": hadoop_conf.resource_types(),
             "node-resources.xml": hadoop_conf.node_resources(2)}[fname]  # fmt: skip
    (tmp_path / fname).write_bytes(hadoop_conf.to_xml(props))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert read_conf(fname) == props


# -- the shape's folders ---------------------------------------------------------------------
def test_every_folder_learns_the_gpu_type_and_only_the_gpu_node_has_gpus(layout):
    folders = files_of(layout, Shape(gpus=2))
    assert set(folders) == {"conf", "conf-nm-cpu", "conf-nm-gpu"}
    for name, files in folders.items():
        assert files["resource-types.xml"] == {"yarn.resource-types": GPU_RESOURCE}, name
    assert folders["conf-nm-gpu"]["node-resources.xml"] == {
        f"yarn.nodemanager.resource-type.{GPU_RESOURCE}": "2"
    }
    assert "node-resources.xml" not in folders["conf-nm-cpu"]
    assert "node-resources.xml" not in folders["conf"]


def test_gpus_add_their_files_and_change_nothing_else(layout):
    plain = files_of(layout, Shape())
    gpus = files_of(layout, Shape(gpus=3))
    for folder, files in gpus.items():
        rest = {
            k: v for k, v in files.items() if k not in ("resource-types.xml", "node-resources.xml")
        }
        assert rest == plain[folder], folder


def test_no_gpus_writes_no_gpu_file(layout):
    """The default sandbox, and a shape with 0 GPUs, write exactly the default files."""
    assert files_of(layout, Shape(gpus=0)) == files_of(layout, Shape())
    sandbox_conf.write_conf(layout)
    written = {p.name for p in layout.root.rglob("*.xml")}
    assert written == {"core-site.xml", "hdfs-site.xml", "yarn-site.xml", "capacity-scheduler.xml"}
    assert not any(GPU_RESOURCE in p.read_text() for p in layout.root.rglob("*.xml"))


def test_the_gpu_node_is_the_labelled_one(layout):
    yarn = files_of(layout, Shape(gpus=2))["conf-nm-gpu"]["yarn-site.xml"]
    assert yarn["yarn.nodemanager.node-labels.provider.configured-node-partition"] == GPU_LABEL


def test_the_gpu_files_are_valid_configuration_documents(layout):
    for files in files_of(layout, Shape(gpus=2)).values():
        for props in files.values():
            assert ET.fromstring(hadoop_conf.to_xml(props)).tag == "configuration"


# -- the shape and its option ----------------------------------------------------------------
def test_a_gpu_count_is_kept_as_a_number():
    shape = Shape(gpus=2)
    assert not shape.is_default and Shape(gpus=0).is_default
    assert shape.flags() == ["--gpus=2"]
    assert Shape(ha=True, gpus=4).flags() == ["--ha", "--gpus=4"]
    assert shape.to_state()["gpus"] == 2
    assert Shape.from_state(json.loads(json.dumps({"shape": shape.to_state()}))) == shape
    assert Shape.from_state({"shape": {"gpus": "3"}}).gpus == 3


def test_a_state_from_before_gpus_reads_as_none():
    old = {"kerberos": True, "ha": False, "viewfs": False, "hosts": False}
    assert Shape.from_state({"shape": old}) == Shape(kerberos=True)
    assert Shape.from_state({"shape": {**old, "gpus": None}}).gpus == 0


@pytest.mark.parametrize(
    ("argv", "shape"),
    [(["start", "--gpus", "2"], Shape(gpus=2)),
     (["start", "--gpus=1", "--ha"], Shape(ha=True, gpus=1)),
     (["start", "--gpus", "0"], None), (["start"], None)],
)  # fmt: skip
def test_the_gpus_option_makes_the_shape(argv, shape):
    assert cli._shape(cli.parser().parse_args(argv)) == shape


@pytest.mark.parametrize("value", ["-1", "x", "1.5", ""])
def test_the_gpus_option_takes_a_whole_number(value, capsys):
    with pytest.raises(argparse.ArgumentTypeError, match="is not a number of GPUs"):
        cli.gpu_count(value)
    with pytest.raises(SystemExit) as exc:
        cli.parser().parse_args(["start", "--gpus", value])
    assert exc.value.code == 2
    assert "argument --gpus: " in capsys.readouterr().err


def test_a_sandbox_made_with_gpus_is_not_restarted_with_another_count(tmp_path):
    root = tmp_path / "b"
    root.mkdir()
    state = {"ports": {}, "pids": {}, "shape": Shape(gpus=2).to_state()}
    (root / "state.json").write_text(json.dumps(state))
    with pytest.raises(SandboxError, match="was made with --gpus=2: stop it"):
        Sandbox(root, shape=Shape(gpus=1)).start()
    assert Sandbox(root).current_shape() == Shape(gpus=2)
