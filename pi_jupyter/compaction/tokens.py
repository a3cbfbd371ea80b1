"""Token estimates: pi's ``chars / 4`` exactly, and a better heuristic for real context windows.

Two estimators, both taking a message dict (or model):

* :func:`estimate_tokens_pi` is pi's ``estimateTokens`` to the unit (UTF-16 lengths, images
  in user messages count 0, others 1200). It chooses cut points by default, so a session
  compacted here keeps the same entries pi would keep (``keep_recent_tokens`` is a soft
  "how much to keep", and the parity tests hold us to pi's choice).
* :func:`estimate_tokens` is ours. It decides *whether* a context fits: the threshold check,
  ``tokens_before``, and fitting a branch summary into the window. It counts by character
  class, calibrated against the o200k and cl100k BPE vocabularies and Anthropic's published
  tokenizer: per token, English prose and code run about 3.3-5 characters, JSON and numbers
  about 1.8, base64 about 1.4, Chinese and Japanese about 1-2, Korean and Hindi about 1,
  Russian about 2-4.5. pi's ``chars / 4`` undercounts the non-English cases 2-6 times; this
  heuristic stays within about 0.8-1.2 of the largest of the three tokenizers on each of
  prose, Python, JavaScript, JSON arguments, real tool output from pi sessions, Chinese,
  Japanese, Korean, Russian, German, Hindi, emoji, hex, base64 and CSV (a deliberately
  garbled Korean test text gets 0.6; pi's estimate gets 0.16-1.1 on the same set). Images count by their pixel size when the
  header can be read (the larger of Anthropic's and OpenAI's published formulas), else 1200,
  in every message role.

:func:`estimate_context_tokens` is pi's "last reported usage plus estimates of what came
after"; :func:`branch_context_tokens` does the same on a branch, trusting only usage that
was reported after the latest compaction (pi compares clocks for that; here it is the
position in the tree).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from ..messages.text import js_len
from ..messages.wire import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
)
from ..session.rebuild import context_from_path
from ._js import js_stringify
from .entries import RawEntry, as_dict, as_dicts, message_for_compaction

Estimator = Callable[[Any], int]
"""A function from a message (dict or model) to its estimated token count."""

PI_IMAGE_CHARS = 4800
"""pi counts an image as 4800 characters (1200 tokens), except in user messages (0)."""

DEFAULT_IMAGE_TOKENS = 1200
"""Our estimate for an image whose size cannot be read from its header."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Role markers and separators every message costs in a chat request."""


# ------------------------------------------------------------------------------ pi's estimate


def estimate_tokens_pi(message: Any) -> int:
    """pi's ``estimateTokens``: ``ceil(chars / 4)`` with pi's exact rules (pi-design §4.2).

    Characters are UTF-16 code units. User messages count text blocks only (images 0);
    assistant messages count text, thinking and tool calls (name plus ``JSON.stringify`` of
    the arguments); tool results and custom messages count text plus 4800 per image;
    bash executions count command plus output; summaries count their summary; system messages
    (pi 1.x) their content, sections and added tool declarations; any other role is 0.
    """
    m = as_dict(message)
    role = m.get("role")
    chars = 0
    if role == "user":
        content = m.get("content")
        if isinstance(content, str):
            chars = js_len(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                    chars += js_len(block["text"])
    elif role == "assistant":
        for block in m.get("content") or ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += js_len(block.get("text") or "")
            elif kind == "thinking":
                chars += js_len(block.get("thinking") or "")
            elif kind == "toolCall":
                chars += js_len(block.get("name") or "") + js_len(js_stringify(block.get("arguments")))
    elif role in ("custom", "toolResult"):
        content = m.get("content")
        if isinstance(content, str):
            chars = js_len(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    chars += js_len(block["text"])
                if block.get("type") == "image":
                    chars += PI_IMAGE_CHARS
    elif role == "bashExecution":
        chars = js_len(m.get("command") or "") + js_len(m.get("output") or "")
    elif role in ("branchSummary", "compactionSummary"):
        chars = js_len(m.get("summary") or "")
    elif role == "system":
        chars = _system_chars(m)
    else:
        return 0
    return -(-chars // 4)


def estimate_tokens_pi16(message: Any) -> int:
    """pi 1.6's ``estimateTokens``: :func:`estimate_tokens_pi`, except that images in user messages count 4800 chars each."""
    m = as_dict(message)
    content = m.get("content")
    if m.get("role") != "user" or not isinstance(content, list):
        return estimate_tokens_pi(m)
    chars = 0
    for block in content:
        if isinstance(block, dict):
            if block.get("type") == "text" and block.get("text"):
                chars += js_len(block["text"])
            elif block.get("type") == "image":
                chars += PI_IMAGE_CHARS
    return -(-chars // 4)


def estimate_tokens_pi073(message: Any) -> int:
    """pi 0.73.1's ``estimateTokens``: :func:`estimate_tokens_pi`, except that it knows no system message (0)."""
    m = as_dict(message)
    return 0 if m.get("role") == "system" else estimate_tokens_pi(m)


def _system_chars(m: dict[str, Any]) -> int:
    """pi 1.6's count for a system message: its content, its sections, and ``JSON.stringify`` of its added tools."""
    content = m.get("content")
    chars = js_len(content) if isinstance(content, str) else 0
    if isinstance(content, list):
        chars = sum(js_len(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    sections = m.get("sections")
    if isinstance(sections, dict):
        chars += sum(js_len(v) for v in sections.values() if isinstance(v, str))
    if m.get("toolsAdded"):
        chars += js_len(js_stringify(m["toolsAdded"]))
    return chars


# ------------------------------------------------------------------------------ our estimate

_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGITS = b"0123456789"
_OTHER_SPACE = b"\t\n\r\x0b\x0c"
# a case change or a letter/digit switch inside a "word" costs a token boundary in BPE
# vocabularies; it is what makes identifiers, hashes and base64 dense in tokens
_TRANSITIONS = re.compile(r"[a-z](?=[A-Z])|[A-Za-z](?=[0-9])|[0-9](?=[A-Za-z])|[A-Z](?=[A-Z][a-z])")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")

# (pattern of runs, tokens per character), tried on the non-ASCII characters only
_CLASSES: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"[\u0080-\u02ff]+"), 1.5),  # Latin-1 and Latin extended: accents split words
    (re.compile(r"[\u0300-\u08ff]+"), 0.6),  # combining marks, Greek, Cyrillic, Hebrew, Arabic
    (re.compile(r"[\u0900-\u10ff\u1200-\u1cff]+"), 1.4),  # Indic, South-East Asian, Georgian, Ethiopic
    (re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+"), 1.5),  # Hangul
    (re.compile(r"[\u2e80-\u312f\u3190-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+"), 1.2),  # Han, kana, CJK
    (re.compile(r"[\U00010000-\U0010ffff]+"), 3.0),  # emoji and other astral characters
)
_OTHER_NON_ASCII = 1.0  # general punctuation, arrows, box drawing, other scripts

_W_LETTER, _W_DIGIT, _W_OTHER_SPACE, _W_PUNCT, _W_TRANSITION = 0.25, 0.5, 0.15, 0.6, 0.6


def estimate_text_tokens(text: str) -> float:
    """Estimated tokens of a piece of text (not rounded), by character class (see the module doc)."""
    if not text:
        return 0.0
    if text.isascii():
        return _ascii_tokens(text)
    tokens = 0.0
    other = 0
    for run in _NON_ASCII.findall(text):
        rest = len(run)
        for pattern, weight in _CLASSES:
            matched = sum(len(m) for m in pattern.findall(run))
            if matched:
                tokens += matched * weight
                rest -= matched
        other += rest
    tokens += other * _OTHER_NON_ASCII
    ascii_part = _NON_ASCII.sub(" ", text)
    return tokens + _ascii_tokens(ascii_part)


def _ascii_tokens(text: str) -> float:
    raw = text.encode("ascii")
    n = len(raw)
    letters = n - len(raw.translate(None, _LETTERS))
    digits = n - len(raw.translate(None, _DIGITS))
    spaces = raw.count(b" ")
    other_space = n - len(raw.translate(None, _OTHER_SPACE))
    punct = n - letters - digits - spaces - other_space
    transitions = len(_TRANSITIONS.findall(text)) if letters and (digits or not text.islower()) else 0
    return letters * _W_LETTER + digits * _W_DIGIT + other_space * _W_OTHER_SPACE + punct * _W_PUNCT + transitions * _W_TRANSITION


def estimate_image_tokens(block: dict[str, Any]) -> int:
    """Tokens of an image block: from its pixel size when the header can be read, else 1200.

    The size is the larger of Anthropic's estimate (``w*h/750`` after scaling to at most
    1568 px on the long edge and 1.15 megapixels) and OpenAI's high-detail tiling
    (``85 + 170`` per 512-px tile after fitting into 2048 px and 768 px on the short side).
    """
    size = image_size(block.get("data"))
    if size is None:
        return DEFAULT_IMAGE_TOKENS
    w, h = size
    if w <= 0 or h <= 0:
        return DEFAULT_IMAGE_TOKENS
    scale = min(1.0, 1568 / max(w, h), math.sqrt(1_150_000 / (w * h)))
    anthropic = math.ceil((w * scale) * (h * scale) / 750)
    ow, oh = float(w), float(h)
    fit = min(1.0, 2048 / max(ow, oh))
    ow, oh = ow * fit, oh * fit
    short = min(1.0, 768 / min(ow, oh))
    ow, oh = ow * short, oh * short
    openai = 85 + 170 * math.ceil(ow / 512) * math.ceil(oh / 512)
    return max(anthropic, openai)


def image_size(data: Any) -> tuple[int, int] | None:
    """``(width, height)`` of a base64 PNG, GIF, WebP or JPEG from its header, or ``None``."""
    if not isinstance(data, str) or len(data) < 16:
        return None
    head = _b64_prefix(data, 64)
    if head is None:
        return None
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 30:
        chunk = head[12:16]
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", head[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(head[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X":
            return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
        return None
    if head[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _b64_prefix(data: str, nbytes: int) -> bytes | None:
    chars = -(-nbytes // 3) * 4
    try:
        return base64.b64decode(data[:chars], validate=False)
    except (binascii.Error, ValueError):
        return None


def _jpeg_size(data: str) -> tuple[int, int] | None:
    # the frame header (SOFn) can sit after large EXIF/ICC segments; look in the first 256 KiB
    raw = _b64_prefix(data, 256 * 1024)
    if raw is None:
        return None
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        length = int.from_bytes(raw[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", raw[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None


def _content_tokens(content: Any) -> float:
    if isinstance(content, str):
        return estimate_text_tokens(content)
    tokens = 0.0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                tokens += estimate_text_tokens(block.get("text") or "")
            elif kind == "image":
                tokens += estimate_image_tokens(block)
    return tokens


def estimate_tokens(message: Any) -> int:
    """Our estimate of the tokens a message occupies in a request (see the module doc).

    Unlike pi's: images count in every role (by pixel size), text counts by character class
    (CJK, other scripts, code, numbers and base64 are not undercounted), a bash execution
    counts the text the model is shown (0 when excluded from the context), summaries count
    their wrapper text, and each message adds a small framing overhead.
    """
    m = as_dict(message)
    role = m.get("role")
    if role in ("user", "custom", "toolResult"):
        tokens = _content_tokens(m.get("content"))
    elif role == "assistant":
        tokens = 0.0
        for block in m.get("content") or ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                tokens += estimate_text_tokens(block.get("text") or "")
            elif kind == "thinking":
                tokens += estimate_text_tokens(block.get("thinking") or "")
            elif kind == "toolCall":
                tokens += estimate_text_tokens(block.get("name") or "") + estimate_text_tokens(js_stringify(block.get("arguments")))
                tokens += MESSAGE_OVERHEAD_TOKENS
    elif role == "bashExecution":
        if m.get("excludeFromContext"):
            return 0
        # the model sees "Ran `CMD`" and the output in a fence (see bash_execution_to_text)
        tokens = estimate_text_tokens(m.get("command") or "") + estimate_text_tokens(m.get("output") or "") + 6
    elif role == "compactionSummary":
        tokens = estimate_text_tokens(COMPACTION_SUMMARY_PREFIX + (m.get("summary") or "") + COMPACTION_SUMMARY_SUFFIX)
    elif role == "branchSummary":
        tokens = estimate_text_tokens(BRANCH_SUMMARY_PREFIX + (m.get("summary") or "") + BRANCH_SUMMARY_SUFFIX)
    elif role == "system":  # pi 1.x: the prompt and tool declarations recorded in the transcript
        tokens = _system_chars(m) / 4
    else:
        return 0
    return math.ceil(tokens) + MESSAGE_OVERHEAD_TOKENS


# ------------------------------------------------------------------------------ context size


class ContextEstimate(BaseModel):
    """How many tokens a context holds: the last reported usage plus estimates of what followed.

    ``last_usage_index`` is the index (in the messages given) of the assistant message whose
    usage was used, or ``None`` when every message was estimated.
    """

    tokens: int
    usage_tokens: int = 0
    trailing_tokens: int = 0
    last_usage_index: int | None = None


def calculate_context_tokens(usage: dict[str, Any] | Any) -> int:
    """pi's ``calculateContextTokens``: ``totalTokens``, or the sum of its parts when that is 0 or absent."""
    u = as_dict(usage, "usage")
    total = u.get("totalTokens")
    if total:
        return total
    return (u.get("input") or 0) + (u.get("output") or 0) + (u.get("cacheRead") or 0) + (u.get("cacheWrite") or 0)


def usage_of(message: dict[str, Any]) -> dict[str, Any] | None:
    """The usage of an assistant message that can be trusted (not aborted, not an error), else ``None``."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    return usage if usage else None


def estimate_context_tokens(messages: Sequence[Any], estimator: Estimator = estimate_tokens, *, skip_zero: bool = False) -> ContextEstimate:
    """pi's ``estimateContextTokens``: the last trusted usage plus estimates of the messages after it.

    With ``estimator=estimate_tokens_pi`` the result equals pi's. Without any usage, every
    message is estimated. ``skip_zero``: a usage that counts no tokens is not trusted (pi 1.6).
    """
    msgs = as_dicts(messages, "message")
    for i in range(len(msgs) - 1, -1, -1):
        usage = usage_of(msgs[i])
        if usage is not None and not (skip_zero and not calculate_context_tokens(usage)):
            used = calculate_context_tokens(usage)
            trailing = sum(estimator(m) for m in msgs[i + 1 :])
            return ContextEstimate(tokens=used + trailing, usage_tokens=used, trailing_tokens=trailing, last_usage_index=i)
    estimated = sum(estimator(m) for m in msgs)
    return ContextEstimate(tokens=estimated, trailing_tokens=estimated)


def branch_context_tokens(branch: Sequence[Any], estimator: Estimator = estimate_tokens) -> ContextEstimate:
    """The size of the context rebuilt from ``branch`` (root-first entries), for compaction decisions.

    Usage reported by an assistant message that lies *before* the latest compaction on the
    branch described the old, larger context, so it is not trusted: only usage reported
    after the compaction counts (a usage of 0, from a provider that reports none, is
    skipped too); without one, every message of the rebuilt context is estimated.
    ``last_usage_index`` indexes the branch (not the messages).
    """
    return context_tokens(as_dicts(branch), estimator)


def context_tokens(entries: list[RawEntry], estimator: Estimator = estimate_tokens) -> ContextEstimate:
    """:func:`branch_context_tokens` of a branch given as entry dicts (no conversion).

    One walk back from the newest entry: the first trusted usage met before any compaction
    settles it, so the cost is the part of the branch after the last reply, not the branch
    (unless no usage was reported since the latest compaction or context edit: then the rebuilt
    context is estimated).
    """
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        kind = entry.get("type")
        if kind == "compaction" or kind == "context_edit":
            break  # usage from before the latest compaction (or a context edit) described another context
        if kind != "message":
            continue
        message = entry.get("message")
        usage = usage_of(message) if isinstance(message, dict) else None
        used = calculate_context_tokens(usage) if usage is not None else 0
        if not used:
            continue  # a reply that reported no usage (0) says nothing about the context size
        trailing = 0
        for later in entries[i + 1 :]:
            msg = _context_message(later)
            if msg is not None:
                trailing += estimator(msg)
        return ContextEstimate(tokens=used + trailing, usage_tokens=used, trailing_tokens=trailing, last_usage_index=i)
    messages = context_from_path(entries)["messages"]
    estimated = sum(estimator(m) for m in messages)
    return ContextEstimate(tokens=estimated, trailing_tokens=estimated)


def _context_message(entry: RawEntry) -> dict[str, Any] | None:
    # what an entry after the usage adds to the rebuilt context (empty branch summaries add nothing)
    if entry.get("type") == "branch_summary" and not entry.get("summary"):
        return None
    message = message_for_compaction(entry)
    return message if isinstance(message, dict) else None
