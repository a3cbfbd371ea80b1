"""``python -m pi_jupyter``: the ``pi-jupyter`` command line."""

import sys

from .cli.main import main

sys.exit(main())
