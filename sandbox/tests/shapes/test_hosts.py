"""Hosts of their own (tfyarn_sandbox.shapes.hosts): /etc/hosts lines and address blocks.

The text functions are pure; add/remove run against a hosts file in ``tmp_path``
and a fake ``ip``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tfyarn_sandbox.config import SandboxError
from tfyarn_sandbox.shapes import hosts as sandbox_hosts
from tfyarn_sandbox.shapes.shape import Shape, host_plan

ROOT = Path("/sb/one")
OTHER = Path("/sb/two")
DEBIAN = "127.0.0.1\tlocalhost\n127.0.1.1\tmybox\n"


def test_lines_are_marked_added_once_and_removed_exactly():
    plan = host_plan(Shape(hosts=True), 2)
    theirs = sandbox_hosts.with_lines(DEBIAN, host_plan(Shape(hosts=True), 3), OTHER)
    text = sandbox_hosts.with_lines(theirs, plan, ROOT)
    assert sandbox_hosts.with_lines(text, plan, ROOT) == text
    mine = [line for line in text.splitlines() if line.endswith(f"# tfyarn-sandbox {ROOT}")]
    assert mine == [f"{h['address']}\t{h['name']}\t# tfyarn-sandbox {ROOT}" for h in plan.values()]
    assert sandbox_hosts.without_lines(text, ROOT) == theirs
    assert sandbox_hosts.without_lines(DEBIAN, ROOT) == DEBIAN


def test_a_sandbox_whose_root_prefixes_another_keeps_its_lines_apart():
    text = sandbox_hosts.with_lines(DEBIAN, host_plan(Shape(hosts=True), 4), Path("/sb/one-more"))
    assert sandbox_hosts.without_lines(text, ROOT) == text


def test_blocks_in_use_are_others_lines_and_interface_addresses():
    theirs = sandbox_hosts.with_lines(DEBIAN, host_plan(Shape(hosts=True), 3), OTHER)
    text = sandbox_hosts.with_lines(theirs, host_plan(Shape(hosts=True), 5), ROOT)
    used = sandbox_hosts.blocks_in_use(text, ["127.0.0.1", "127.0.9.11", "10.0.0.1"], ROOT)
    assert used == {0, 1, 3, 9}  # not 5: those lines are this sandbox's own


@pytest.mark.parametrize(("previous", "block"), [(None, 2), (5, 5), (3, 2)])
def test_pick_block_keeps_the_previous_one_when_free(previous, block):
    theirs = sandbox_hosts.with_lines(DEBIAN, host_plan(Shape(hosts=True), 3), OTHER)
    assert sandbox_hosts.pick_block(theirs, [], ROOT, previous) == block


def test_pick_block_fails_when_every_block_is_taken():
    addresses = [f"127.0.{b}.1" for b in range(255)]
    with pytest.raises(SandboxError, match="no free"):
        sandbox_hosts.pick_block("", addresses, ROOT, None)


@pytest.fixture
def machine(tmp_path, monkeypatch) -> dict[str, list]:
    """A hosts file in ``tmp_path`` and a fake ``ip``: the calls and ``lo``'s addresses."""
    hosts = tmp_path / "hosts"
    hosts.write_text(DEBIAN)
    monkeypatch.setattr(sandbox_hosts, "HOSTS_FILE", hosts)
    monkeypatch.setattr(sandbox_hosts, "HOSTS_LOCK", tmp_path / "hosts.lock")
    state: dict[str, list] = {"calls": [], "lo": ["127.0.0.1"]}

    class Done:
        def __init__(self, rc: int) -> None:
            self.returncode, self.stderr = rc, "Operation not permitted" if rc else ""

    def ip(*args: str) -> Done:
        state["calls"].append(args)
        if "fail" in state:
            return Done(2)
        address = args[2].split("/")[0]
        (state["lo"].append if args[1] == "add" else state["lo"].remove)(address)
        return Done(0)

    monkeypatch.setattr(sandbox_hosts, "_ip", ip)
    monkeypatch.setattr(sandbox_hosts, "loopback_addresses", lambda: list(state["lo"]))
    return state


def test_add_then_remove_leaves_the_machine_as_it_was(machine, tmp_path):
    plan = host_plan(Shape(hosts=True, ha=True), 2)
    sandbox_hosts.add(plan, ROOT)
    sandbox_hosts.add(plan, ROOT)  # again: nothing doubled
    text = sandbox_hosts.HOSTS_FILE.read_text()
    assert text.count(f"# tfyarn-sandbox {ROOT}") == len(plan) == 6
    assert sorted(machine["lo"][1:]) == sorted(h["address"] for h in plan.values())
    sandbox_hosts.remove(plan, ROOT)
    assert sandbox_hosts.HOSTS_FILE.read_text() == DEBIAN
    assert machine["lo"] == ["127.0.0.1"]


def test_add_without_the_right_to_add_addresses_says_so(machine):
    machine["fail"] = []
    with pytest.raises(SandboxError, match="--hosts needs root"):
        sandbox_hosts.add(host_plan(Shape(hosts=True), 2), ROOT)
