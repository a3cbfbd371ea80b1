"""The offline model (``offline/echo``): a deterministic stand-in for a language model.

It is **not** a language model and says so: every reply starts with ``[offline model]``.
It exists so that demos, teaching notebooks and tests run with no key and no network, and
so that everything around a model (streaming, tools, compaction, context-window logic) can
be exercised exactly. Given the same request it always gives the same reply.

What it does, in order of precedence:

1. **Context window.** The input is estimated at ``ceil(chars / 4)`` tokens (system prompt,
   messages, tool definitions). If that exceeds the model's ``context_window`` it fails the
   way a vendor does: an error message ``prompt is too long: N tokens > W maximum`` (which
   :func:`~pi_jupyter.providers.overflow.is_context_overflow` recognises).
2. **Summaries.** When the system prompt is a summarization prompt (it mentions
   "summariz") and the last user message holds a ``<conversation>`` block (pi's compaction
   and branch-summary requests), it writes a summary in pi's section format (``## Goal``,
   ``## Constraints & Preferences``, ``## Progress``, ``## Key Decisions``,
   ``## Next Steps``, ``## Critical Context``; or pi's turn-prefix sections when asked for
   them). It *quotes* the conversation: every user statement is listed under ``## Goal``,
   tool calls under ``### Done``, tool results and the last answer under
   ``## Critical Context``. Bullets of a ``<previous-summary>`` are kept, so a fact stated
   in the first turn survives any number of compactions; to keep summaries small, each
   section keeps its first two and latest six bullets and counts the rest as omitted.
3. **Answering tool results.** When the last message is a tool result, it quotes what the
   tools returned (the first 20 lines of each, verbatim, in a fenced code block, so a
   table keeps its lines; the fence is longer than any run of backticks in the output, so
   output holding a fence of its own does not end the block early), says which calls
   failed, and stops. It never calls a tool twice in a row, so a loop always ends.
4. **Calling tools.** When the last user message asks for it, it calls tools it is offered:

   * ``call NAME with {json}`` calls ``NAME`` with exactly that JSON object; several such
     phrases in one message make several calls in one reply.
   * ``use NAME``, ``call NAME`` or ``run NAME`` calls ``NAME`` with arguments inferred
     from the message for the parameters in its schema: a path-like word (``notes.txt``,
     ``src/``, preferably in backticks) for ``path``/``file``/``dir``; the first fenced code
     block for ``code``/``command``/``content`` (else an inline ``` `command` ``` for
     ``command``); a double-quoted string for ``pattern``/``query``/``text``; a URL for
     ``url``. So ``use read on `data.csv``` reads ``data.csv`` and ``use python`` with a
     code block runs it.
   * A tool that is not offered is not called; the reply says which tools are.
5. **Otherwise** it echoes the last user message and explains how to make it call a tool.

Under rules 4 and 5 it also says what notebook context came with the message (the cells the
user ran since the last turn, see :mod:`pi_jupyter.messages.notebook_context`): its one line,
each cell that failed with its error, and how many images were attached.

With a thinking level set (not ``"off"``) it first streams a short thinking block that
states which rule it applied. Text streams in several deltas (a few words each); tool-call
arguments stream as JSON fragments; tool-call ids are ``offline_<turn>_<n>``, unique in the
conversation. Usage is ``ceil(chars / 4)`` for input and output, ``cost`` is 0, and the stop
reason is ``stop`` or ``toolUse``. The signal in the options aborts between deltas
(``stopReason: "aborted"``, partial content kept).

Make variants with :func:`offline_model`: ``context_window`` (tiny windows for compaction
tests), ``max_tokens``, and ``delta_delay_s`` (a pause per delta, for demos; default 0).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator
from typing import Any

from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage, text_of
from ..messages.notebook_context import NOTEBOOK_CONTEXT_HEAD, is_notebook_context_text
from ._stream import MessageBuilder
from .base import AssistantEvent, LlmRequest, Model, StreamOptions, ToolSpec
from .normalize import USER_IMAGE_PLACEHOLDER
from .transcript import wire_request

PREFIX = "[offline model]"
OFFLINE_PROVIDER = "offline"
OFFLINE_API = "offline"


def offline_model(
    id: str = "echo",
    *,
    context_window: int = 128_000,
    max_tokens: int = 16_384,
    delta_delay_s: float = 0.0,
    reasoning: bool = True,
    name: str | None = None,
) -> Model:
    """An offline model description; register it with ``register_model`` to use it by name."""
    if context_window <= 0:
        raise ValueError(f"offline_model: context_window must be positive, got {context_window}")
    if delta_delay_s < 0:
        raise ValueError(f"offline_model: delta_delay_s must be >= 0, got {delta_delay_s}")
    return Model(
        id=id,
        provider=OFFLINE_PROVIDER,
        api=OFFLINE_API,
        name=name or f"Offline {id} (not a language model)",
        reasoning=reasoning,
        context_window=context_window,
        max_tokens=max_tokens,
        compat={"delta_delay_s": delta_delay_s, "no_api_key": True},
    )


def builtin_offline_models() -> list[Model]:
    """The offline models the registry knows from the start.

    ``offline/echo`` answers at once; ``offline/typewriter`` pauses 30 ms per delta, so a demo
    shows text arriving as it would from a real model (and there is time to press Stop).
    """
    return [offline_model("echo"), offline_model("typewriter", delta_delay_s=0.03)]


def estimate_tokens(chars: int) -> int:
    """pi's token estimate: ``ceil(chars / 4)``."""
    return math.ceil(chars / 4) if chars > 0 else 0


def _message_chars(message: Any) -> int:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return len(message.content)
        # pi counts an image as 4800 characters (1200 tokens).
        return len(text_of(message.content)) + 4800 * sum(1 for b in message.content if getattr(b, "type", "") == "image")
    if isinstance(message, AssistantMessage):
        n = 0
        for b in message.content:
            if isinstance(b, TextContent):
                n += len(b.text)
            elif isinstance(b, ThinkingContent):
                n += len(b.thinking)
            elif isinstance(b, ToolCall):
                n += len(b.name) + len(json.dumps(b.arguments))
        return n
    if isinstance(message, ToolResultMessage):
        return len(message.text)
    return 0


def input_chars(request: LlmRequest) -> int:
    """Characters the offline model counts as input (system prompt, messages, tool definitions)."""
    n = len(request.system_prompt or "")
    n += sum(_message_chars(m) for m in request.messages)
    n += sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in request.tools)
    return n


# ---------------------------------------------------------------- the rules

_CALL_WITH = re.compile(r"\bcall\s+`?([A-Za-z_][\w.-]*)`?\s+with\s*", re.IGNORECASE)
_USE = re.compile(r"\b(?:use|call|run)\s+(?:the\s+)?`?([A-Za-z_][\w.-]*)`?(?:\s+tool)?", re.IGNORECASE)
_CODE_BLOCK = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_INLINE = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r'"([^"\n]+)"')
_URL = re.compile(r"https?://[^\s`'\")>]+")
_PATHLIKE = re.compile(r"(?<![\w/.-])((?:~|\.{1,2})?/?(?:[\w.-]+/)*[\w.-]*(?:\.[A-Za-z0-9]{1,8}|/))(?![\w/])")

_PATH_KEYS = ("path", "file", "file_path", "filepath", "filename", "dir", "directory", "folder")
_CODE_KEYS = ("code", "source", "script", "content")
_COMMAND_KEYS = ("command", "cmd")
_TEXT_KEYS = ("pattern", "query", "text", "search", "glob")


def _find_path(text: str) -> str | None:
    without_blocks = _CODE_BLOCK.sub(" ", text)
    for m in _INLINE.finditer(without_blocks):
        candidate = m.group(1).strip()
        if " " not in candidate and ("/" in candidate or "." in candidate) and not candidate.startswith("http"):
            return candidate
    for m in _PATHLIKE.finditer(_URL.sub(" ", without_blocks)):
        candidate = m.group(1).rstrip(".,;:")
        if candidate and candidate not in (".", "..") and re.search(r"[A-Za-z0-9]", candidate) and not re.fullmatch(r"[\d.]+", candidate):
            return candidate
    return None


def _infer_arguments(tool: ToolSpec, text: str) -> dict[str, Any]:
    props: dict[str, Any] = (tool.parameters or {}).get("properties") or {}
    required = set((tool.parameters or {}).get("required") or [])
    block = _CODE_BLOCK.search(text)
    args: dict[str, Any] = {}
    for key in props:
        low = key.lower()
        value: Any = None
        if low in _PATH_KEYS:
            value = _find_path(text)
        elif low in _COMMAND_KEYS:
            if block:
                value = block.group(1).rstrip("\n")
            else:
                inline = [m.group(1) for m in _INLINE.finditer(text) if m.group(1).strip() != tool.name]
                value = inline[0] if inline else None
        elif low in _CODE_KEYS:
            value = block.group(1).rstrip("\n") if block else None
        elif low in _TEXT_KEYS:
            q = _QUOTED.search(text)
            value = q.group(1) if q else None
        elif low == "url":
            u = _URL.search(text)
            value = u.group(0) if u else None
        if value is not None:
            args[key] = value
        elif key in required and low in ("path", "dir", "directory") and tool.name in ("ls", "find", "grep"):
            args[key] = "."
    return args


def plan_tool_calls(text: str, tools: list[ToolSpec]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """The tool calls the rules find in ``text``: ``([(name, arguments)], [names asked for but not offered])``."""
    offered = {t.name: t for t in tools}
    calls: list[tuple[str, dict[str, Any]]] = []
    missing: list[str] = []
    decoder = json.JSONDecoder()
    spans: list[tuple[int, int]] = []
    for m in _CALL_WITH.finditer(text):
        name = m.group(1)
        rest = text[m.end() :]
        brace = rest.find("{")
        if brace < 0 or rest[:brace].strip(" `:"):
            continue
        try:
            value, end = decoder.raw_decode(rest[brace:])
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        spans.append((m.start(), m.end() + brace + end))
        if name in offered:
            calls.append((name, value))
        elif name not in missing:
            missing.append(name)
    for m in _USE.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        name = m.group(1)
        if name in offered:
            if all(c[0] != name for c in calls):
                calls.append((name, _infer_arguments(offered[name], text)))
        elif "`" in m.group(0) and name not in missing:
            missing.append(name)  # only a backticked name counts as a tool asked for
    return calls, missing


# ---------------------------------------------------------------- summaries

_LABELS = ("[User]: ", "[Assistant]: ", "[Assistant thinking]: ", "[Assistant tool calls]: ", "[Tool result]: ")
_PART_SPLIT = re.compile(r"\n\n(?=\[(?:User|Assistant|Assistant thinking|Assistant tool calls|Tool result)\]: )")


def is_summary_request(request: LlmRequest) -> bool:
    """True for pi-style summarization requests (compaction, branch summary, turn prefix)."""
    if not request.system_prompt or "summariz" not in request.system_prompt.lower():
        return False
    last = _last_user_text(request.messages)
    return last is not None and "<conversation>" in last


def _last_user_text(messages: list[Any]) -> str | None:
    for m in reversed(messages):
        if isinstance(m, UserMessage):
            return text_of(m.content)
    return None


def _between(text: str, start: str, end: str) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    return text[i + len(start) : j if j >= 0 else len(text)]


def _quote(text: str, limit: int = 1000) -> str:
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[:limit] + "…"
    return '"' + flat.replace('"', "'") + '"'


def _sections(summary: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in summary.splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip()
            continue
        stripped = line.strip()
        if stripped and current and stripped not in ("- (none)", "(none)"):
            out.setdefault(current, []).append(stripped)
    return out


_OMITTED = re.compile(r"^- \(… (\d+) more omitted\)$")


def write_summary(prompt: str) -> str:
    """The offline model's summary for a summarization prompt (see the module docstring)."""
    conversation = (_between(prompt, "<conversation>\n", "\n</conversation>") or "").strip()
    previous = _between(prompt, "<previous-summary>\n", "\n</previous-summary>")
    instructions = prompt.rsplit("</conversation>", 1)[-1]
    if previous is not None:
        # the previous summary may itself hold a turn-prefix summary; only the instructions say what is asked
        instructions = instructions.replace(previous, "")
    parts = _PART_SPLIT.split(conversation) if conversation else []
    users: list[str] = []
    calls: list[str] = []
    results: list[str] = []
    answers: list[str] = []
    for part in parts:
        for label in _LABELS:
            if part.startswith(label):
                body = part[len(label) :]
                if label == "[User]: ":
                    users.append(body)
                elif label == "[Assistant tool calls]: ":
                    calls.extend(c.strip() for c in body.split("; ") if c.strip())
                elif label == "[Tool result]: ":
                    results.append(body)
                elif label == "[Assistant]: ":
                    answers.append(body)
                break
    prev = _sections(previous) if previous else {}

    def merged(key: str, new: list[str], limit: int = 8) -> list[str]:
        seen: list[str] = []
        omitted = 0
        for line in prev.get(key, []) + new:
            marker = _OMITTED.match(line)
            if marker:
                omitted += int(marker.group(1))
            elif line not in seen:
                seen.append(line)
        # a summary must stay small however long the session gets: keep the first items (the
        # original request and early facts) and the latest ones, and count what is left out
        if len(seen) > limit:
            head, tail = seen[:2], seen[-(limit - 2) :]
            omitted += len(seen) - len(head) - len(tail)
            seen = head + tail
        if omitted:
            seen.insert(2, f"- (… {omitted} more omitted)")
        return seen or ["- (none)"]

    if "## Original Request" in instructions:
        lines = [f"{PREFIX} summary of the turn prefix (quotes, not understanding)", "", "## Original Request"]
        lines += [f"- {_quote(u)}" for u in users] or ["- (none)"]
        lines += ["", "## Early Progress"]
        lines += [f"- [x] Called {c}" for c in calls] or ["- (none)"]
        lines += ["", "## Context for Suffix"]
        lines += [f"- Tool result: {_quote(r, 300)}" for r in results] + [f"- Assistant said: {_quote(a, 300)}" for a in answers[-1:]] or [
            "- (none)"
        ]
        return "\n".join(lines)

    goal = merged("Goal", [f"- User said: {_quote(u)}" for u in users])
    done = merged("Done", [f"- [x] Called {c}" for c in calls])
    last_user = users[-1] if users else None
    critical = merged(
        "Critical Context",
        [f"- Tool result: {_quote(r, 300)}" for r in results] + [f"- Assistant said: {_quote(a, 300)}" for a in answers[-1:]],
    )
    lines = [
        f"{PREFIX} summary (quotes from the conversation, not understanding)",
        "",
        "## Goal",
        *goal,
        "",
        "## Constraints & Preferences",
    ]
    lines += merged("Constraints & Preferences", [])
    lines += ["", "## Progress", "### Done", *done, "", "### In Progress"]
    lines += [f"- [ ] Answer the last request: {_quote(last_user, 300)}"] if last_user else ["- (none)"]
    lines += ["", "### Blocked", "- (none)", "", "## Key Decisions"]
    lines += merged("Key Decisions", ["- **Offline summary**: written by fixed rules that quote the conversation"])
    lines += ["", "## Next Steps"]
    lines += [f"1. Continue from the last request: {_quote(last_user, 300)}"] if last_user else ["1. Wait for the next request"]
    if "## Critical Context" in instructions or "Critical Context" in prev or "## Goal" not in instructions:
        lines += ["", "## Critical Context", *critical]
    return "\n".join(lines)


# ---------------------------------------------------------------- replies


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _answer_tool_results(messages: list[Any]) -> str:
    results: list[ToolResultMessage] = []
    for m in reversed(messages):
        if isinstance(m, ToolResultMessage):
            results.append(m)
        else:
            break
    results.reverse()
    names = ", ".join(f"`{r.tool_name or r.tool_call_id}`" for r in results)
    lines = [f"{PREFIX} I called {names}. Here is what came back:"]
    for r in results:
        body = r.text.rstrip("\n")
        status = " (failed)" if r.is_error else ""
        lines.append("")
        lines.append(f"`{r.tool_name or r.tool_call_id}`{status} returned:")
        if not body:
            lines.append("(no text)")
            continue
        shown = body.split("\n")
        fence = _fence(body)
        lines.append(fence)
        lines.extend(shown[:20])
        lines.append(fence)
        if len(shown) > 20:
            lines.append(f"… ({len(shown) - 20} more lines)")
    lines.append("")
    lines.append("(I quote tool results; I do not interpret them.)")
    return "\n".join(lines)


def _echo(text: str, tools: list[ToolSpec], missing: list[str]) -> str:
    shown = text if len(text) <= 2000 else text[:2000] + "…"
    out = f"{PREFIX} You said: {shown}\n\nI am a deterministic stand-in, not a language model: I repeat what you say."
    names = ", ".join(f"`{t.name}`" for t in tools)
    if missing:
        out += f"\n\nI was asked to call {', '.join(f'`{n}`' for n in missing)}, which {'is' if len(missing) == 1 else 'are'} not offered."
    if tools:
        out += f"\n\nTo make me call a tool, write `use NAME` or `call NAME with {{...json...}}`. Tools offered: {names}."
    return out


_FAILED = re.compile(r"^### (In\[\d+\]|cell #\d+)(?: \(cell [^)]*\))? failed: (.*?)(?: · ran \d+ s)?$", re.MULTILINE)


def notebook_note(messages: list[Any]) -> str:
    """What notebook context came with the last prompt (the user messages since the last reply), said in a paragraph; ``""`` if none.

    The offline model does not read it; it says what it was sent, so a demo or a test shows it.
    """
    told: list[UserMessage] = []
    for m in reversed(messages):
        if isinstance(m, AssistantMessage):
            break
        if isinstance(m, UserMessage) and is_notebook_context_text(text_of(m.content)):
            told.append(m)
    if not told:
        return ""
    out = []
    for m in reversed(told):
        text = text_of(m.content)
        line = text.split("\n", 1)[0][len(NOTEBOOK_CONTEXT_HEAD) :].strip()
        out.append(f"\n\nWith it I was sent the notebook since my last turn: {line}.")
        for cell, error in _FAILED.findall(text):
            out.append(f" {cell} failed with {error}.")
        blocks = [] if isinstance(m.content, str) else list(m.content)
        images = sum(1 for b in blocks if getattr(b, "type", "") == "image")
        omitted = sum(1 for b in blocks if getattr(b, "text", None) == USER_IMAGE_PLACEHOLDER)
        if images:
            out.append(f" {images} image{'s' if images != 1 else ''} came with it.")
        if omitted:
            out.append(" Its images were left out: I do not take images.")
    return "".join(out)


def text_pieces(text: str, words: int = 3) -> list[str]:
    """``text`` in stream deltas of a few words each (whitespace kept)."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)] or [text]


def json_pieces(text: str, n: int = 3) -> list[str]:
    """``text`` cut into ``n`` pieces of equal size (streamed tool arguments)."""
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class OfflineProvider:
    """The provider behind ``api="offline"`` models (see the module docstring)."""

    api = OFFLINE_API

    async def stream(self, model: Model, request: LlmRequest, options: StreamOptions | None = None) -> AsyncIterator[AssistantEvent]:
        """Stream the offline model's deterministic reply; never raises."""
        options = options or StreamOptions()
        b = MessageBuilder(model)
        signal = options.signal
        delay = float(model.compat.get("delta_delay_s") or 0.0)
        yield b.start()
        try:
            messages = wire_request(request, model).messages  # what a vendor adapter sends
            tokens_in = estimate_tokens(input_chars(request))
            b.set_usage(tokens_in, 0)
            if tokens_in > model.context_window:
                yield b.fail("error", f"prompt is too long: {tokens_in} tokens > {model.context_window} maximum")
                return
            if signal is not None and signal.aborted:
                yield b.fail("aborted", "Request was aborted")
                return
            level = options.reasoning if options.reasoning and options.reasoning != "off" and model.reasoning else None
            text, calls, rule = self._reply(request, messages)
            out_chars = 0

            async def pause() -> bool:
                if delay and signal is not None:
                    try:
                        await asyncio.wait_for(signal.wait(), delay)
                    except asyncio.TimeoutError:
                        pass
                elif delay:
                    await asyncio.sleep(delay)
                return signal is not None and signal.aborted

            ev: AssistantEvent
            if level:
                thought = f"{PREFIX} Thinking level {level!r}. I follow fixed rules, I do not reason. Rule applied: {rule}."
                index, ev = b.thinking_start()
                yield ev
                for piece in text_pieces(thought):
                    if await pause():
                        yield b.fail("aborted", "Request was aborted")
                        return
                    yield b.thinking_delta(index, piece)
                    out_chars += len(piece)
                    b.set_usage(tokens_in, estimate_tokens(out_chars))
                yield b.thinking_end(index)
            if text:
                index, ev = b.text_start()
                yield ev
                for piece in text_pieces(text):
                    if await pause():
                        yield b.fail("aborted", "Request was aborted")
                        return
                    yield b.text_delta(index, piece)
                    out_chars += len(piece)
                    b.set_usage(tokens_in, estimate_tokens(out_chars))
                yield b.text_end(index)
            for n, (name, args) in enumerate(calls):
                raw = json.dumps(args, ensure_ascii=False)
                index, ev = b.toolcall_start(self._call_id(request, n), name)
                yield ev
                for piece in json_pieces(raw):
                    if await pause():
                        yield b.fail("aborted", "Request was aborted")
                        return
                    yield b.toolcall_delta(index, piece)
                    out_chars += len(piece)
                yield b.toolcall_end(index)
                out_chars += len(name)
            b.set_usage(tokens_in, estimate_tokens(out_chars))
            b.message.stop_reason = "toolUse" if calls else "stop"
            yield b.done()
        except Exception as exc:  # noqa: BLE001 - the contract: never raise into the loop
            yield b.fail("error", f"offline model failed: {type(exc).__name__}: {exc}")

    @staticmethod
    def _call_id(request: LlmRequest, n: int) -> str:
        # Deterministic and unique within the conversation: the turn number and the call
        # number, with a suffix when a compaction shortened the history and that id is taken.
        turn = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        taken = {c.id for m in request.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
        taken.update(m.tool_call_id for m in request.messages if isinstance(m, ToolResultMessage))
        call_id, k = f"offline_{turn}_{n}", 0
        while call_id in taken:
            k += 1
            call_id = f"offline_{turn}_{n}_{k}"
        return call_id

    def _reply(self, request: LlmRequest, messages: list[Any]) -> tuple[str, list[tuple[str, dict[str, Any]]], str]:
        if not messages:
            return f"{PREFIX} Nothing to answer: the conversation is empty.", [], "empty conversation"
        if is_summary_request(request):
            return write_summary(_last_user_text(request.messages) or ""), [], "summarization request: quote the conversation"
        last = messages[-1]
        if isinstance(last, ToolResultMessage):
            return _answer_tool_results(messages), [], "the last message is a tool result: quote it"
        if isinstance(last, UserMessage):
            text = text_of(last.content)
            told = notebook_note(messages)
            calls, missing = plan_tool_calls(text, request.tools)
            if calls:
                names = ", ".join(f"`{n}`" for n, _ in calls)
                return f"{PREFIX} Calling {names} as asked.{told}", calls, f"the message asks for {names}"
            return _echo(text, request.tools, missing) + told, [], "no tool asked for: echo the message"
        return f"{PREFIX} The last message is my own; I have nothing to add.", [], "nothing new to answer"
