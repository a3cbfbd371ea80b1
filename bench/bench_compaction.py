"""Benchmark: preparing a compaction costs time proportional to the branch, not the file.

Writes session files with our store (100k entries by default), then times, in this process
and in pi itself (node, pi 0.73.1) on the same files:

* ``prepare``: the current branch (``Session.raw_branch`` / pi's ``getBranch``) plus
  ``prepare_compaction`` / pi's ``prepareCompaction`` (no model call);
* ``trigger``: our ``compaction_trigger`` (the after-a-run decision), beside pi's
  ``estimateContextTokens`` of the rebuilt context (what pi's check computes).

Three files: a 100k-entry file whose current branch is short (the work went back near the
start and went on there), the same file without that short branch (the current branch is
the whole file), and a 10k-entry file (a long branch, to show the cost grows with it).
Opening the files is not timed. Run::

    python bench/bench_compaction.py [--entries 100000] [--runs 5]

pi is found in ``$PI_NODE_MODULES``, else in the interop tests' cache
(``~/.cache/pi-jupyter/pi-0.73.1/node_modules``) or ``~/.cache/pi-oracle/node_modules``;
without node or pi only our figures are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import sessiongen  # noqa: E402

from pi_jupyter.compaction import CompactionSettings, compaction_trigger, prepare_compaction  # noqa: E402
from pi_jupyter.session import Session  # noqa: E402

NODE_BENCH = r"""
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
const [file, leaf, runs] = [process.argv[1], process.argv[2], Number(process.argv[3])];
const dist = path.join(process.env.PI_NODE_MODULES, "@mariozechner/pi-coding-agent/dist");
const imp = (rel) => import(pathToFileURL(path.join(dist, rel)).href);
const SM = await imp("core/session-manager.js");
const COMP = await imp("core/compaction/compaction.js");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-bench-"));
const copy = path.join(dir, path.basename(file));
fs.copyFileSync(file, copy);
const sm = SM.SessionManager.open(copy, dir);
const settings = { ...COMP.DEFAULT_COMPACTION_SETTINGS };
const prepare = [], trigger = [];
let branch = 0;
for (let r = 0; r < runs; r++) {
  const t0 = performance.now();
  const entries = sm.getBranch(leaf);
  COMP.prepareCompaction(entries, settings);
  const t1 = performance.now();
  COMP.estimateContextTokens(SM.buildSessionContext(sm.getBranch(leaf)).messages);
  const t2 = performance.now();
  prepare.push(t1 - t0); trigger.push(t2 - t1); branch = entries.length;
}
fs.rmSync(dir, { recursive: true, force: true });
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(JSON.stringify({ prepare: med(prepare), trigger: med(trigger), branch }));
"""


def _pi_node_modules() -> Path | None:
    candidates = [os.environ.get("PI_NODE_MODULES"), "~/.cache/pi-jupyter/pi-0.73.1/node_modules", "~/.cache/pi-oracle/node_modules"]
    for c in candidates:
        if c and (Path(c).expanduser() / "@mariozechner" / "pi-coding-agent" / "dist").is_dir():
            return Path(c).expanduser()
    return None


def _add_short_branch(path: Path) -> str:
    """Go back near the start of the file's one long line of work and add a few turns there."""
    s = Session.open(path, durability="never")
    early = s.raw_entries()[20]["id"]
    s.checkout(early, persist=False)
    for i in range(8):
        s.append_message({"role": "user", "content": [{"type": "text", "text": f"a new direction {i} " * 30}], "timestamp": 1})
        s.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "answer " * 120}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1100},
                "stopReason": "stop",
                "timestamp": 2,
            }
        )
    leaf = s.leaf_id
    s.close()
    return leaf


def _ours(path: Path, leaf: str, runs: int) -> dict[str, float]:
    s = Session.open(path, readonly=True)
    settings = CompactionSettings()
    prepare, trigger = [], []
    branch = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        entries = s.raw_branch(leaf)
        prepare_compaction(entries, settings, cwd=s.cwd)
        t1 = time.perf_counter()
        compaction_trigger(s.raw_branch(leaf), context_window=200_000, settings=settings)
        t2 = time.perf_counter()
        prepare.append((t1 - t0) * 1000)
        trigger.append((t2 - t1) * 1000)
        branch = len(entries)
    return {"prepare": statistics.median(prepare), "trigger": statistics.median(trigger), "branch": branch, "entries": len(s)}


def _pi(path: Path, leaf: str, runs: int, modules: Path | None) -> dict[str, float] | None:
    if modules is None or shutil.which("node") is None:
        return None
    env = dict(os.environ, PI_NODE_MODULES=str(modules))
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", NODE_BENCH, str(path), leaf, str(runs)], capture_output=True, text=True, env=env, timeout=900
    )
    if proc.returncode != 0:
        print(f"  (pi failed: {proc.stderr.strip()[-300:]})")
        return None
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    modules = _pi_node_modules()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = []
        t = time.perf_counter()
        long = folder / "long.jsonl"
        sessiongen.write_bench(str(long), args.entries - 16, branched=False)
        short = folder / "short.jsonl"
        shutil.copyfile(long, short)
        short_leaf = _add_short_branch(short)
        cases.append(("short branch", short, short_leaf))
        cases.append(("long branch", long, Session.open(long, readonly=True).leaf_id))
        small = folder / "small.jsonl"
        sessiongen.write_bench(str(small), args.entries // 10, branched=False)
        cases.append(("long branch", small, Session.open(small, readonly=True).leaf_id))
        print(f"wrote the files in {time.perf_counter() - t:.1f} s; median of {args.runs} runs; pi: {modules or 'not found'}")
        for kind, path, leaf in cases:
            ours = _ours(path, leaf, args.runs)
            pi = _pi(path, leaf, args.runs, modules)
            name = f"{ours['entries']:,}-entry file, {kind}"
            line = f"{name:34} ({ours['branch']:>7,} on the branch)  prepare: pi-jupyter {ours['prepare']:8.2f} ms"
            line += f"  pi {pi['prepare']:8.2f} ms" if pi else "  pi      n/a"
            line += f"   trigger: pi-jupyter {ours['trigger']:8.2f} ms"
            line += f"  pi (estimateContextTokens) {pi['trigger']:8.2f} ms" if pi else ""
            print(line)


if __name__ == "__main__":
    main()
