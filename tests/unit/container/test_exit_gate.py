"""The trainers that follow a lost peer end one at a time (container/exit_gate.py).

skein's client is test_regroup's fake: a dict store with skein's transaction, and
containers as the application master lists them.
"""

from __future__ import annotations

from tfyarn_jupyter.container import exit_gate

from .test_regroup import FOLLOWED, PREEMPTED, App, task_of


def test_a_trainer_ends_to_restart_alone_and_with_at_most_one_request_outstanding(monkeypatch):
    """skein's master would give a third request the priority of a second outstanding one
    and never start it: a trainer waits for its turn (no other ending, at most one
    request outstanding) before it ends, and times out rather than hang."""
    monkeypatch.setattr(exit_gate, "POLL_S", 0.01)
    app = App()
    app.add("chief", 0)
    app.add("worker", 0, "FAILED", ended=1, message=PREEMPTED)
    app.add("worker", 2, "REQUESTED")  # worker_0's replacement
    app.add("ps", 0, "FAILED", ended=2, message=FOLLOWED)
    app.add("ps", 1, "REQUESTED")  # ps_0 followed: two requests outstanding
    chief = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1, "ps": 1})
    assert exit_gate.wait_for_turn(chief, timeout_s=0.1) is False
    assert app.kv[exit_gate.EXITING] == b"chief_0"  # its turn is next: it keeps the key
    app.containers[2].state = "RUNNING"  # worker_0's replacement allocated
    assert exit_gate.wait_for_turn(chief, timeout_s=1.0) is True


def test_a_trainer_waits_while_another_holds_the_turn(monkeypatch):
    monkeypatch.setattr(exit_gate, "POLL_S", 0.01)
    app = App()
    app.add("chief", 0)
    app.add("worker", 0)
    app.kv[exit_gate.EXITING] = b"worker_0"  # worker_0 is ending; no request outstanding
    chief = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    assert exit_gate.wait_for_turn(chief, timeout_s=0.1) is False
    del app.kv[exit_gate.EXITING]  # skein's master deletes it as worker_0's container ends
    assert exit_gate.wait_for_turn(chief, timeout_s=1.0) is True
    assert app.kv[exit_gate.EXITING] == b"chief_0"
