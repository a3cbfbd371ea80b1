"""``python -m pi_jupyter``: the ``pi-jupyter`` command line."""

from .cli.main import entry

entry()
