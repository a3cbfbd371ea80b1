"""Hostile markup in every field any renderer shows: the payloads, the fields, and a session that holds them.

A *world* is one payload (``VECTORS``) written into every field a user can see: the session's
name and file name, prompts, thinking, answers, tool names, arguments and output, the name of
a file a tool read and of one the python tool wrote (its card's ``changed:`` line), retry and
extension-error notices, the model id, the status line, error messages, sibling answers,
labels, compaction and branch summaries, extension messages, shell commands, model changes,
variant values and score names. The world is made the way a user makes it: a real
:class:`~pi_jupyter.Agent` talks to the wire server (Anthropic's streaming format), the live
:class:`~pi_jupyter.notebook.agent_view.view.AgentView` follows its events, the cell is run twice
(so the second output shows the first answer as a sibling), and a grid runs
over a hostile variant value with a hostile scorer.

Each field's text starts with a marker (``Xname9``) so a test can check that the field is
shown (a renderer that silently dropped a field would pass any "nothing executes" check), and
each payload calls ``__pwn('marker')`` if it ever runs.

``live_markup(html)`` reads HTML as a browser's tokenizer does (:mod:`html.parser`) and lists
what a payload made live: elements no rendering of ours contains, ``on*`` handlers, unsafe URLs,
payload text inside a script or style. ``shown_text(html)`` is the text a reader sees.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

# ------------------------------------------------------------------------------ payloads

VECTORS: dict[str, str] = {
    "img": "<img src=x onerror=\"__pwn('@')\">",
    "script": "<script>__pwn('@')</script>",
    "js-link": "[click @](javascript:__pwn('@')//https://example.com/) <a href=\"javascript:__pwn('@')\">a</a>",
    "entity-link": "[a @](java&#115;cript:__pwn('@')) [b @][r]\n\n[r]: javascript&colon;__pwn('@')",
    "style-close": "</style><img src=x onerror=__pwn('@')><style>",
    "comment": "<!--<script>",
    "svg": "<svg><script>__pwn('@')</script></svg><svg onload=\"__pwn('@')\">",
    "script-close": "\u2028</script><script>__pwn('@')</script>\u2029",
    "escaped-tick": "\\`<img src=x onerror=__pwn('@')>`",
    "fence-info": "\n```x`\n<img src=x onerror=__pwn('@')>\n```\n",
    "fence-break": "\n````\n<img src=x onerror=__pwn('@')>\n`````\n",
    "split-code": "a ` b\n`<img src=x onerror=__pwn('@')>` c",
    "attributes": "{onclick=__pwn('@')} [x]{onmouseover=__pwn('@')}\n\n```{=html}\n<img src=x onerror=__pwn('@')>\n```\n",
    "entities": "&lt;img src=x onerror=__pwn('@')&gt; &#60;script&#62;__pwn('@')&#60;/script&#62;",
    "open-fence": "\n```\n<img src=x onerror=__pwn('@')>\n",
    "elements": "<base href=\"javascript:__pwn('@')//\"><object data=\"javascript:__pwn('@')\"></object>"
    '<embed src="javascript:__pwn(\'@\')"><meta http-equiv="refresh" content="0;url=javascript:__pwn(\'@\')">',
}
"""Ways text becomes markup: raw tags, ``javascript:`` links (plain, entity-encoded, by reference,
behind an ``https`` tail for an unanchored filter), breaking out of ``<style>``/``<script>``/comments,
SVG, Markdown code that is not code (an escaped backtick, a fence whose info holds a backtick, a
code span across lines, a run of backticks that ends a fence of fixed length), a fence left open
(a later field's fence would close it and free what follows), pandoc/kramdown attributes and raw
blocks, text that is already escaped, and the elements that act without a script (``<base>``,
``<object>``, ``<embed>``, ``<meta http-equiv>``)."""


def payload(marker: str, vector: str) -> str:
    """The text of one field: its marker, then the vector with ``@`` standing for the marker."""
    return f"{marker} {VECTORS[vector].replace('@', marker)}"


def file_safe(text: str) -> str:
    """``text`` usable as a file name (no ``/``, no NUL, not too long)."""
    return text.replace("/", "\u2215").replace("\0", "")[:200]


# ------------------------------------------------------------------------------ the fields

FIELDS: dict[str, str] = {
    "name": "the session's name",
    "file": "the session file's name",
    "prompt": "the prompt of the cell",
    "retry": "the error text of a retried request",
    "think": "the model's thinking",
    "text": "the model's text before its tool calls",
    "tool": "the name of a tool the model called",
    "argkey": "an argument's name",
    "argval": "an argument's value",
    "path": "a file a tool read",
    "output": "what the tool returned",
    "wrote": "a file the python tool wrote (named in the changed: line under its card)",
    "ext": "an extension's name (its error notice)",
    "exterr": "an extension's error text",
    "custom": "an extension message's type",
    "custommsg": "an extension message's text",
    "model": "the model id",
    "answer": "the final answer",
    "note": "the status line's note",
    "prompt2": "the prompt of the re-run",
    "error": "the error message of a failed answer",
    "label": "a label",
    "compaction": "a compaction summary",
    "branchsum": "a branch summary",
    "shell": "a shell command",
    "shellout": "a shell command's output",
    "provider": "a provider in a model change",
    "variant": "a variant value of a grid",
    "scorer": "a scorer's name",
    "judge": "a judge's name (a pairwise judgement of the grid)",
}
"""Every field a renderer shows, by short name (the marker is ``X<name>9``)."""


def marker(name: str) -> str:
    """The marker of field ``name``: letters and digits only, so every renderer keeps it whole."""
    return f"X{name}9"


# Which fields each rendering shows. A rendering not listed for a field may still show it; these
# are the ones a test checks are there, so a field dropped by mistake is noticed.
CELL_FIELDS = ("name", "prompt", "retry", "think", "text", "tool", "argkey", "argval", "path", "output", "wrote", "ext", "exterr")
CELL_FIELDS += ("custom", "custommsg", "model", "answer", "note")
RERUN_FIELDS = ("name", "prompt2", "error", "answer", "model")
SESSION_FIELDS = ("prompt", "think", "text", "tool", "argkey", "argval", "path", "output", "custom", "custommsg", "answer")
SESSION_FIELDS += ("prompt2", "error", "label", "compaction", "branchsum", "shell", "shellout", "provider", "model", "variant")
SHOWN: dict[str, tuple[str, ...]] = {
    "cell html": CELL_FIELDS,
    "rerun html": RERUN_FIELDS,
    "cell markdown": CELL_FIELDS,
    "rerun markdown": ("name", "prompt2", "error", "model"),
    "export page": (*SESSION_FIELDS, "name", "file"),
    "export markdown": (*SESSION_FIELDS, "name"),
    "graph": ("prompt", "answer", "label", "error", "variant", "scorer"),
    "tree panel": (*SESSION_FIELDS, "wrote", "scorer"),
    "experiment table": ("variant", "scorer"),
    "experiment summary": ("variant", "scorer", "judge"),
    "experiment figure": ("variant", "scorer"),
    "judgements": ("variant", "judge"),
    "agent widget": CELL_FIELDS,
    "rerun widget": ("name", "prompt2", "error", "model"),
    "experiment widget": ("variant",),
    # %pi context shows what the current model (offline/echo here) is sent: another model's thinking is not (as in pi 1.6)
    "context html": ("prompt", "text", "answer", "branchsum", "variant"),
    "context markdown": ("prompt", "text", "answer", "branchsum", "variant"),
}


# ------------------------------------------------------------------------------ the world


@dataclass
class World:
    """One vector in every field: the session, the two cell outputs, the live views' state, the grid."""

    vector: str
    session: Any
    cell: dict[str, Any]
    """The first run's static bundle (``text/html``, ``text/markdown``, ``text/plain``)."""
    rerun: dict[str, Any]
    """The re-run's static bundle: an error answer, with the first answer as a sibling."""
    widgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Synced state of the live views: ``agent``, ``rerun`` (AgentView), ``experiment`` (ExperimentView)."""
    grid: Any = None
    answer_leaf: str = ""
    """The end of the first run (labelled; the branch summary and the grid start there)."""
    rerun_leaf: str = ""
    """The end of the re-run's branch (its error, then a compaction, a shell command, a model change)."""
    experiment_done: dict[str, Any] = field(default_factory=dict)
    """The grid cell's final output (``text/html``, ``text/plain``)."""

    def p(self, name: str) -> str:
        """The text planted in field ``name``."""
        return payload(marker(name), self.vector)


class _Failing:
    """An extension whose observer fails with a hostile message and which sends a hostile message."""

    def __init__(self, error: str, custom_type: str, custom_text: str) -> None:
        self.error, self.custom_type, self.custom_text = error, custom_type, custom_text
        self.failed = False

    def on_event(self, event: Any, ctx: Any) -> None:
        if getattr(event, "type", "") == "turn_end" and not self.failed:
            self.failed = True
            raise RuntimeError(self.error)

    def before_prompt(self, text: str, ctx: Any) -> Any:
        from pi_jupyter.messages import CustomMessage

        return CustomMessage(custom_type=self.custom_type, content=self.custom_text, display=True)


def _view_state(view: Any) -> dict[str, Any]:
    view.flush()
    return {"title": view.title, "transcript": view.transcript, "transcript_seq": view.transcript_seq, "status": view.status, "scale": 1.0}


async def _build(folder: Path, server: Any, vector: str) -> World:
    from wire.helpers import wire_model
    from wire.server import anthropic_reply, http_error, text_block, thinking_block, tool_use_block

    from pi_jupyter import Agent
    from pi_jupyter.agent.settings import AgentSettings, RetrySettings
    from pi_jupyter.experiment import Experiment
    from pi_jupyter.messages import BashExecutionMessage
    from pi_jupyter.notebook.agent_view.siblings import siblings_footer
    from pi_jupyter.notebook.agent_view.view import AgentView
    from pi_jupyter.notebook.cells import CellRun, record_run, start_for
    from pi_jupyter.notebook.experiments.view import ExperimentView, final_bundle
    from pi_jupyter.session import Session
    from pi_jupyter.world import World as WorldOfTools

    def p(name: str) -> str:
        return payload(marker(name), vector)

    folder.mkdir(parents=True, exist_ok=True)
    written = str(folder / file_safe(p("wrote"))).encode()
    (folder / file_safe(p("path"))).write_text(p("output"), encoding="utf-8")
    s = Session.create(path=str(folder / (file_safe(p("file")) + ".jsonl")), cwd=str(folder))
    s.set_name(p("name"))
    model = wire_model(server, "anthropic-messages", id=p("model"))
    settings = AgentSettings(retry=RetrySettings(base_delay_ms=1, max_delay_ms=5))
    ns: dict[str, Any] = {}
    world = WorldOfTools(s, ns, cwd=str(folder))  # the python tool's file is named in its card's "changed:" line
    agent = Agent(
        s, model=model, api_key="sk-test-not-a-secret", cwd=str(folder), settings=settings, tools=["read", "python"], thinking="off",
        tool_extra={"namespace": ns, "world": world},
    )  # fmt: skip
    agent.extensions.add(_Failing(p("exterr"), p("custom"), p("custommsg")), name=p("ext"))
    server.reset()
    server.queue(
        "anthropic",
        http_error(503, p("retry"), "anthropic"),
        anthropic_reply(
            [
                thinking_block(p("think")),
                text_block(p("text")),
                tool_use_block("read", {"path": file_safe(p("path"))}, id="toolu_read"),
                # the name comes from hex, so the marker is shown only if the changed: line is
                tool_use_block("python", {"code": f"open(bytes.fromhex({written.hex()!r}).decode(), 'w').close()"}, id="toolu_py"),
                tool_use_block(p("tool"), {p("argkey"): p("argval")}, id="toolu_odd"),
            ]
        ),
        anthropic_reply([text_block(p("answer"))]),
        # the re-run: the retries give up, and the notice and the answer carry the last error
        *[http_error(503, p("retry"), "anthropic")] * settings.retry.max_retries,
        http_error(503, p("error"), "anthropic"),
    )

    async def run_cell(prompt: str, note: str = "") -> tuple[AgentView, dict[str, Any]]:
        start, _ = start_for(s, "cell-1")
        if start != s.leaf_id:
            s.checkout(start, persist=False)
            agent.reload()
        view = AgentView(title=s.name or "", model=agent.model.ref)
        if note:
            view.set_status(note=note)
        unsubscribe = agent.subscribe(view.handle)
        try:
            result = await agent.prompt(prompt)
        finally:
            unsubscribe()
        record_run(s, CellRun(cell_id="cell-1", started_from=start, produced=list(result.entry_ids), end=s.leaf_id, execution_count=1))
        view.set_footer(*siblings_footer(s, "cell-1", start, s.leaf_id))
        return view, view.final_bundle()

    first, cell = await run_cell(p("prompt"), note=p("note"))
    answer_id = s.leaf_id
    second, rerun = await run_cell(p("prompt2"))
    server.reset()
    assert answer_id is not None
    s.label(answer_id, p("label"))
    s.append_compaction(p("compaction"), first_kept_entry_id=answer_id, tokens_before=1234)
    s.append_message(BashExecutionMessage(command=p("shell"), output=p("shellout"), exit_code=1))
    rerun_leaf = s.append_model_change(p("provider"), p("model"))
    s.branch_with_summary(answer_id, p("branchsum"))

    def scorer(branch: Any) -> float:
        return 0.5

    scorer.name = p("scorer")  # type: ignore[attr-defined]
    view = ExperimentView(title=p("name"))
    # two values: the summary compares them (a verdict line names the hostile one)
    exp = Experiment(s, "Say it {tone}.", vary={"tone": [p("variant"), "plain"]}, model="offline/echo", scorers=[scorer])
    ticker = asyncio.ensure_future(view.follow(exp))
    try:
        grid = await exp.run()
    finally:
        ticker.cancel()
        try:
            await ticker
        except asyncio.CancelledError:
            pass
    from pi_jupyter.experiment.judging import pairs_for, record_judgement

    (pair,) = pairs_for(s, grid.grid, grid.rows, "tone", seed=1)
    record_judgement(s, grid.id, pair, "A", judge=p("judge"), note=p("judge"))
    world = World(vector=vector, session=s, cell=cell, rerun=rerun, grid=grid, answer_leaf=answer_id, rerun_leaf=rerun_leaf)
    world.widgets = {
        "agent": _view_state(first),
        "rerun": _view_state(second),
        "experiment": {"title": view.title, "snapshot": view.snapshot, "progress": view.progress},
    }
    world.experiment_done = final_bundle(grid, exp.progress(), exp.replayed)
    for v in (first, second, view):
        v.close()
    return world


def build_world(folder: Path, server: Any, vector: str) -> World:
    """The world of one vector, in ``folder`` (its session file, the file the tool reads)."""
    return asyncio.run(_build(folder, server, vector))


# ------------------------------------------------------------------------------ reading HTML

_ELEMENTS_WE_NEVER_WRITE = frozenset({"iframe", "object", "embed", "base", "frame", "frameset", "form", "math"})
_TEXT_ATTRIBUTES = frozenset({"title", "xlink:title", "aria-label", "alt", "placeholder", "value", "id", "name"})
_URL_ATTRIBUTES = frozenset({"href", "xlink:href", "src", "action", "formaction", "data", "srcdoc", "poster", "background"})
_SAFE_URL = re.compile(r"^(https?:|mailto:|#|data:image/(png|jpeg|gif|svg\+xml);|[^:]*$)", re.I)


class _Reader(HTMLParser):
    def __init__(self, scripts: int | None) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.text: list[str] = []
        self.stack: list[tuple[str, str]] = []
        self.scripts = 0
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _ELEMENTS_WE_NEVER_WRITE:
            self.found.append(f"<{tag}>")
        if tag == "img" and dict(attrs).get("src") in ("x", None):
            self.found.append("<img src=x>")
        if tag == "meta" and any(name == "http-equiv" for name, _ in attrs):
            self.found.append("<meta http-equiv>")  # a refresh to any URL, no script needed
        kind = tag
        if tag == "script":
            self.scripts += 1
            if dict(attrs).get("type") == "application/json":
                kind = "data"  # JSON a script reads, not code (see the export page's own test)
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}>")
            elif name in _URL_ATTRIBUTES and not _SAFE_URL.match(value.strip()):
                self.found.append(f"<{tag} {name}={value[:40]!r}>")
            elif "__pwn" in value and name not in _TEXT_ATTRIBUTES and not name.startswith("data-") and not value.startswith("#"):
                self.found.append(f"<{tag} {name}={value[:40]!r}>")
        if tag not in ("img", "br", "hr", "input", "meta", "link", "col", "wbr", "source", "path", "polygon", "ellipse", "polyline"):
            self.stack.append((tag, kind))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if any(t == tag for t, _ in self.stack):
            while self.stack and self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data: str) -> None:
        inside = self.stack[-1][1] if self.stack else ""
        if inside in ("script", "style"):
            if "__pwn" in data:
                self.found.append(f"payload inside <{inside}>: {data.strip()[:60]!r}")
            return
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)
        if "X" in data and re.search(r"X[a-z0-9]+9", data):
            self.found.append(f"a field inside a comment: {data.strip()[:60]!r}")


def read_html(html: str) -> _Reader:
    """``html`` tokenized (scripts and styles as raw text, as a browser reads them)."""
    reader = _Reader(None)
    reader.feed(html)
    reader.close()
    return reader


def live_markup(html: str) -> list[str]:
    """What a payload made live in ``html`` (empty when nothing did)."""
    return read_html(html).found


def shown_text(html: str) -> str:
    """The text of ``html`` a reader sees (no script, no style, no comment)."""
    return "".join(read_html(html).text)


def missing_fields(text: str, fields: tuple[str, ...]) -> list[str]:
    """The fields whose marker is not in ``text``."""
    return [f for f in fields if marker(f) not in text]


__all__ = ["FIELDS", "SHOWN", "VECTORS", "World", "build_world", "live_markup", "marker", "missing_fields", "payload", "shown_text"]
