"""Random sequences in a real kernel, held to a model of every node's world: no value or file silently wrong.

A short run of :mod:`world_model` (the long one, with figures, is ``bench/bench_world_random.py``):
five seeded sequences of fifteen steps each (``%%pi`` cells calling ``python`` and ``write``,
cells of the user's own, re-runs, checkouts with ``--force``, ``--conversation-only`` and
``--world-only``, forks and returns to the first session, grids, kernel restarts). After every
step each variable and file is the model's, or named in the step's output; a silent difference
fails with the seed and the steps that led to it. ``PI_WORLD_SEEDS`` (``5,6,7``) runs other seeds.
"""

from __future__ import annotations

import os

import pytest
from world_model import Counts, WorldModel

pytestmark = pytest.mark.kernel

SEEDS = [int(s) for s in os.environ.get("PI_WORLD_SEEDS", "1,2,3,4,5").split(",") if s.strip()]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_steps_leave_every_value_the_targets_or_named(tmp_path, seed):
    counts = Counts()
    WorldModel(tmp_path, seed, counts, strict=True).run(15)
    assert counts.silent == 0 and counts.checked > 15 and counts.correct + counts.named == counts.checked
