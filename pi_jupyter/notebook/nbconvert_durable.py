"""The nbconvert preprocessor's old name, which nbconvert configuration installed by earlier versions still names.

It lives in :mod:`pi_jupyter.notebook.durable.nbconvert`.
"""

from __future__ import annotations

from .durable.nbconvert import enable

__all__ = ["enable"]
