"""A real IPython kernel driven the way JupyterLab drives it (execute requests with ``cellId``)."""

from __future__ import annotations

import os
import queue
import time
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import KernelManager


@dataclass
class Execution:
    """What one execute request produced."""

    status: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    reply: dict[str, Any] = field(default_factory=dict)

    @property
    def stdout(self) -> str:
        return "".join(o["content"]["text"] for o in self.outputs if o["msg_type"] == "stream" and o["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(o["content"]["text"] for o in self.outputs if o["msg_type"] == "stream" and o["content"]["name"] == "stderr")

    def data(self, mime: str) -> list[Any]:
        """Every value of ``mime`` in display data, updates and results, in order."""
        out = []
        for o in self.outputs:
            if o["msg_type"] in ("display_data", "update_display_data", "execute_result") and mime in o["content"].get("data", {}):
                out.append(o["content"]["data"][mime])
        return out

    @property
    def error(self) -> dict[str, Any] | None:
        """The error (``ename``, ``evalue``); IPython reports a ``UsageError`` on stderr and in the reply."""
        errs = [o["content"] for o in self.outputs if o["msg_type"] == "error"]
        if errs:
            return errs[0]
        if self.status == "error":
            return {"ename": self.reply.get("ename"), "evalue": self.reply.get("evalue") or self.stderr, "stderr": self.stderr}
        return None


class Kernel:
    """Start a kernel in ``cwd``; ``run(code, cell_id=...)`` executes and collects iopub output."""

    def __init__(self, cwd: str, env: dict[str, str] | None = None) -> None:
        self.km = KernelManager(kernel_name="python3")
        kenv = dict(os.environ, **(env or {}))
        self.km.start_kernel(cwd=cwd, env=kenv)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self._read: dict[str, list[dict[str, Any]]] = {}

    def send(self, code: str, cell_id: str | None = None, allow_stdin: bool = False) -> str:
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": allow_stdin,
            "stop_on_error": True,
        }
        msg = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def until(self, msg_id: str, seen: Any, timeout: float = 120) -> dict[str, Any]:
        """Read the output of ``msg_id`` (its comm messages too) until ``seen(msg)`` says the awaited event happened;
        returns that message. What was read is kept for :meth:`collect`."""
        import json

        deadline = time.monotonic() + timeout
        while (msg := self._next(msg_id, deadline, [])) is not None:
            self._read.setdefault(msg_id, []).append(msg)
            if seen(msg):
                return msg
        shown = [json.dumps(m["content"])[:120] for m in self._read.get(msg_id, [])[-3:]]
        raise TimeoutError(f"the awaited output of {msg_id} did not come within {timeout}s; last: {shown}")

    def _next(self, msg_id: str, deadline: float, kept: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The next output message of ``msg_id`` (from ``kept`` first), or ``None`` once ``deadline`` passed."""
        if kept:
            return kept.pop(0)
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                msg = self.kc.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
        return None

    def collect(self, msg_id: str, timeout: float = 120) -> Execution:
        result = Execution()
        deadline = time.monotonic() + timeout
        kept = self._read.pop(msg_id, [])
        while True:
            msg = self._next(msg_id, deadline, kept)
            if msg is None:
                raise TimeoutError(f"no idle status for {msg_id} within {timeout}s; outputs so far: {result.outputs[-5:]}")
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "update_display_data", "execute_result", "error"):
                result.outputs.append({"msg_type": kind, "content": msg["content"]})
        while True:
            reply = self.kc.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                result.reply = reply["content"]
                result.status = reply["content"]["status"]
                return result

    def run_answering(self, code: str, answers: list[str], cell_id: str | None = None, timeout: float = 120) -> tuple[Execution, list[str]]:
        """Run ``code`` with stdin allowed, answering each ``input()`` prompt with the next answer.

        Returns the execution and the prompts that were asked.
        """
        import threading

        msg_id = self.send(code, cell_id, allow_stdin=True)
        prompts: list[str] = []
        done = threading.Event()

        def answer() -> None:
            pending = list(answers)
            while not done.is_set():
                try:
                    msg = self.kc.get_stdin_msg(timeout=0.2)
                except queue.Empty:
                    continue
                if msg["msg_type"] == "input_request":
                    prompts.append(msg["content"]["prompt"])
                    self.kc.input(pending.pop(0) if pending else "")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        try:
            return self.collect(msg_id, timeout), prompts
        finally:
            done.set()
            thread.join(2)

    def run(self, code: str, cell_id: str | None = None, timeout: float = 120) -> Execution:
        return self.collect(self.send(code, cell_id), timeout)

    def interrupt(self) -> None:
        self.km.interrupt_kernel()

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
