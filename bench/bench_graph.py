"""Benchmark: building and drawing ``Session.graph()`` for sessions of 100, 1,000 and 10,000 entries.

Sessions come from :func:`pi_jupyter.views.sample_session` (turns with tool calls, re-runs of
cells as sibling branches, labels, errors, compactions, branch summaries; generating them is
not timed), plus two harder shapes at the largest size: one long line of turns, and a bushy
tree where every turn is a re-run of the first cell. For each it prints:

* ``build``: ``session.graph()`` (tree walk, turn grouping, folding, DOT text), median of runs;
* ``dot`` / ``pure``: laying out the SVG with the system ``dot`` and with ``graphviz-pure``
  (first run, no cache);
* ``total``: build + dot (what displaying the graph costs);
* ``nodes``: how many nodes are drawn for how many entries.

``--raw`` also times Graphviz on the unfolded full graph (one node per entry), which is what
folding saves; it takes a minute at 10,000 entries. Run::

    python bench/bench_graph.py [--sizes 100,1000,10000] [--runs 3] [--raw]
"""

from __future__ import annotations

import argparse
import statistics
import time

from pi_jupyter.session import Session
from pi_jupyter.views import find_program, render_svg, sample_session, write_turn


def linear(entries: int) -> Session:
    s = Session.in_memory()
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    i = 0
    while len(s) < entries:
        i += 1
        write_turn(s, f"step {i}: look at the next column", "Done; nothing unusual.", tools=1)
    return s


def bushy(entries: int) -> Session:
    s = Session.in_memory()
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    root = write_turn(s, "load the data", "loaded")[-1]
    i = 0
    while len(s) < entries:
        i += 1
        s.checkout(root)
        write_turn(s, f"attempt {i}", "another answer", tools=i % 3)
    return s


def timed(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def render_time(source: str, backend: str) -> str:
    if find_program(backend) is None:
        return "  n/a"
    t = time.perf_counter()
    result = render_svg(source + f"\n// {time.time_ns()}", backend=backend, timeout=600)  # defeat the cache
    if result.svg is None:
        return f"failed: {result.problem}"
    return f"{time.perf_counter() - t:5.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--raw", action="store_true", help="also time Graphviz on the unfolded full graph")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    cases: list[tuple[str, Session]] = [(f"sample {n:>6,}", sample_session(n, seed=1)) for n in sizes]
    cases.append((f"linear {sizes[-1]:>6,}", linear(sizes[-1])))
    cases.append((f"bushy  {sizes[-1]:>6,}", bushy(sizes[-1])))
    print(f"dot: {find_program('dot')}   graphviz-pure: {find_program('graphviz-pure')}")
    print(f"{'session':18s} {'entries':>8s} {'nodes':>6s} {'build s':>8s} {'dot s':>6s} {'pure s':>6s} {'total s':>8s}")
    for name, session in cases:
        build, graph = timed(lambda s=session: s.graph(), args.runs)
        dot = render_time(graph.source, "dot")
        pure = render_time(graph.source, "graphviz-pure")
        total = f"{build + float(dot):8.2f}" if dot.strip().replace(".", "").isdigit() else "     n/a"
        print(f"{name:18s} {len(session):8,d} {len(graph.nodes):6d} {build:8.3f} {dot:>6s} {pure:>6s} {total}")
        if args.raw:
            raw = session.graph(full=True, fold=False, max_nodes=10**9)
            print(f"{'  unfolded':18s} {len(session):8,d} {len(raw.nodes):6d} {'':8s} {render_time(raw.source, 'dot'):>6s}")


if __name__ == "__main__":
    main()
