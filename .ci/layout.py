"""Fail when the package's layout drifts from what docs/architecture.md promises.

At most 8 modules directly in ``tfyarn_jupyter/``; every subpackage's ``__init__``
opens with a docstring saying what lives there; the library ships no sandbox code;
each unit test module mirrors a module of the package (``tests/unit/<sub>/test_<m>.py``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tfyarn_jupyter"
TOP_MODULES = 8
#: Unit test modules that test a concern spread over modules, not one module.
UNMIRRORED = {
    "tests/unit/panel/test_messages.py",
    "tests/unit/test_public_api.py",
    "tests/unit/test_quickstart_data.py",  # notebooks/cancer.py, the quickstart's model
}


def problems() -> list[str]:
    out = []
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    if len(top) > TOP_MODULES:
        out.append(f"{len(top)} modules directly in tfyarn_jupyter/ (> {TOP_MODULES}): {top}")
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if "static" in init.parts:
            continue
        if not ast.get_docstring(ast.parse(init.read_text())):
            out.append(f"{init.relative_to(ROOT)}: no docstring saying what lives here")
    for path in sorted(PACKAGE.rglob("*")):
        if path.name.startswith("sandbox") or path.name == "pom.xml":
            out.append(f"{path.relative_to(ROOT)}: sandbox code belongs in sandbox/tfyarn_sandbox")
    for test in sorted((ROOT / "tests" / "unit").rglob("test_*.py")):
        rel = test.relative_to(ROOT / "tests" / "unit")
        module = PACKAGE.joinpath(*rel.parts[:-1], rel.name.removeprefix("test_"))
        if str(test.relative_to(ROOT)) not in UNMIRRORED and not module.exists():
            out.append(f"{test.relative_to(ROOT)}: no module {module.relative_to(ROOT)} to mirror")
    return out


def main() -> int:
    found = problems()
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
