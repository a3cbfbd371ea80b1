"""TreeView: the session graph in a widget that follows the session, with actions on any node.

The SVG comes from :meth:`Session.graph` (Graphviz in the kernel); the browser only shows it,
zooms, pans, searches and sends clicks back. Clicking a node shows its messages (rendered),
entry ids, usage and cost. Actions on the selected node go through the public API a user
would call from Python, and the graph is redrawn at once:

* check out: ``agent.checkout(id, summarize=..., instructions=...)`` (``session.checkout`` for a bare session);
* fork: ``session.fork(id)``, and the view follows the new session file;
* label: ``session.label(id, text)``;
* compact up to here: ``agent.checkout(id)`` then ``agent.compact(instructions)``;
* compare with…: ``session.compare(a, b)``, shown in the side panel; copy id (in the browser).

A turn's actions use its last step (the end of the turn; labels and settings after it left
out), so "check out" continues after its answer. New entries (from any thread, e.g. the agent's loop) redraw the view after a short
debounce. Given a bare :class:`Session`, summaries and compaction are disabled (they need a
model), with a tooltip saying so.
"""

from __future__ import annotations

import concurrent.futures
import html
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..session import Session, SessionError
from ..views import INSTALL_HINT, Comparison
from ..views import digest as _digest
from ..views.units import entry_of_key

_STATIC = Path(__file__).parent / "static"
_log = logging.getLogger(__name__)

MAX_DETAIL_ENTRIES = 60
"""Entries rendered in the side panel for one node (the rest are listed by id)."""
MAX_TOOL_OUTPUT = 4000
MAX_LISTED_IDS = 400

NO_MODEL = "needs a model: show the tree of an Agent (TreeView(agent)) rather than of a bare Session"


def _markdown_renderer() -> Callable[[str], str]:
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune comes with nbconvert / JupyterLab
        return lambda text: f'<div class="pitv-pre">{html.escape(text)}</div>'
    md = mistune.create_markdown(escape=True, plugins=["strikethrough", "table"])
    return lambda text: str(md(text))


_MARKDOWN: Callable[[str], str] | None = None


def render_markdown(text: str) -> str:
    """Markdown as HTML with any raw HTML in it escaped (model text never becomes live markup)."""
    global _MARKDOWN
    if _MARKDOWN is None:
        _MARKDOWN = _markdown_renderer()
    return _MARKDOWN(text)


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON that can be written as UTF-8 (what a widget sends to the browser).

    An odd file may hold a lone surrogate (``"\\ud83d"``) or a number JSON cannot write
    (``1e400`` reads as infinity); the kernel's message packer refuses both. Lone surrogates
    become U+FFFD and non-finite numbers ``None``.
    """
    if isinstance(value, str):
        return _digest.utf8_safe(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {json_safe(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


_text = _digest.as_text


def entry_html(entry: dict[str, Any]) -> str:
    """One entry for the side panel: a message rendered, a summary, or a one-line setting."""
    eid = html.escape(_text(entry.get("id")))
    kind = entry.get("type")
    msg = _digest.message(entry)
    if msg is not None:
        role = msg.get("role")
        if role == "user":
            return _block("user", "You", eid, render_markdown(_digest.content_text(msg.get("content"))) + _images(msg.get("content")))
        if role == "assistant":
            return _assistant_html(msg, eid)
        if role == "toolResult":
            name = html.escape(_text(msg.get("toolName") or "tool"))
            text = _digest.content_text(msg.get("content"), "")
            shown = (
                text if len(text) <= MAX_TOOL_OUTPUT else text[:MAX_TOOL_OUTPUT] + f"\n… [{len(text) - MAX_TOOL_OUTPUT} characters more]"
            )
            error = " pitv-error" if msg.get("isError") else ""
            return (
                f'<details class="pitv-msg pitv-result{error}" data-entry="{eid}"><summary>result of {name}'
                f'{" (error)" if error else ""} <code class="pitv-id">{eid}</code></summary>'
                f'<pre class="pitv-pre">{html.escape(shown)}</pre></details>'
            )
        if role == "bashExecution":
            command = html.escape(_text(msg.get("command") or ""))
            output = html.escape(_text(msg.get("output") or "")[:MAX_TOOL_OUTPUT])
            body = f'<pre class="pitv-pre">$ {command}\n{output}</pre>'
            return _block("user", "You ran", eid, body)
        return _block("meta", html.escape(_text(role)), eid, html.escape(_digest.preview(json.dumps(msg, default=str), 200)))
    if kind == "custom_message":
        title = html.escape(_text(entry.get("customType") or "extension"))
        return _block("user", f"Extension message · {title}", eid, render_markdown(_digest.content_text(entry.get("content"))))
    if kind == "compaction":
        before = entry.get("tokensBefore")
        title = "Compaction" + (f" · {before:,} tokens before" if isinstance(before, int) and not isinstance(before, bool) else "")
        return _block("summary", title, eid, render_markdown(_text(entry.get("summary") or "")))
    if kind == "branch_summary":
        return _block("summary", "Branch summary", eid, render_markdown(_text(entry.get("summary") or "")))
    return _meta_line(_digest.entry_text(entry), eid)


def _meta_line(text: str, eid: str) -> str:
    """A one-line entry (``eid`` already escaped)."""
    return f'<div class="pitv-msg pitv-meta" data-entry="{eid}">{html.escape(text)} <code class="pitv-id">{eid}</code></div>'


def _block(kind: str, title: str, eid: str, body: str) -> str:
    return (
        f'<div class="pitv-msg pitv-{kind}" data-entry="{eid}"><div class="pitv-role">{title} '
        f'<code class="pitv-id">{eid}</code></div><div class="pitv-md">{body}</div></div>'
    )


def _images(content: Any) -> str:
    return '<div class="pitv-meta">[image]</div>' if _digest.has_images(content) else ""


def _assistant_html(msg: dict[str, Any], eid: str) -> str:
    parts: list[str] = []
    content = msg.get("content") if isinstance(msg.get("content"), list) else []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "thinking" and block.get("thinking"):
            parts.append(f'<details class="pitv-thinking"><summary>thinking</summary>{render_markdown(_text(block["thinking"]))}</details>')
        elif kind == "text":
            parts.append(render_markdown(_text(block.get("text") or "")))
        elif kind == "toolCall":
            args = json.dumps(block.get("arguments"), ensure_ascii=False, default=str)
            args = args if len(args) <= 600 else args[:600] + "…"
            parts.append(f'<div class="pitv-call"><code>{html.escape(_text(block.get("name") or "?"))}({html.escape(args)})</code></div>')
    stop = msg.get("stopReason")
    if stop == "error":
        parts.append(f'<div class="pitv-err">error: {html.escape(_text(msg.get("errorMessage") or "unknown"))}</div>')
    elif stop == "aborted":
        parts.append('<div class="pitv-warn">aborted</div>')
    elif stop == "length":
        parts.append('<div class="pitv-warn">cut at the token limit</div>')
    tokens, cost, _ = _digest.usage(msg)
    model = html.escape(_digest.model_ref(msg.get("provider"), msg.get("model")))
    title = f"Assistant · {model} · {_digest.tokens_text(tokens)} tok · {_digest.cost_text(cost)}"
    return _block("assistant", title, eid, "".join(parts))


class TreeView(anywidget.AnyWidget):
    """The session tree as an interactive widget (zoom, pan, search, a side panel, actions).

    ``target``: an :class:`~pi_jupyter.Agent` (all actions) or a bare
    :class:`~pi_jupyter.session.Session` (no branch summary, no compaction). ``runner`` runs
    the agent's coroutines: an object with ``submit(coro) -> Future`` (the notebook's
    ``KernelRunner``; actions then return at once and the view updates when they finish) or a
    callable ``run(coro) -> result`` (default: :func:`pi_jupyter.agent.sync.run_blocking`).
    ``on_fork(new_session)`` returns what the view shows after a fork (default: the new
    session, with an agent like this one when the target is an agent). Other keyword
    arguments are graph options (``max_nodes``, ``fold_min``, ``keep_recent``, ``rankdir``, ...).
    """

    _esm = _STATIC / "tree_view.js"
    _css = _STATIC / "tree_view.css"

    svg = traitlets.Unicode("").tag(sync=True)
    """The graph as SVG ("" when nothing here can draw; then ``text`` holds the text tree)."""
    text = traitlets.Unicode("").tag(sync=True)
    nodes = traitlets.Dict().tag(sync=True)
    """Key -> a small summary of each drawn node (title, labels, flags, search text)."""
    leaf = traitlets.Unicode("").tag(sync=True)
    path = traitlets.List().tag(sync=True)
    header = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Dict().tag(sync=True)
    """What the side panel shows for the selected node (or a comparison)."""
    mode = traitlets.Unicode("turns").tag(sync=True)
    status = traitlets.Dict().tag(sync=True)
    """``{"text", "kind"}``: the outcome of the last action (kind ``info``, ``ok``, ``busy`` or ``error``)."""
    capabilities = traitlets.Dict().tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)
    """Incremented at every redraw."""

    def __init__(
        self,
        target: Any,
        *,
        mode: str = "turns",
        runner: Any = None,
        on_fork: Callable[[Session], Any] | None = None,
        debounce: float = 0.3,
        **graph_options: Any,
    ) -> None:
        """Show ``target`` (an Agent or a Session); see the class docstring for the arguments."""
        if graph_options.pop("full", False):
            mode = "full"
        if mode not in ("turns", "full"):
            raise ValueError(f"TreeView: mode must be 'turns' or 'full', not {mode!r}")
        if debounce < 0:
            raise ValueError(f"TreeView: debounce must be >= 0 seconds, got {debounce}")
        from ..views import parse_options

        parse_options("TreeView()", graph_options)  # fail here, not at the first redraw
        self._graph_options = dict(graph_options)
        self._runner = runner
        self._on_fork = on_fork
        self._debounce = debounce
        self._lock = threading.RLock()
        self._draw_lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last_draw_s = 0.0
        self._expand: set[str] = set()
        self._graph: Any = None
        self._unsubscribe: Callable[[], None] | None = None
        self._busy = False
        self._target: Any = None
        self._session: Session | None = None
        self.last_comparison: Comparison | None = None
        """The last comparison made with "compare with…"."""
        self.last_fork: Session | None = None
        """The session the last fork created."""
        super().__init__(mode=mode)
        self._attach(target)
        self.on_msg(self._on_frontend_msg)
        self.redraw()

    # ------------------------------------------------------------------ target

    @property
    def session(self) -> Session:
        """The session shown."""
        assert self._session is not None
        return self._session

    @property
    def agent(self) -> Any:
        """The agent whose session is shown, or ``None`` for a bare session."""
        return None if isinstance(self._target, Session) else self._target

    @property
    def graph(self) -> Any:
        """The :class:`~pi_jupyter.views.SessionGraph` drawn last."""
        return self._graph

    def _attach(self, target: Any) -> None:
        if isinstance(target, Session):
            session = target
        elif isinstance(getattr(target, "session", None), Session) and callable(getattr(target, "checkout", None)):
            session = target.session
        else:
            raise TypeError(f"TreeView: expected an Agent or a Session, got {type(target).__name__}")
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._target, self._session = target, session
        self._unsubscribe = session.on_append(self._on_append)
        self._expand.clear()
        agent = self.agent
        reason = "" if agent is not None else NO_MODEL
        self.capabilities = {"summarize": agent is not None, "compact": agent is not None, "reason": reason, "readonly": session.readonly}

    def show(self, target: Any) -> None:
        """Show another agent or session in this view."""
        with self._lock:
            self._attach(target)
            self.selected = ""
            self.details = {}
        self.redraw()

    # ------------------------------------------------------------------ drawing

    def redraw(self) -> None:
        """Rebuild the graph from the session now and send it to the browser."""
        with self._draw_lock:
            started = time.perf_counter()
            options = {"header": False, **self._graph_options, "mode": self.mode, "expand": sorted(self._expand)}
            graph = self.session.graph(**options)
            result = graph.render_result()
            svg = result.svg or ""
            text = "" if svg else graph.text(INSTALL_HINT if result.backend == "text" and options.get("backend") != "text" else None)
            model = graph.model
            with self._lock, self.hold_sync():
                self._graph = graph
                self.svg = _digest.utf8_safe(svg)
                self.text = _digest.utf8_safe(text)
                self.nodes = json_safe({key: node.to_dict() for key, node in model.nodes.items()})
                self.leaf = model.leaf or ""
                self.path = list(model.path)
                self.header = _digest.utf8_safe(model.header())
                if self.selected:
                    key = self._key_for(self.selected)
                    self.selected = key or ""
                    if self.details.get("kind") != "comparison":
                        self.details = self._details(key) if key else {}
                self.revision += 1
            self._last_draw_s = time.perf_counter() - started

    def _on_append(self, _entry: dict[str, Any]) -> None:
        # called from whichever thread appended (often the agent's loop): coalesce into one redraw
        with self._lock:
            if self._timer is not None:
                return
            delay = max(self._debounce, 2 * self._last_draw_s)
            self._timer = threading.Timer(delay, self._timed_redraw)
            self._timer.daemon = True
            self._timer.start()

    def _timed_redraw(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.redraw()
        except Exception as exc:  # noqa: BLE001 - a redraw problem is shown, never raised in a thread
            _log.exception("TreeView redraw failed")
            self._set_status(f"could not redraw the tree: {exc}", "error")

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no debounced redraw is pending (tests and scripts); returns False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                pending = self._timer is not None or self._busy
            if not pending and not self._draw_lock.locked():
                return True
            time.sleep(0.02)
        return False

    # ------------------------------------------------------------------ selection

    def _key_for(self, ref: str) -> str | None:
        """A drawn node's key for ``ref`` (a key, or an entry id that may be folded away)."""
        model = self._graph.model if self._graph is not None else None
        if model is None or not isinstance(ref, str):
            return None
        if ref in model.nodes:
            return ref
        if ref in model.by_entry:  # the empty string too, when an odd file has an entry of that id
            return model.by_entry[ref]
        if ref.startswith(("fold:", "sub:", "more:")):
            first = entry_of_key(ref.split(":", 1)[1])
            return model.by_entry.get(first) if first is not None else None
        return None

    def select(self, ref: str) -> dict[str, Any]:
        """Select a node (by key, entry id or label) and fill the side panel; returns the details."""
        key = self._key_for(ref)
        if key is None:
            try:
                key = self._key_for(self.session.resolve(ref))
            except SessionError:
                key = None
        if key is None:
            raise KeyError(f"TreeView.select: {ref!r} is not drawn (not an entry here, or a checkout marker or cell record)")
        with self._lock:
            self.selected = key
            self.details = self._details(key)
        return self.details

    def _node(self, key: str) -> Any:
        model = self._graph.model
        node = model.nodes.get(key)
        if node is None:
            raise KeyError(f"TreeView: no node {key!r} in the current graph")
        return node

    def _details(self, key: str) -> dict[str, Any]:
        node = self._node(key)
        session = self.session
        usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        models: list[str] = []
        stops: dict[str, int] = {}
        parts: list[str] = []
        for i, eid in enumerate(node.entry_ids):
            entry = _digest.lookup(session, eid)
            if entry is None:
                continue
            msg = _digest.message(entry)
            if msg is not None and msg.get("role") == "assistant":
                tokens, _cost, split = _digest.usage(msg)
                usage["total"] += tokens
                for k, v in split.items():
                    usage[k] += v
                ref = _digest.model_ref(msg.get("provider"), msg.get("model"))
                if ref not in models:
                    models.append(ref)
                stop = str(msg.get("stopReason") or "stop")
                stops[stop] = stops.get(stop, 0) + 1
            if node.folded:
                if _digest.is_head(entry) and len(parts) < MAX_DETAIL_ENTRIES:
                    parts.append(_meta_line(_digest.preview(_digest.entry_text(entry), 90), html.escape(eid)))
            elif i < MAX_DETAIL_ENTRIES:
                parts.append(entry_html(entry))
        if not node.folded and len(node.entry_ids) > MAX_DETAIL_ENTRIES:
            parts.append(f'<div class="pitv-meta">… {len(node.entry_ids) - MAX_DETAIL_ENTRIES} more entries</div>')
        if node.folded:
            parts.insert(0, f'<div class="pitv-meta">{html.escape(node.title)}: {node.entries:,} entries. Expand to see them.</div>')
        details = {
            "kind": "node",
            "key": key,
            "nodeKind": node.kind,
            "title": node.title,
            "labels": node.labels,
            "folded": node.folded,
            "onPath": node.on_path,
            "isLeaf": node.is_leaf,
            "target": node.target_id,
            "firstId": node.first_id,
            "entryIds": node.entry_ids[:MAX_LISTED_IDS],
            "entryCount": len(node.entry_ids),
            "usage": usage,
            "cost": node.cost,
            "costText": _digest.cost_text(node.cost),
            "tokensText": _digest.tokens_text(usage["total"]),
            "models": models,
            "stopReasons": stops,
            "cell": node.cell_id,
            "executionCount": node.execution_count,
            "html": "".join(parts),
        }
        return json_safe(details)  # what an odd file holds must still reach the browser

    # ------------------------------------------------------------------ actions

    def _target_id(self, ref: str | None) -> str:
        """The entry an action acts on: a node's last step (the end of its turn), or an entry id."""
        if ref is None:
            ref = self.selected
            if not ref:
                raise ValueError("select a node first")
        model = self._graph.model
        node = model.nodes.get(ref)
        if node is not None:
            if node.folded:
                raise ValueError(f"{node.title}: a folded node stands for many turns; expand it and pick one")
            assert node.target_id is not None
            if node.target_id == "":
                raise ValueError(f"{node.title}: its entry's id is the empty string (an odd file), which names no entry to act on")
            return node.target_id
        return self.session.resolve(ref)

    def checkout(self, ref: str | None = None, *, summarize: bool = False, instructions: str | None = None) -> Any:
        """Check out a node (default: the selected one); with ``summarize``, summarize the branch left."""
        target = self._target_id(ref)
        agent = self.agent
        if agent is None:
            if summarize:
                raise ValueError(f"a branch summary {NO_MODEL}")
            leaf = self.session.checkout(target)
            self._done(f"checked out {target}; the leaf is now {leaf}")
            return leaf
        coro = agent.checkout(target, summarize=summarize, instructions=instructions or None)
        verb = "checked out with a branch summary" if summarize else "checked out"
        return self._run(coro, lambda leaf: f"{verb} {target}; the leaf is now {leaf}")

    def fork(self, ref: str | None = None) -> Session:
        """Fork the branch ending at a node into a new session file; the view then shows the new session."""
        target = self._target_id(ref)
        new = self.session.fork(target)
        self.last_fork = new
        follow = self._on_fork(new) if self._on_fork is not None else self._default_follow(new)
        where = new.path or "a new in-memory session"
        if follow is not None:
            self.show(follow)
        self._done(f"forked {target} into {where} ({len(new)} entries); this view shows it now")
        return new

    def _default_follow(self, new: Session) -> Any:
        agent = self.agent
        if agent is None:
            return new
        return type(agent)(
            new, model=agent.model, tools=list(agent.tools), cwd=agent.cwd, settings=agent.settings, tool_extra=dict(agent.tool_extra)
        )

    def label(self, ref: str | None, text: str | None) -> str:
        """Label a node's last step (``""`` or ``None`` clears the label); returns the label entry's id."""
        target = self._target_id(ref)
        text = (text or "").strip() or None
        entry_id = self.session.label(target, text)
        self._done(f"labelled {target} {text!r}" if text else f"cleared the label of {target}")
        return entry_id

    def compact(self, ref: str | None = None, *, instructions: str | None = None) -> Any:
        """Check out a node (if it is not the leaf) and compact its branch (needs an agent)."""
        agent = self.agent
        if agent is None:
            raise ValueError(f"compaction {NO_MODEL}")
        target = self._target_id(ref)

        async def run() -> Any:
            if agent.session.leaf_id != target:
                await agent.checkout(target)
            return await agent.compact(instructions or None)

        def report(result: Any) -> str:
            before = getattr(result, "tokens_before", None)
            return f"compacted the branch ending at {target}" + (f" ({before:,} tokens before)" if isinstance(before, int) else "")

        return self._run(run(), report)

    def compare(self, a: str, b: str) -> Comparison:
        """Compare the branches ending at nodes (or entries) ``a`` and ``b``; the side panel shows it."""
        first, second = self._target_id(a), self._target_id(b)
        comparison = self.session.compare(first, second)
        self.last_comparison = comparison
        with self._lock:
            details = {"kind": "comparison", "key": self.selected, "a": first, "b": second, "html": comparison._repr_html_()}
            self.details = json_safe(details)
        self._set_status(f"compared {first} with {second}", "ok")
        return comparison

    def expand(self, key: str) -> None:
        """Open a folded node (or keep the unit of an entry id visible) and redraw."""
        with self._lock:
            self._expand.add(key)
        self.redraw()

    def collapse(self) -> None:
        """Fold everything again (forget expanded nodes) and redraw."""
        with self._lock:
            self._expand.clear()
        self.redraw()

    def set_mode(self, mode: str) -> None:
        """``turns`` (one node per turn) or ``full`` (one node per entry)."""
        if mode not in ("turns", "full"):
            raise ValueError(f"TreeView: mode must be 'turns' or 'full', not {mode!r}")
        self.mode = mode
        self.redraw()

    # ------------------------------------------------------------------ running

    def _run(self, coro: Coroutine[Any, Any, Any], describe: Callable[[Any], str]) -> Any:
        runner = self._runner
        if runner is not None and hasattr(runner, "submit"):
            with self._lock:
                self._busy = True
            self._set_status("working…", "busy")
            future: concurrent.futures.Future[Any] = runner.submit(coro)

            def finished(f: concurrent.futures.Future[Any]) -> None:
                with self._lock:
                    self._busy = False
                try:
                    result = f.result()
                except BaseException as exc:  # noqa: BLE001 - shown in the view
                    self._fail(exc)
                    return
                self._done(describe(result))

            future.add_done_callback(finished)
            return future
        if runner is None:
            from ..agent.sync import run_blocking

            runner = run_blocking
        result = runner(coro)
        self._done(describe(result))
        return result

    def _done(self, text: str) -> None:
        try:
            self.redraw()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return
        self._set_status(text, "ok")

    def _fail(self, exc: BaseException) -> None:
        _log.info("TreeView action failed: %s", exc)
        try:
            self.redraw()
        except Exception:  # noqa: BLE001 - the action's error is the one to show
            pass
        self._set_status(f"{type(exc).__name__}: {exc}", "error")

    def _set_status(self, text: str, kind: str) -> None:
        with self._lock:
            self.status = {"text": _digest.utf8_safe(text), "kind": kind, "at": time.time()}

    # ------------------------------------------------------------------ browser messages

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        try:
            if kind == "select":
                self.select(str(content.get("key") or ""))
            elif kind == "action":
                self._action(content)
            elif kind == "refresh":
                self.redraw()
        except Exception as exc:  # noqa: BLE001 - every failure is shown in the view, never raised
            if isinstance(exc, (ValueError, KeyError)) and exc.args:
                self._set_status(str(exc.args[0]), "error")  # str(KeyError) would add quotes
            else:
                self._set_status(f"{type(exc).__name__}: {exc}", "error")

    def _action(self, content: dict[str, Any]) -> None:
        action = content.get("action")
        key = content.get("key") or None
        if action == "checkout":
            self.checkout(key, summarize=bool(content.get("summarize")), instructions=content.get("instructions") or None)
        elif action == "fork":
            self.fork(key)
        elif action == "label":
            self.label(key, content.get("text"))
        elif action == "compact":
            self.compact(key, instructions=content.get("instructions") or None)
        elif action == "compare":
            self.compare(str(key), str(content.get("other") or ""))
        elif action == "expand":
            self.expand(str(key))
        elif action == "collapse":
            self.collapse()
        elif action == "mode":
            self.set_mode(str(content.get("mode")))
        else:
            raise ValueError(f"unknown TreeView action {action!r}")

    # ------------------------------------------------------------------ display

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:  # type: ignore[override]
        result = super()._repr_mimebundle_(**kwargs)
        if result is None:
            return None
        data, metadata = result if isinstance(result, tuple) else (result, {})
        data = dict(data)
        graph = self._graph
        if graph is not None:
            data["text/plain"] = graph.text()
            if self.svg:
                data["text/html"] = f'<div class="pi-session-graph" style="max-width:100%;overflow:auto">{self.svg}</div>'
        return data, metadata

    def close(self) -> None:
        """Stop following the session and close the widget."""
        if not hasattr(self, "_lock"):  # the constructor failed before the widget existed
            return
        with self._lock:
            if self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        super().close()

    def __repr__(self) -> str:
        model = self._graph.model if self._graph is not None else None
        size = f"{len(model.nodes)} nodes" if model is not None else "not drawn"
        return f"<TreeView of {self._session!r}: {size}, mode {self.mode}>"
