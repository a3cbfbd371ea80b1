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

# ruff: noqa: E501 - the table of planted bugs reads one per row

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


VERDICTS = "tests/test_experiment_verdicts.py"
STATS = "tests/test_experiment_stats.py"
JUDGING = "tests/test_experiment_judging.py"
HOSTILE = "tests/test_hostile_markup.py"
LEAKS = "tests/test_adversarial_leaks.py"


def _p(name: str, file: str, old: str, new: str, tests: str | tuple[str, ...], what: str) -> Planted:
    return Planted(name, file, old, new, (tests,) if isinstance(tests, str) else tests, what)


CORE, ANALYSIS, STATS_PY, JUDGING_PY = (f"pi_jupyter/experiment/{m}.py" for m in ("core", "analysis", "stats", "judging"))

PLANTED: list[Planted] = [
    # -------------------------------------------------------------- the list (41 §3), outside world/ and binding
    _p("replay-earliest", CORE, 'out[key] = (e["id"], end[0])', 'out.setdefault(key, (e["id"], end[0]))',
       "tests/test_experiment.py::test_replay_serves_the_latest_recording_of_each_variant", "replay takes the earliest recording of a variant"),
    _p("holm-running-max", STATS_PY, "running = max(running, min(1.0, (m - rank) * pvalues[i]))", "running = min(1.0, (m - rank) * pvalues[i])",
       f"{STATS}::test_holm_matches_statsmodels", "Holm's step-down without its running maximum"),
    _p("until-decided-look-repeat", ANALYSIS, "r.repeat >= max_repeat", "r.repeat > max_repeat",
       f"{VERDICTS}::test_each_look_counts_the_repeats_before_it_only", "a look counts the repeat at its stopping point"),
    _p("until-decided-skip", CORE, "if spec.variant.repeat >= repeats:", "if spec.variant.repeat > repeats:",
       "tests/test_experiment_summary.py::test_until_decided_stops_once_decided_and_says_what_it_saved",
       "--until-decided runs the repeat at the stopping point"),
    _p("decided-counted-again", ANALYSIS, "if c.decided and ident not in decided:", "if c.decided:",
       f"{VERDICTS}::test_a_comparison_decided_at_a_look_keeps_that_looks_verdict", "a comparison decided at one look counted again later"),
    _p("second-wins-ends", ANALYSIS, "(_neg(self.high), _neg(self.low))", "(_neg(self.low), _neg(self.high))",
       f"{VERDICTS}::test_when_the_second_value_wins_its_interval_is_its_own", "second value wins: ends negated, not swapped"),
    _p("position-bias-total", JUDGING_PY, "stats.sign_test(first, len(decisive) - first)", "stats.sign_test(first, len(decisive))",
       f"{JUDGING}::test_two_judges_agreement_and_position_bias", "position-bias sign test given the total"),
    _p("bulk-null-content", "pi_jupyter/session/bulk.py", ' or bytes(head.content) == b"null"', "",
       "tests/test_session_bulk.py::test_cli_context_json_on_odd_layouts_is_the_stores_context_and_names_the_damaged_line",
       "the fast reader passes on a null content as written"),
    _p("pace-hold-sign", "pi_jupyter/providers/pace.py", "self._start += seconds", "self._start -= seconds",
       "tests/test_replay_pace.py::test_a_pause_in_step_mode_moves_the_rest_of_the_reply_later_by_the_pause",
       "a pause moves the playback clock the wrong way"),
    _p("class-run-by-count", "pi_jupyter/views/class_view/session.py", "(current, n) > chosen[key][0]", "n > chosen[key][0][1]",
       "tests/test_class_view.py::test_a_cell_shows_the_run_on_the_students_current_branch_not_the_latest",
       "the class view picks a run by count, not the current branch"),
    _p("world-diff-escape", "pi_jupyter/views/compare/world.py", "{html.escape(r.diff)}", "{r.diff}",
       f"{HOSTILE}::test_the_world_comparison_keeps_every_value_and_file_as_text", "the world comparison's file diff not escaped"),
    _p("figure-label-escape", "pi_jupyter/experiment/figure.py", '<text x="8" y="{y + 12}">{html.escape(short)}</text>',
       '<text x="8" y="{y + 12}">{short}</text>', (f"{HOSTILE}::test_every_field_stays_text_in_html",), "the figure's labels not escaped"),
    _p("table-cell-escape", ANALYSIS, '"<td>{html.escape(str(v))}</td>"', '"<td>{v}</td>"',
       (f"{HOSTILE}::test_every_field_stays_text_in_html",), "the experiment table's cells not escaped"),
    _p("retry-after-shortens", "pi_jupyter/experiment/cluster_limit.py", 'max(float(mine.get("paused_until", 0.0)), now + seconds)', "now + seconds",
       "tests/test_experiment_limiter.py", "a later, shorter Retry-After shortens the cluster-wide pause"),
    _p("recorded-prompt-scrub", CORE, "prompt=scrub(prompt),", "prompt=prompt,",
       f"{LEAKS}::test_an_experiments_prompt_and_values_are_recorded_without_the_key", "an experiment's recorded prompt skips the secret scrub"),
    # -------------------------------------------------------------- more of the same kinds, planted here
    _p("fence-left-open", "pi_jupyter/views/markdown_safe.py", 'if "```" not in text and "~~~" not in text:\n        return text\n    lines',
       "if True:\n        return text\n    lines", "tests/test_adversarial_markdown.py", "forgotten: an answer ends inside a fence, left open"),
    _p("agreement-earliest", JUDGING_PY, "shared = [(p[x][-1], p[y][-1])", "shared = [(p[x][0], p[y][0])",
       f"{JUDGING}::test_a_judge_who_changed_their_mind_agrees_by_their_latest_verdict", "earliest/latest: agreement reads a judge's first verdict on a pair"),
    _p("latest-experiment", "pi_jupyter/experiment/result.py", "return ExperimentResult(session, ids[-1])", "return ExperimentResult(session, ids[0])",
       ("tests/test_experiment.py", "tests/test_experiment_summary.py"), "earliest/latest: load_experiment takes the first experiment"),
    _p("sign-interval-off-by-one", STATS_PY, "return d[k], d[n - 1 - k]", "return d[k], d[n - k]",
       f"{STATS}::test_the_sign_interval_holds_exactly_the_medians_the_sign_test_keeps", "off-by-one: the sign interval's upper order statistic"),
    _p("sign-interval-tail", STATS_PY, "if nxt > alpha / 2:", "if nxt >= alpha:",
       f"{STATS}::test_the_sign_interval_holds_exactly_the_medians_the_sign_test_keeps", "off-by-one: the sign interval spends the whole alpha on one side"),
    _p("bonett-price-plus-one", STATS_PY, "p10, p01 = (n10 + 1) / (n + 2), (n01 + 1) / (n + 2)", "p10, p01 = n10 / n, n01 / n",
       (STATS, VERDICTS), "forgotten slot: Bonett-Price without its added pairs"),
    _p("one-level-not-k", ANALYSIS, "alpha = level / max(1, sum(1 for c in tested if not c.decided))", "alpha = level",
       VERDICTS, "forgotten: intervals not at the level the verdicts were held to"),
    _p("no-widen-to-zero", ANALYSIS, "c.low, c.high = min(c.low or 0.0, 0.0), max(c.high or 0.0, 0.0)", "pass",
       VERDICTS, "forgotten: an undecided 0/1 comparison's interval not widened to 0"),
    _p("step-early-go-kept", "pi_jupyter/providers/pace.py", "            if self._early:\n                self._early = False\n                return 0.0",
       "            if self._early:\n                return 0.0", "tests/test_replay_pace.py::test_a_go_pressed_early_passes_one_pause_only",
       "flag never reset: one early Go skips every later pause"),
    _p("deep-limit-off-by-one", "pi_jupyter/session/jsonl.py", "for _ in range(MAX_DEPTH):  # each pass", "for _ in range(MAX_DEPTH - 1):  # each pass",
       "tests/test_adversarial_session_lines.py::test_up_to_the_limit_a_deep_value_reads_and_every_reader_agrees",
       "off-by-one: a line exactly at the depth limit read as too deep"),
    _p("port-without-separator", "pi_jupyter/agent/redact.py", '_PORT_THEN_MORE = re.compile(r"\\d{1,5}[/?#\\s]")', '_PORT_THEN_MORE = re.compile(r"\\d{1,5}")',
       f"{LEAKS}::test_a_url_password_written_raw_by_a_tool_is_neither_stored_nor_sent", "missing separator: a numeric password taken for a port"),
    _p("export-tooltip-not-cleaned", "pi_jupyter/views/graph/digraph.py", "            tooltip=clean(n.tooltip),\n", "",
       f"{LEAKS}::test_rpc_export_html_redacts_the_tree_drawing_and_the_page_data", "forgotten slot: the drawing's tooltips not redacted"),
    _p("export-file-name-not-cleaned", "pi_jupyter/views/export/page.py", 'file_name = clean(os.path.basename(session.path or ""))',
       'file_name = os.path.basename(session.path or "")', LEAKS, "forgotten slot: the exported page shows the file name unredacted"),
    _p("judged-lines-escape", JUDGING_PY, 'items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in lines[1:])',
       'items = "".join(f"<li>{line.strip()}</li>" for line in lines[1:])', (f"{HOSTILE}::test_every_field_stays_text_in_html",),
       "missing escape: the judgements' lines"),
    _p("verdict-lines-escape", ANALYSIS, 'items = "".join(f"<li>{html.escape(line)}</li>" for line in self.verdicts())',
       'items = "".join(f"<li>{line}</li>" for line in self.verdicts())', (f"{HOSTILE}::test_every_field_stays_text_in_html",),
       "missing escape: the verdict lines"),
    _p("world-cell-escape", "pi_jupyter/views/compare/world.py", '<td style="{td}"><code>{html.escape(c)}</code></td>',
       '<td style="{td}"><code>{c}</code></td>', f"{HOSTILE}::test_the_world_comparison_keeps_every_value_and_file_as_text",
       "missing escape: the world comparison's cells"),
    _p("figure-tooltip-escape", "pi_jupyter/experiment/figure.py", 'tip = f"<title>{html.escape(label)}: {mean:.3g} {interval}, n = {n}</title>"',
       'tip = f"<title>{label}: {mean:.3g} {interval}, n = {n}</title>"', (f"{HOSTILE}::test_every_field_stays_text_in_html",),
       "missing escape: the figure's tooltips"),
]  # fmt: skip


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
