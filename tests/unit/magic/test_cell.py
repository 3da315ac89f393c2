"""A %%tfyarn cell launches its own function: what its code binds, and the empty-cell rule.

The last tests run the magic in an in-process IPython shell with its submission replaced by
a recorder (no cluster): what matters is which function it would launch, or the refusal.
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from tfyarn_jupyter.magic import cell
from tfyarn_jupyter.magic.extension import TfyarnMagics, parse_launch


@pytest.mark.parametrize(
    "source",
    [
        "def experiment_fn():\n    return 1",
        "async def experiment_fn():\n    return 1",
        "class experiment_fn:\n    pass",
        "experiment_fn = lambda: 1",
        "a, (experiment_fn, b) = 1, (2, 3)",
        "experiment_fn: object = make()",
        "from cancer import experiment_fn",
        "from cancer import build as experiment_fn",
        "import experiment_fn",
        "if flag:\n    def experiment_fn():\n        pass",
        "try:\n    x = 1\nexcept Exception:\n    experiment_fn = None",
        "with open('f') as experiment_fn:\n    pass",
        "for experiment_fn in fns:\n    pass",
        "(experiment_fn := make())",
    ],
)
def test_what_binds_the_name_in_the_cell_itself(source):
    assert cell.defines(source, "experiment_fn")


@pytest.mark.parametrize(
    "source",
    [
        "",
        "# def experiment_fn(): a comment",
        "experiment_fn()",
        "print(experiment_fn)",
        "def other():\n    experiment_fn = 1",  # a local of another function
        "def experiment_fn_v2():\n    pass",
        "class C:\n    experiment_fn = 1",
        "x = experiment_fn",
        "def broken(:",
    ],
)
def test_what_does_not_bind_it(source):
    assert not cell.defines(source, "experiment_fn")


def test_an_empty_cell_is_blank_or_comments_only():
    assert cell.is_empty("") and cell.is_empty("\n  \n# only a note\n")
    assert not cell.is_empty("pass") and not cell.is_empty("def broken(:")


def test_the_fn_flag_is_remembered_as_explicit_only_when_given():
    implicit = parse_launch("--chief 1G/1")
    assert (implicit.fn, implicit.fn_explicit) == ("experiment_fn", False)
    explicit = parse_launch("--chief 1G/1 --fn experiment_fn")
    assert (explicit.fn, explicit.fn_explicit) == ("experiment_fn", True)
    with pytest.raises(UsageError, match=r"--fn 'not-a-name': not a Python name"):
        parse_launch("--fn not-a-name")


def test_an_empty_cell_needs_the_function_named_explicitly():
    def train():
        return None

    with pytest.raises(UsageError) as err:
        cell.existing_function("experiment_fn", False, {"experiment_fn": train})
    assert "the cell has no code" in str(err.value)
    assert "`%%tfyarn --fn NAME` over a cell with no code" in str(err.value)
    assert cell.existing_function("train", True, {"train": train}) is train
    with pytest.raises(UsageError, match=r"--fn train: the notebook has no function 'train'"):
        cell.existing_function("train", True, {"train": 3})


# -- the magic in a shell ---------------------------------------------------------------------
@pytest.fixture
def magic(monkeypatch):
    shell = InteractiveShell.instance()
    magics = TfyarnMagics(shell)
    launched: list = []
    monkeypatch.setattr(magics, "_launch", lambda args, fn: launched.append((args.fn, fn)))
    for name in ("experiment_fn", "train", "helper"):
        shell.user_ns.pop(name, None)
    magics.launched = launched
    return magics


def test_a_cell_launches_the_function_it_defines(magic):
    magic.tfyarn_cell("--chief 1G/1", "def experiment_fn():\n    return 'mine'")
    ((name, fn),) = magic.launched
    assert name == "experiment_fn" and fn() == "mine"


def test_a_cell_that_does_not_define_it_is_refused_even_with_an_earlier_one_around(magic):
    magic.shell.run_cell("def experiment_fn():\n    return 'stale'")
    with pytest.raises(UsageError) as err:
        magic.tfyarn_cell("--chief 1G/1", "def helper():\n    return 1")
    text = str(err.value)
    assert text.startswith("%%tfyarn: the cell defines no function 'experiment_fn'")
    assert "an earlier cell defined is not launched" in text
    assert "`%%tfyarn --fn experiment_fn` over a cell with no code" in text
    assert "it defined: helper (pick one with --fn NAME)" in text
    assert magic.launched == []


def test_an_empty_cell_launches_an_existing_function_only_when_named(magic):
    magic.shell.run_cell("def train():\n    return 'earlier'")
    magic.shell.run_cell("def experiment_fn():\n    return 'earlier'")
    with pytest.raises(UsageError, match="the cell has no code"):
        magic.tfyarn_cell("--chief 1G/1", "\n# nothing here\n")
    magic.tfyarn_cell("--chief 1G/1 --fn train", "# launch the train function above\n")
    assert [(n, f()) for n, f in magic.launched] == [("train", "earlier")]


def test_a_cell_rebinding_the_name_some_other_way_counts_as_defining_it(magic):
    magic.shell.run_cell("def experiment_fn():\n    return 'stale'")
    magic.tfyarn_cell("--chief 1G/1", "globals()['experiment_fn'] = lambda: 'fresh'")
    assert [f() for _, f in magic.launched] == ["fresh"]
