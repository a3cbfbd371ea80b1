"""``pi-jupyter info FILE [--json]``: what a session is, and every problem found reading it."""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..messages.text import iso_from_ms
from ..session.errors import CycleError
from ..session.listing import InfoBuilder, SessionInfo
from ..session.usage import entry_usage
from ..session.version import CURRENT_VERSION
from .common import cut_name, open_session, safe_stdout, scan_session, status, write_json

if TYPE_CHECKING:  # pragma: no cover - a file read as stubs needs no Session (nor its models)
    from ..session import Session
    from ..session.scan import ScannedSession

READ_ONLY = True
"""The command only reads: the ``pi-jupyter`` script ends the process as soon as its output is written."""

DESCRIPTION = """\
Print what the session is (id, file, cwd, name, parent session, created/modified, entry
and message counts, leaf, models used, token and cost totals over every branch) and its
load report: every problem found while reading, with its line number. The file is opened
read-only; an old version is migrated in memory only."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``info``."""
    parser.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


def _number(value: Any) -> float:
    """A count or cost as a number; anything else, and a number JSON cannot hold (1e400 reads as infinity), is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return value if math.isfinite(value) else 0


def _cut(text: str) -> str:
    return cut_name(text, rest="--json has it all")


def _version_text(session: Session | ScannedSession, version: Any) -> str:
    migrated = next((p for p in session.load_report.problems if p.kind == "migrated"), None)
    if migrated is None:
        return str(version)
    return f"{version} ({migrated.message}, in memory only: the file is unchanged)"


def _iso(when: datetime) -> str:
    try:
        return iso_from_ms(round(when.timestamp() * 1000))
    except (OverflowError, OSError, ValueError):
        return when.isoformat()  # a time at the end of the calendar (a far-off timestamp in the file)


class Totals:
    """Counts, models, tokens and cost over entries, fed one entry at a time (a visitor of the scan)."""

    def __init__(self) -> None:
        self.entry_types: Counter[str] = Counter()
        self.roles: Counter[str] = Counter()
        self.models: dict[str, None] = {}
        self.tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
        self.cost = 0.0
        self.info = InfoBuilder(keep_text=False)

    def __call__(self, entry: dict[str, Any]) -> None:
        self.info.add(entry)
        kind = entry.get("type", "?")
        self.entry_types[kind] += 1
        if kind == "model_change":
            self.models[f"{entry.get('provider')}/{entry.get('modelId')}"] = None
        message = entry.get("message") if kind == "message" else None
        if isinstance(message, dict):
            role = message.get("role", "?")
            role = role if isinstance(role, str) else "?"
            self.roles[role] += 1
            if role == "assistant":
                self.models[f"{message.get('provider')}/{message.get('model')}"] = None
        spent = entry_usage(entry)  # assistant messages, and pi 1.x's usage entries and summaries
        if spent is not None:
            usage = spent[1]
            for key in self.tokens:
                self.tokens[key] += int(_number(usage.get(key)))
            costs = usage.get("cost")
            if isinstance(costs, dict):
                self.cost += _number(costs.get("total"))


def session_summary(session: Session) -> dict[str, Any]:
    """The facts ``info`` prints, as a JSON-ready dict."""
    totals = Totals()
    entries = session.raw_entries()
    standing = {entry["id"]: entry for entry in entries}  # the later line of a repeated id stands for it
    for entry in entries:
        if standing[entry["id"]] is entry:
            totals(entry)
    return _summary(session, totals, session.info())


def _summary(session: Session | ScannedSession, totals: Totals, info: SessionInfo) -> dict[str, Any]:
    depth: int | None
    try:
        depth = len(session.branch_ids())
    except CycleError:  # already in the load report
        depth = None
    return {
        "id": info.id,
        "path": info.path,
        "version": session.raw_header.get("version", CURRENT_VERSION),
        "cwd": info.cwd,
        "name": info.name,
        "parentSession": info.parent_session_path,
        "created": _iso(info.created) if info.created else None,
        "modified": _iso(info.modified),
        "entries": len(session),
        "entryTypes": dict(totals.entry_types),
        "messages": info.message_count,
        "messageRoles": dict(totals.roles),
        "firstMessage": info.first_message,
        "leaf": session.leaf_id,
        "branchLength": depth,
        "labels": session.labels,
        "models": list(totals.models),
        "tokens": totals.tokens,
        "cost": round(totals.cost, 6),
        "problems": [p.to_dict() for p in session.load_report.problems],
        "omittedProblems": dict(session.load_report.omitted),
    }


def _scanned_summary(path: str) -> tuple[ScannedSession, dict[str, Any]] | None:
    """Read ``path`` as stubs, totalling on the way; ``None`` for a file to open whole."""
    totals = Totals()
    scanned = scan_session(path, visit=totals)
    if scanned is None:
        return None
    try:
        mtime: float | None = os.stat(scanned.path).st_mtime
    except OSError:
        mtime = None
    info = totals.info.build(scanned.path, scanned.raw_header, problems=scanned.load_report.serious, mtime=mtime)
    return scanned, _summary(scanned, totals, info)


def _branch_text(length: int | None) -> str:
    if length is None:
        return "on a parent cycle: its branch has no root"
    return f"branch of {length} {'entry' if length == 1 else 'entries'}"


def run(args: argparse.Namespace) -> int:
    """Print the info and the load report; the exit status follows the load report.

    The file is read as stubs and totalled on the way (flat memory); files the stubs cannot
    stand for (old versions, repeated ids) are opened whole.
    """
    session: Session | ScannedSession
    scanned = _scanned_summary(args.file)
    if scanned is not None:
        session, summary = scanned
    else:
        whole = open_session(args.file)
        session, summary = whole, session_summary(whole)
    if args.json:
        write_json(summary)
        return status(session)
    safe_stdout()
    rows = [
        ("id", summary["id"]),
        ("file", summary["path"]),
        ("version", _version_text(session, summary["version"])),
        ("cwd", summary["cwd"] or "(none)"),
        ("name", _cut(summary["name"]) if summary["name"] else "(none)"),
        ("parent session", summary["parentSession"] or "(none)"),
        ("created", summary["created"] or "(unknown)"),
        ("modified", summary["modified"]),
        ("entries", f"{summary['entries']}  " + ", ".join(f"{k} {v}" for k, v in sorted(summary["entryTypes"].items()))),
        ("messages", f"{summary['messages']}  " + ", ".join(f"{k} {v}" for k, v in sorted(summary["messageRoles"].items()))),
        ("first message", summary["firstMessage"].replace("\n", " ")[:100]),
        ("leaf", f"{summary['leaf'] or 'null (before the first entry)'} ({_branch_text(summary['branchLength'])})"),
        ("labels", ", ".join(f"{k}={v!r}" for k, v in summary["labels"].items()) or "(none)"),
        ("models", ", ".join(summary["models"]) or "(none)"),
        ("tokens", ", ".join(f"{k} {v}" for k, v in summary["tokens"].items())),
        ("cost", f"${summary['cost']:.4f}"),
    ]
    for key, value in rows:
        print(f"{key + ':':16}{value}")
    report = session.load_report
    if not report.problems:
        print("load report:    no problems")
    else:
        print(f"load report:    {report.total} problem(s)")
        for problem in report.problems:
            print(f"  {problem}")
        for row in report.omitted_lines():
            print(f"  {row}")
    return status(session)
