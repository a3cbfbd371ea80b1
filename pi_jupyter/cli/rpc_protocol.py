"""The wire side of ``pi-jupyter rpc``: commands (pydantic models), responses, framing, encoding.

pi's RPC protocol (``modes/rpc``, pi-design §9): one JSON object per line in each direction.
A command is ``{id?, type, ...}``; a response is ``{id, type: "response", command, success,
data? | error}``. This module knows nothing about agents: it turns bytes into validated
commands and objects into output lines.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal, NamedTuple, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..messages import ImageContent

CommandId = Union[str, int, float, None]
"""pi types ids as strings; numbers are accepted too and echoed back as they came."""


class Command(BaseModel):
    """Fields every command has: an optional ``id`` (echoed in the response) and its ``type``."""

    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True, frozen=True)

    id: CommandId = None
    type: str


class _MessageCommand(Command):
    message: str
    images: list[ImageContent] | None = None


class PromptCommand(_MessageCommand):
    """``prompt{message, images?, streamingBehavior?}``: start a run (answered at once; events follow)."""

    type: Literal["prompt"]
    streaming_behavior: Literal["steer", "followUp"] | None = Field(default=None, alias="streamingBehavior")


class SteerCommand(_MessageCommand):
    """``steer{message, images?}``: queue a message for the running agent, sent before its next model call."""

    type: Literal["steer"]


class FollowUpCommand(_MessageCommand):
    """``follow_up{message, images?}``: queue a message for when the agent would otherwise stop."""

    type: Literal["follow_up"]


class AbortCommand(Command):
    """``abort``: stop the run going on (handled at once, never behind the queue)."""

    type: Literal["abort"]


class NewSessionCommand(Command):
    """``new_session{parentSession?}``: start a fresh session file beside the current one."""

    type: Literal["new_session"]
    parent_session: str | None = Field(default=None, alias="parentSession")


class GetStateCommand(Command):
    """``get_state``: model, thinking level, streaming flags, session file, message counts."""

    type: Literal["get_state"]


class GetMessagesCommand(Command):
    """``get_messages``: the agent's messages (the rebuilt context plus this run's)."""

    type: Literal["get_messages"]


class SetModelCommand(Command):
    """``set_model{provider, modelId}``."""

    type: Literal["set_model"]
    provider: str
    model_id: str = Field(alias="modelId")


class SetThinkingLevelCommand(Command):
    """``set_thinking_level{level}`` (clamped to what the model supports)."""

    type: Literal["set_thinking_level"]
    level: str


class SetQueueModeCommand(Command):
    """``set_steering_mode{mode}`` / ``set_follow_up_mode{mode}``: ``all`` or ``one-at-a-time``."""

    type: Literal["set_steering_mode", "set_follow_up_mode"]
    mode: Literal["all", "one-at-a-time"]


class CompactCommand(Command):
    """``compact{customInstructions?}``: summarize older history into a compaction entry."""

    type: Literal["compact"]
    custom_instructions: str | None = Field(default=None, alias="customInstructions")


class ForkCommand(Command):
    """``fork{entryId}``: a new session holding the branch up to (not including) a user message."""

    type: Literal["fork"]
    entry_id: str = Field(alias="entryId")


class SwitchSessionCommand(Command):
    """``switch_session{sessionPath}``: continue another session file."""

    type: Literal["switch_session"]
    session_path: str = Field(alias="sessionPath")


class SetSessionNameCommand(Command):
    """``set_session_name{name}`` (an empty name is an error)."""

    type: Literal["set_session_name"]
    name: str


class CheckoutCommand(Command):
    """``checkout{entryId, summarize?, customInstructions?, replaceInstructions?, label?, rewind?, force?}`` (pi-jupyter's own).

    ``entryId`` is an id, a unique id prefix or a label; ``null`` moves before the first entry.
    ``rewind``: what moves: ``"both"`` (the conversation and the variables and files its
    tools changed, the default), ``"conversation"`` (the live variables and files stay) or
    ``"world"`` (the node's variables and files come into the current conversation, which
    stays). ``force``: over the user's own changes (kept on the branch they leave). The
    answer is ``{leafId, line}``: the line says what moved.
    """

    type: Literal["checkout"]
    entry_id: str | None = Field(alias="entryId")
    summarize: bool = False
    custom_instructions: str | None = Field(default=None, alias="customInstructions")
    replace_instructions: bool = Field(default=False, alias="replaceInstructions")
    label: str | None = None
    rewind: Literal["both", "conversation", "world"] = "both"
    force: bool = False


class BashCommand(Command):
    """Run a shell command; its output is recorded as a ``bashExecution`` message."""

    type: Literal["bash"]
    command: str
    exclude_from_context: bool | None = Field(default=None, alias="excludeFromContext")


class EnabledCommand(Command):
    """Turn automatic compaction or retry on or off."""

    type: Literal["set_auto_compaction", "set_auto_retry"]
    enabled: bool


class ExportHtmlCommand(Command):
    """Write the transcript as an HTML page (``force``, pi-jupyter's own: replace a file that is not an export)."""

    type: Literal["export_html"]
    output_path: str | None = Field(default=None, alias="outputPath")
    force: bool = False


class SetMaxTurnsCommand(Command):
    """``set_max_turns{maxTurns}`` (pi-jupyter's own): the most model calls of one run (0: no limit)."""

    type: Literal["set_max_turns"]
    max_turns: int = Field(alias="maxTurns", ge=0)


class GetEntriesCommand(Command):
    """Every entry of the file (after ``since``, an entry id) and the leaf."""

    type: Literal["get_entries"]
    since: str | None = None


class GetTreeCommand(Command):
    """pi's ``get_tree`` -> ``{tree, leafId}``; ``flat: true`` (pi-jupyter's own) gives the flat view instead."""

    type: Literal["get_tree"]
    flat: bool = False


class _Simple(Command):
    type: Literal[
        "get_session_stats",
        "get_last_assistant_text",
        "get_fork_messages",
        "abort_bash",
        "abort_retry",
        "clear_queue",
        "clone",
        "cycle_model",
        "cycle_thinking_level",
        "get_available_models",
        "get_available_thinking_levels",
        "get_commands",
    ]


AnyCommand = Annotated[
    Union[
        PromptCommand,
        SteerCommand,
        FollowUpCommand,
        AbortCommand,
        NewSessionCommand,
        GetStateCommand,
        GetMessagesCommand,
        SetModelCommand,
        SetThinkingLevelCommand,
        SetQueueModeCommand,
        CompactCommand,
        ForkCommand,
        SwitchSessionCommand,
        SetSessionNameCommand,
        CheckoutCommand,
        BashCommand,
        EnabledCommand,
        ExportHtmlCommand,
        GetEntriesCommand,
        GetTreeCommand,
        SetMaxTurnsCommand,
        _Simple,
    ],
    Field(discriminator="type"),
]
"""Every command this server understands."""

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyCommand)

COMMAND_TYPES: tuple[str, ...] = (
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "new_session",
    "get_state",
    "get_messages",
    "set_model",
    "set_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "fork",
    "switch_session",
    "get_session_stats",
    "set_session_name",
    "get_last_assistant_text",
    "get_fork_messages",
    "checkout",
    "get_tree",
    "bash",
    "set_auto_compaction",
    "set_auto_retry",
    "export_html",
    "get_entries",
    "set_max_turns",
    *get_args(_Simple.model_fields["type"].annotation),  # the simple commands, as their model lists them
)
"""The ``type`` values accepted: pi 1.6's commands, and ``checkout`` and ``set_max_turns`` of our own."""


class EncodedLine(str):
    """A response already encoded as one JSON line (written as is, after redaction)."""


class CommandError(Exception):
    """A command that cannot be done; its message is the response's ``error``."""


class BadCommand(Exception):
    """A line that is not a usable command; ``id`` and ``command`` are what could be read of it."""

    def __init__(self, message: str, id: CommandId = None, command: str = "parse"):
        super().__init__(message)
        self.id = id
        self.command = command


_ID_RE = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)')


def _salvage_id(line: str) -> CommandId:
    """The ``id`` of a line that is not valid JSON, when it can still be read."""
    match = _ID_RE.search(line)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (str, int, float)) else None


def decode_line(raw: bytes | LineTooLong) -> str:
    """The text of one input line; raises :class:`BadCommand` for a line too long or not UTF-8."""
    if isinstance(raw, LineTooLong):
        raise BadCommand(f"Failed to parse command: the line has {raw.size:,} bytes, more than a command may have ({_MIB} MiB)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadCommand(f"Failed to parse command: not UTF-8 (byte {exc.start} of the line)") from None


def parse_command(line: str) -> Command:
    """Validate one input line; raises :class:`BadCommand` naming the problem (and the id, if readable)."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise BadCommand(f"Failed to parse command: {exc}", _salvage_id(line)) from None
    except RecursionError:  # Python's reader follows about a thousand levels; no command nests a tenth of that
        raise BadCommand("Failed to parse command: nested too deeply (arrays or objects inside each other)", _salvage_id(line)) from None
    if not isinstance(obj, dict):
        raise BadCommand(f"Failed to parse command: expected a JSON object, got {type(obj).__name__}")
    raw_id = obj.get("id")
    cid: CommandId = raw_id if isinstance(raw_id, (str, int, float)) and not isinstance(raw_id, bool) else None
    if isinstance(cid, float) and not math.isfinite(cid):
        cid = None  # NaN, Infinity (or 1e400): echoed back, they would make the response invalid JSON
    kind = obj.get("type")
    if not isinstance(kind, str) or not kind:
        raise BadCommand('a command needs a string \'type\' (e.g. {"type": "get_state"})', cid)
    if raw_id is not None and cid is None:
        raise BadCommand(f"{kind}: 'id' must be a string or a finite number", None, kind)
    if kind not in COMMAND_TYPES:
        raise BadCommand(f"Unknown command: {kind} (known: {', '.join(COMMAND_TYPES)})", cid, kind)
    try:
        return _ADAPTER.validate_python(obj)
    except ValidationError as exc:
        raise BadCommand(f"{kind}: {describe_errors(exc)}", cid, kind) from None


def is_ui_response(text: str) -> bool:
    """True for pi's ``extension_ui_response`` line (answered by nothing: we never ask the client anything)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and obj.get("type") == "extension_ui_response"


def describe_errors(exc: ValidationError) -> str:
    """pydantic's errors as one readable line: ``'message': Field required; 'images.0.data': ...``."""
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err.get("loc", ())]
        # the discriminated union puts the tag first; it says nothing the caller does not know
        if loc and loc[0] in COMMAND_TYPES:
            loc = loc[1:]
        where = ".".join(loc) or "command"
        parts.append(f"'{where}': {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def success(id: CommandId, command: str, data: Any = None, *, with_data: bool = False) -> dict[str, Any]:
    """``{id, type: "response", command, success: true, data?}`` (``data`` left out when ``None`` unless ``with_data``)."""
    out: dict[str, Any] = {}
    if id is not None:
        out["id"] = id
    out.update(type="response", command=command, success=True)
    if data is not None or with_data:
        out["data"] = data
    return out


def failure(id: CommandId, command: str, message: str) -> dict[str, Any]:
    """``{id, type: "response", command, success: false, error}``."""
    out: dict[str, Any] = {}
    if id is not None:
        out["id"] = id
    out.update(type="response", command=command, success=False, error=message)
    return out


def encode_line(obj: Any) -> str:
    """One compact JSON line (no newline). Non-ASCII stays as is; U+2028 is fine because framing is LF-only."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_default)
        text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate (JSON.parse accepts them) cannot be UTF-8: escape everything instead
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), default=_default)
    return text


def _default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


MAX_LINE_BYTES = 64 << 20
"""The longest input line read (64 MiB: more than any provider takes in one request, images included).

A longer line is read through to its end without being kept, and answered with one error."""
_MIB = MAX_LINE_BYTES >> 20


class LineTooLong(NamedTuple):
    """A line longer than :data:`MAX_LINE_BYTES`, dropped as it came; ``size`` is its length in bytes."""

    size: int


class LineSplitter:
    """Strict LF framing over a byte stream: split on ``\\n`` only, strip one trailing ``\\r``.

    Never ``str.splitlines``, which also splits on U+2028, U+2029, ``\\x0b``, ``\\x1c``... that
    are valid inside JSON strings. Bytes are split before decoding, which is safe because
    the byte 0x0A never occurs inside a multi-byte UTF-8 sequence. A line longer than
    ``max_line`` bytes comes out as :class:`LineTooLong`, and its bytes are not kept.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_line
        self._dropped = 0  # bytes of an over-long line dropped so far (0: none being dropped)

    def feed(self, chunk: bytes) -> list[bytes | LineTooLong]:
        """Add ``chunk``; return the complete lines it finished (without their terminators)."""
        seen = len(self._buffer)  # the buffer holds no LF: only the new bytes are searched
        self._buffer.extend(chunk)
        lines: list[bytes | LineTooLong] = []
        start = 0
        while True:
            end = self._buffer.find(b"\n", max(start, seen))
            if end < 0:
                break
            lines.append(self._line(start, end))
            start = end + 1
        if start:
            del self._buffer[:start]
        if len(self._buffer) > self._max or (self._dropped and self._buffer):
            self._dropped += len(self._buffer)
            self._buffer.clear()
        return lines

    def finish(self) -> list[bytes | LineTooLong]:
        """At end of input: the unterminated last line, if there is one (pi handles it too)."""
        if not self._buffer and not self._dropped:
            return []
        line = self._line(0, len(self._buffer))
        self._buffer.clear()
        return [line]

    def _line(self, start: int, end: int) -> bytes | LineTooLong:
        size = self._dropped + end - start
        self._dropped = 0
        if size > self._max:
            return LineTooLong(size)
        return _strip_cr(bytes(self._buffer[start:end]))


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line
