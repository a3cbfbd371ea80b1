"""Experiment records as the views show them: a leaf's scores and a branch's variant.

An experiment (``pi_jupyter.experiment``) writes each score as a ``custom`` entry whose parent
is the scored leaf, and each branch's variant (its combination and repeat index) as the
branch's first entry. The views read these from the file alone, so the tree and compare show
them to someone who has only the session file. The views layer sits above the experiment
package, so the two ``customType`` strings are spelled here too (a test keeps them equal).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeGuard

from .digest import RawEntry

SCORE_TYPE = "pi_jupyter.score"
VARIANT_TYPE = "pi_jupyter.variant"

Scores = dict[str, float | int | bool]


def scores_by_leaf(entries: Iterable[RawEntry]) -> dict[str, Scores]:
    """Scored entry id -> its scores (``name.key`` for a dict score); a later score of the same name wins."""
    out: dict[str, Scores] = {}
    for entry in entries:
        if entry.get("type") != "custom" or entry.get("customType") != SCORE_TYPE:
            continue
        parent, data = entry.get("parentId"), entry.get("data")
        if not isinstance(parent, str) or not isinstance(data, dict) or data.get("kind") == "pairwise":
            continue  # a pairwise judgement is a result against another branch, not a score of this one
        name = data.get("scorer")
        if not isinstance(name, str) or not name:
            continue
        mine = out.setdefault(parent, {})
        value = data.get("value")
        if isinstance(value, dict):
            mine.update({f"{name}.{k}": v for k, v in value.items() if isinstance(k, str) and _is_score(v)})
        elif _is_score(value):
            mine[name] = value
    return {k: v for k, v in out.items() if v}


def leaf_scores(session: Any, leaf_id: str) -> Scores:
    """The scores recorded on ``leaf_id`` (its ``pi_jupyter.score`` children), in the order they were written."""
    kids = [session.raw_entry(c) for c in session.child_ids(leaf_id) if c]  # an id "" names no entry (as in pi)
    return scores_by_leaf(kids).get(leaf_id, {})


def branch_variant(path: list[RawEntry]) -> dict[str, Any] | None:
    """The variant of the experiment branch ``path`` ends on (its last variant entry), or ``None``.

    ``{"experiment": id, "index": n, "values": {...}, "repeat": r}`` as the experiment wrote it.
    """
    for entry in reversed(path):
        if entry.get("type") == "custom" and entry.get("customType") == VARIANT_TYPE:
            data = entry.get("data")
            if isinstance(data, dict):
                values = data.get("values")
                return {
                    "experiment": data.get("experiment"),
                    "index": data.get("index"),
                    "values": {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {},
                    "repeat": data.get("repeat") if isinstance(data.get("repeat"), int) else 0,
                }
    return None


def variant_text(variant: dict[str, Any] | None) -> str:
    """A variant as one line: ``model=offline/echo, tone=warm · repeat 2`` ("" for none)."""
    if not variant:
        return ""
    text = ", ".join(f"{k}={v}" for k, v in variant.get("values", {}).items()) or "(no values)"
    repeat = variant.get("repeat") or 0
    return text + (f" · repeat {repeat}" if repeat else "")


def variant_name(variant: dict[str, Any]) -> str:
    """A short name for an experiment branch, as the experiment's plot names it: ``#2 offline/echo warm``."""
    values = " ".join(str(v) for v in variant.get("values", {}).values())
    repeat = variant.get("repeat") or 0
    return f"#{variant.get('index')}" + (f" {values}" if values else "") + (f" r{repeat}" if repeat else "")


def score_value_text(value: Any) -> str:
    """One score as the views print it: ✓/✗ for a bool, three significant digits for a float."""
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def scores_text(scores: Scores, sep: str = " · ") -> str:
    """Scores as ``judge 7.5 · exact ✓`` ("" for none)."""
    return sep.join(f"{name} {score_value_text(v)}" for name, v in scores.items())


def scores_range_text(many: list[Scores]) -> str:
    """What a fold of several scored branches shows: ``judge 2–9 · exact 3/5 ✓`` (range, or how many are true)."""
    names = list(dict.fromkeys(name for scores in many for name in scores))
    parts = []
    for name in names:
        values = [scores[name] for scores in many if name in scores]
        if all(isinstance(v, bool) for v in values):
            parts.append(f"{name} {sum(1 for v in values if v)}/{len(values)} ✓")
            continue
        low, high = min(values), max(values)
        shown = score_value_text(low) if low == high else f"{score_value_text(low)}–{score_value_text(high)}"
        parts.append(f"{name} {shown}")
    return " · ".join(parts)


def _is_score(value: Any) -> TypeGuard[float | int | bool]:
    if isinstance(value, bool) or isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)
