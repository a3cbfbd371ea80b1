"""Planted bugs and the tests that catch them: each bug is planted alone in a scratch copy of the
repository and the tests named for it are run; the table says which test failed (or that none did).

A bug is one small edit of the kind a careless change makes (earliest for latest, an off-by-one,
a missing separator or escape, a flag never reset, a forgotten slot). The suite is ahead of a bug
when one of its tests fails on it, not by a timeout. The list lives in ``PLANTED``; the lists of
other areas may sit beside it in other modules with the same shape.

Run::

    python bench/planted_bugs.py            # every bug
    python bench/planted_bugs.py holm pace  # the bugs whose name holds one of these words
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Planted:
    """One bug: replace ``old`` (found exactly once) by ``new`` in ``file``; ``tests`` should catch it."""

    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


EXP = (
    "tests/test_experiment.py",
    "tests/test_experiment_summary.py",
    "tests/test_experiment_stats.py",
    "tests/test_experiment_judging.py",
    "tests/test_experiment_views.py",
    "tests/test_experiment_scorers.py",
)

PLANTED: list[Planted] = [
    Planted(
        "replay-earliest",
        "pi_jupyter/experiment/core.py",
        'out[key] = (e["id"], end[0])',
        'out.setdefault(key, (e["id"], end[0]))',
        EXP,
        "replay takes the earliest recorded branch of a variant",
    ),
    Planted(
        "holm-running-max",
        "pi_jupyter/experiment/stats.py",
        "running = max(running, min(1.0, (m - rank) * pvalues[i]))",
        "running = min(1.0, (m - rank) * pvalues[i])",
        EXP,
        "Holm's step-down without its running maximum",
    ),
    Planted(
        "until-decided-look-repeat",
        "pi_jupyter/experiment/analysis.py",
        "r.repeat >= max_repeat",
        "r.repeat > max_repeat",
        EXP,
        "a look counts the repeat at its stopping point",
    ),
    Planted(
        "until-decided-skip",
        "pi_jupyter/experiment/core.py",
        "if spec.variant.repeat >= repeats:",
        "if spec.variant.repeat > repeats:",
        EXP,
        "--until-decided runs the repeat at the stopping point",
    ),
    Planted(
        "decided-counted-again",
        "pi_jupyter/experiment/analysis.py",
        "if c.decided and ident not in decided:",
        "if c.decided:",
        EXP,
        "a comparison decided at one look counted again at later looks",
    ),
    Planted(
        "second-wins-ends",
        "pi_jupyter/experiment/analysis.py",
        "(-(self.high or 0.0), -(self.low or 0.0))",
        "(-(self.low or 0.0), -(self.high or 0.0))",
        EXP,
        "second variant wins: ends negated, not swapped",
    ),
    Planted(
        "position-bias-total",
        "pi_jupyter/experiment/judging.py",
        "stats.sign_test(first, len(decisive) - first)",
        "stats.sign_test(first, len(decisive))",
        EXP,
        "position-bias sign test given the total",
    ),
    Planted(
        "bulk-null-content",
        "pi_jupyter/session/bulk.py",
        ' or bytes(head.content) == b"null"',
        "",
        (
            "tests/test_session_bulk.py",
            "tests/test_session_lazy.py",
            "tests/test_session_odd_values.py",
            "tests/test_adversarial_json_lines.py",
            "tests/test_cli_session.py",
        ),
        "null content passed on as written",
    ),
    Planted(
        "pace-hold-sign",
        "pi_jupyter/providers/pace.py",
        "self._start += seconds",
        "self._start -= seconds",
        ("tests/test_replay_pace.py",),
        "a pause moves the playback clock the wrong way",
    ),
    Planted(
        "class-run-by-count",
        "pi_jupyter/views/class_session.py",
        "(current, n) > chosen[key][0]",
        "n > chosen[key][0][1]",
        ("tests/test_class_view.py",),
        "class view picks a run by count, not the current branch",
    ),
    Planted(
        "world-diff-escape",
        "pi_jupyter/views/world_compare.py",
        "{html.escape(r.diff)}",
        "{r.diff}",
        ("tests/test_world_views.py", "tests/test_hostile_markup.py"),
        "world comparison file diff not escaped",
    ),
    Planted(
        "figure-label-escape",
        "pi_jupyter/experiment/figure.py",
        '<text x="8" y="{y + 12}">{html.escape(short)}</text>',
        '<text x="8" y="{y + 12}">{short}</text>',
        ("tests/test_experiment_views.py", "tests/test_experiment_summary.py", "tests/test_hostile_markup.py"),
        "experiment figure labels not escaped",
    ),
    Planted(
        "table-cell-escape",
        "pi_jupyter/experiment/analysis.py",
        '"<td>{html.escape(str(v))}</td>"',
        '"<td>{v}</td>"',
        ("tests/test_experiment_views.py", "tests/test_experiment_summary.py", "tests/test_hostile_markup.py"),
        "experiment table cells not escaped",
    ),
    Planted(
        "retry-after-shortens",
        "pi_jupyter/experiment/cluster_limit.py",
        'max(float(mine.get("paused_until", 0.0)), now + seconds)',
        "now + seconds",
        ("tests/test_experiment_limiter.py", "tests/test_experiment_dask_cluster.py"),
        "a later shorter Retry-After shortens the cluster pause",
    ),
    Planted(
        "recorded-prompt-scrub",
        "pi_jupyter/experiment/core.py",
        "prompt=scrub(prompt),",
        "prompt=prompt,",
        (*EXP, "tests/test_adversarial_secrets.py", "tests/test_typed_secrets.py"),
        "an experiment's recorded prompt skips the secret scrub",
    ),
    Planted(
        "fence-left-open",
        "pi_jupyter/views/markdown_safe.py",
        'if "```" not in text and "~~~" not in text:\n        return text\n    lines',
        "if True:\n        return text\n    lines",
        ("tests/test_adversarial_markdown.py",),
        "an answer that ends inside a fence leaves it open",
    ),
]


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(
        b"\0"
    )
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def plant(bug: Planted, dest: Path) -> None:
    """Write the bug into the copy at ``dest`` (the edit must match exactly once)."""
    path = dest / bug.file
    text = path.read_text()
    count = text.count(bug.old)
    if count != 1:
        raise SystemExit(f"{bug.name}: the text to replace occurs {count} times in {bug.file}")
    path.write_text(text.replace(bug.old, bug.new))


def run_one(bug: Planted, base: Path, timeout: int) -> tuple[str, str, float]:
    """``(verdict, detail, seconds)``: caught (a test failed), survived (all passed), timeout or error."""
    dest = base / bug.name
    shutil.copytree(base / "_clean", dest)
    plant(bug, dest)
    env = {**os.environ, "PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-rfE",
        f"--timeout={timeout}",
        *bug.tests,
    ]
    began = time.monotonic()
    proc = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True)
    took = time.monotonic() - began
    shutil.rmtree(dest, ignore_errors=True)
    out = proc.stdout
    failed = [line.split(" ", 1)[1].split(" - ")[0] for line in out.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if "Timeout" in out and proc.returncode != 0:
        return "timeout", failed[0] if failed else "", took
    if proc.returncode == 0:
        return "survived", "", took
    if proc.returncode == 1 and failed:
        return "caught", failed[0], took
    return "error", out.strip().splitlines()[-1] if out.strip() else proc.stderr[-200:], took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("words", nargs="*", help="only the bugs whose name holds one of these")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per test (a test that times out does not count as catching)")
    args = parser.parse_args()
    chosen = [b for b in PLANTED if not args.words or any(w in b.name for w in args.words)]
    with tempfile.TemporaryDirectory(prefix="planted-") as tmp:
        base = Path(tmp)
        _copy_tree(base / "_clean")
        rows = []
        for bug in chosen:
            verdict, detail, took = run_one(bug, base, args.timeout)
            rows.append((bug, verdict, detail))
            print(f"{verdict:9s} {took:6.1f}s  {bug.name:28s} {detail or bug.what}", flush=True)
    caught = sum(1 for _, v, _ in rows if v == "caught")
    print(f"\n{caught} of {len(rows)} planted bugs caught")
    if caught != len(rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
