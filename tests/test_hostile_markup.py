"""Hostile markup in every field, through every renderer that draws without a widget: nothing becomes live.

The table: each vector of :data:`hostile.VECTORS` is written into every field of
:data:`hostile.FIELDS` by a real run (see :mod:`hostile`), then every rendering is read as a
browser's tokenizer reads it — the static HTML of a cell and of its re-run (sibling answers),
their Markdown and the Markdown export of each branch through readers that pass raw HTML
(markdown-it with ``html``, nbconvert's mistune, Python-Markdown, pandoc), the export page,
the Graphviz SVG, the TreeView's side panel and comparison, the grid's table and its final
output. Each must show every field it shows (:data:`hostile.SHOWN`) and make none of them live
markup. ``tests/browser/test_hostile_markup_browser.py`` loads the same renderings and the live
widgets in Chromium, where a payload that runs calls ``__pwn``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from hostile import SHOWN, VECTORS, World, build_world, live_markup, missing_fields, shown_text

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory, wire_server) -> dict[str, World]:
    """One world per vector, built once for the module."""
    base = tmp_path_factory.mktemp("hostile")
    try:
        return {v: build_world(base / v, wire_server, v) for v in VECTORS}
    finally:
        wire_server.reset()


# ------------------------------------------------------------------------------ Markdown readers


def _markdown_it(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(text)


def _mistune(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)  # what nbconvert's HTML export does with Markdown


def _python_markdown(text: str) -> str:
    import markdown

    return markdown.markdown(text, extensions=["fenced_code", "tables", "attr_list"])  # a mkdocs site's usual set


def _pandoc(fmt: str) -> Callable[[str], str]:
    def run(text: str) -> str:
        done = subprocess.run(["pandoc", "-f", fmt, "-t", "html"], input=text, capture_output=True, text=True, timeout=60, check=True)
        return done.stdout

    return run


def _mistune_raw(text: str) -> str:
    import mistune

    return mistune.create_markdown(escape=False)(text)  # mistune as a page or an editor uses it: raw HTML passes


READERS: dict[str, Callable[[str], str]] = {
    "markdown-it": _markdown_it,
    "mistune": _mistune,
    "mistune (escape off)": _mistune_raw,
    "python-markdown": _python_markdown,
}
if shutil.which("pandoc"):
    READERS |= {f"pandoc {fmt}": _pandoc(fmt) for fmt in ("gfm", "commonmark_x", "markdown")}


# ------------------------------------------------------------------------------ renderings


def export_page(world: World) -> str:
    from pi_jupyter.views.export.page import export_html

    return export_html(world.session)


def export_markdown(world: World) -> str:
    from pi_jupyter.views.export.page import branch_markdown

    return branch_markdown(world.session) + "\n\n" + branch_markdown(world.session, world.rerun_leaf)


def graph_svg(world: World) -> str:
    result = world.session.graph().render_result()
    assert result.svg, result.problem
    return result.svg


def tree_panel(world: World) -> str:
    from pi_jupyter.notebook.tree_view.view import TreeView

    view = TreeView(world.session)
    try:
        parts = [view.select(key)["html"] for key in view.nodes]
        view.compare(world.answer_leaf, world.rerun_leaf)
        parts.append(view.details["html"])
        return "".join(parts)
    finally:
        view.close()


def experiment_table(world: World) -> str:
    grid = world.grid
    return grid.table_html() + world.experiment_done["text/html"]


def experiment_summary(world: World) -> str:
    """The grid's durable output: its summary (the per-variant table and the verdicts), the branch table and the figure."""
    return world.grid._repr_mimebundle_()[0]["text/html"]


def experiment_figure(world: World) -> str:
    """The grid's figures: the interval chart of its score and the bar chart of a column."""
    return world.grid.plot().svg + world.grid.plot("cost").svg


def context(world: World) -> dict[str, str]:
    """``%pi context`` of the current branch (the first run, its branch summary, the grid's branch)."""
    from pi_jupyter import Agent
    from pi_jupyter.notebook.context_view import context_bundle

    return context_bundle(Agent(world.session, model="offline/echo"))


HTML_RENDERINGS: dict[str, Callable[[World], str]] = {
    "context html": lambda w: context(w)["text/html"],
    "cell html": lambda w: w.cell["text/html"],
    "rerun html": lambda w: w.rerun["text/html"],
    "export page": export_page,
    "graph": graph_svg,
    "tree panel": tree_panel,
    "experiment table": experiment_table,
    "experiment summary": experiment_summary,
    "experiment figure": experiment_figure,
    "judgements": lambda w: w.grid.preferences().html(),  # what %pi judge shows, its own HTML
}
MARKDOWN_RENDERINGS: dict[str, Callable[[World], str]] = {
    "context markdown": lambda w: context(w)["text/markdown"],
    "cell markdown": lambda w: w.cell["text/markdown"],
    "rerun markdown": lambda w: w.rerun["text/markdown"],
    "export markdown": export_markdown,
}


def _check(world: World, rendering: str, html: str) -> None:
    live = live_markup(html)
    assert not live, f"{world.vector} in {rendering}: live markup {live}"
    missing = missing_fields(shown_text(html), SHOWN[rendering])
    assert not missing, f"{world.vector} in {rendering}: fields not shown: {missing}"


@pytest.mark.parametrize("rendering", sorted(HTML_RENDERINGS))
def test_every_field_stays_text_in_html(worlds, rendering):
    for world in worlds.values():
        _check(world, rendering, HTML_RENDERINGS[rendering](world))


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("rendering", sorted(MARKDOWN_RENDERINGS))
def test_every_field_stays_text_in_markdown_read_by_a_reader_that_passes_html(worlds, rendering, reader):
    texts = {vector: MARKDOWN_RENDERINGS[rendering](world) for vector, world in worlds.items()}
    with ThreadPoolExecutor(4) as pool:  # pandoc is a process per text: read them side by side
        read = dict(zip(texts, pool.map(READERS[reader], texts.values()), strict=True))
    for vector, world in worlds.items():
        _check(world, rendering, read[vector])


def test_the_export_pages_data_cannot_end_its_script(worlds):
    """The JSON the export page's script reads holds no ``<`` at all: no ``</script>``, no ``<!--<script>`` (which makes a
    browser read past the data's ``</script>`` and swallow the page's own script), and it parses back to the same labels."""
    for world in worlds.values():
        page = export_page(world)
        found = re.search(r'<script type="application/json" id="pi-data">(.*?)</script>', page, re.S)
        assert found, world.vector
        data = found.group(1)
        assert "<" not in data and "\u2028" not in data and "\u2029" not in data, world.vector
        assert json.loads(data)["labels"] == dict(world.session.labels)
        # the page's data and script, the player's data and script (views/playback.py), no fifth
        assert page.count("<script") == 4, world.vector


def test_markdown_keeps_markdown():
    """Escaping does not flatten the answer: emphasis, code and safe links still render; code keeps its ``<``."""
    from pi_jupyter.views.transcript import escape_markdown_html

    text = "**bold** and `List<int>` then [docs](https://example.com/x)\n\n```html\n<div>kept</div>\n```\n\n- a <b>\n"
    for name, read in READERS.items():
        html = read(escape_markdown_html(text))
        assert "<strong>bold</strong>" in html, name
        assert "<code>List&lt;int&gt;</code>" in html, name  # the code span, shown as written
        assert re.search(r'<a\s+href="https://example.com/x"', html), name
        seen = shown_text(html)
        assert "<div>kept</div>" in seen and "a <b>" in seen, name  # the fenced block as written; raw HTML as text
        assert not live_markup(html), name


@pytest.mark.parametrize("vector", sorted(VECTORS))
def test_the_world_comparison_keeps_every_value_and_file_as_text(tmp_path, vector):
    """Two branches whose python tool set a variable and whose write tool wrote a file, each to a payload: the
    comparison's cells and its file diff show the payload as text (every HTML writer escapes, this one too)."""
    import asyncio

    from hostile import payload

    from pi_jupyter import Agent, Session
    from pi_jupyter.views.compare.world import compare_worlds
    from pi_jupyter.world import World

    session = Session.create(tmp_path / "sessions")
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    start = session.leaf_id
    world.move(start)

    def branch(side: str) -> str:
        session.checkout(start)
        world.move(start)
        agent.reload()
        value, text = payload(f"Xvalue{side}9", vector), payload(f"Xfile{side}9", vector)
        call = {"code": f"note = {value!r}"}
        write = {"path": "notes.txt", "content": f"same line\n{text}\n"}
        asyncio.run(agent.prompt(f"call python with {json.dumps(call)}\ncall write with {json.dumps(write)}"))
        world.settle()
        return session.leaf_id

    a, b = branch("a"), branch("b")
    page = compare_worlds(session, [("A", a), ("B", b)])._repr_html_()
    assert not live_markup(page), (vector, live_markup(page))
    seen = shown_text(page)
    assert "Xfilea9" in seen and "Xfileb9" in seen, vector  # the diff shows both lines (a long value is described, not shown)
    assert ("Xvaluea9" in seen) == ("Xvalueb9" in seen), vector
