"""``pi-jupyter context FILE [--leaf ID] [--json]``: the rebuilt context of a branch."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from ..session.errors import CycleError
from ..session.jsonl import dumps
from ..session.kinds import PASSED_ON
from .common import CURRENT, CliError, note_problems, open_session, resolve_leaf, safe_stdout, scan_session, status, write_json

if TYPE_CHECKING:  # pragma: no cover - imported where used, so a plain --json run imports no message models
    from ..session import Session
    from ..session.rebuild import ContextPlan
    from ..session.scan import ScannedSession

READ_ONLY = True
"""The command only reads: the ``pi-jupyter`` script ends the process as soon as its output is written."""

DESCRIPTION = """\
Print what a model would be given on the current branch: pi's buildSessionContext
(the latest compaction summary, the kept and later messages, custom messages and branch
summaries), the thinking level and the model. The file is opened read-only.

--json prints one object: {"messages": [...], "thinkingLevel": ..., "model": ..., "llm": [...]},
where messages are exactly pi's JSON shape and llm is convert_to_llm's output."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``context``."""
    parser.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    parser.add_argument(
        "--leaf",
        metavar="ID",
        help="the branch to rebuild: an entry id, a unique id prefix, a label, or 'null' (before the first entry)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


def context_json(session: Session, leaf: Any = CURRENT) -> dict[str, Any]:
    """``{"messages", "thinkingLevel", "model", "llm"}`` for the branch ending at ``leaf``."""
    ctx = session.context() if leaf is CURRENT else session.context(leaf)
    out = ctx.to_pi_json()
    out["llm"] = [item for message in ctx.raw_messages for item in llm_items(message)]
    return out


def cycle_message(session: Session | ScannedSession, exc: CycleError, hint: str = "--leaf ID rebuilds another one") -> str:
    """``FILE:LINE: parent cycle ...``, with the line where the load report found the cycle, and what to do."""
    cycles = [p for p in session.load_report.problems if p.kind == "cycle"]
    hit = next((p for p in cycles if p.entry_id in exc.loop), cycles[0] if cycles else None)
    where = f"{session.path}:{hit.line}" if hit is not None and hit.line else str(session.path)
    return f"{where}: {exc}; this branch has no root ({hint})"


def llm_items(message: Any) -> list[Any]:
    """What convert_to_llm sends for one context message (the message itself for the roles it passes on)."""
    role = message.get("role") if isinstance(message, dict) else None
    if not isinstance(role, str):
        return []  # not a message at all: pi's convertToLlm drops it (or, for null, fails)
    if role in PASSED_ON:
        return [message]  # passed on unchanged: written as read, byte for byte
    from ..messages import convert_to_llm

    # never raises for what a file holds; a summary without a valid time keeps "timestamp": null
    return [m.to_dict() for m in convert_to_llm([message])]


def run(args: argparse.Namespace) -> int:
    """Print the context; the exit status follows the file's load report.

    A file is read as stubs (:func:`~pi_jupyter.session.scan.scan`) and its context streamed
    entry by entry, so a 100k-entry session costs little memory; files the stubs cannot
    stand for (old versions, repeated ids) are opened whole.
    """
    scanned = scan_session(args.file)
    if scanned is None:
        return _run_whole(args)
    leaf = resolve_leaf(scanned, args.leaf)
    leaf_id = scanned.leaf_id if leaf is CURRENT else leaf
    try:
        plan = scanned.plan(leaf_id)
    except CycleError as exc:
        raise CliError(cycle_message(scanned, exc)) from None
    note_problems(scanned)
    if args.json:
        _stream_json(scanned, plan)
    else:
        _stream_text(scanned, plan, leaf_id)
    return status(scanned)


def _stream_json(scanned: ScannedSession, plan: ContextPlan) -> None:
    """``{"messages": [...], "thinkingLevel", "model", "llm": [...]}`` written as it is read (llm held aside until then)."""
    out = sys.stdout.buffer
    sys.stdout.flush()
    out.write(b'{"messages":[')
    messages = _Commas(out, WRITE_AT)  # a pipe takes a few large writes better than many small ones
    llm = _Commas(None, SPOOL_LIMIT)
    for text, message in scanned.message_texts(plan):
        blob = text if text is not None else dumps(message)
        messages.add(blob)
        # a message taken as written has a role convert_to_llm passes on unchanged
        for item in llm_items(message) if text is None else (message,):
            llm.add(blob if item is message else dumps(item))
    messages.flush()
    settings = dumps(plan.settings())  # {"thinkingLevel"?, "model"}
    out.write(b"]," + settings[1:-1] + b',"llm":[')
    llm.move_to(out)
    out.write(b"]}\n")
    out.flush()


class _Commas:
    """Items written comma-separated to ``sink``, ``limit`` bytes at a time.

    Without a sink (the ``llm`` items) they are held in memory up to ``limit``, then go to a
    temporary file: a branch of 100k messages would otherwise hold its whole context twice,
    and a usual one never touches the disk (nor imports :mod:`tempfile`).
    """

    def __init__(self, sink: BinaryIO | None, limit: int) -> None:
        self._sink = sink
        self._limit = limit
        self._pieces: list[bytes | memoryview] = []
        self._held = 0  # bytes in _pieces
        self._written = False  # some items went to the sink already

    def add(self, blob: bytes | memoryview) -> None:
        """Append one item."""
        self._pieces.append(blob)
        self._held += len(blob)
        if self._held > self._limit:
            self.flush()

    def flush(self) -> None:
        """Write the items held to the sink (a temporary file if there is none yet)."""
        if not self._pieces:
            return
        if self._sink is None:
            import tempfile

            self._sink = tempfile.TemporaryFile()
        if self._written:
            self._sink.write(b",")
        self._sink.write(b",".join(self._pieces))
        self._written = True
        self._pieces.clear()
        self._held = 0

    def move_to(self, out: BinaryIO) -> None:
        """Write every item, comma-separated, to ``out`` (from the temporary file, then memory) and let go of them."""
        if self._sink is not None:
            with self._sink as spool:
                spool.seek(0)
                while piece := spool.read(1 << 20):  # (shutil would cost the command its import)
                    out.write(piece)
            self._sink = None
        self._sink = out
        self.flush()


SPOOL_LIMIT = 32 << 20
"""Bytes of ``llm`` items held in memory before the rest goes to a temporary file."""

WRITE_AT = 1 << 20
"""Bytes of messages gathered before they are written out."""


def _stream_text(scanned: ScannedSession, plan: ContextPlan, leaf_id: str | None) -> None:
    """The header line (counts first: a pass over the stubs), then the transcript, one message at a time."""
    from .render import render_message

    safe_stdout()
    count = sent = 0
    for message in _counted(scanned, plan):
        count += 1
        sent += len(llm_items(message))
    settings = plan.settings()
    model = settings.get("model")
    model_text = f"{model.get('provider')}/{model.get('modelId')}" if model else "none"
    print(
        f"context of {scanned.path} at leaf {leaf_id or 'null (before the first entry)'}: "
        f"{count} messages, {sent} sent to the model, "
        f"thinking level {settings.get('thinkingLevel')}, model {model_text}"
    )
    write = sys.stdout.write
    for number, message in enumerate(scanned.messages(plan), start=1):
        write(render_message(number, message) + "\n")
    sys.stdout.flush()


def _counted(scanned: ScannedSession, plan: ContextPlan) -> Iterator[Any]:
    """The context's messages for counting: stubs where they say enough, whole entries for the rare rest."""
    for n, position in enumerate(plan.positions):
        if not scanned.emits(position):
            continue
        stub = scanned.stub_at(position)
        message = stub.get("message")
        if stub["type"] == "message" and isinstance(message, dict) and message.get("role") in PASSED_ON:
            yield message  # a stub of the role is enough: passed on as it is
        else:
            yield from scanned.messages_at(plan, n)


def _run_whole(args: argparse.Namespace) -> int:
    """The context of a file opened whole (an old version, repeated ids)."""
    from .render import render_messages

    session = open_session(args.file)
    leaf = resolve_leaf(session, args.leaf)
    try:
        payload = context_json(session, leaf)
    except CycleError as exc:
        raise CliError(cycle_message(session, exc)) from None
    note_problems(session)
    if args.json:
        write_json(payload)
        return status(session)
    safe_stdout()
    leaf_id = session.leaf_id if leaf is CURRENT else leaf
    model = payload.get("model")
    model_text = f"{model.get('provider')}/{model.get('modelId')}" if model else "none"
    print(
        f"context of {session.path} at leaf {leaf_id or 'null (before the first entry)'}: "
        f"{len(payload['messages'])} messages, {len(payload['llm'])} sent to the model, "
        f"thinking level {payload.get('thinkingLevel')}, model {model_text}"
    )
    if payload["messages"]:
        print(render_messages(payload["messages"]))
    return status(session)
