"""Which sandbox a suite gets (tfyarn_sandbox.fixtures.suite_sandbox): the session's
when its shape covers the suite's, else one of the suite's own; nothing is started."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from tfyarn_sandbox import fixtures
from tfyarn_sandbox.shapes.shape import Shape


class FakeSandbox:
    """A session sandbox of a given shape and readiness; records nothing else."""

    def __init__(self, root: Path, shape: Shape, ready: bool) -> None:
        self.root, self.shape, self.ready = root, shape, ready

    def current_shape(self) -> Shape:
        return self.shape

    def status(self) -> dict:
        return {"ready": self.ready}

    def env(self) -> dict[str, str]:
        return {"TFYARN_TEST_SESSION_ENV": str(self.root)}


@pytest.fixture
def choose(monkeypatch, tmp_path):
    """``choose(session_shape, ready, wanted)``: the box suite_sandbox yields, and whether
    it started one of the suite's own."""
    started: list[Path] = []

    @contextlib.contextmanager
    def own(root: Path, shape: Shape, **_: object) -> Iterator[str]:
        started.append(root)
        yield f"own {' '.join(shape.flags())}"

    monkeypatch.setattr(fixtures, "shaped_sandbox", own)

    def run(session_shape: Shape, ready: bool, wanted: Shape) -> tuple[object, bool]:
        session = FakeSandbox(tmp_path / "session", session_shape, ready)
        monkeypatch.setattr(fixtures, "Sandbox", lambda root: session)
        started.clear()
        with fixtures.suite_sandbox(tmp_path / "suite", wanted) as box:
            return box, bool(started)

    return run


def test_a_suite_runs_on_the_session_sandbox_when_its_shape_covers_the_suites(choose):
    box, own = choose(Shape(gpus=2), True, Shape(gpus=2))
    assert isinstance(box, FakeSandbox) and not own


def test_a_suite_starts_its_own_when_the_session_sandbox_lacks_an_option(choose):
    assert choose(Shape(), True, Shape(preemption=True)) == ("own --preemption", True)
    assert choose(Shape(gpus=1), True, Shape(gpus=2)) == ("own --gpus=2", True)
    assert choose(Shape(kerberos=True, gpus=2), True, Shape(gpus=2)) == ("own --gpus=2", True)


def test_a_preemption_sandbox_serves_a_suite_asking_for_gpus_only(choose):
    box, own = choose(Shape(preemption=True, gpus=2), True, Shape(gpus=2))
    assert isinstance(box, FakeSandbox) and not own


def test_a_suite_starts_its_own_when_the_session_sandbox_is_down(choose):
    assert choose(Shape(preemption=True), False, Shape(preemption=True)) == (
        "own --preemption",
        True,
    )


def test_the_session_sandboxs_env_is_exported_only_while_held(choose, monkeypatch):
    import os

    monkeypatch.delenv("TFYARN_TEST_SESSION_ENV", raising=False)
    session = FakeSandbox(Path("/session"), Shape(preemption=True), True)
    monkeypatch.setattr(fixtures, "Sandbox", lambda root: session)
    with fixtures.suite_sandbox(Path("/suite"), Shape(preemption=True)):
        assert os.environ["TFYARN_TEST_SESSION_ENV"] == "/session"
    assert "TFYARN_TEST_SESSION_ENV" not in os.environ
