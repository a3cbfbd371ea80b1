"""``pi-jupyter experiment FILE --vary KEY=V1,V2 --prompt TEXT``: run a grid of sibling branches, print the table."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from .common import CliError, write_json

DESCRIPTION = """\
Run one branch per combination of the --vary values (times --repeat), all siblings from the
session's current leaf, and print one row per branch: its values, repeat, state, stop reason,
turns, tool calls, tokens, cost, duration, answer preview and scores. FILE is created when
missing. KEY is model, thinking, tools (names joined by '+', 'none' for no tools) or any
other name, bound for {name} in the prompt:

  pi-jupyter experiment study.jsonl --prompt "Explain it in a {tone} way." \\
      --vary model=offline/echo,offline/typewriter --vary tone=terse,warm --repeat 2 --score judge

Values with commas are quoted inside the option: --vary "tone='terse, dry',warm".
Without a key for a model, branches recorded earlier in FILE for the same prompt and variant
are replayed (--replay requires it for every branch). --show prints the table of the latest
(or --id) experiment recorded in FILE without running anything.

exit status: 0 every branch finished, 1 some branch failed or was skipped, 2 bad input
(nothing is written)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``experiment``."""
    parser.add_argument("file", metavar="FILE", help="the session file (.jsonl; created when missing)")
    parser.add_argument("--prompt", "-p", default=None, help="the prompt ('-' reads it from stdin)")
    parser.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2", help="a varied key and its values (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per combination (default 1)")
    parser.add_argument("--concurrency", type=int, default=None, help="branches at once (default 128)")
    parser.add_argument("--budget", type=float, default=None, help="US dollars: launch no branch that would pass it")
    parser.add_argument("--score", action="append", default=[], metavar="NAME", help="a registered scorer (judge, length, answered)")
    parser.add_argument("--model", "-m", default=None, help="the model of branches that do not vary it")
    parser.add_argument("--tools", default="", help="comma-separated tools of branches that do not vary them (default none)")
    parser.add_argument("--replay", action="store_true", help="serve every branch its recorded answers (no model calls)")
    parser.add_argument("--yes", action="store_true", help="run a grid larger than the limit (64 branches)")
    parser.add_argument("--until-decided", action="store_true", help="repeats in rounds until every comparison is decided")
    parser.add_argument("--compare", action="append", default=None, metavar="KEY", help="the key whose values are compared")
    parser.add_argument("--rate-limit", type=float, default=None, help="requests per second to each provider, whole grid")
    parser.add_argument(
        "--executor", default=None, help="local (default), dask (a LocalCluster on this machine) or a scheduler address tcp://host:8786"
    )
    parser.add_argument("--dask", metavar="ADDRESS", default=None, help="the same as --executor ADDRESS")
    parser.add_argument("--show", action="store_true", help="print the table of a recorded experiment; run nothing")
    parser.add_argument("--id", default=None, help="with --show: which experiment (default: the latest)")
    parser.add_argument("--json", action="store_true", help="the rows as one JSON array")


def run(args: argparse.Namespace) -> int:
    """Run (or show) the experiment and print its table."""
    import sys

    from ..experiment import Experiment, GridError, load_experiment, parse_vary
    from ..session import Session

    path = os.path.abspath(args.file)
    if args.show:
        if not os.path.exists(path):
            raise CliError(f"{args.file}: no such session file")
        try:
            result = load_experiment(Session.open(path, readonly=True), args.id)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        return _print(result, args.json)
    if args.prompt is None:
        raise CliError("experiment: give --prompt TEXT (or --show to print a recorded experiment)")
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    try:
        vary = parse_vary(args.vary)
        tools = [t.strip() for t in args.tools.split(",") if t.strip()]
        existed = os.path.exists(path)
        session = Session.open(path, readonly=True) if existed else Session.in_memory(os.getcwd())
        options: dict[str, Any] = dict(
            vary=vary, repeat=args.repeat, concurrency=args.concurrency, budget=args.budget, scorers=args.score, model=args.model,
            tools=tools, replay=args.replay or None, yes=args.yes, until_decided=args.until_decided, compare=args.compare,
            rate_limit=args.rate_limit,
        )  # fmt: skip
        # checked on a read-only copy first: bad input writes nothing, not even a new file
        Experiment(session, prompt, **options)
        session = Session.open(path, create=True, cwd=os.getcwd())
        exp = Experiment(session, prompt, **options)
        try:
            executor = exp.prepare(args.executor or args.dask or "local")
        except ValueError:
            if not existed:  # the file was made for this run, which cannot happen: leave no trace
                session.close()
                os.remove(path)
            raise
    except (GridError, ValueError) as exc:
        raise CliError(f"experiment: {exc}") from None
    result = asyncio.run(_run_with_progress(exp, executor))
    session.close()
    return _print(result, args.json)


async def _run_with_progress(exp: Any, executor: Any) -> Any:
    """Run the grid; on a terminal, one progress line on stderr, redrawn every second."""
    import sys

    from ..experiment.core import progress_line

    async def show() -> None:
        while True:
            await asyncio.sleep(1.0)
            sys.stderr.write("\r" + progress_line(exp.progress()) + "  ")
            sys.stderr.flush()

    ticker = asyncio.ensure_future(show()) if sys.stderr.isatty() else None
    try:
        return await exp.run(executor)
    finally:
        if ticker is not None:
            ticker.cancel()
            sys.stderr.write("\n")


def _print(result: Any, as_json: bool) -> int:
    if as_json:
        write_json(result.records())
    else:
        print(result.text())
    ok = all(r.state == "done" for r in result.rows)
    return 0 if ok else 1
