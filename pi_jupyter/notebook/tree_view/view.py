"""TreeView: the session graph in a widget that follows the session, with actions on any node.

The SVG comes from :meth:`Session.graph` (Graphviz in the kernel); the browser only shows it,
zooms, pans, searches and sends clicks back. Clicking a node shows its messages (rendered),
entry ids, usage and cost. Actions on the selected node go through the public API a user
would call from Python, and the graph is redrawn at once:

* check out: ``agent.checkout(id, summarize=..., instructions=...)`` (``session.checkout`` for a bare session);
* fork: ``session.fork(id)``, and the view follows the new session file;
* label: ``session.label(id, text)``;
* compact up to here: ``agent.checkout(id)`` then ``agent.compact(instructions)``, offered only where it
  has something to do, the leaf moved back if it fails (see :mod:`.tree_compact`);
* compare with…: ``session.compare(a, b)``, shown in the side panel; copy id (in the browser);
* forget / edit… / restore a message: ``agent.edit_context(id, None | text | original)`` (see :mod:`.tree_actions`).

A turn's actions use its last step (the end of the turn; labels and settings after it left
out), so "check out" continues after its answer. New entries (from any thread, e.g. the agent's loop) redraw the view after a short
debounce. Given a bare :class:`Session`, summaries and compaction are disabled (they need a
model), with a tooltip saying so.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ...session import Session, SessionError
from ...views import INSTALL_HINT, Comparison
from ...views import digest as _digest
from ...views.graph.cache import GraphCache
from ...views.graph.digraph import build_graph
from ...views.graph.units import entry_of_key
from ...views.lens import ContextLens
from .. import world_cells
from . import patch as tree_patch
from . import quick as tree_quick
from .actions import ContextEditActions, context_rows
from .compact import NO_MODEL, CompactAction, compaction_refusal, user_message
from .html import MAX_DETAIL_ENTRIES, entry_html, json_safe, node_details, render_markdown  # noqa: F401 - public here too
from .messages import BrowserMessages

_STATIC = Path(__file__).parent.parent / "static"
_log = logging.getLogger(__name__)


def _joined(*names: str) -> str:
    """Static files joined into one (anywidget loads a single ES module; the parts add methods to one class)."""
    return "\n".join((_STATIC / name).read_text(encoding="utf-8") for name in names)


def presentation_scale(shell: Any = None) -> float:
    """The notebook's presentation scale (``%config PiMagics.scale``), 1.0 when unset or odd."""
    if shell is None:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:  # pragma: no cover - the notebook layer runs under IPython
            return 1.0
    value = getattr(getattr(shell, "_pi_magics", None), "scale", 1.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return 1.0
    return float(min(4.0, max(0.5, value)))  # the range PiMagics.scale accepts


class TreeView(BrowserMessages, ContextEditActions, CompactAction, anywidget.AnyWidget):
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

    _esm = _joined("tree_view.js", "tree_draw.js", "tree_panel.js", "tree_nav.js", "tree_edits.js")
    _css = _joined("tree_view.css", "tree_nav.css", "tree_edits.css")

    svg = traitlets.Unicode("").tag(sync=True)
    """The graph as SVG ("" when nothing here can draw; then ``text`` holds the text tree)."""
    text = traitlets.Unicode("").tag(sync=True)
    nodes = traitlets.Dict().tag(sync=True)
    """Key -> a small summary of each drawn node (title, labels, flags, search text)."""
    leaf = traitlets.Unicode("").tag(sync=True)
    path: traitlets.List[Any] = traitlets.List().tag(sync=True)
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
    svg_patch = traitlets.Unicode("").tag(sync=True)
    """The new ``svg`` as a patch of the drawing of revision ``patch_base`` (nodes drawn as before left out), or ""."""
    patch_base = traitlets.Int(0).tag(sync=True)
    lens = traitlets.Dict().tag(sync=True)
    """The context lens when it is on: ``{from, leafId, headline, nodes: key -> state, counts}`` (see :mod:`pi_jupyter.views.lens`)."""
    found = traitlets.Dict().tag(sync=True)
    """The last whole-session search: ``{query, keys}`` (drawn nodes holding a match, folds included)."""
    scale = traitlets.Float(1.0).tag(sync=True)
    """Presentation scale of the view's text and first zoom (``%config PiMagics.scale``)."""

    def __init__(
        self,
        target: Any,
        *,
        mode: str = "turns",
        runner: Any = None,
        on_fork: Callable[[Session], Any] | None = None,
        debounce: float = 0.3,
        scale: float | None = None,
        **graph_options: Any,
    ) -> None:
        """Show ``target`` (an Agent or a Session); see the class docstring for the arguments."""
        if graph_options.pop("full", False):
            mode = "full"
        if mode not in ("turns", "full"):
            raise ValueError(f"TreeView: mode must be 'turns' or 'full', not {mode!r}")
        if debounce < 0:
            raise ValueError(f"TreeView: debounce must be >= 0 seconds, got {debounce}")
        from ...views import parse_options

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
        self._graph_cache = GraphCache()
        self._statements: dict[str, str] = {}
        self._drawing: tree_patch.Drawing | None = None  # the last picture, cut into elements
        self._edges: set[tuple[str, str, bool]] = set()  # the last picture's edges (tail, head, on the path)
        self._svg_revision = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._busy = False
        self._target: Any = None
        self._session: Session | None = None
        self.last_comparison: Comparison | None = None
        """The last comparison made with "compare with…"."""
        self.last_fork: Session | None = None
        """The session the last fork created."""
        self._lens_ref: str | None = None
        self.last_lens: ContextLens | None = None
        """The last context lens computed."""
        super().__init__(mode=mode, scale=presentation_scale() if scale is None else scale)
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
        world = agent is not None and world_cells.world_of(agent) is not None
        caps = {"summarize": agent is not None, "compact": agent is not None, "reason": reason, "readonly": session.readonly}
        self.capabilities = {**caps, "world": world}  # with a world, the panel offers what a checkout moves

    def show(self, target: Any) -> None:
        """Show another agent or session in this view."""
        with self._lock:
            self._attach(target)
            self.selected = ""
            self.details = {}
        self.redraw()

    # ------------------------------------------------------------------ drawing

    def redraw(self) -> None:
        """Rebuild the graph from the session now and send it to the browser.

        When the session only grew by a turn or two, the new nodes are shown at once under their
        parents (:mod:`.tree_quick`), and Graphviz's layout of the whole follows as a patch.
        """
        with self._draw_lock:
            started = time.perf_counter()
            options = {"header": False, **self._graph_options, "mode": self.mode, "expand": sorted(self._expand)}
            graph = build_graph(self.session, cache=self._graph_cache, **options)  # reuses the last drawing's walk
            model = graph.model
            backend = getattr(model.options, "backend", None)
            if self.svg and backend in (None, "auto", "dot") and hasattr(graph, "source"):
                quick = tree_quick.provisional(self._drawing, self._statements, self._edges, model, graph.source, tree_quick.draw_small)
                if quick is not None:
                    self._publish(graph, _digest.utf8_safe(quick), "", full=False)
            result = graph.render_result()
            svg = result.svg or ""
            text = "" if svg else graph.text(INSTALL_HINT if result.backend == "text" and backend != "text" else None)
            self._publish(graph, _digest.utf8_safe(svg), text, full=True)
            self._last_draw_s = time.perf_counter() - started

    def _publish(self, graph: Any, svg: str, text: str, *, full: bool) -> None:
        """Send one drawing: the picture (whole and as a patch of the last one), the nodes, and (``full``) the selection's details."""
        model = graph.model
        patch = self._patch_for(svg, model)
        nodes = json_safe({key: node.to_dict() for key, node in model.nodes.items()})
        self._edges = tree_quick.edges_of(model)
        with self._lock, self.hold_sync():
            self._graph = graph
            if svg != self.svg:
                self.svg_patch, self.patch_base = patch or "", self._svg_revision if patch else 0
                self._svg_revision = self.revision + 1
            self.svg = svg
            self.text = _digest.utf8_safe(text)
            self.nodes = nodes
            self.leaf = model.leaf or ""
            self.path = list(model.path)
            self.header = _digest.utf8_safe(model.header())
            if full:
                if self._lens_ref is not None:
                    self._update_lens()
                if self.selected:
                    key = self._key_for(self.selected)
                    self.selected = key or ""
                    if self.details.get("kind") not in ("comparison", "lens"):
                        details = self._details(key) if key else {}
                        note = self.details.get("contextNote")
                        if note and details.get("key") == self.details.get("key"):
                            # the outcome of the last action on this node stays until another is picked
                            # (the redraw its own appends scheduled can land after it)
                            details = {**details, "contextNote": note}
                        self.details = details
            self.revision += 1

    def _patch_for(self, svg: str, model: Any) -> str | None:
        """The new picture as a patch of the last one (what did not change left out), or None; see :mod:`.tree_patch`."""
        before, self._statements = self._statements, dict(model.statements)
        drawn, self._drawing = self._drawing, tree_patch.parse(svg) if svg else None
        if drawn is None or self._drawing is None or not before or svg == self.svg:
            return None
        same = {key for key, statement in self._statements.items() if before.get(key) == statement}
        return tree_patch.svg_patch(drawn, self._drawing, same)

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
        for attempt in range(2):
            try:
                self.redraw()
                return
            except (RuntimeError, KeyError):
                # the session's reads take no lock: an entry appended by the agent's thread while
                # this one walked the index; the append is over a moment later
                if attempt == 0:
                    time.sleep(0.05)
                    continue
                _log.exception("TreeView redraw failed")
                self._set_status(
                    "could not redraw the tree (the session changed while it was drawn); it redraws at the next change", "error"
                )
            except Exception as exc:  # noqa: BLE001 - a redraw problem is shown, never raised in a thread
                _log.exception("TreeView redraw failed")
                self._set_status(f"could not redraw the tree: {user_message(exc)}", "error")
                return

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
        rows = [] if node.folded else context_rows(self.session, node.entry_ids, MAX_DETAIL_ENTRIES)
        details = {**node_details(self.session, key, node), "context": json_safe(rows)}
        agent = self.agent
        if agent is not None and not node.folded and node.target_id:
            details["compactWhy"] = compaction_refusal(agent, node.target_id)  # "" where compaction would work
        return details

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

    def checkout(
        self, ref: str | None = None, *, summarize: bool = False, instructions: str | None = None, rewind: str = "both", force: bool = False
    ) -> Any:
        """Check out a node (default: the selected one); ``summarize`` the branch left; ``rewind``: what moves.

        ``both``, ``conversation`` or ``world`` (see :func:`pi_jupyter.world.rewind`); ``force``:
        over the user's own changes (kept on the branch they leave). The status line says what moved.
        """
        target = self._target_id(ref)
        agent = self.agent
        if agent is None:
            if summarize:
                raise ValueError(f"a branch summary {NO_MODEL}")
            if rewind != "both":
                raise ValueError("rewinding the conversation or the world alone needs an agent with a world (a notebook's)")
            leaf = self.session.checkout(target)
            self._done(f"checked out {target}; the leaf is now {leaf}")
            return leaf
        how = {"summarize": summarize, "instructions": instructions or None} if rewind != "world" else {}
        return self._run(*world_cells.rewinding(agent, target, rewind, force=force, **how))

    def fork(self, ref: str | None = None) -> Session:
        """Fork the branch ending at a node into a new session file; the view then shows the new session."""
        target = self._target_id(ref)
        new = self.session.fork(target)
        self.last_fork = new
        follow = self._on_fork(new) if self._on_fork is not None else self._default_follow(new)
        moved = world_cells.follow_fork(self.agent, target, follow) if self.agent is not None else ""  # its world goes with it
        from ..binding import session_label

        where = session_label(new.name, new.id) if new.path else "a new in-memory session"
        if follow is not None:
            self.show(follow)
        # with the notebook's state (on_fork), the notebook's next cells continue in the fork: say so, never silently
        then = "; the notebook's next %%pi cells continue in it" if self._on_fork is not None else ""
        self._done(f"forked {target} into {where} ({len(new)} entries); this view shows it now{then}" + (f"; {moved}" if moved else ""))
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
        from ...agent.typed_text import scrub

        text = scrub((text or "").strip()) or None  # a key typed into a label is never stored as typed
        entry_id = self.session.label(target, text)
        self._done(f"labelled {target} {text!r}" if text else f"cleared the label of {target}")
        return entry_id

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

    def compare_many(self, refs: list[str]) -> Comparison:
        """Compare the branches ending at several nodes (shift-clicked leaves); the side panel shows it."""
        if len(refs) < 2:
            raise ValueError("pick two or more nodes to compare (shift-click them)")
        targets = [self._target_id(r) for r in refs]
        comparison = self.session.compare(*targets)
        self.last_comparison = comparison
        title = f"Compare {len(targets)} branches: " + ", ".join(b.name for b in comparison.branches)
        with self._lock:
            details = {"kind": "comparison", "key": self.selected, "title": title, "html": comparison._repr_html_()}
            self.details = json_safe(details)
        self._set_status(f"compared {len(targets)} branches", "ok")
        return comparison

    def search(self, query: str) -> list[str]:
        """Keys of the drawn nodes holding an entry whose text matches ``query`` (every word), folds included."""
        from ...views.search import search_session

        keys = search_session(self.session, self._graph.model, query) if query.strip() else []
        with self._lock:
            self.found = json_safe({"query": query, "keys": keys})
        return keys

    def show_lens(self, ref: str | None, *, off: bool = False) -> ContextLens | None:
        """Turn the context lens on for a node (default: the current leaf), or off; returns the lens."""
        with self._lock:
            if off:
                self._lens_ref = None
                self.lens = {}
                return None
            # the current node's lens follows the leaf: context edits appended after the turn's last
            # step are part of the next request (a turn's own last step would leave them out)
            current = not ref or ref == self.leaf or self._key_for(ref) == self.leaf
            self._lens_ref = "" if current else self._target_id(ref)
            return self._update_lens(show=True)

    def _update_lens(self, show: bool = False) -> ContextLens:
        """Recompute the lens for its entry (``""``: follow the leaf) after a change or a redraw."""
        from ...views.lens import context_lens

        ref = self._lens_ref or None
        lens = context_lens(self.session, ref if ref is None or ref in self.session else None)
        model = self._graph.model
        key = model.by_entry.get(lens.leaf_id) if lens.leaf_id is not None else None
        self.last_lens = lens
        kept = model.by_entry.get(lens.first_kept_id) if lens.first_kept_id is not None else None
        state = {"from": key or "", "leafId": lens.leaf_id, "headline": lens.headline(), "nodes": lens.node_states(model)}
        compaction = model.by_entry.get(lens.compaction_id) if lens.compaction_id is not None else None
        self.lens = json_safe({**state, "counts": lens.counts(), "firstKept": kept or "", "compaction": compaction or ""})
        if show or self.details.get("kind") == "lens":
            self.details = json_safe({"kind": "lens", "key": self.selected, "title": "Context lens", "html": lens.to_html()})
        return lens

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
            from ...agent.sync import run_blocking

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
        self._set_status(user_message(exc), "error")

    def _set_status(self, text: str, kind: str) -> None:
        with self._lock:
            self.status = {"text": _digest.utf8_safe(text), "kind": kind, "at": time.time()}

    # ------------------------------------------------------------------ display

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
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
