"""``tfyarn-sandbox start --preemption`` (issue 25): its queues and the preemption monitor.

``low`` and ``high`` share the unlabelled partition half and half, and the
CapacityScheduler's monitor takes containers back from a queue over its guarantee
quickly enough for a test to watch. Plain data: nothing is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tfyarn_sandbox import cli
from tfyarn_sandbox import site_xml as hadoop_conf
from tfyarn_sandbox.shapes import kerberos as sandbox_kerberos
from tfyarn_sandbox.shapes.shape import Shape, conf_folders
from tfyarn_sandbox.site_xml import GPU_LABEL, PORT_NAMES, Layout

Q = "yarn.scheduler.capacity.root"
PRE = "yarn.resourcemanager.monitor.capacity.preemption"


@pytest.fixture
def layout(tmp_path) -> Layout:
    ports = {name: 47000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(tmp_path / "box", Path("/lib"), ports, "alice")


def test_the_monitor_runs_the_proportional_policy_quickly():
    site = hadoop_conf.preemption_site()
    assert site["yarn.resourcemanager.scheduler.monitor.enable"] == "true"
    assert site["yarn.resourcemanager.scheduler.monitor.policies"] == (
        "org.apache.hadoop.yarn.server.resourcemanager.monitor.capacity."
        "ProportionalCapacityPreemptionPolicy"
    )
    assert int(site[f"{PRE}.monitoring_interval"]) <= 1000
    assert int(site[f"{PRE}.max_wait_before_kill"]) <= 5000
    assert float(site[f"{PRE}.natural_termination_factor"]) == 1.0
    assert float(site[f"{PRE}.total_preemption_per_round"]) == 1.0
    assert float(site[f"{PRE}.max_ignored_over_capacity"]) == 0.0


def test_high_keeps_half_of_the_unlabelled_partition_and_the_four_queues_share_it(layout):
    cs = hadoop_conf.preemption_queues(layout)
    queues = cs[f"{Q}.queues"].split(",")
    assert queues == ["default", "ml-gpu", "low", "high"]
    assert sum(float(cs[f"{Q}.{name}.capacity"]) for name in queues) == 100
    assert cs[f"{Q}.high.capacity"] == "50" and cs[f"{Q}.low.capacity"] == "25"
    for name in queues:
        assert cs[f"{Q}.{name}.maximum-capacity"] == "100"
    for name in hadoop_conf.PREEMPTION_QUEUES:
        assert cs[f"{Q}.{name}.accessible-node-labels"] == " "
        assert cs[f"{Q}.{name}.acl_submit_applications"] == "*"
        assert cs[f"{Q}.{name}.acl_administer_queue"] == "alice"


def _user_share(cs: dict[str, str], name: str) -> float:
    """What one user may hold of the unlabelled partition in a queue: its guarantee
    times its user limit factor, at most its maximum capacity (CapacityScheduler's rule)."""
    capacity, factor = float(cs[f"{Q}.{name}.capacity"]), float(cs[f"{Q}.{name}.user-limit-factor"])
    return min(capacity * factor, float(cs[f"{Q}.{name}.maximum-capacity"]))


def test_one_user_fills_any_queue_and_runs_as_many_masters_as_in_the_default_shape(layout):
    """A suite of the default shape sees the same room: one user may fill the node from
    any queue, and YARN's bound on a user's application masters (the guarantee times the
    user limit factor times the master share) is what the default shape's queues give."""
    cs, usual = hadoop_conf.preemption_queues(layout), hadoop_conf.capacity_scheduler(layout)
    for name in (*hadoop_conf.QUEUES, *hadoop_conf.PREEMPTION_QUEUES):
        assert _user_share(cs, name) == 100
    for name in hadoop_conf.QUEUES:
        assert _user_share(cs, name) == _user_share(usual, name)
        for key in ("acl_submit_applications", "acl_administer_queue", "accessible-node-labels"):
            assert cs[f"{Q}.{name}.{key}"] == usual[f"{Q}.{name}.{key}"]
    assert cs[f"{Q}.ml-gpu.accessible-node-labels.{GPU_LABEL}.capacity"] == "100"


def test_the_default_sandbox_has_no_preemption(layout):
    cs = hadoop_conf.capacity_scheduler(layout)
    assert cs[f"{Q}.queues"] == "default,ml-gpu"
    yarn = hadoop_conf.yarn_site(layout)
    assert not any(k.startswith(PRE) or "scheduler.monitor" in k for k in yarn)


def test_the_shape_gives_the_resourcemanager_the_monitor_and_the_queues(layout):
    folders = {d.name: f for d, f in conf_folders(layout, Shape(preemption=True)).items()}
    plain = {d.name: f for d, f in conf_folders(layout, Shape()).items()}
    assert folders["conf"]["yarn-site.xml"] == {
        **plain["conf"]["yarn-site.xml"],
        **hadoop_conf.preemption_site(),
    }
    assert folders["conf"]["capacity-scheduler.xml"] == hadoop_conf.preemption_queues(layout)
    for nm in ("conf-nm-cpu", "conf-nm-gpu"):
        assert folders[nm]["yarn-site.xml"] == plain[nm]["yarn-site.xml"]
    assert set(folders["conf"]) == set(plain["conf"])


def test_kerberos_queue_acls_apply_over_the_preemption_queues(layout):
    shape = Shape(kerberos=True, preemption=True)
    cs = conf_folders(layout, shape)[layout.conf_dir]["capacity-scheduler.xml"]
    for key, value in sandbox_kerberos.queue_acls(layout.user).items():
        assert cs[key] == value
    assert cs[f"{Q}.low.acl_submit_applications"] == "*"


def test_the_option_makes_the_shape():
    args = cli.parser().parse_args(["start", "--preemption", "--gpus", "2"])
    assert cli._shape(args) == Shape(gpus=2, preemption=True)
    assert Shape(preemption=True).flags() == ["--preemption"]
    assert Shape(gpus=2, preemption=True).flags() == ["--gpus=2", "--preemption"]
    assert Shape.from_state({"shape": Shape(preemption=True).to_state()}) == Shape(preemption=True)
