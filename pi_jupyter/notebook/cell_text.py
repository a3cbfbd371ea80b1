"""A recorded cell as the model reads it: its code, printed output, result, displays and error, cut to size.

Long parts are cut the way pi cuts tool output, at line boundaries, keeping the head and the
tail with a note of what was left out (``[… 120 lines (4.2KB) left out …]``). A cell is
written at one of three levels of detail: ``full``, ``short`` (fewer lines of everything) or
``line`` (one line: what it was, and that the ``notebook`` tool reads it whole). Images are
not text: each is named in place (``[image 1: image/png 640×480, below]``) and handed back
to be attached after the text, or named as left out.

The text is not redacted here: the caller redacts the whole message once (cutting only at line
boundaries keeps every secret whole, so the redaction finds it).
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Literal

from ..agent.redact import redact_partial
from ..agent.toolbox.display import bundle_text
from ..agent.toolbox.truncate import format_size
from .cell_log import IMAGE_TYPES, CellRecord

__all__ = [
    "IMAGE_MARK",
    "ImageBudget",
    "Level",
    "Limits",
    "NotebookSource",
    "Rendered",
    "cut_middle",
    "fence",
    "number_images",
    "render_cell",
]

Level = Literal["full", "short", "line"]


@dataclass(frozen=True)
class Limits:
    """Lines (head, tail) and characters kept of each part of a cell."""

    code: tuple[int, int] = (60, 20)
    stream: tuple[int, int] = (20, 40)
    result: tuple[int, int] = (40, 10)
    display: tuple[int, int] = (25, 5)
    chars: int = 4000
    displays: int = 4


FULL = Limits()
SHORT = Limits(code=(12, 4), stream=(4, 8), result=(8, 2), display=(6, 2), chars=1200, displays=2)
WHOLE = Limits(code=(2000, 0), stream=(300, 300), result=(400, 100), display=(200, 50), chars=60_000, displays=16)
"""What the ``notebook`` tool shows of one cell it is asked for."""

_BARE_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>$")


@dataclass
class Rendered:
    """One cell's text and the images it names (bundles and MIME types, in the order named)."""

    text: str
    images: list[tuple[str, str]] = field(default_factory=list)
    """``(mime type, base64 data)`` of each image named ``[image …, below]``, in order."""
    image_notes: int = 0
    """Images named but not attached (too large, no longer held, over the image budget)."""


def fence(text: str, lang: str = "") -> str:
    """``text`` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0) if "```" in text else 0
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def cut_middle(text: str, head: int, tail: int, max_chars: int) -> str:
    """``text`` with its middle lines left out when it has more than ``head + tail`` lines or ``max_chars`` characters.

    Cuts fall between lines; a single line longer than ``max_chars`` keeps its start. Only the
    lines kept are looked at (a long output costs its length once, to count its lines).
    """
    total = text.count("\n") + 1
    if total <= head + tail and len(text) <= max_chars:
        return text
    top = _first_lines(text, head, max_chars * 2 // 3 if tail else max_chars)
    top_chars = sum(len(x) + 1 for x in top)
    bottom = _last_lines(text, min(tail, total - len(top)), max_chars - top_chars) if tail else []
    left = total - len(top) - len(bottom)
    if left <= 0:
        return text
    if not top and not bottom:
        # one line longer than the limit keeps its start, without a secret it may cut in two
        start = redact_partial(text[: max(0, max_chars - 80)].split("\n", 1)[0])
        return f"{start}… [{format_size(len(text))} line cut]"
    size = len(text) - top_chars - len("\n".join(bottom))
    what = f"{left} lines" if left > 1 else "1 line"
    return "\n".join([*top, f"[… {what} ({format_size(max(size, 0))}) left out …]", *bottom])


def _first_lines(text: str, count: int, budget: int) -> list[str]:
    out: list[str] = []
    at = used = 0
    while len(out) < count and at <= len(text):
        end = text.find("\n", at)
        line = text[at:] if end < 0 else text[at:end]
        if used + len(line) + 1 > budget:
            break
        out.append(line)
        used += len(line) + 1
        if end < 0:
            break
        at = end + 1
    return out


def _last_lines(text: str, count: int, budget: int) -> list[str]:
    out: list[str] = []
    end = len(text)
    used = 0
    while len(out) < count and end >= 0:
        start = text.rfind("\n", 0, end)
        line = text[start + 1 : end]
        if used + len(line) + 1 > budget:
            break
        out.append(line)
        used += len(line) + 1
        if start < 0:
            break
        end = start
    return out[::-1]


def _display_text(bundle: dict[str, Any]) -> tuple[str, str]:
    """``(kinds, text)`` of a display: its Markdown, a plain text that says more than a class name, else its HTML as text."""
    kinds = [k for k in bundle if isinstance(k, str) and not k.startswith("application/vnd.jupyter.widget-state")]
    text = bundle_text(bundle) or ""
    if "application/vnd.jupyter.widget-view+json" in bundle:
        text = f"(a live widget{': ' + text.strip() if text.strip() else ''})"
    return ", ".join(kinds), text


def image_size(mime: str, data: str) -> str:
    """``640×480`` for a PNG (read from its header), else ``""``."""
    if mime != "image/png":
        return ""
    try:
        head = base64.b64decode(data[:44] + "=" * (-len(data[:44]) % 4))
    except (binascii.Error, ValueError):
        return ""
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return ""
    width, height = struct.unpack(">II", head[16:24])
    return f" {width}×{height}"


def _images_of(bundle: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(mime, bundle[mime]) for mime in IMAGE_TYPES if mime in bundle]


def render_cell(record: CellRecord, level: Level, limits: Limits | None = None, *, images: ImageBudget | None = None) -> Rendered:
    """``record`` as Markdown at ``level`` (``limits`` overrides the level's own); images take from ``images``."""
    if level == "line":
        return Rendered(_one_line(record))
    lim = limits or (FULL if level == "full" else SHORT)
    out = Rendered("")
    parts = [_heading(record)]
    if record.code.strip():
        parts.append(fence(cut_middle(record.code.rstrip("\n"), *lim.code, lim.chars), "python"))
    for name, stream in (("stdout", record.stdout), ("stderr", record.stderr)):
        if not stream:
            continue
        text = _memo(record, name, lambda stream=stream: _stream_text(*stream.parts()))
        parts.append(f"{name}:\n" + fence(cut_middle(text.rstrip("\n"), *lim.stream, lim.chars)))
    shown = record.displays[-lim.displays :] if lim.displays else []
    hidden = len(record.displays) - len(shown) + record.displays_dropped
    if hidden:
        parts.append(f"[{hidden} earlier display{'s' if hidden != 1 else ''} of this cell left out]")
    for bundle in shown:
        parts.append(_bundle_part("display", bundle, lim, out, images, record))
    if record.result:
        label = f"Out[{record.count}]" if record.count is not None else "result"
        parts.append(_bundle_part(label, record.result, lim, out, images, record))
    if record.traceback:
        parts.append(fence(cut_middle(record.traceback, 30, 10, lim.chars * 2)))
    if record.from_history:
        parts.append("(ran before pi_jupyter was loaded: only its code and result are known)")
    out.text = "\n".join(p for p in parts if p)
    return out


def _memo(record: CellRecord, key: Any, make: Any) -> Any:
    """What ``make()`` gives for ``record``, made once (a finished cell's parts do not change; rendering it at
    several levels reads them again)."""
    if record.running:
        return make()
    if key not in record.memo:
        record.memo[key] = make()
    return record.memo[key]


def _bundle_part(label: str, bundle: dict[str, Any], lim: Limits, out: Rendered, images: ImageBudget | None, record: CellRecord) -> str:
    kinds, text = _memo(record, id(bundle), lambda: _display_text(bundle))
    pictures = _images_of(bundle)
    lines: list[str] = []
    for mime, data in pictures:
        lines.append(_image_note(mime, data, out, images))
    if text.strip() and not (pictures and _BARE_REPR.match(text.strip() or "x")) and not _is_figure_text(text, pictures):
        lines.append(fence(cut_middle(text.rstrip("\n"), *lim.display if label == "display" else lim.result, lim.chars)))
    if not lines:
        lines.append(f"({kinds or 'empty'})")
    head = f"{label}:" if label != "display" else f"display ({kinds}):"
    return head + "\n" + "\n".join(lines)


def _is_figure_text(text: str, pictures: list[tuple[str, Any]]) -> bool:
    """matplotlib's ``<Figure size 640x480 with 1 Axes>`` beside its picture says nothing more."""
    return bool(pictures) and text.strip().startswith("<Figure size")


class ImageBudget:
    """How many images one message may still attach, and how large each may be."""

    def __init__(self, count: int, max_chars: int) -> None:
        self.left = count
        self.max_chars = max_chars

    def copy(self) -> ImageBudget:
        """The same budget, to try a rendering on."""
        return ImageBudget(self.left, self.max_chars)


IMAGE_MARK = "\x00"
"""Stands for an image's number until the message's images are numbered in reading order (:func:`number_images`)."""


def number_images(text: str) -> str:
    """``text`` with each :data:`IMAGE_MARK` replaced by 1, 2, 3, ... in order."""
    pieces = text.split(IMAGE_MARK)
    return "".join(p + (str(i + 1) if i < len(pieces) - 1 else "") for i, p in enumerate(pieces))


def _image_note(mime: str, data: Any, out: Rendered, images: ImageBudget | None) -> str:
    if not isinstance(data, str):
        out.image_notes += 1
        return f"[{mime}: shown to the user; no longer held by the kernel, not attached]"
    size = format_size(len(data) * 3 // 4)
    dims = image_size(mime, data)
    if images is None or images.left <= 0:
        out.image_notes += 1
        return f"[{mime}{dims}, {size}: shown to the user, not attached (image budget)]"
    if len(data) > images.max_chars:
        out.image_notes += 1
        return f"[{mime}{dims}, {size}: shown to the user, too large to attach]"
    images.left -= 1
    out.images.append((mime, data))
    return f"[image {IMAGE_MARK}: {mime}{dims}, {size}, attached below]"


def _stream_text(head: str, tail: str, omitted: int) -> str:
    """A stream kept as head and tail: the partial lines at the cut go (a secret is kept whole or not at all), the cut is noted."""
    if not omitted:
        return head + tail
    head = head[: head.rfind("\n") + 1] if "\n" in head else ""
    tail = tail[tail.find("\n") + 1 :] if "\n" in tail else ""
    return f"{head}[… about {format_size(omitted)} of output in the middle not kept by the kernel …]\n{tail}"


def _heading(record: CellRecord) -> str:
    where = f" (cell {record.cell_id[:8]})" if record.cell_id else ""
    status = f" failed: {record.error}" if record.error else ""
    took = f" · ran {record.duration_s:.0f} s" if record.duration_s is not None and record.duration_s >= 10 else ""  # a long cell
    return f"### {record.label}{where}{status}{took}"


def _one_line(record: CellRecord) -> str:
    n = record.code.count("\n") + 1 if record.code else 0
    bits = [f"{n} line{'s' if n != 1 else ''} of code"]
    for name, stream in (("printed", record.stdout), ("stderr", record.stderr)):
        if stream:
            bits.append(f"{name} {format_size(stream.total)}")
    if record.displays:
        bits.append(f"{len(record.displays)} display{'s' if len(record.displays) != 1 else ''}")
    if record.result:
        bits.append("a result")
    state = f"failed: {record.error}" if record.error else "ran"
    first = next((line.strip() for line in record.code.splitlines() if line.strip()), "")
    first = first if len(first) <= 80 else first[:80] + "…"
    return f"- {record.label} {state} ({', '.join(bits)}){': `' + first.replace('`', chr(39)) + '`' if first else ''}"


class NotebookSource:
    """What the ``notebook`` tool reads (``tool_extra["notebook"]``): the kernel's cells, rendered from a :class:`~.cell_log.CellLog`."""

    def __init__(self, log: Any) -> None:
        self.log = log

    def list_cells(self, limit: int = 50) -> str:
        """The latest ``limit`` cells of this kernel, one line each, oldest first."""
        records = [r for r in self.log.records if not r.running][-limit:]
        if not records:
            return "No cells have run in this kernel yet (since pi_jupyter was loaded, and before it as IPython's history tells)."
        lines = [f"{len(records)} latest cells of this kernel, oldest first (read one whole with action 'read'):"]
        for record in records:
            where = f" [cell {record.cell_id[:8]}]" if record.cell_id else ""
            if record.skipped:
                lines.append(f"- {record.label}{where}: kept out by the user (# pi: skip)")
            elif record.agent_turn:
                lines.append(f"- {record.label}{where}: a %%pi cell or %pi command (the agent's own turns)")
            else:
                lines.append(_one_line(record).replace(f"- {record.label}", f"- {record.label}{where}", 1))
        return "\n".join(lines)

    def read_cell(self, ref: str) -> str | None:
        """One cell's code and outputs, whole (within generous limits); ``None`` for a cell that did not run here."""
        record = self.log.find(ref)
        if record is None:
            return None
        if record.skipped:
            return f"{record.label} was kept out by the user (# pi: skip): its code and output are not shown."
        if record.agent_turn:
            return f"{record.label} is a %%pi cell or %pi command: the agent's own turn, in the conversation already."
        rendered = render_cell(record, "full", WHOLE, images=ImageBudget(0, 0))
        return number_images(rendered.text)

    def hidden_names(self) -> set[str]:
        """Names IPython put in the namespace itself (``In``, ``Out``, ``exit``, ...), not the user's."""
        shell = getattr(self.log, "shell", None)
        hidden = getattr(shell, "user_ns_hidden", None)
        return set(hidden) if isinstance(hidden, dict) else set()


def notebook_source(log: Any) -> NotebookSource | None:
    """The ``notebook`` tool's source for ``log`` (``None`` without one)."""
    return NotebookSource(log) if log is not None else None
