"""A venv's plan is kept while its files are unchanged, and planned again on any change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.ship.test_layers import SITE, install
from tfyarn_jupyter.ship import layers, plan_memo

OLD_NS = 1_600_000_000 * 10**9  # files written long before planning (2020)


def age(prefix: Path, ns: int = OLD_NS) -> None:
    """Every file and folder of the venv last written at ``ns``, long before planning, as a
    settled venv's are."""
    for dirpath, dirnames, filenames in os.walk(prefix):
        for name in (*dirnames, *filenames):
            os.utime(os.path.join(dirpath, name), ns=(ns, ns), follow_symlinks=False)
    os.utime(prefix, ns=(ns, ns))


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /opt/python/bin\n")
    install(prefix, "alpha", {"alpha/__init__.py": b"A = 1\n", "alpha/core.py": b"x = 2\n"})
    install(prefix, "notebook", {"notebook/__init__.py": b"N = 1\n"})
    age(prefix)
    plan_memo.forget()
    yield prefix
    plan_memo.forget()


@pytest.fixture
def plans(monkeypatch) -> list[Path]:
    """The venvs :func:`layers.plan` was called for (the memo's misses)."""
    calls: list[Path] = []
    real = layers.plan

    def counted(prefix, *args, **kwargs):
        calls.append(prefix)
        return real(prefix, *args, **kwargs)

    monkeypatch.setattr(layers, "plan", counted)
    return calls


def test_an_unchanged_venv_is_planned_once_and_gets_the_same_plan(venv, plans):
    first = plan_memo.plan(venv, SITE, layers.DEFAULT_EXCLUDE)
    second = plan_memo.plan(venv, SITE, layers.DEFAULT_EXCLUDE)
    assert second is first
    assert len(plans) == 1
    assert first == layers.plan(venv, SITE, layers.DEFAULT_EXCLUDE)


def test_a_file_rewritten_in_place_is_planned_again_with_a_new_key(venv, plans):
    first = plan_memo.plan(venv, SITE, ())
    (venv / SITE / "alpha" / "core.py").write_bytes(b"x = 22\n")
    second = plan_memo.plan(venv, SITE, ())
    assert len(plans) == 2
    assert second.key != first.key


def test_a_file_added_to_a_planned_folder_is_planned_again(venv, plans):
    first = plan_memo.plan(venv, SITE, ())
    (venv / SITE / "stray.pth").write_text("/somewhere\n")
    second = plan_memo.plan(venv, SITE, ())
    assert len(plans) == 2
    assert "stray.pth" in {f.rsplit("/", 1)[-1] for layer in second.layers for f in layer.files}
    assert second.key != first.key


def test_an_installed_distribution_and_a_removed_file_are_planned_again(venv, plans):
    plan_memo.plan(venv, SITE, ())
    install(venv, "gamma", {"gamma.py": b"G = 1\n"})
    age(venv, OLD_NS + 10**9)  # settled again, a second later
    assert any("gamma" in layer.modules for layer in plan_memo.plan(venv, SITE, ()).layers)
    (venv / "pyvenv.cfg").unlink()
    base = next(layer for layer in plan_memo.plan(venv, SITE, ()).layers if layer.name == "base")
    assert "pyvenv.cfg" not in base.files
    assert len(plans) == 3


def test_a_venv_written_while_it_was_planned_is_not_kept(venv, plans):
    (venv / SITE / "alpha" / "core.py").write_bytes(b"x = 3\n")  # written just now
    plan_memo.plan(venv, SITE, ())
    plan_memo.plan(venv, SITE, ())
    assert len(plans) == 2


def test_each_exclusion_list_has_its_own_plan_in_any_order_or_spelling(venv, plans):
    with_nb = plan_memo.plan(venv, SITE, ())
    without = plan_memo.plan(venv, SITE, ("notebook", "Alpha_X"))
    assert plan_memo.plan(venv, SITE, ("alpha-x", "notebook")) is without
    assert plan_memo.plan(venv, SITE, ()) is with_nb
    assert [layer.name for layer in without.left_out] == ["notebook"]
    assert len(plans) == 2


def test_at_most_keep_plans_are_kept_the_oldest_dropped_first(venv, plans):
    lists = [(f"x{i}",) for i in range(plan_memo.KEEP + 1)]
    for exclude in lists:
        plan_memo.plan(venv, SITE, exclude)
    plan_memo.plan(venv, SITE, lists[-1])  # kept
    plan_memo.plan(venv, SITE, lists[0])  # dropped: planned again
    assert len(plans) == plan_memo.KEEP + 2
