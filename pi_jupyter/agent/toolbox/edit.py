"""``edit``: exact-text replacements in one file, pi's matching rules and messages (``edit.ts``, ``edit-diff.ts``).

Every ``edits[].oldText`` is matched against the original file (not after earlier edits),
must be unique and must not overlap another. If an exact match fails, a fuzzy match is
tried (Unicode NFKC, trailing whitespace, smart quotes, dashes and special spaces
normalised), in which case the whole file is rewritten in normalised form, as pi does. A
UTF-8 BOM and the file's line ending (LF or CRLF) are kept. ``details`` holds pi's numbered
diff (``diff``, ``firstChangedLine``) for the widget; the model sees a one-line summary.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import re
import unicodedata
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .safe_open import check_writable

__all__ = ["EditParams", "EditTool", "Replacement", "apply_edits", "generate_diff", "normalize_for_fuzzy_match"]


class Replacement(BaseModel):
    """One targeted replacement."""

    model_config = ConfigDict(extra="forbid")

    oldText: str = Field(
        description="Exact text for one targeted replacement. It must be unique in the original file and must not overlap with"
        " any other edits[].oldText in the same call."
    )
    newText: str = Field(description="Replacement text for this targeted edit.")


class EditParams(BaseModel):
    """Arguments of ``edit``. Also accepted, as pi accepts them: ``edits`` sent as a JSON string,
    and a single top-level ``oldText``/``newText`` pair (older tool versions)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path to the file to edit (relative or absolute)")
    edits: list[Replacement] = Field(
        description="One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not"
        " include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."
    )

    @model_validator(mode="before")
    @classmethod
    def _prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("edits"), str):
            try:
                parsed = json.loads(data["edits"])
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                data["edits"] = parsed
        if isinstance(data.get("oldText"), str) and isinstance(data.get("newText"), str):
            edits = list(data.get("edits") or []) if isinstance(data.get("edits"), list) else []
            edits.append({"oldText": data.pop("oldText"), "newText": data.pop("newText")})
            data["edits"] = edits
        return data


def detect_line_ending(text: str) -> str:
    """``"\\r\\n"`` if the first line break is CRLF, else ``"\\n"``."""
    lf = text.find("\n")
    if lf == -1:
        return "\n"
    crlf = text.find("\r\n")
    return "\r\n" if crlf != -1 and crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    """CRLF and lone CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")


def normalize_for_fuzzy_match(text: str) -> str:
    """pi's fuzzy form: NFKC, no trailing whitespace per line, ASCII quotes, dashes and spaces."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


def _find(content: str, old: str) -> tuple[int, int, bool]:
    """(index, length, fuzzy) of ``old`` in ``content``; index -1 when absent."""
    i = content.find(old)
    if i != -1:
        return i, len(old), False
    fuzzy_content, fuzzy_old = normalize_for_fuzzy_match(content), normalize_for_fuzzy_match(old)
    i = fuzzy_content.find(fuzzy_old)
    return (i, len(fuzzy_old), True) if i != -1 else (-1, 0, False)


def apply_edits(content: str, edits: list[tuple[str, str]], path: str) -> tuple[str, str]:
    """Apply ``(old, new)`` replacements to LF-normalised ``content``: ``(base content, new content)``.

    Raises :class:`ToolError` with pi's messages for empty, missing, duplicate, overlapping
    or no-op edits.
    """
    n = len(edits)
    normalized = [(normalize_to_lf(o), normalize_to_lf(w)) for o, w in edits]
    for i, (old, _new) in enumerate(normalized):
        if not old:
            raise ToolError(f"oldText must not be empty in {path}." if n == 1 else f"edits[{i}].oldText must not be empty in {path}.")
    any_fuzzy = any(_find(content, old)[2] for old, _new in normalized)
    base = normalize_for_fuzzy_match(content) if any_fuzzy else content
    fuzzy_base = normalize_for_fuzzy_match(base)
    matched: list[tuple[int, int, int, str]] = []
    for i, (old, new) in enumerate(normalized):
        index, length, _ = _find(base, old)
        if index == -1:
            raise ToolError(
                f"Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                if n == 1
                else f"Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
            )
        occurrences = fuzzy_base.count(normalize_for_fuzzy_match(old))
        if occurrences > 1:
            raise ToolError(
                f"Found {occurrences} occurrences of the text in {path}. The text must be unique. "
                "Please provide more context to make it unique."
                if n == 1
                else f"Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. "
                "Please provide more context to make it unique."
            )
        matched.append((index, length, i, new))
    matched.sort()
    for (a_idx, a_len, a_i, _), (b_idx, _b_len, b_i, _) in zip(matched, matched[1:], strict=False):
        if a_idx + a_len > b_idx:
            raise ToolError(f"edits[{a_i}] and edits[{b_i}] overlap in {path}. Merge them into one edit or target disjoint regions.")
    result = base
    for index, length, _i, new in reversed(matched):
        result = result[:index] + new + result[index + length :]
    if result == base:
        raise ToolError(
            f"No changes made to {path}. The replacement produced identical content. This might indicate an issue with special"
            " characters or the text not existing as expected."
            if n == 1
            else f"No changes made to {path}. The replacements produced identical content."
        )
    return base, result


_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+$")


def generate_diff(old: str, new: str, context_lines: int = 4) -> tuple[str, int | None]:
    """pi's numbered diff: ``+N line`` / ``-N line`` / `` N line`` rows with ``...`` for skipped
    context: ``(diff, first changed line in the new file)``."""
    width = len(str(max(old.count("\n"), new.count("\n")) + 1))
    # Lines keep their "\n" while compared (as jsdiff's diffLines does), so a last line
    # without a newline differs from the same line with one; they are shown without it.
    old_tokens, new_tokens = _LINE_RE.findall(old), _LINE_RE.findall(new)
    old_lines = [t.rstrip("\n") for t in old_tokens]
    new_lines = [t.rstrip("\n") for t in new_tokens]
    out: list[str] = []
    first: int | None = None
    old_no = new_no = 1
    ops = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False).get_opcodes()
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag != "equal":
            if first is None:
                first = new_no
            for line in old_lines[i1:i2]:
                out.append(f"-{str(old_no).rjust(width)} {line}")
                old_no += 1
            for line in new_lines[j1:j2]:
                out.append(f"+{str(new_no).rjust(width)} {line}")
                new_no += 1
            continue
        raw = old_lines[i1:i2]
        leading = k > 0
        trailing = k < len(ops) - 1

        def show(lines: list[str]) -> None:
            nonlocal old_no, new_no
            for line in lines:
                out.append(f" {str(old_no).rjust(width)} {line}")
                old_no += 1
                new_no += 1

        def skip(count: int) -> None:
            nonlocal old_no, new_no
            if count > 0:
                out.append(f" {' ' * width} ...")
                old_no += count
                new_no += count

        if leading and trailing:
            if len(raw) <= context_lines * 2:
                show(raw)
            else:
                show(raw[:context_lines])
                skip(len(raw) - 2 * context_lines)
                show(raw[-context_lines:])
        elif leading:
            show(raw[:context_lines])
            skip(len(raw) - context_lines)
        elif trailing:
            skipped = max(0, len(raw) - context_lines)
            skip(skipped)
            show(raw[skipped:])
        else:
            old_no += len(raw)
            new_no += len(raw)
    return "\n".join(out), first


class EditTool(BuiltinTool[EditParams]):
    """Replace exact text in one file inside the project."""

    name = "edit"
    label = "edit"
    description = (
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the"
        " original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting"
        " overlapping edits. Do not include large unchanged regions just to connect distant changes."
    )
    parameters = EditParams
    mutating = True
    prompt_snippet = "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
    prompt_guidelines = (
        "Use edit for precise changes (edits[].oldText must match exactly)",
        "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of"
        " multiple edit calls",
        "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping"
        " or nested edits. Merge nearby changes into one edit.",
        "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
    )
    path_args: ClassVar = {"path": "write"}

    async def run(self, args: EditParams, ctx: ToolContext) -> ToolResult:
        if not args.edits:
            raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
        try:
            fd, path = self.open_path(args.path, ctx, "write", os.O_RDWR | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            code = errno.errorcode.get(exc.errno or errno.EACCES, "EACCES")
            raise ToolError(f"Could not edit file: {args.path}. Error code: {code}.") from None
        # Read, change and write through one descriptor with no await in between: parallel
        # calls on one file cannot interleave, and the file written is the file read.
        with os.fdopen(fd, "r+b") as fh:
            try:
                check_writable(fd, path)
            except IsADirectoryError:
                raise ToolError(f"Could not edit file: {args.path}. Error code: EISDIR.") from None
            except OSError as exc:
                raise ToolError(f"Could not edit file: {args.path}: {exc.strerror}.") from None
            raw = fh.read().decode("utf-8", errors="replace")
            bom = "\ufeff" if raw.startswith("\ufeff") else ""
            text = raw[len(bom) :]
            ending = detect_line_ending(text)
            base, new = apply_edits(normalize_to_lf(text), [(e.oldText, e.newText) for e in args.edits], args.path)
            final = bom + (new.replace("\n", "\r\n") if ending == "\r\n" else new)
            fh.seek(0)
            fh.truncate()
            fh.write(final.encode("utf-8"))
        diff, first = generate_diff(base, new)
        details: dict[str, Any] = {"diff": diff}
        if first is not None:
            details["firstChangedLine"] = first
        return ToolResult.text(f"Successfully replaced {len(args.edits)} block(s) in {args.path}.", details=details)
