"""What a ``%%tfyarn`` cell's own code defines: the function it launches is the cell's.

A cell launches the function (``--fn``, default ``experiment_fn``) that its
own body defines, never one an earlier cell left in the namespace: the body's
syntax tree must bind the name (or running it must rebind it). A cell with
no code (blank lines or comments only: IPython refuses a cell magic with
nothing at all under it, so a comment such as ``# launch train`` will do)
launches an existing function only when ``--fn NAME`` names it. Pure: the
magic runs the cell; these functions judge its source.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from IPython.core.error import UsageError

#: What the namespace held for a name it did not hold.
MISSING = object()


def python_of(shell: Any, cell: str) -> str | None:
    """The cell as Python (IPython's ``%`` and ``!`` lines turned into calls), else None."""
    try:
        return str(shell.transform_cell(cell))
    except Exception:
        return None


def is_empty(source: str) -> bool:
    """A cell with no statement (blank, or comments only)."""
    try:
        return not ast.parse(source).body
    except SyntaxError:
        return False


def defines(source: str, name: str) -> bool:
    """Whether the cell's own code binds ``name`` at module level: a ``def``, a class, an
    assignment or an import (in ``if``/``try``/``with``/loop bodies too, not inside functions)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
            continue  # what a function binds inside is its own
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
            continue
        targets = _targets(node)
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo.extend(c for c in getattr(node, field, []) or [] if isinstance(c, ast.AST))
    return False


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.NamedExpr):
        return [node.value.target]
    return []


def undefined_message(name: str, new: list[str], stale: bool) -> str:
    """Why a cell cannot launch: it does not define ``name`` (maybe an earlier cell did)."""
    text = f"%%tfyarn: the cell defines no function {name!r}"
    if stale:
        text += (
            f" (the {name!r} an earlier cell defined is not launched: define it in this cell, "
            f"or launch it on purpose with `%%tfyarn --fn {name}` over a cell with no code, "
            "e.g. only a comment)"
        )
    if new:
        return text + f"; it defined: {', '.join(new)} (pick one with --fn NAME)"
    return text + ("" if stale else "; define `def experiment_fn(): ... return Experiment(...)`")


def existing_function(name: str, explicit: bool, ns: Mapping[str, Any]) -> Any:
    """The function a cell with no code launches: only one named explicitly with ``--fn``."""
    if not explicit:
        raise UsageError(
            "%%tfyarn: the cell has no code; define `def experiment_fn(): ...` in it, or launch "
            "a function an earlier cell defined by naming it: `%%tfyarn --fn NAME` over a cell "
            "with no code (e.g. only a comment)"
        )
    fn = ns.get(name)
    if not callable(fn):
        raise UsageError(
            f"%%tfyarn --fn {name}: the notebook has no function {name!r} "
            "(define it in an earlier cell, or in this one)"
        )
    return fn


def cell_function(
    ns: Mapping[str, Any], name: str, source: str | None, before: set[str], previous: Any
) -> Any:
    """The function ``name`` the cell just ran defined, else :class:`UsageError`: its code
    binds the name, or running it rebound it (``previous`` is what the namespace held)."""
    defined = (source is not None and defines(source, name)) or ns.get(
        name, MISSING
    ) is not previous
    fn = ns.get(name)
    if not defined or not callable(fn):
        new = sorted(n for n in set(ns) - before if callable(ns[n]) and not n.startswith("_"))
        raise UsageError(undefined_message(name, new, stale=callable(fn)))
    return fn
