"""``python -m tfyarn_jupyter.container``: the task in a YARN container."""

import sys

from tfyarn_jupyter.container.main import main

sys.exit(main())
