"""Streaming command output with bounded memory (pi's ``OutputAccumulator``).

Bytes are decoded incrementally as UTF-8; only a rolling tail is kept for the model's
(tail-truncated) view. Once the output passes a limit, everything is also written to a
file in :func:`~pi_jupyter.agent.policy.tool_output_dir` that the result names. Unlike
pi, that file is redacted line by line before it is written: it is persisted output too; and
when the view starts inside one long line, the piece of a word it starts with is dropped (it
may be the end of a secret whose start was cut off).
"""

from __future__ import annotations

import codecs
import re
from typing import IO

from ..redact import redact, stream_safe_length
from .base import new_output_path
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncationResult, truncate_tail

__all__ = ["OutputAccumulator"]

_LEADING_PIECE = re.compile(r"\S{1,512}(?=\s)")


class OutputAccumulator:
    """Collect output chunks; :meth:`snapshot` gives the tail-truncated view so far."""

    def __init__(self, prefix: str = "pi-bash", max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.prefix = prefix
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._rolling = max(max_bytes * 2, 1)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""
        self._tail_bytes = 0
        self._tail_at_line_start = True
        self._early: list[str] = []  # text kept until we know whether a file is needed
        self._pending_line = ""  # the unfinished last line, not yet written (redaction works per line)
        self.total_bytes = 0
        self.total_lines = 1
        self.last_line_bytes = 0
        self.full_output_path: str | None = None
        self._file: IO[str] | None = None
        self._finished = False

    # -- input ------------------------------------------------------------------------

    def append(self, data: bytes) -> None:
        """Add raw bytes."""
        if self._finished:
            raise RuntimeError("cannot append to a finished output accumulator")
        self._add_text(self._decoder.decode(data))

    def append_text(self, text: str) -> None:
        """Add already decoded text."""
        self._add_text(text)

    def finish(self) -> None:
        """No more input: flush the decoder and the file."""
        if self._finished:
            return
        self._add_text(self._decoder.decode(b"", final=True))
        self._finished = True
        if self._needs_file():
            self._ensure_file()
        if self._file is not None:
            if self._pending_line:
                self._file.write(redact(self._pending_line))
                self._pending_line = ""
            self._file.close()
            self._file = None

    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = len(text.encode("utf-8"))
        self.total_bytes += size
        self._tail += text
        self._tail_bytes += size
        if self._tail_bytes > self._rolling * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines:
            self.total_lines += newlines
            self.last_line_bytes = len(text[text.rfind("\n") + 1 :].encode("utf-8"))
        else:
            self.last_line_bytes += size
        if self._file is None and self._needs_file():
            self._ensure_file()
        if self._file is not None:
            self._write(text)
        else:
            self._early.append(text)

    def _write(self, text: str) -> None:
        assert self._file is not None
        data = self._pending_line + text
        cut = data.rfind("\n")
        if cut != -1 and "-----BEGIN" in data and len(data) <= 1 << 20:
            # Whole lines, but not into a private key still being written: its lines come one
            # by one and only the END line makes the block recognisable.
            cut = data.rfind("\n", 0, stream_safe_length(data))
        if cut == -1:
            self._pending_line = data
            if len(data) > 1 << 20:  # one enormous line: write it anyway, bounded memory wins
                self._file.write(redact(data))
                self._pending_line = ""
            return
        self._file.write(redact(data[: cut + 1]))
        self._pending_line = data[cut + 1 :]

    def _trim_tail(self) -> None:
        data = self._tail.encode("utf-8")
        if len(data) <= self._rolling:
            self._tail_bytes = len(data)
            return
        start = len(data) - self._rolling
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1
        self._tail_at_line_start = data[start - 1 : start] == b"\n" if start else self._tail_at_line_start
        self._tail = data[start:].decode("utf-8")
        self._tail_bytes = len(data) - start

    def _needs_file(self) -> bool:
        return self.total_bytes > self.max_bytes or self.total_lines > self.max_lines

    def _ensure_file(self) -> None:
        if self.full_output_path is not None:
            return
        self.full_output_path = new_output_path(self.prefix)
        self._file = open(self.full_output_path, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed in finish()
        early, self._early = self._early, []
        for text in early:
            self._write(text)

    # -- output -----------------------------------------------------------------------

    def _snapshot_text(self) -> str:
        if self._tail_at_line_start:
            return self._tail
        first = self._tail.find("\n")
        return self._tail if first == -1 else self._tail[first + 1 :]

    def snapshot(self) -> TruncationResult:
        """The tail-truncated view, with totals over everything seen."""
        tail = truncate_tail(self._snapshot_text(), self.max_lines, self.max_bytes)
        if tail.last_line_partial:
            # The view starts inside one long line, perhaps inside a secret whose start was
            # cut off, which redaction cannot recognise: the leading piece of a word goes too.
            cut = _LEADING_PIECE.match(tail.content)
            if cut is not None:
                content = tail.content[cut.end() :]
                tail = tail.model_copy(update={"content": content, "output_bytes": len(content.encode("utf-8"))})
        truncated = self._needs_file()
        by = tail.truncated_by or ("bytes" if self.total_bytes > self.max_bytes else "lines") if truncated else None
        return tail.model_copy(
            update={
                "truncated": truncated,
                "truncated_by": by,
                "total_lines": self.total_lines,
                "total_bytes": self.total_bytes,
            }
        )
