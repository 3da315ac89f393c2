"""Print where a CI run's time went: seconds per test file, from pytest's JUnit XML files.

``python .ci/durations.py build/junit*.xml``: each file's tests, their seconds (calls and
fixtures together, as pytest's JUnit report counts them), the slowest first. What to look
at when a run's time must come down.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def per_file(paths: list[str]) -> dict[tuple[str, str], list[float]]:
    """``(report, test file) -> [seconds of each test]`` over the JUnit files ``paths``."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            module = case.get("classname", "")  # the test's module (no test classes here)
            out[(path.rsplit("/", 1)[-1], module)].append(float(case.get("time") or 0))
    return out


def main(paths: list[str]) -> int:
    rows = sorted(per_file(paths).items(), key=lambda kv: -sum(kv[1]))
    total = sum(sum(times) for _, times in rows)
    print(f"{'seconds':>8} {'tests':>5}  report: test module ({total:.0f} s in all)")
    for (report, module), times in rows:
        print(f"{sum(times):8.0f} {len(times):5d}  {report}: {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
