"""Fail when a module grows past 400 lines or a function past 60: the layout's bounds.

A module or function that must be longer says why in ``ALLOWED``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MODULE_LINES = 400
FUNCTION_LINES = 60
ALLOWED: dict[str, str] = {}


def oversized(path: Path) -> list[str]:
    src = path.read_text()
    out = []
    if src.count("\n") > MODULE_LINES and str(path) not in ALLOWED:
        out.append(f"{path}: {src.count(chr(10))} lines (> {MODULE_LINES})")
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES and f"{path}:{node.name}" not in ALLOWED:
                out.append(f"{path}:{node.lineno} {node.name}: {length} lines (> {FUNCTION_LINES})")
    return out


def main(roots: list[str]) -> int:
    problems = [p for root in roots for f in sorted(Path(root).rglob("*.py")) for p in oversized(f)]
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
