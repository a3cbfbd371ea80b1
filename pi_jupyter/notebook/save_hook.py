"""The save hook's old name, which server configuration installed by earlier versions still names.

The hook lives in :mod:`pi_jupyter.notebook.durable.save_hook`; this module sends the server there.
"""

from __future__ import annotations

from .durable.save_hook import pre_save_hook

__all__ = ["pre_save_hook"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pi_jupyter.notebook.durable.save_hook"}]
