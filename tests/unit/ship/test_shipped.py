"""Both ways of shipping the environment are one ShippedEnv to the launch
(tfyarn_jupyter.ship.shipped): the tar and the layers, told apart by nothing but behaviour."""

from __future__ import annotations

from pathlib import Path

from tfyarn_jupyter.protocol.contract import ENV_TAR
from tfyarn_jupyter.ship.layered_launch import LayersReport
from tfyarn_jupyter.ship.layers import Plan
from tfyarn_jupyter.ship.packing import EnvReport
from tfyarn_jupyter.ship.shipped import ShippedEnv


def test_the_tar_ships_one_private_file_and_needs_no_assembly():
    tar = EnvReport(key="k1", archive="hdfs://nn/user/a/.tfyarn/envs/k1.tar", size=10)
    assert isinstance(tar, ShippedEnv)
    files = tar.container_files()
    assert list(files) == [ENV_TAR]
    assert files[ENV_TAR].source == "hdfs://nn/user/a/.tfyarn/envs/k1.tar"
    assert str(files[ENV_TAR].visibility).lower().endswith("private")
    assert tar.assembly() == ""


def test_the_layers_ship_each_layer_and_an_assembly_that_names_the_clients_base():
    report = LayersReport(
        key="k2",
        plan=Plan(Path("/venv"), ()),
        interpreter=None,
        client_base="/usr/local",
        uris={"layer-a.tar": ("hdfs://nn/layers/a.tar", "public")},
    )
    assert isinstance(report, ShippedEnv)
    files = report.container_files()
    assert (
        list(files) == ["layer-a.tar"] and files["layer-a.tar"].source == "hdfs://nn/layers/a.tar"
    )
    script = report.assembly()
    assert script.startswith("TFYARN_CLIENT_BASE='/usr/local'\n") and "assemble" in script.lower()
