"""``python -m tfyarn_sandbox``: the ``tfyarn-sandbox`` command."""

import sys

from tfyarn_sandbox.cli import main

sys.exit(main())
