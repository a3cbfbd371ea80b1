"""What redacting one JSON line costs: the RPC answer to ``get_entries`` of a big session, per string vs whole line.

Every line ``pi-jupyter rpc``, ``prompt --json`` and ``Agent.log_events`` write goes through
``redact_json`` (each string redacted on its own, so the line stays JSON). Three versions of
one line are measured: a session with no URL, key or ``@`` (the common case: one pass over
the line finds nothing to do), the same with a URL in every 10th message and an ``@domain``
in every 7th (each string is then looked at), and with a key in every 50th. Printed: the
line's size, ``redact_json``'s time and, for reference, the old whole-line ``redact`` (which
broke such lines).

    python bench/bench_redact.py [--entries 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import time

from pi_jupyter.agent.redact import redact, redact_json
from pi_jupyter.cli.rpc_protocol import encode_line, success
from pi_jupyter.views import sample_session


def line_for(entries: int, url_every: int, at_every: int, key_every: int) -> str:
    raws = sample_session(entries, seed=1).raw_entries()
    for i, raw in enumerate(raws):
        message = raw.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            continue
        extra = []
        if url_every and i % url_every == 0:
            extra.append("see http://localhost:8888/lab/tree")
        if at_every and i % at_every == 0:
            extra.append("mail me@example.com")
        if key_every and i % key_every == 0:
            extra.append("key sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2")
        message["content"] += " ".join(["", *extra])
    return encode_line(success("e", "get_entries", {"entries": raws, "leafId": None}))


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name, spec in (("plain", (0, 0, 0)), ("urls and @", (10, 7, 0)), ("urls, @ and keys", (10, 7, 50))):
        line = line_for(args.entries, *spec)
        per_string = best(lambda line=line: redact_json(line), args.runs)
        whole = best(lambda line=line: redact(line), args.runs)
        size = len(line) / 1e6
        print(f"{name:>18}: {size:6.1f} MB line, redact_json {per_string * 1000:7.1f} ms, whole-line redact {whole * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
