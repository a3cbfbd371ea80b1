"""One student's session for the class view, read in one pass: their cells' work, their branches, their tree.

A class of 200 sessions of 1,000 entries must open in about a second, so each entry is
looked at once: its facts (role, usage, tool calls, a failed tool result) go into small
tables, and the cells, the branch count and the tree of prompts are built from those tables.
Texts are only extracted where they are shown: the prompt and answer of the run a cell shows,
and a preview per prompt of the tree.
"""

from __future__ import annotations

from typing import Any

from ...session.index import CELL_TYPE
from .. import digest
from .read import SessionFile
from .stats import CellWork, StudentRow, TurnNode

_CONTENT = frozenset({"message", "compaction", "branch_summary", "custom_message"})
_ERRORS_KEPT = 3
USER, ASSISTANT, RESULT, FAILED = 1, 2, 3, 4


def _usage(msg: dict[str, Any]) -> tuple[int, float]:
    usage = msg.get("usage")
    if type(usage) is not dict:
        return 0, 0.0
    tokens = usage.get("totalTokens")
    if type(tokens) is not int:
        return digest.usage_brief(msg)  # odd values: the careful reading
    cost = usage.get("cost")
    total = cost.get("total") if type(cost) is dict else 0.0
    return tokens, (float(total) if type(total) is int or type(total) is float else digest.usage_brief(msg)[1])


def student_row(sf: SessionFile) -> StudentRow:
    """One student's row: each course cell's work, the branch count, problems, and the tree of prompts."""
    entries = sf.entries
    parent_of: dict[str, Any] = {}
    role_of: dict[str, int] = {}
    msg_of: dict[str, dict[str, Any]] = {}
    usage_of: dict[str, tuple[int, float, int]] = {}
    content: set[str] = set()
    below: set[str] = set()  # conversation entries with conversation below them (settings, labels, records do not count)
    records: list[tuple[str, list[Any], Any]] = []
    head_of: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    roots: list[TurnNode] = []
    node_of: dict[str, TurnNode] = {}
    turn_of: dict[str, str | None] = {}
    answers: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        eid = e["id"]
        kind = e["type"]
        parent = e.get("parentId")
        parent_of[eid] = parent
        if kind in _CONTENT:
            content.add(eid)
            up = parent
            while up is not None and up in parent_of and up not in content:
                up = parent_of[up]  # through settings and labels to the conversation above
            if up is not None:
                below.add(up)
        head = turn_of.get(parent) if type(parent) is str else None
        msg = e.get("message") if kind == "message" else None
        role = msg.get("role") if type(msg) is dict else None
        if role == "user":
            role_of[eid] = USER
            msg_of[eid] = msg  # type: ignore[assignment]
            head_of[eid] = eid
            groups[eid] = [eid]
            node = TurnNode(digest.preview(digest.content_text(msg.get("content")), 90))  # type: ignore[union-attr]
            (node_of[head].children if head is not None else roots).append(node)
            node_of[eid] = node
            turn_of[eid] = eid
            continue
        turn_of[eid] = head
        group = head_of.get(parent) if type(parent) is str else None
        if group is not None:
            head_of[eid] = group
            groups[group].append(eid)
        if role == "assistant":
            role_of[eid] = ASSISTANT
            msg_of[eid] = msg  # type: ignore[assignment]
            tokens, cost = _usage(msg)  # type: ignore[arg-type]
            blocks = msg.get("content")  # type: ignore[union-attr]
            calls = sum(1 for b in blocks if type(b) is dict and b.get("type") == "toolCall") if type(blocks) is list else 0
            usage_of[eid] = (tokens, cost, calls)
            if head is not None:
                answers.setdefault(head, []).append(msg)  # type: ignore[arg-type]
        elif role == "toolResult":
            failed = msg.get("isError") is True  # type: ignore[union-attr]
            role_of[eid] = FAILED if failed else RESULT
            if failed:
                msg_of[eid] = msg  # type: ignore[assignment]
                if head is not None:
                    node_of[head].tool_errors += 1
        elif kind == "custom" and e.get("customType") == CELL_TYPE:
            data = e.get("data")
            if type(data) is dict and type(data.get("cellId")) is str and type(data.get("produced")) is list:
                end = data.get("end") if type(data.get("end")) is str else parent
                records.append((data["cellId"], data["produced"], end))
    on_path: set[str] = set()
    leaf = entries[-1]["id"] if entries else None
    while type(leaf) is str and leaf in parent_of and leaf not in on_path:
        on_path.add(leaf)
        leaf = parent_of[leaf]
    for eid, node in node_of.items():
        node.current = eid in on_path
        node.answer = digest.preview(_last_answer(answers.get(eid, ())), 90)
    if records:
        runs = [(key, [i for i in produced if type(i) is str and i in parent_of], end) for key, produced, end in records]
    else:  # a pi session: its prompts are its cells, keyed by their text
        runs = [
            ("prompt:" + " ".join(digest.content_text(msg_of[h].get("content")).lower().split())[:500], ids, ids[-1])
            for h, ids in groups.items()
        ]
    works: dict[str, CellWork] = {}
    chosen: dict[str, tuple[tuple[bool, int], list[str]]] = {}
    current_keys: list[str] = []
    other_keys: list[str] = []
    for n, (key, ids, end) in enumerate(runs):
        work = works.get(key)
        if work is None:
            work = works[key] = CellWork()
        current = end in on_path
        (current_keys if current else other_keys).append(key)
        _count(work, ids, role_of, usage_of, msg_of)
        if key not in chosen or (current, n) > chosen[key][0]:
            chosen[key] = ((current, n), ids)
    for key, (_, ids) in chosen.items():  # the run a cell shows: the latest on the current branch
        work = works[key]
        work.prompt = next((digest.content_text(msg_of[i].get("content")) for i in ids if role_of.get(i) == USER), "")
        work.answer = _last_answer([msg_of[i] for i in ids if role_of.get(i) == ASSISTANT])
        work.failed = _failed(ids, role_of, msg_of)
    leaves = len(content - below)
    return StudentRow(
        student=sf.student, path=sf.path, name=sf.name, entries=len(entries), branches=max(1, leaves) if entries else 0,
        cells=works, order=list(dict.fromkeys(current_keys + other_keys)), problems=list(sf.problems),
        still_writing=sf.still_writing, tree=roots,
    )  # fmt: skip


Usage = dict[str, tuple[int, float, int]]


def _count(work: CellWork, ids: list[str], role_of: dict[str, int], usage_of: Usage, msg_of: dict[str, Any]) -> None:
    turns = calls = errors = tokens = 0
    cost = 0.0
    for i in ids:
        role = role_of.get(i)
        if role == ASSISTANT:
            t, c, k = usage_of[i]
            turns += 1
            tokens += t
            cost += c
            calls += k
        elif role == FAILED:
            errors += 1
            if len(work.error_texts) < _ERRORS_KEPT:
                work.error_texts.append(digest.clip(digest.content_text(msg_of[i].get("content")), 300))
    work.runs += 1
    work.turns += turns
    work.tool_calls += calls
    work.tool_errors += errors
    work.tokens += tokens
    work.cost += cost


def _failed(ids: list[str], role_of: dict[str, int], msg_of: dict[str, Any]) -> bool:
    """True when a run's last tool result is an error, or its last reply stopped on an error (or was aborted)."""
    results = [role_of[i] for i in ids if role_of.get(i) in (RESULT, FAILED)]
    if results and results[-1] == FAILED:
        return True
    replies = [msg_of[i] for i in ids if role_of.get(i) == ASSISTANT and i in msg_of]
    return bool(replies) and replies[-1].get("stopReason") in ("error", "aborted")


def _last_answer(messages: Any) -> str:
    """The last assistant text among ``messages``; a failure says so."""
    for msg in reversed(list(messages)):
        text = digest.content_text(msg.get("content"))
        if text.strip():
            return text
        if msg.get("stopReason") == "error":
            return f"(error: {digest.error_summary(digest.as_text(msg.get('errorMessage') or 'unknown'))})"
    return ""


__all__ = ["student_row"]
