"""Kept so an environment shipped by an earlier tfyarn_jupyter still starts its tasks:
``python -m tfyarn_jupyter.tasks`` is ``python -m tfyarn_jupyter.container``."""

import sys

from tfyarn_jupyter.container.main import main, report_exit

__all__ = ["main", "report_exit"]

if __name__ == "__main__":
    sys.exit(main())
