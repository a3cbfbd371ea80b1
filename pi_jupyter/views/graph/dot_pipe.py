"""One long-lived ``dot`` that lays out graph after graph, so a redraw does not start Graphviz again.

Starting ``dot`` costs about 18 ms before it reads a byte (its plugins, fontconfig); a tree that
redraws after every turn pays that each time, and the new nodes of a turn alone take 1 ms to
lay out in a running ``dot``. ``dot`` reads one graph after another from its input and writes
each picture as soon as the graph is closed, so :func:`layout` keeps one process per program
and feeds it.

Anything unusual gives ``None`` and the caller runs ``dot`` once, as before, which then
reports the problem itself: a source that is not one closed graph, a busy pipe (another thread
is laying out), a message on ``dot``'s error stream, an answer that is not one SVG, a process
that died. After any of these the process is stopped and the next layout starts a new one.
POSIX only (the pipe is read with ``select``); elsewhere ``dot`` runs once per graph.
"""

from __future__ import annotations

import atexit
import os
import re
import selectors
import subprocess
import threading
import time
from typing import IO

IDLE_S = 120.0
"""A pipe unused this long is closed (a kernel that stopped drawing keeps no ``dot``)."""

MAX_GRAPHS = 500
"""Graphs one process lays out before it is replaced (whatever ``dot`` keeps between graphs stays bounded)."""

_END = b"</svg>\n"
_PAGE_ID = re.compile(r'<g id="page\d+,\d+_graph0" class="graph"')
_CLOSED_GRAPH = re.compile(rb"\A\s*(?:strict\s+)?(?:di)?graph\b[^{]*\{", re.I)


class _Pipe:
    """One ``dot -Tsvg -q`` process and the lock that gives it to one caller at a time."""

    def __init__(self, program: str) -> None:
        self.program = program
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0  # the Python process that started it (a forked child starts its own)
        self.graphs = 0
        self.timer: threading.Timer | None = None

    def start(self) -> subprocess.Popen[bytes]:
        proc = self.proc
        if proc is not None and proc.poll() is None and self.pid == os.getpid() and self.graphs < MAX_GRAPHS:
            return proc
        self.stop()
        proc = subprocess.Popen([self.program, "-Tsvg", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)
        self.proc, self.pid, self.graphs = proc, os.getpid(), 0
        return proc

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self.pid == os.getpid():
            try:
                proc.kill()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def run(self, source: bytes, timeout: float) -> tuple[str | None, bool]:
        """The SVG of ``source`` and whether it timed out; ``(None, False)`` when the caller should run ``dot`` once."""
        proc = self.start()
        stdin, stdout, stderr = _streams(proc)
        if _pending(stdout.fileno()) or _pending(stderr.fileno()):
            self.stop()  # output nobody asked for (a source that held two graphs): start clean
            proc = self.start()
            stdin, stdout, stderr = _streams(proc)
        deadline = time.monotonic() + timeout
        out = bytearray()
        todo = memoryview(source)
        with selectors.DefaultSelector() as sel:
            sel.register(stdin, selectors.EVENT_WRITE)
            sel.register(stdout, selectors.EVENT_READ)
            sel.register(stderr, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stop()
                    return None, True
                for key, _ in sel.select(left):
                    if key.fileobj is stdin:
                        try:
                            todo = todo[os.write(stdin.fileno(), todo) :]
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:
                            self.stop()
                            return None, False
                        if not todo:
                            sel.unregister(stdin)
                        continue
                    try:
                        chunk = os.read(key.fd, 1 << 20)
                    except (BlockingIOError, InterruptedError):
                        continue
                    if key.fileobj is stderr or not chunk:
                        self.stop()  # an error (or the end of dot): the one-shot run reports it
                        return None, False
                    out += chunk
                if not todo and out.endswith(_END):
                    break
        if _pending(stderr.fileno()):
            self.stop()
            return None, False
        self.graphs += 1
        svg = bytes(out).decode("utf-8", "replace")
        if not svg.lstrip().startswith("<?xml") or svg.count("<svg") != 1:
            self.stop()
            return None, False
        # dot names the second and later pictures of one run "page0,1_graph0"; a drawing is the same whichever run made it
        return _PAGE_ID.sub(r'<g id="graph0" class="graph"', svg, count=1), False

    def touch(self) -> None:
        """Close the process when nobody lays out for :data:`IDLE_S`."""
        if self.timer is not None:
            self.timer.cancel()
        self.timer = threading.Timer(IDLE_S, self.idle)
        self.timer.daemon = True
        self.timer.start()

    def idle(self) -> None:
        if self.lock.acquire(blocking=False):
            try:
                self.stop()
            finally:
                self.lock.release()


def _streams(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    return proc.stdin, proc.stdout, proc.stderr


def _pending(fd: int) -> bool:
    """True when ``fd`` (non-blocking) has bytes to read or has ended."""
    try:
        return os.read(fd, 1 << 16) is not None
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


_PIPES: dict[str, _Pipe] = {}
_PIPES_LOCK = threading.Lock()


def layout(program: str, source: str, timeout: float) -> tuple[str | None, bool]:
    """Lay ``source`` out with the long-lived ``program``: ``(svg, False)``, ``(None, True)`` on timeout, else ``(None, False)``.

    ``(None, False)`` means: run ``dot`` once instead (see the module docstring for when).
    """
    data = source.encode("utf-8", "replace")
    if os.name != "posix" or not _CLOSED_GRAPH.match(data) or data.rstrip().rsplit(b"\n", 1)[-1].strip() != b"}":
        return None, False  # only a graph whose last line closes it is sure to be answered at once
    with _PIPES_LOCK:
        pipe = _PIPES.get(program)
        if pipe is None:
            pipe = _PIPES[program] = _Pipe(program)
    if not pipe.lock.acquire(blocking=False):
        return None, False  # another thread is using it: a one-shot dot runs alongside
    try:
        try:
            result = pipe.run(data + b"\n", timeout)
        except OSError:
            pipe.stop()
            return None, False
        pipe.touch()
        return result
    finally:
        pipe.lock.release()


def close_all() -> None:
    """Stop every long-lived ``dot`` (at exit, and for tests)."""
    with _PIPES_LOCK:
        pipes = list(_PIPES.values())
    for pipe in pipes:
        with pipe.lock:
            if pipe.timer is not None:
                pipe.timer.cancel()
            pipe.stop()


atexit.register(close_all)
