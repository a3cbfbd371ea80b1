"""Drawing the graph: SVG with a system ``dot``, with pip-only ``graphviz-pure``, and the text fallback.

A missing ``dot`` is simulated in a subprocess whose ``PATH`` has no Graphviz, and "nothing can
draw" with a Python started outside the virtual environment (so ``graphviz-pure``, which pip
puts next to the venv's Python, is not found either).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import graphviz
import pytest
from IPython.core.formatters import DisplayFormatter

from pi_jupyter.session import Session
from pi_jupyter.views import INSTALL_HINT, find_program, render_svg, sample_session, write_turn

REPO = Path(__file__).resolve().parents[1]
HAVE_DOT = find_program("dot") is not None
HAVE_PURE = find_program("graphviz-pure") is not None
needs_dot = pytest.mark.skipif(not HAVE_DOT, reason="needs Graphviz's dot (apt-get install graphviz)")
needs_pure = pytest.mark.skipif(not HAVE_PURE, reason="needs graphviz-pure (pip install graphviz-pure)")

SVG_NS = "{http://www.w3.org/2000/svg}"


def branched(tmp_path: Path) -> Session:
    s = Session.create(path=tmp_path / "branched.jsonl")
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    t1 = write_turn(s, 'load <data> & check "quotes"', "loaded", tools=1, tokens=1000, cost=0.001)
    write_turn(s, "idea A", "A", stop="error", error="boom")
    s.checkout(t1[-1])
    write_turn(s, "idea B", "B")
    s.label(t1[-1], "start")
    return s


def svg_nodes(svg: str) -> dict[str, dict[str, str]]:
    """Node key (the <title>) -> {'class', 'tooltip', 'text'} of every node group in an SVG."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG_NS}g"):
        if "node" not in (g.get("class") or "").split():
            continue
        title = g.find(f"{SVG_NS}title").text
        anchor = next(g.iter(f"{SVG_NS}a"), None)
        tooltip = anchor.get("{http://www.w3.org/1999/xlink}title") if anchor is not None else ""
        text = " ".join(t.text or "" for t in g.iter(f"{SVG_NS}text"))
        out[title] = {"class": g.get("class"), "tooltip": tooltip, "text": text}
    return out


@needs_dot
def test_dot_draws_every_node_with_its_key_classes_and_tooltip(tmp_path):
    s = branched(tmp_path)
    g = s.graph()
    assert isinstance(g, graphviz.Digraph)
    result = g.render_result(backend="dot")
    assert result.backend == "dot" and result.problem is None
    nodes = svg_nodes(result.svg)
    assert set(nodes) == set(g.nodes)
    leaf = nodes[g.model.leaf]
    assert {"pi-node", "pi-turn", "pi-leaf", "pi-path"} <= set(leaf["class"].split())
    first = nodes[g.model.roots[0]]
    assert "pi-branch-point" in first["class"] and "pi-labelled" in first["class"]
    assert 'You: load <data> & check "quotes"' in first["text"]  # escaped for Graphviz, read back intact
    assert "[start]" in first["text"] and "◆ 2 branches" in first["text"]
    assert "tokens 2,000 · cost $0.0020" in first["tooltip"]
    errors = [k for k, n in nodes.items() if "pi-error" in n["class"]]
    assert len(errors) == 1 and "✖ error: boom" in nodes[errors[0]]["text"]


@needs_pure
def test_graphviz_pure_draws_the_same_nodes(tmp_path):
    s = branched(tmp_path)
    g = s.graph()
    pure = g.render_result(backend="graphviz-pure")
    assert pure.backend == "graphviz-pure" and pure.svg
    nodes = svg_nodes(pure.svg)
    assert set(nodes) == set(g.nodes)
    if HAVE_DOT:
        dot = svg_nodes(g.render_result(backend="dot").svg)
        assert {k: v["class"] for k, v in nodes.items()} == {k: v["class"] for k, v in dot.items()}
        assert {k: v["tooltip"] for k, v in nodes.items()} == {k: v["tooltip"] for k, v in dot.items()}


def test_the_text_backend_and_the_display_bundle_without_a_picture(tmp_path):
    s = branched(tmp_path)
    g = s.graph(backend="text")
    data, _ = DisplayFormatter().format(g)
    assert "image/svg+xml" not in data
    assert "You: idea B" in data["text/plain"] and "← current leaf" in data["text/plain"]
    assert "<Digraph" not in data["text/plain"] and "Traceback" not in data["text/plain"]
    assert data["text/html"].startswith('<pre class="pi-text-tree"')
    assert "&lt;data&gt;" in data["text/html"]


@pytest.mark.skipif(not (HAVE_DOT or HAVE_PURE), reason="needs dot or graphviz-pure")
def test_the_display_bundle_has_the_svg_inline_and_as_an_image(tmp_path):
    s = branched(tmp_path)
    data, _ = DisplayFormatter().format(s.graph())
    assert data["image/svg+xml"].startswith("<svg")
    assert "<svg" in data["text/html"]  # inline, so that tooltips work
    assert data["text/plain"].startswith("<SessionGraph 'branched.jsonl': 3 nodes")


def test_odd_ids_are_escaped_in_the_dot_source(tmp_path):
    header = {"type": "session", "version": 3, "id": "h", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
    weird = 'we"ird\\id\nx'
    lines = [
        header,
        {
            "type": "message",
            "id": weird,
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": weird,
            "timestamp": "2025-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "back\\slash \\N and }{"}]},
        },
    ]
    path = tmp_path / "weird.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    g = Session.open(path, readonly=True).graph()
    if not (HAVE_DOT or HAVE_PURE):
        pytest.skip("needs dot or graphviz-pure to parse the source")
    result = g.render_result()
    assert result.svg, result.problem
    nodes = svg_nodes(result.svg)
    (key,) = nodes
    assert key == "id:" + weird.encode().hex() and g.nodes[key].first_id == weird and g.model.node_of(weird).key == key
    assert "back\\slash \\N and }{" in nodes[key]["text"]
    quoted = Session.in_memory()
    quoted._append(
        lambda eid, parent, ts: {
            "type": "message",
            "id": 'say "hi"',
            "parentId": None,
            "timestamp": ts,
            "message": {"role": "user", "content": "q"},
        }
    )
    assert list(svg_nodes(quoted.graph().render_result().svg)) == ['say "hi"']


def test_a_broken_source_is_reported_not_raised():
    if not (HAVE_DOT or HAVE_PURE):
        pytest.skip("needs a Graphviz program")
    result = render_svg("digraph { this is not dot ")
    assert result.svg is None and "failed" in result.problem


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="render backend must be one of"):
        render_svg("digraph {}", backend="cairo")


# ------------------------------------------------------------------------------ missing programs, in subprocesses

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from IPython.core.formatters import DisplayFormatter
    from pi_jupyter.views import sample_session, available_backends
    g = sample_session(120, seed=3).graph()
    data, _ = DisplayFormatter().format(g)
    print(json.dumps({"backends": available_backends(), "mimes": sorted(data), "plain": data["text/plain"]}))
    """
)


def run_isolated(env_path: str, python: str = sys.executable, extra_env: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PI_JUPYTER_RENDERER",)}
    env["PATH"] = env_path
    env.update(extra_env or {})
    proc = subprocess.run([python, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_pure
def test_without_dot_on_path_graphviz_pure_draws(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    out = run_isolated(str(empty))
    assert out["backends"] == ["graphviz-pure"]
    assert "image/svg+xml" in out["mimes"]


def test_with_nothing_to_draw_a_text_tree_and_one_line_on_how_to_get_the_picture(tmp_path):
    # a Python outside the venv: graphviz-pure (next to the venv's python) is out of reach too
    base = Path(sys.base_prefix) / "bin" / Path(sys.executable).name
    if not base.exists() or sys.prefix == sys.base_prefix:
        pytest.skip("needs to run from a virtual environment")
    if (Path(sysconfig.get_paths(vars={"base": sys.base_prefix})["scripts"]) / "graphviz-pure").exists():
        pytest.skip("graphviz-pure is installed outside the venv too")
    empty = tmp_path / "bin"
    empty.mkdir()
    site = sysconfig.get_paths()["purelib"]
    out = run_isolated(str(empty), python=str(base), extra_env={"PYTHONPATH": os.pathsep.join([str(REPO), site])})
    assert out["backends"] == []
    assert "image/svg+xml" not in out["mimes"] and "text/html" in out["mimes"]
    plain = out["plain"]
    assert plain.splitlines()[-1] == INSTALL_HINT
    assert re.search(r"^▶ .*← current leaf$", plain, re.M)
    assert "Traceback" not in plain and "<graphviz" not in plain and "Digraph object" not in plain


def test_the_renderer_environment_variable_picks_the_text_tree(tmp_path):
    out = run_isolated(os.environ.get("PATH", ""), extra_env={"PI_JUPYTER_RENDERER": "text"})
    assert "image/svg+xml" not in out["mimes"]
    assert "← current leaf" in out["plain"]


def test_a_large_session_draws_under_the_node_budget():
    s = sample_session(3000, seed=5)
    g = s.graph()
    assert len(g.nodes) <= 250
    if HAVE_DOT or HAVE_PURE:
        assert g.render_result().svg


def test_graphviz_pure_is_found_next_to_the_running_python():
    pure = find_program("graphviz-pure")
    if pure is None:
        pytest.skip("graphviz-pure is not installed")
    assert shutil.which("graphviz-pure") == pure or Path(pure).parent == Path(sys.executable).parent
