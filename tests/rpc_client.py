"""The client side of ``pi-jupyter rpc`` for the tests: a server subprocess, its JSON lines, and the session file it writes.

Shared by tests/test_rpc.py and tests/test_rpc_pi16.py.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

TIMEOUT = 60.0
"""Seconds to wait for one expected line before the test fails (a guard, not a measurement)."""

KEY = "sk-test-rpc-abcdefghijklmnopqrstuvwxyz012345"
WAIT = "use bash `while [ ! -f release ]; do sleep 0.02; done; echo released`"
"""A prompt the offline model answers by calling bash with a command that waits for the file ``release``."""


class Rpc:
    """A running ``python -m pi_jupyter rpc`` with line readers on stdout and stderr."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None, program: list[str] | None = None) -> None:
        """``program`` replaces ``python -m pi_jupyter rpc`` (pi's own RPC mode through node, for comparisons)."""
        full_env = {k: v for k, v in os.environ.items() if k != "PI_JUPYTER_MODEL"}
        full_env["PI_CODING_AGENT_DIR"] = str(cwd / "agent-dir")
        full_env.update(env or {})
        self.cwd = cwd
        self.proc = subprocess.Popen(
            [*(program or [sys.executable, "-m", "pi_jupyter", "rpc"]), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=full_env,
        )
        self.timeout = TIMEOUT
        """Seconds :meth:`next` waits for a line (a test that must fail fast sets less)."""
        self.raw: list[bytes] = []
        self.seen: list[dict[str, Any]] = []
        self.stderr: list[bytes] = []
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()  # type: ignore[arg-type]

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # binary readline splits on b"\n" only
            self._lines.put(line)
        self._lines.put(None)

    def send(self, command: dict[str, Any] | str | bytes) -> None:
        """Write one command line (a dict is encoded; str/bytes are sent as they are, plus LF)."""
        assert self.proc.stdin is not None
        if isinstance(command, dict):
            data = json.dumps(command).encode() + b"\n"
        elif isinstance(command, str):
            data = command.encode() + b"\n"
        else:
            data = command
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def next(self) -> dict[str, Any] | None:
        """The next output line, parsed (``None`` at end of output)."""
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            err = b"".join(self.stderr)[-2000:]
            raise AssertionError(f"no output line within {self.timeout}s; last lines: {self.raw[-3:]}; stderr: {err!r}") from None
        if line is None:
            return None
        assert line.endswith(b"\n")
        self.raw.append(line)
        obj = json.loads(line)
        self.seen.append(obj)
        return obj

    def until(self, pred: Any) -> dict[str, Any]:
        """Read lines until one matches ``pred`` (a callable, or an event/response type name)."""
        test = pred if callable(pred) else (lambda o: o.get("type") == pred)
        while True:
            obj = self.next()
            if obj is None:
                raise AssertionError(f"output ended before the expected line; stderr: {b''.join(self.stderr)[-2000:]!r}")
            if test(obj):
                return obj

    def response(self, cid: Any) -> dict[str, Any]:
        """Read until the response with id ``cid``."""
        return self.until(lambda o: o.get("type") == "response" and o.get("id") == cid)

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send a command and return its response."""
        self.send(command)
        return self.response(command["id"])

    def data(self, command: dict[str, Any]) -> Any:
        """Send a command that must succeed and return its ``data``."""
        reply = self.call(command)
        assert reply["success"] is True, reply
        return reply.get("data")

    def finish(self) -> int:
        """Close stdin, read everything that is left, and return the exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        while self.next() is not None:
            pass
        return self.proc.wait(timeout=TIMEOUT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)


def release(tmp_path: Path) -> None:
    (tmp_path / "release").write_text("go")


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out
