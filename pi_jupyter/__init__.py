"""pi-jupyter: an LLM agent inside the Jupyter kernel, with a forkable, pi-compatible session tree.

>>> from pi_jupyter import Session
>>> s = Session.in_memory()
"""

from .session import Session

__version__ = "0.1.0"

__all__ = ["Session", "__version__"]
