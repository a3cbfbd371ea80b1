"""What an experiment writes into the session, and the table rebuilt from the file alone.

Four ``custom`` entries (never sent to a model):

- ``pi_jupyter.variant``: the first entry of each branch (a child of the start node): the
  experiment id, the branch's index, its values and repeat index, and the grid.
- ``pi_jupyter.branch_end``: a dead-end child of the branch's last entry: state, error,
  duration. Its parent is the branch's leaf.
- ``pi_jupyter.score``: a dead-end child of the scored leaf: scorer name, version and value
  (or ``error`` when the scorer failed: the row says why it has no score). A pairwise
  judgement (``kind: "pairwise"``, see :mod:`.judging`) is one on each of the two branches.
- ``pi_jupyter.experiment``: a dead-end child of the start node, written when the run ends:
  the grid and the branches that were skipped (budget, stop) and why.

The dead-end records do not move the leaf (``TRANSPARENT_TYPES``), so they never change a
context, here or in pi. :func:`read_experiment` rebuilds every row from these records and
the branch's own entries, so the table is the same live and from the file.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..session import Session
from ..views.scores import SCORE_TYPE, VARIANT_TYPE  # the views read these records too: one name each

END_TYPE = "pi_jupyter.branch_end"
EXPERIMENT_TYPE = "pi_jupyter.experiment"
PREVIEW_CHARS = 160


class Row(BaseModel):
    """One row of the table: a branch, run or skipped."""

    index: int
    values: dict[str, str] = Field(default_factory=dict)
    repeat: int = 0
    state: str = "skipped"
    """``done``, ``failed``, ``aborted``, ``running`` (no end record yet), ``skipped``."""
    stop_reason: str | None = None
    turns: int = 0
    tool_calls: int = 0
    requests: int = 0
    """Model requests the branch made (its assistant messages)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    duration_s: float | None = None
    answer: str = ""
    error: str | None = None
    leaf: str | None = None
    variant_entry: str | None = None
    model: str | None = None
    scores: dict[str, Any] = Field(default_factory=dict)
    score_errors: dict[str, str] = Field(default_factory=dict)
    """Scorer name -> why it gave this branch no score (it raised, timed out, returned no number)."""
    runs: int = 1
    """How many times the file records this branch as started (more than 1 only in files written
    before a lost worker's branch was marked instead of run again)."""


class Grid(BaseModel):
    """The experiment as recorded: id, start node, prompt template, grid, skipped branches."""

    id: str
    start: str | None = None
    prompt: str = ""
    vary: dict[str, list[str]] = Field(default_factory=dict)
    repeat: int = 1
    size: int = 0
    budget: float | None = None
    skipped: dict[int, str] = Field(default_factory=dict)
    continue_from: str | None = None
    compare: list[str] | None = None
    """The keys whose values are compared (``None``: every varied key)."""
    sequential: dict[str, Any] | None = None
    """``--until-decided``: ``{"looks": [repeats at each look], "planned": repeats}``."""


def variant_data(grid: Grid, index: int, values: dict[str, str], repeat: int) -> dict[str, Any]:
    """The ``data`` of a branch's variant entry."""
    return {
        "experiment": grid.id,
        "index": index,
        "values": values,
        "repeat": repeat,
        "grid": {"prompt": grid.prompt, "vary": grid.vary, "repeat": grid.repeat, "size": grid.size, "budget": grid.budget},
    }


def experiment_data(grid: Grid) -> dict[str, Any]:
    """The ``data`` of the end-of-experiment record."""
    data = variant_data(grid, -1, {}, 0)["grid"]
    data.update(experiment=grid.id, skipped={str(k): v for k, v in grid.skipped.items()}, continueFrom=grid.continue_from)
    if grid.compare is not None:
        data["compare"] = grid.compare
    if grid.sequential is not None:
        data["sequential"] = grid.sequential
    return data


def experiment_ids(session: Session) -> list[str]:
    """Ids of the experiments recorded in ``session``, oldest first."""
    seen: dict[str, None] = {}
    for e in session.custom_entries(VARIANT_TYPE, EXPERIMENT_TYPE):
        data = e.get("data")
        exp = data.get("experiment") if isinstance(data, dict) else None
        if isinstance(exp, str):
            seen.setdefault(exp, None)
    return list(seen)


def _ts(entry: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(entry.get("timestamp")).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def branch_tip(session: Session, start: str) -> str:
    """The last entry of a branch without an end record: follow the latest non-record child."""
    node = start
    while True:
        kids = [c for c in session.child_ids(node) if session.raw_entry(c).get("customType") not in (END_TYPE, SCORE_TYPE)]
        if not kids:
            return node
        node = kids[-1]


def branch_stats(session: Session, variant_entry: str, leaf: str) -> dict[str, Any]:
    """Turns, tool calls, tokens, cost, stop reason, answer and model of the branch from ``variant_entry`` to ``leaf``."""
    path = session.raw_branch(leaf)
    ids = [e["id"] for e in path]
    own = path[ids.index(variant_entry) + 1 :] if variant_entry in ids else []
    out: dict[str, Any] = {
        "turns": 0,
        "tool_calls": 0,
        "requests": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost": 0.0,
        "stop_reason": None,
        "answer": "",
    }
    for e in own:
        if e.get("type") == "model_change":
            out["model"] = f"{e.get('provider')}/{e.get('modelId')}"
        msg = e.get("message") if e.get("type") == "message" else None
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "user":
            out["turns"] += 1
        elif role == "assistant":
            out["requests"] += 1
            usage = msg.get("usage") or {}
            out["tokens_in"] += int(usage.get("input") or 0) + int(usage.get("cacheRead") or 0) + int(usage.get("cacheWrite") or 0)
            out["tokens_out"] += int(usage.get("output") or 0)
            out["cost"] += float((usage.get("cost") or {}).get("total") or 0.0)
            out["stop_reason"] = msg.get("stopReason")
            out["model"] = f"{msg.get('provider')}/{msg.get('model')}" if msg.get("provider") else out.get("model")
            blocks = msg.get("content") or []
            out["tool_calls"] += sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall")
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            if text.strip():
                out["answer"] = text.strip()
            if msg.get("errorMessage"):
                out["error"] = msg.get("errorMessage")
    return out


def _variant_of(session: Session, leaf: str, variant_ids: set[str]) -> str | None:
    """The variant entry at the head of the branch ending at ``leaf`` (its nearest ancestor that is one)."""
    node: str | None = leaf
    seen = 0
    while node is not None and seen < 1_000_000:
        if node in variant_ids:
            return node
        node = session.raw_entry(node).get("parentId") if node in session else None
        seen += 1
    return None


def started_branch(session: Session, start: str | None, experiment_id: str, index: int) -> tuple[str, str, bool] | None:
    """A branch of the grid the file already holds: (its variant entry, its tip, whether it has an end record), else ``None``.

    Only the start node's children are read, so a worker can ask before every branch."""
    for child in session.child_ids(start):
        entry = session.raw_entry(child)
        data = entry.get("data")
        if entry.get("customType") != VARIANT_TYPE or not isinstance(data, dict):
            continue
        if data.get("experiment") == experiment_id and data.get("index") == index:
            tip = branch_tip(session, child)
            ended = any(
                (session.raw_entry(c).get("customType") == END_TYPE and (session.raw_entry(c).get("data") or {}).get("index") == index)
                for c in session.child_ids(tip)
            )
            return child, tip, ended
    return None


def read_experiment(session: Session, experiment_id: str) -> tuple[Grid, list[Row]]:
    """Rebuild an experiment's grid and rows from the session's entries alone."""
    grid: Grid | None = None
    rows: dict[int, Row] = {}
    ends: list[tuple[str, dict[str, Any]]] = []
    scores: dict[str, dict[str, Any]] = {}
    errors: dict[str, dict[str, str]] = {}
    variants: list[dict[str, Any]] = []
    for e in session.custom_entries():  # the message lines of a large session stay on disk
        data = e.get("data")
        if not isinstance(data, dict) or data.get("experiment") != experiment_id:
            continue
        kind = e.get("customType")
        if kind == VARIANT_TYPE:
            variants.append(e)
            if grid is None:
                g = data.get("grid") or {}
                grid = Grid(
                    id=experiment_id, start=e.get("parentId"), **{k: g[k] for k in ("prompt", "vary", "repeat", "size", "budget") if k in g}
                )
        elif kind == END_TYPE:
            ends.append((e.get("parentId") or "", {**data, "_ts": _ts(e)}))
        elif kind == SCORE_TYPE and data.get("kind") != "pairwise":  # judgements are read by .judging
            leaf, name = e.get("parentId") or "", str(data.get("scorer"))
            if "error" in data and "value" not in data:
                errors.setdefault(leaf, {})[name] = str(data.get("error"))
                scores.get(leaf, {}).pop(name, None)
            else:
                scores.setdefault(leaf, {})[name] = data.get("value")
                errors.get(leaf, {}).pop(name, None)
        elif kind == EXPERIMENT_TYPE:
            fields = {k: data[k] for k in ("prompt", "vary", "repeat", "size", "budget", "compare", "sequential") if k in data}
            grid = Grid(id=experiment_id, start=e.get("parentId"), **fields)
            grid.skipped = {int(k): str(v) for k, v in (data.get("skipped") or {}).items()}
            grid.continue_from = data.get("continueFrom")
    if grid is None:
        raise KeyError(f"no experiment {experiment_id!r} in {session.path or 'this session'}")
    # each end record belongs to the branch it ends (its variant entry is an ancestor of its parent)
    variant_ids = {v["id"] for v in variants}
    end_of: dict[str, tuple[str, dict[str, Any]]] = {}
    for leaf, end in ends:
        head = _variant_of(session, leaf, variant_ids) if leaf else None
        if head is not None:
            end_of[head] = (leaf, end)
    runs: dict[int, int] = {}
    for v in variants:
        index = int(v["data"].get("index", 0))
        runs[index] = runs.get(index, 0) + 1
    for v in variants:
        data = v["data"]
        index = int(data.get("index", 0))
        previous = rows.get(index)
        if previous is not None and previous.state != "running" and v["id"] not in end_of:
            continue  # a second start of the branch that never ended: the finished one is the row
        row = Row(index=index, values=dict(data.get("values") or {}), repeat=int(data.get("repeat") or 0), variant_entry=v["id"])
        row.runs = runs[index]
        leaf_end = end_of.get(v["id"])
        if leaf_end is not None:
            leaf, end = leaf_end
            row.state = str(end.get("state") or "done")
            row.error = end.get("error")
            row.duration_s = end.get("duration_s")
        else:
            leaf = branch_tip(session, v["id"])
            row.state = "running"
            started, last = _ts(v), _ts(session.raw_entry(leaf))
            row.duration_s = (last - started) if started is not None and last is not None else None
        row.leaf = leaf
        stats = branch_stats(session, v["id"], leaf)
        error = stats.pop("error", None)
        if row.error is None and row.state != "done":
            row.error = error
        for key, value in stats.items():
            setattr(row, key, value)
        row.answer = row.answer[:PREVIEW_CHARS]
        row.scores = scores.get(leaf, {})
        row.score_errors = errors.get(leaf, {})
        rows[index] = row
    from .variants import expand

    for variant in expand(grid.vary, grid.repeat):
        if variant.index not in rows:
            reason = grid.skipped.get(variant.index, "not run")
            rows[variant.index] = Row(index=variant.index, values=variant.values, repeat=variant.repeat, state="skipped", error=reason)
    return grid, [rows[i] for i in sorted(rows)]
