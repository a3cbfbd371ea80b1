"""What a notebook's outputs say, in words a user reads: no pi type names, no Python reprs, no cell hashes."""

from __future__ import annotations

import html
import re

from pi_jupyter.session import Session
from pi_jupyter.views import write_turn


def test_a_turn_continued_after_a_rename_says_so_in_words():
    from pi_jupyter.messages import AssistantMessage

    s = Session.in_memory()
    turn = write_turn(s, "q", "a", tools=1)
    s.checkout(turn[1])  # back into the middle of the turn, then the session is named and the reply stops
    s.set_name("renamed")
    s.append_message(AssistantMessage(content=[], provider="x", model="y", stop_reason="aborted"))
    titles = [n.title for n in s.graph(header=False, backend="text").model.nodes.values()]
    assert "↻ continued (session named)" in titles and not any("session_info" in t for t in titles)


def _visible(page: str) -> str:
    """The text a reader sees in an HTML page: tags and their attributes (tooltips) left out."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_a_cell_comparison_names_cells_as_the_notebook_does():
    s = Session.in_memory()
    root = write_turn(s, "load the data", "loaded")
    a = write_turn(s, "idea A", "A works")
    s.append_custom("pi_jupyter.cell", {"cellId": "c38ea333-c82b-4e0a", "produced": a, "end": a[-1], "executionCount": 3})
    s.checkout(root[-1])
    b = write_turn(s, "idea B", "B works")
    s.append_custom("pi_jupyter.cell", {"cellId": "c38ea333-c82b-4e0a", "produced": b, "end": b[-1], "executionCount": 5})
    seen = _visible(s.compare(a[-1], b[-1])._repr_html_())
    assert "In [3] / In [5]" in seen
    assert "c38ea333" not in seen, "a cell is named by its In [n], not its id"
    assert "1 cell ·" in seen and "1 cells" not in seen and "0 tool calls" in seen


def test_a_chart_of_costs_on_a_free_model_is_one_line():
    from pi_jupyter.views.figure import per_turn_chart

    free = per_turn_chart(["a", "b"], [[10, 20], [30, 40]], [[0.0, 0.0], [0.0, 0.0]]).svg
    priced = per_turn_chart(["a", "b"], [[10, 20], [30, 40]], [[0.0, 0.01], [0.0, 0.0]]).svg
    assert "cost per turn" not in free and "cost: $0 on every turn (a free model)" in free
    height = lambda svg: int(re.search(r'height="(\d+)"', svg).group(1))  # noqa: E731
    assert "cost per turn" in priced and height(free) < height(priced)


def test_a_finished_grid_says_its_variant_in_words_and_a_stopped_one_keeps_its_rows():
    import asyncio

    from pi_jupyter.experiment import Experiment
    from pi_jupyter.notebook.experiments.view import final_bundle

    s = Session.in_memory()
    exp = Experiment(s, "Explain it in a {tone} way.", vary={"tone": ["terse", "warm"]}, model="offline/echo")
    result = asyncio.run(exp.run())
    done = final_bundle(result, exp.progress(), 0)
    assert "branch #0 (tone=terse)" in done["text/plain"] and "{'tone'" not in done["text/plain"]
    assert "<table" not in done["text/html"]  # the cell's value shows the table
    stopped = final_bundle(result, exp.progress(), 0, stopped=True)
    assert "<table" in stopped["text/html"] and stopped["text/html"].count("<tr") == 3  # the head and one row per branch
    bundle, _metadata = result._repr_mimebundle_()
    assert "image/svg+xml" not in bundle, "every cost is $0 and nothing is scored: no chart"


def test_the_presentation_scale_reaches_the_pictures(tmp_path):
    """``%config PiMagics.scale = 2`` (a projector) enlarges a drawn tree and a chart, not only the widgets' text."""

    from pi_jupyter.views.display_scale import set_display_scale
    from pi_jupyter.views.figure import per_turn_chart

    def size(svg: str) -> float:
        return float(re.search(r'<svg[^>]*?width="([\d.]+)', svg).group(1))

    s = Session.in_memory()
    write_turn(s, "q", "a")
    chart = per_turn_chart(["a"], [[1, 2]], [[0.0, 0.1]])
    natural, natural_chart = size(s.graph()._repr_mimebundle_()["image/svg+xml"]), size(chart._repr_svg_())
    from test_notebook_magics import shell_instance  # one IPython shell per process, whichever test makes it first

    shell = shell_instance()
    try:
        shell.run_line_magic("load_ext", "pi_jupyter")
        shell.run_line_magic("config", "PiMagics.scale = 2")
        assert size(s.graph()._repr_mimebundle_()["image/svg+xml"]) == 2 * natural
        assert size(chart._repr_svg_()) == 2 * natural_chart
        assert size(s.graph().svg()) == natural  # the picture's own text (saved, exported) keeps Graphviz's size
    finally:
        set_display_scale(1.0)
        shell.run_line_magic("unload_ext", "pi_jupyter")
