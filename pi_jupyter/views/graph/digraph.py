"""``Session.graph()``: the session tree as a ``graphviz.Digraph`` that displays itself anywhere.

One node per turn by default (a user message with the assistant replies and tool results it
caused), one per entry with ``mode="full"``; long linear runs are folded into a node that
says how many turns it holds, and the picture stays under ``max_nodes`` (see
:mod:`pi_jupyter.views.graph.layout`). The current leaf and the path to it, branch points, labels,
compactions (tokens before and after), branch summaries, the notebook cell of each turn,
errors, aborts and model changes are drawn; each node's tooltip previews its text with its
token count and cost.

Every node carries ``id``, ``class`` and its key as the SVG ``<title>``, so a click in the
SVG maps back to entries (:attr:`GraphModel.nodes`). Displaying the graph uses a system
``dot``, else ``graphviz-pure``, else a text tree with one line on how to get the picture.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import html
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import digest, edit_marks
from ..digest import plural
from ..display_scale import scaled_svg
from ..scores import scores_text
from .cache import GraphCache
from .layout import Shown, plan
from .nodes import GraphNode, describe
from .render import INSTALL_HINT, RenderResult, render_svg
from .text_tree import TextTree, stat_parts, text_tree

if TYPE_CHECKING:
    from ...session import Session


class GraphOptions(BaseModel):
    """Options of :meth:`Session.graph` (all keyword arguments)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["turns", "full"] = "turns"
    """``turns``: one node per turn; ``full``: one node per entry."""
    fold: bool = True
    """Fold long linear runs into one node."""
    fold_min: int = Field(3, ge=2)
    """The shortest run that is folded."""
    keep_recent: int = Field(3, ge=0)
    """Units before the current leaf that are never folded."""
    max_nodes: int = Field(250, ge=10)
    """Upper bound on drawn nodes; beyond it branches off the current path are collapsed."""
    expand: frozenset[str] = frozenset()
    """Keys of folded nodes to open (``fold:…``, ``sub:…``, ``more:…``), or entry ids to keep visible."""
    rankdir: Literal["TB", "LR"] = "TB"
    """``TB``: time runs down the page; ``LR``: left to right."""
    preview_chars: int = Field(44, ge=8, le=400)
    """Characters of text shown per line in a node."""
    backend: Literal["auto", "dot", "graphviz-pure", "text"] | None = None
    """Who draws when the graph is displayed (default: ``PI_JUPYTER_RENDERER``, else ``auto``)."""
    header: bool = True
    """Draw the session's name and sizes above the tree (the TreeView shows them in its status line)."""


def parse_options(where: str, options: dict[str, Any]) -> GraphOptions:
    """Validate graph options, with an error that names the call and the option."""
    opts = dict(options)
    if "full" in opts:
        full = opts.pop("full")
        if full:
            opts["mode"] = "full"
    if isinstance(opts.get("expand"), str):
        opts["expand"] = [opts["expand"]]
    try:
        return GraphOptions.model_validate(opts)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "options"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown option {name!r} (options: full, {', '.join(GraphOptions.model_fields)})")
            else:
                problems.append(f"{name}: {err['msg']} (got {err.get('input')!r})")
        raise ValueError(f"{where}: " + "; ".join(problems)) from None


@dataclass
class GraphModel:
    """What the graph shows, before Graphviz: nodes by key, edges, the leaf and the path."""

    nodes: dict[str, GraphNode]
    roots: list[str]
    edges: list[tuple[str, str]]
    leaf: str | None
    """Key of the node holding the current leaf (``None``: the leaf is before the first entry)."""
    path: list[str]
    """Keys of the nodes from a root to the leaf's node."""
    options: GraphOptions
    title: str = ""
    entry_count: int = 0
    """Every entry in the file (what ``len(session)``, ``%pi open`` and ``pi-jupyter info`` count)."""
    hidden_count: int = 0
    """Of those, checkout markers and cell records: dead-end children that are never drawn."""
    turn_count: int = 0
    tip_count: int = 0
    folded_runs: int = 0
    collapsed_branches: int = 0
    merged_branches: int = 0
    by_entry: dict[str, str] = field(default_factory=dict)
    """Entry id -> key of the node that shows it (folded entries included)."""
    problem: str | None = None
    statements: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Key -> the node's DOT statement without its place in the drawing (set by :meth:`dot_body`): nodes
    whose statements are equal are drawn as equal boxes, wherever the layout puts them."""
    edge_statements: dict[tuple[str, str], str] = field(default_factory=dict, repr=False, compare=False)
    """``(tail, head)`` -> the edge's DOT statement (set by :meth:`dot_body`)."""

    @property
    def legend(self) -> str:
        """The legend of the context-edit marks drawn (empty when no node carries one)."""
        return edit_marks.legend({state for n in self.nodes.values() for state in n.context_edits.values()})

    def node_of(self, entry_id: str) -> GraphNode | None:
        """The drawn node that holds ``entry_id`` (a fold, when it is folded away)."""
        key = self.by_entry.get(entry_id)
        return self.nodes.get(key) if key is not None else None

    def header(self) -> str:
        """One line about the session: name, sizes, leaf, what was folded."""
        return " · ".join([self.title, *self.facts()])

    def facts(self) -> list[str]:
        """Sizes, the leaf, and what was folded (the header without the title)."""
        entries = plural(self.entry_count, "entry", "entries")
        if self.hidden_count:
            entries += f" ({self.hidden_count:,} of them cell records and checkout markers, not drawn)"
        parts = [entries, plural(self.turn_count, "turn"), plural(self.tip_count, "tip")]
        leaf = self.nodes.get(self.leaf) if self.leaf else None
        parts.append(f"leaf {leaf.last_id if leaf is not None else '(before the first entry)'}")
        folded = []
        if self.folded_runs:
            folded.append(plural(self.folded_runs, "run") + " folded")
        if self.collapsed_branches:
            folded.append(plural(self.collapsed_branches, "branch", "branches") + " collapsed")
        if self.merged_branches:
            folded.append(plural(self.merged_branches, "branch", "branches") + " merged")
        if folded:
            parts.append(", ".join(folded))
        if self.problem:
            parts.append(self.problem)
        return parts

    def text(self, hint: str | None = None) -> str:
        """The graph as a text tree (``*``: on the current path, ``▶``: the leaf)."""
        legend = self.legend
        header = self.header() + (f"\n{legend}" if legend else "")
        return text_tree(self.nodes, self.roots, header=header, hint=hint)

    def dot_body(self) -> list[str]:
        """The node and edge statements of the DOT source."""
        lines: list[str] = []
        for i, node in enumerate(self.nodes.values()):
            line = _node_statement(i, node, self.options)
            self.statements[node.key] = line.replace(f'id="pi-n{i}" ', "", 1)
            lines.append(line)
        path_edges = set(zip(self.path, self.path[1:], strict=False))
        for tail, head in self.edges:
            if (tail, head) in path_edges:
                line = f'\t{_q(tail)} -> {_q(head)} [class="pi-edge pi-path" color="#1f6feb" penwidth=2.4]\n'
            else:
                line = f'\t{_q(tail)} -> {_q(head)} [class="pi-edge"]\n'
            self.edge_statements[(tail, head)] = line
            lines.append(line)
        return lines

    def graph_attrs(self) -> dict[str, str]:
        """Graph-level attributes (layout direction, spacing, the header as the graph label)."""
        return {
            "rankdir": self.options.rankdir,
            "nodesep": "0.22",
            "ranksep": "0.30",
            "ordering": "out",
            "bgcolor": "white",
            "fontname": "Helvetica",
            "fontsize": "11",
            "labelloc": "t",
            "labeljust": "l",
        }


def build_model(session: Session, options: GraphOptions, cache: GraphCache | None = None) -> GraphModel:
    """Build the :class:`GraphModel` of ``session`` (pure Python; no Graphviz needed).

    ``cache``: what the previous drawing of this session computed (a :class:`GraphCache` kept by
    the caller), reused when the session only grew below its leaf.
    """
    # the walk allocates a few objects per entry and frees none of them until it is done:
    # the cyclic collector would rescan them again and again (half the time at 100k entries)
    with gc_paused():
        return _build_model(session, options, cache)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a burst of allocations (reference counting still frees)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _build_model(session: Session, options: GraphOptions, cache: GraphCache | None = None) -> GraphModel:
    parts = (cache or GraphCache()).parts(session, options)
    units, path_entries, problem = parts.units, parts.path_entries, parts.problem
    full = options.mode == "full"
    layout = plan(
        units,
        fold=options.fold,
        fold_min=options.fold_min,
        keep_recent=options.keep_recent,
        max_nodes=options.max_nodes,
        expand=set(options.expand),
    )

    def path_of(entry_id: str) -> list[dict[str, Any]]:
        # what the context at an entry is rebuilt from: the latest compaction on the way up brings its
        # summary and what it kept, so the walk stops at its first kept entry (a walk to the root per
        # compaction made 100k-entry sessions slow)
        entry = digest.lookup(session, entry_id)
        stop: Any = None
        met = False
        out: list[dict[str, Any]] = []
        cur = entry
        while cur is not None and len(out) < 100_000:
            out.append(cur)
            if not met and cur.get("type") == "compaction":
                met, stop = True, cur.get("firstKeptEntryId")
            if met and isinstance(stop, str) and cur.get("id") == stop:
                return out[::-1]
            parent = cur.get("parentId")
            cur = digest.lookup(session, parent) if isinstance(parent, str) and parent else None
        return digest.branch_of(session, entry_id)  # no kept entry on the path: the whole branch, as the rebuild does

    nodes: dict[str, GraphNode] = {}
    # pi 1.x context edits: only the edits on the path to the leaf apply, as in pi 1.6
    marks = edit_marks.branch_edit_marks(path_entries)
    scored = parts.scores  # experiment scores hang on the scored leaf

    def make(shown: Shown) -> GraphNode:
        return describe(shown, full=full, preview_chars=options.preview_chars, path_of=path_of, scores=scored)

    for shown in layout.nodes:
        node = nodes[shown.key] = parts.describe(shown, make)
        if marks and node.on_path:
            edit_marks.mark_node(node, [e for u in shown.units for e in u.entries], marks)
    edges: list[tuple[str, str]] = []
    for shown in layout.nodes:
        node = nodes[shown.key]
        node.parent = shown.parent.key if shown.parent is not None else None
        node.children = [c.key for c in shown.children]
        edges.extend((shown.key, c.key) for c in shown.children)
        node.search = f"{node.search} {shown_text(node, options)}"
    by_entry = {}
    for unit in units.units:
        key = layout.by_unit[unit].key
        for entry in unit.entries:
            by_entry[entry["id"]] = key
    path: list[str] = []
    for unit in units.path:
        key = layout.by_unit[unit].key
        if not path or path[-1] != key:
            path.append(key)
    leaf = layout.by_unit[units.leaf_unit].key if units.leaf_unit is not None else None
    name = session.name or (session.path.rsplit("/", 1)[-1] if session.path else "in-memory session")
    return GraphModel(
        nodes=nodes,
        roots=[r.key for r in layout.roots],
        edges=edges,
        leaf=leaf,
        path=path,
        options=options,
        title=name,
        entry_count=parts.entry_count,
        hidden_count=parts.hidden_count,
        turn_count=sum(u.turns for u in units.units),
        tip_count=sum(1 for u in units.units if not u.children),
        folded_runs=layout.folded_runs,
        collapsed_branches=layout.collapsed_branches,
        merged_branches=layout.merged,
        by_entry=by_entry,
        problem=problem,
    )


def shown_text(node: GraphNode, options: GraphOptions) -> str:
    """Lower-case text of everything a node's box and tooltip show (badges, stats, errors, models), for search."""
    parts = [node.tooltip, " ".join(stat_parts(node))]
    if node.is_leaf:
        parts.append("current leaf")
    if len(node.children) > 1:
        parts.append(f"{len(node.children)} branches")
    if node.error:
        parts.append("error " + digest.error_summary(node.error)[:2000])
    if node.aborts or node.status == "aborted":
        parts.append("aborted")
    if node.status == "length":
        parts.append("cut at max tokens")
    parts.extend(f"model {m}" for m in node.models)
    if node.summary:
        parts.append(node.summary[:2000])
    return " ".join(parts).lower()


def build_graph(session: Session, cache: GraphCache | None = None, clean: Callable[[str], str] | None = None, **options: Any) -> Any:
    """The :class:`SessionGraph` (a ``graphviz.Digraph``) of ``session``; see :meth:`Session.graph`.

    ``cache``: a :class:`GraphCache` to reuse between drawings of one session (the TreeView keeps one).
    ``clean``: applied to every text of the drawing before the DOT source is written (an export
    passes its secret redaction: Graphviz writes ``-`` as ``&#45;``, so the SVG cannot be redacted after).
    """
    opts = parse_options("Session.graph()", options)
    model = build_model(session, opts, cache)
    if clean is not None:
        model = clean_model(model, clean)
    try:
        cls = session_graph_class()
    except ImportError:
        return TextTree(model.text("The graphviz Python package is missing: pip install graphviz. " + INSTALL_HINT), "no graphviz package")
    return cls.from_model(model)


def clean_model(model: GraphModel, clean: Callable[[str], str]) -> GraphModel:
    """A copy of ``model`` with ``clean`` applied to every text a node or the header shows (the model itself is not changed)."""

    def node(n: GraphNode) -> GraphNode:
        return dataclasses.replace(
            n,
            labels=[clean(x) for x in n.labels],
            models=[clean(x) for x in n.models],
            error=clean(n.error) if n.error is not None else None,
            title=clean(n.title),
            answer=clean(n.answer),
            summary=clean(n.summary),
            tooltip=clean(n.tooltip),
            search=clean(n.search),
            scores={clean(k): v for k, v in n.scores.items()},
            scores_inside=clean(n.scores_inside),
            variant=clean(n.variant),
        )

    nodes = {k: node(n) for k, n in model.nodes.items()}
    return dataclasses.replace(model, nodes=nodes, title=clean(model.title), statements={}, edge_statements={})


# ------------------------------------------------------------------------------ DOT text


def _q(value: str) -> str:
    """A DOT double-quoted string (escString attributes: backslashes and newlines escaped).

    Node names are keys without backslashes or control characters (see ``units.node_key``),
    so this quotes them exactly too.
    """
    value = digest.utf8_safe(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "") + '"'


def _h(text: str) -> str:
    """Text for a Graphviz HTML-like label (Graphviz expands ``\\N`` even there, and reads ``\\\\`` as one backslash)."""
    return html.escape(digest.utf8_safe(digest.one_line(text)), quote=True).replace("\\", "\\\\")


_KIND_STYLE: dict[str, tuple[str, str, str, str]] = {
    # kind: (shape, style, fillcolor, color)
    "turn": ("box", "rounded,filled", "#ffffff", "#8c959f"),
    "continuation": ("box", "rounded,filled,dashed", "#ffffff", "#8c959f"),
    "compaction": ("note", "filled", "#ddf4ff", "#0969da"),
    "branch_summary": ("note", "filled", "#fbefff", "#8250df"),
    "start": ("box", "rounded,filled", "#f6f8fa", "#afb8c1"),
    "meta": ("box", "rounded,filled", "#f6f8fa", "#afb8c1"),
    "fold": ("box", "rounded,filled,dashed", "#f6f8fa", "#6e7781"),
    "sub": ("box3d", "filled,dashed", "#f6f8fa", "#6e7781"),
    "more": ("box3d", "filled,dashed", "#f6f8fa", "#6e7781"),
}


def node_classes(node: GraphNode) -> list[str]:
    """CSS classes of a node in the SVG (the TreeView styles and finds nodes by them; ``pi-scored`` holds experiment scores)."""
    classes = ["pi-node", f"pi-{node.kind.replace('_', '-')}"]
    if node.on_path:
        classes.append("pi-path")
    if node.is_leaf:
        classes.append("pi-leaf")
    if node.labels:
        classes.append("pi-labelled")
    if node.folded:
        classes.append("pi-folded")
    if len(node.children) > 1:
        classes.append("pi-branch-point")
    if node.status in ("error", "aborted"):
        classes.append(f"pi-{node.status}")
    if node.models:
        classes.append("pi-model-change")
    if node.scores:
        classes.append("pi-scored")
    classes.extend(edit_marks.mark_classes(node.context_edits, node.editable))
    return classes


def _node_statement(index: int, node: GraphNode, options: GraphOptions) -> str:
    shape, style, fill, color = _KIND_STYLE.get(node.kind, _KIND_STYLE["turn"])
    penwidth = "1.1"
    if node.labels:
        fill = "#dafbe1"
    if node.status == "aborted" or (node.aborts and not node.errors):
        fill, color = "#fff1e5", "#bc4c00"
    if node.status == "error" or node.errors:
        fill, color = "#ffebe9", "#cf222e"
    if node.on_path:
        color, penwidth = "#1f6feb", "2.0"
    marked = edit_marks.node_style(node.context_edits, node.editable)
    if marked is not None:
        fill = marked[0] if not node.is_leaf else fill
        color = color if node.on_path and not edit_marks.fully_dropped(node.context_edits, node.editable) else marked[1]
        if edit_marks.fully_dropped(node.context_edits, node.editable) and "dashed" not in style:
            style += ",dashed"
    if node.is_leaf:
        fill, penwidth = "#fff8c5", "3.2"
    attrs = [
        f'id="pi-n{index}"',
        f'class="{" ".join(node_classes(node))}"',
        f"label=<{_label(node, options)}>",
        f"tooltip={_q(node.tooltip)}",
        f'shape="{shape}"',
        f'style="{style}"',
        f'fillcolor="{fill}"',
        f'color="{color}"',
        f"penwidth={penwidth}",
    ]
    if node.kind in ("start", "meta"):
        attrs.append("fontsize=9")
    return f"\t{_q(node.key)} [{' '.join(attrs)}]\n"


def _label(node: GraphNode, options: GraphOptions) -> str:
    rows: list[str] = []
    badges: list[str] = []
    if node.is_leaf:
        badges.append('<FONT COLOR="#0550ae"><B>▶ current</B></FONT>')
    for label in node.labels[:3]:
        badges.append(f'<FONT COLOR="#1a7f37"><B>[{_h(digest.clip(label, 24))}]</B></FONT>')
    if len(node.labels) > 3:
        badges.append(f'<FONT COLOR="#1a7f37">+{len(node.labels) - 3}</FONT>')
    if len(node.children) > 1:
        badges.append(f'<FONT COLOR="#57606a">◆ {len(node.children)} branches</FONT>')
    if badges:
        rows.append("  ".join(badges))
    rows.append(f"<S><B>{_h(node.title)}</B></S>" if node.struck else f"<B>{_h(node.title)}</B>")
    if node.context_edits:
        rows.append(edit_marks.label_row(node.context_edits, node.editable))
    if node.answer:
        rows.append(_h(node.answer))
    if node.summary and node.kind in ("fold",):
        rows.append(_h(node.summary))
    small = stat_parts(node)
    if small:
        rows.append(f'<FONT POINT-SIZE="8" COLOR="#57606a">{_h(" · ".join(small))}</FONT>')
    if node.status == "error" or node.errors:
        what = node.error or "error"
        count = f"{node.errors} errors: " if node.errors > 1 else "error: "
        what = digest.clip(digest.one_line(digest.error_summary(what)), options.preview_chars - 8)
        rows.append(f'<FONT POINT-SIZE="8" COLOR="#cf222e"><B>✖ {_h(count + what)}</B></FONT>')
    if node.aborts or node.status == "aborted":
        rows.append(f'<FONT POINT-SIZE="8" COLOR="#bc4c00"><B>■ aborted{f" ×{node.aborts}" if node.aborts > 1 else ""}</B></FONT>')
    elif node.status == "length":
        rows.append('<FONT POINT-SIZE="8" COLOR="#bc4c00">cut at max tokens</FONT>')
    if node.scores:
        shown = digest.clip(scores_text(node.scores), max(24, options.preview_chars))
        rows.append(f'<FONT POINT-SIZE="8" COLOR="#9a6700"><B>★ {_h(shown)}</B></FONT>')
    elif node.scores_inside:
        shown = digest.clip(node.scores_inside, max(24, options.preview_chars))
        rows.append(f'<FONT POINT-SIZE="8" COLOR="#9a6700">★ {_h(shown)}</FONT>')
    if node.models:
        rows.append(f'<FONT POINT-SIZE="8" COLOR="#8250df">⇄ model {_h(digest.clip(node.models[-1], options.preview_chars))}</FONT>')
    return '<BR ALIGN="LEFT"/>'.join(rows) + '<BR ALIGN="LEFT"/>'


# ------------------------------------------------------------------------------ the Digraph

_CLASS: Any = None


def session_graph_class() -> Any:
    """The ``SessionGraph`` class (a ``graphviz.Digraph`` subclass), created on first use."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    import graphviz

    class SessionGraph(graphviz.Digraph):
        """A ``graphviz.Digraph`` of a session that displays itself with whatever can draw here.

        Display (or :meth:`svg`) uses a system ``dot``, else ``graphviz-pure``, else shows
        :meth:`text` with a line on how to get the picture. ``model`` holds the nodes by key
        (:class:`~pi_jupyter.views.GraphNode`), the edges, the leaf and the path; the usual
        ``source``, ``pipe`` and ``render`` of ``graphviz.Digraph`` work as ever.
        """

        model: GraphModel | None = None
        backend: str | None = None

        @classmethod
        def from_model(cls, model: GraphModel, caption: str | None = None) -> SessionGraph:
            """The Digraph for a :class:`GraphModel`; ``caption``: a line drawn above the tree."""
            graph = cls(
                name="session",
                graph_attr=model.graph_attrs(),
                node_attr={"fontname": "Helvetica", "fontsize": "10", "margin": "0.10,0.05"},
                edge_attr={"color": "#8c959f", "arrowsize": "0.6", "penwidth": "1.1"},
            )
            lines = [f'<FONT POINT-SIZE="9" COLOR="#57606a"><I>{_h(caption)}</I></FONT>'] if caption else []
            if model.options.header:
                lines.append(f"<B>{_h(model.title)}</B>  {_h(' · '.join(model.facts()))}")
            if model.legend:  # the legend of context-edit marks travels in the picture (durable outputs have no widget around them)
                lines.append(f'<FONT POINT-SIZE="9" COLOR="#57606a">{_h(model.legend)}</FONT>')
            if lines:
                graph.body.append("\tlabel=<" + '<BR ALIGN="LEFT"/>'.join(lines) + ">\n")
            graph.body.extend(model.dot_body())
            graph.model = model
            graph.backend = model.options.backend
            return graph

        @property
        def nodes(self) -> dict[str, GraphNode]:
            """The drawn nodes by key."""
            return self.model.nodes if self.model is not None else {}

        @property
        def edges(self) -> list[tuple[str, str]]:
            """``(parent key, child key)`` pairs."""
            return self.model.edges if self.model is not None else []

        def render_result(self, backend: str | None = None) -> RenderResult:
            """Lay the graph out as SVG (see :func:`~pi_jupyter.views.render_svg`); never raises for a missing program."""
            return render_svg(self.source, backend=backend or self.backend)

        def svg(self, backend: str | None = None) -> str:
            """The SVG text; raises ``RuntimeError`` naming the reason when nothing here can draw."""
            result = self.render_result(backend)
            if result.svg is None:
                raise RuntimeError(f"cannot draw the session graph: {result.problem}. {INSTALL_HINT}")
            return result.svg

        def text(self, hint: str | None = None) -> str:
            """The graph as a text tree."""
            return self.model.text(hint) if self.model is not None else self.source

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **_: Any) -> dict[str, Any]:
            result = self.render_result()
            if result.svg is not None:
                svg = scaled_svg(result.svg)  # %config PiMagics.scale enlarges the picture with the text
                data = {"image/svg+xml": svg, "text/html": _html_wrap(svg), "text/plain": repr(self)}
            else:
                note = INSTALL_HINT if result.backend == "text" and (self.backend or "") != "text" else None
                text = self.text(note)
                data = {"text/plain": text, "text/html": TextTree(text)._repr_html_()}
            if include is not None:
                data = {k: v for k, v in data.items() if k in set(include)}
            if exclude:
                data = {k: v for k, v in data.items() if k not in set(exclude)}
            return data

        def _repr_pretty_(self, p: Any, cycle: bool) -> None:
            p.text(repr(self))

        def __repr__(self) -> str:
            if self.model is None:
                return super().__repr__()
            m = self.model
            return (
                f"<SessionGraph {m.title!r}: {len(m.nodes)} nodes for {m.entry_count:,} entries "
                f"({m.options.mode} mode), leaf {m.nodes[m.leaf].last_id if m.leaf else None}; "
                "display it, or .svg() / .text() / .source>"
            )

    _CLASS = SessionGraph
    return _CLASS


def _html_wrap(svg: str) -> str:
    # inline SVG keeps the tooltips, which an <img> of the same SVG loses
    return f'<div class="pi-session-graph" style="max-width:100%;overflow:auto">{svg}</div>'
