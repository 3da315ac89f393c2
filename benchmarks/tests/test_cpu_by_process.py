"""CPU by kind of process: the kinds, descent from the command, the sums, and a real command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import cpu_by_process as cpu


@pytest.mark.parametrize(
    ("cmdline", "in_command", "kind"),
    [
        ("./env/bin/python -u -m tfyarn_jupyter.container", False, "task"),
        (
            "java -Xmx128M com.anaconda.skein.ApplicationMaster hdfs://x",
            False,
            "application master",
        ),
        ("java -cp skein.jar com.anaconda.skein.Driver --jar skein.jar", True, "skein driver"),
        (
            "java org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
            False,
            "ResourceManager",
        ),
        ("java org.apache.hadoop.yarn.server.nodemanager.NodeManager", False, "NodeManager"),
        ("java org.apache.hadoop.hdfs.server.namenode.NameNode", False, "NameNode"),
        ("java org.apache.hadoop.hdfs.server.datanode.DataNode", False, "DataNode"),
        (".venv/bin/python -m pytest tests/integration", True, cpu.COMMAND),
        ("/usr/sbin/sshd -D", False, cpu.OTHER),
    ],
)
def test_a_process_is_named_by_its_command_line_and_by_who_started_it(cmdline, in_command, kind):
    assert cpu.kind_of(cmdline, in_command) == kind


def test_a_process_descends_from_the_command_through_its_parents_and_cycles_end():
    parents = {10: 1, 11: 10, 12: 11, 20: 1, 30: 31, 31: 30}
    assert cpu.descends_from(12, 10, parents)
    assert cpu.descends_from(10, 10, parents)
    assert not cpu.descends_from(20, 10, parents)
    assert not cpu.descends_from(30, 10, parents)  # a cycle of stale parents ends


def test_usage_counts_from_the_first_reading_or_from_zero_for_a_process_started_since():
    first = {1: 5.0, 2: 1.0}
    last = {1: 7.5, 2: 1.0, 3: 0.75}
    kinds = {1: "NameNode", 2: "NameNode", 3: "task"}
    assert cpu.usage(first, last, kinds) == {"NameNode": 2.5, "task": 0.75}


def test_the_table_puts_the_largest_first_and_sums_them():
    text = cpu.table({"task": 1.5, "other": 0.25, "NameNode": 3.0}, 12.34)
    names = ["NameNode", "task", "other", "CPU-s in all, in 12.3 s"]
    assert [line.split(None, 1)[1] for line in text.splitlines()] == names
    assert text.splitlines()[-1].split()[0] == "4.75"


def test_a_busy_command_is_measured_as_the_command():
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    argv = ["--interval", "0.05", "--", sys.executable, "-c", busy]
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.cpu_by_process", *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = {line.split(None, 1)[1]: float(line.split()[0]) for line in proc.stdout.splitlines()}
    assert rows[cpu.COMMAND] >= 0.4, proc.stdout


def test_a_bad_interval_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit):
        cpu.main(["--interval", "0", "--", "true"])
    assert "--interval must be > 0" in capsys.readouterr().err
