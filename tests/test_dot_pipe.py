"""The long-lived ``dot`` (``views.dot_pipe``): the same pictures as ``dot`` run once, and no problem hidden or stuck.

Real Graphviz throughout. Each check compares with ``dot -Tsvg -q`` run once on the same source,
the way ``render_svg`` ran it before.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from pi_jupyter.views import render_svg, sample_session
from pi_jupyter.views.graph import dot_pipe

pytestmark = [pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz dot"), pytest.mark.timeout(120)]

DOT = shutil.which("dot") or "dot"


def once(source: str) -> str:
    out = subprocess.run([DOT, "-Tsvg", "-q"], input=source.encode(), capture_output=True, check=True).stdout.decode()
    return out[out.find("<svg") :]


def graph(i: int) -> str:
    return f'digraph g{i} {{\n\tnode [shape=box]\n\t"a{i}" [label="node {i} ✓"]\n\t"a{i}" -> "b{i}"\n\t"b{i}" -> "c"\n}}\n'


def piped(source: str, timeout: float = 30) -> tuple[str | None, bool]:
    svg, slow = dot_pipe.layout(DOT, source, timeout)
    return (svg[svg.find("<svg") :] if svg else None), slow


@pytest.fixture(autouse=True)
def fresh_pipes():
    dot_pipe.close_all()
    yield
    dot_pipe.close_all()


def pipe_pid() -> int | None:
    pipe = dot_pipe._PIPES.get(DOT)
    return pipe.proc.pid if pipe is not None and pipe.proc is not None and pipe.proc.poll() is None else None


def test_graph_after_graph_one_process_the_same_pictures():
    session = sample_session(400, seed=2)
    sources = [graph(i) for i in range(5)] + [session.graph(header=False).source]
    first = None
    for source in sources * 2:
        svg, slow = piped(source)
        assert not slow and svg == once(source)
        first = first or pipe_pid()
        assert pipe_pid() == first, "the same dot answered every graph"


def test_a_bad_label_is_reported_as_before_and_the_next_graph_is_drawn():
    bad = 'digraph g {\n\t"a" [label=<<B>x</I>>]\n}\n'
    assert piped(bad) == (None, False)  # the caller runs dot once: it reports the error
    result = render_svg(bad, backend="dot")
    assert result.svg is None and "exit status" in (result.problem or "")
    assert piped(graph(1))[0] == once(graph(1))


def test_a_syntax_error_neither_hangs_nor_spoils_the_next_graph():
    bad = "digraph g {\n\ta -> \n}\n"
    started = time.monotonic()
    assert piped(bad) == (None, False)
    assert time.monotonic() - started < 10
    assert "syntax error" in (render_svg(bad, backend="dot").problem or "")
    assert piped(graph(2))[0] == once(graph(2))


def test_a_source_the_pipe_cannot_be_sure_of_goes_to_a_single_run():
    for source in (graph(3) + "// a comment after the graph\n", "digraph g { a }", "graph {\n a -- b\n// }", ""):
        assert piped(source) == (None, False), source
    assert render_svg(graph(3) + "// a comment after the graph\n", backend="dot").svg == once(graph(3))


def test_two_graphs_in_one_source_do_not_leak_into_the_next_answer():
    two = graph(4).rstrip("\n").rstrip("}") + "}\ndigraph h {\n\tx -> y\n}\n"
    piped(two)
    time.sleep(0.2)
    assert piped(graph(5))[0] == once(graph(5))


def test_a_dot_that_died_is_started_again():
    assert piped(graph(6))[0] == once(graph(6))
    dead = pipe_pid()
    os.kill(dead, signal.SIGKILL)
    _until(lambda: not _running(dead))  # the process is gone (an event, however slow the machine)
    assert render_svg(graph(7), backend="dot").svg == once(graph(7))  # the dead pipe is noticed; dot runs once
    svg, _ = piped(graph(8))
    assert svg == once(graph(8)) and pipe_pid() is not None


def test_a_layout_past_its_time_stops_the_process_and_says_so():
    big = "digraph g {\n" + "".join(f'\t"n{i}" -> "n{(i * 7919) % 4000}"\n' for i in range(4000)) + "}\n"
    svg, slow = piped(big, timeout=0.01)
    assert svg is None and slow
    assert pipe_pid() is None
    assert "took longer" in (render_svg(big + "\n", backend="dot", timeout=0.01).problem or "")
    assert piped(graph(9))[0] == once(graph(9))


def test_threads_each_get_their_own_picture():
    sources = [graph(i).replace("✓", f"✓ {time.time_ns()}") for i in range(24)]  # not drawn before (render_svg caches)
    want = {s: once(s) for s in sources}
    got: dict[str, str | None] = {}

    def draw(source: str) -> None:
        got[source] = render_svg(source, backend="dot").svg

    threads = [threading.Thread(target=draw, args=(s,)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


def test_an_idle_pipe_is_closed(monkeypatch):
    monkeypatch.setattr(dot_pipe, "IDLE_S", 0.2)
    assert piped(graph(10))[0] is not None
    pid = pipe_pid()
    assert pid is not None
    _until(lambda: pipe_pid() is None)  # closed once idle for 0.2 s: waited for, not timed
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.05)


def _running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped runs no more)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _until(happened, bound_s: float = 60.0) -> None:
    """Wait until ``happened()`` is true (the bound only stops a wait for what never happens)."""
    deadline = time.monotonic() + bound_s
    while not happened():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.02)
