"""Saved pictures every viewer draws: inline SVG and SVG-only outputs become ``<img>`` data URIs (an untrusted
JupyterLab removes inline SVG and does not draw ``image/svg+xml``); the browser side is
``tests/browser/test_shipped_notebooks_browser.py``."""

from __future__ import annotations

import base64
import re

import nbformat

from pi_jupyter.notebook.durable.pictures import inline_svg_as_images, pictures_for_every_viewer
from pi_jupyter.views.figure import SvgFigure

CHART = '<svg xmlns="http://www.w3.org/2000/svg" width="60" height="20"><rect width="60" height="20"/><title>a bar</title></svg>'


def _images(page: str) -> list[str]:
    return [base64.b64decode(b).decode() for b in re.findall(r'<img src="data:image/svg\+xml;base64,([^"]+)"', page)]


def _notebook(*outputs: dict) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("display_data", data=d) for d in outputs]
    return nbformat.v4.new_notebook(cells=[cell])


def test_inline_svg_in_html_becomes_an_image_of_the_same_svg_and_the_rest_of_the_page_stays():
    page = f"<div><table><tr><td>mean</td></tr></table>{CHART}<p>after</p>{CHART.replace('a bar', 'b')}</div>"
    nb = _notebook({"text/html": page, "text/plain": "summary"})
    assert pictures_for_every_viewer(nb) == 1
    new = nb.cells[0].outputs[0]["data"]["text/html"]
    assert "<svg" not in new and "<table><tr><td>mean</td></tr></table>" in new and "<p>after</p>" in new
    assert _images(new) == [CHART, CHART.replace("a bar", "b")]


def test_an_svg_output_without_html_gets_an_html_image_and_keeps_its_png_for_latex():
    figure = SvgFigure(svg=CHART)
    tree = {"image/svg+xml": CHART, "image/png": "iVBOR", "text/plain": "tree"}
    nb = _notebook({"image/svg+xml": figure._repr_svg_(), "text/plain": repr(figure)}, tree, {"text/plain": "no picture"})
    assert pictures_for_every_viewer(nb) == 2
    first, second, third = (o["data"] for o in nb.cells[0].outputs)
    assert _images(first["text/html"]) == [figure._repr_svg_()] and first["image/svg+xml"] == figure._repr_svg_()
    assert _images(second["text/html"]) == [CHART] and second["image/png"] == "iVBOR"
    assert third == {"text/plain": "no picture"}


def test_an_svg_without_its_namespace_gets_it_so_it_draws_as_an_image():
    (svg,) = _images(inline_svg_as_images('<svg width="10" height="10"><circle r="4"/></svg>'))
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="10"')


def test_nested_svg_is_one_image_and_tags_that_do_not_balance_are_left_alone():
    nested = '<svg xmlns="http://www.w3.org/2000/svg"><svg x="1"><rect/></svg><text>t</text></svg>'
    assert _images(inline_svg_as_images(f"<p>{nested}</p>")) == [nested]
    for broken in ("<p><svg><rect/></p>", "<p></svg><svg></svg></p>"):
        assert inline_svg_as_images(broken) == broken
    odd = {"cells": [{"outputs": [{"data": ["not", "a", "dict"]}, "text"]}, "cell"]}
    assert pictures_for_every_viewer(odd) == 0
