"""What the statistics tests check against: scipy and statsmodels (the test extra), and a quicker Holm of statsmodels.

statsmodels' ``multipletests`` runs a full garbage collection on every call with Holm's method
(0.2 s in a test process holding hypothesis's data): :func:`quick_multitest` skips it for a module.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

scipy_stats = pytest.importorskip("scipy.stats", reason="the statistics are checked against scipy (the test extra)")
proportion = pytest.importorskip("statsmodels.stats.proportion")
multitest = pytest.importorskip("statsmodels.stats.multitest")
contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
power = pytest.importorskip("statsmodels.stats.power")


@pytest.fixture(autouse=True, scope="module")
def quick_multitest() -> Iterator[None]:
    """No garbage collection inside statsmodels' Holm while the module's tests run."""
    collect = gc.collect
    gc.collect = lambda *args: 0  # type: ignore[assignment]
    try:
        yield
    finally:
        gc.collect = collect  # type: ignore[assignment]
