"""Tools: parameters declared as pydantic models, results the model sees, details it does not.

A tool is a :class:`Tool` subclass (or a function wrapped with :func:`tool`). Its
``parameters`` model gives the JSON schema sent to the model and validates the arguments
before :meth:`Tool.execute` runs; invalid arguments become an error result the model can
read, never an exception in the loop.

Whatever tool produced it (a builtin, a ``@tool`` function, a :class:`Tool` subclass, an
extension's tool), a result and every partial update pass through :func:`redact_result` in
:func:`run_tool`, before the loop emits, persists or shows them: a tool that returns
``os.environ["OPENAI_API_KEY"]`` gives the model and the session file
``[REDACTED:OPENAI_API_KEY]``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import json
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..messages import ImageContent, TextContent
from ..providers.base import AbortSignal, ToolSpec
from .redact import redact, redact_partial, redact_value

P = TypeVar("P", bound=BaseModel)


class ToolResult(BaseModel):
    """What a tool returns: ``content`` goes to the model, ``details`` only to people and programs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    content: list[TextContent | ImageContent] = Field(default_factory=list)
    details: Any = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, details: Any = None, is_error: bool = False) -> ToolResult:
        """A result with one text block."""
        return cls(content=[TextContent(text=text)], details=details, is_error=is_error)

    @classmethod
    def error(cls, message: str, details: Any = None) -> ToolResult:
        """An error result: the model sees ``message`` and ``is_error`` is set."""
        return cls(content=[TextContent(text=message)], details=details, is_error=True)

    @property
    def text_content(self) -> str:
        """The text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


@dataclass
class ToolContext:
    """What a running tool may use besides its arguments."""

    tool_call_id: str
    signal: AbortSignal
    cwd: str
    update: Callable[[ToolResult], None] = lambda _r: None
    """Report partial output (becomes ``tool_execution_update``)."""
    session: Any = None
    """The :class:`~pi_jupyter.session.Session` of the run, if any."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for the notebook layer (the user namespace for the python tool, a confirm callback)."""


_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()


class EmptyParams(BaseModel):
    """Parameters of a tool that takes none."""


class Tool(Generic[P]):
    """Base class of tools. Set ``name``, ``description``, ``parameters`` and implement ``execute``.

    ``mutating`` marks tools that change files, run commands or code: a safety policy can
    require confirmation for them. ``prompt_snippet`` is the one-liner in the system
    prompt's tool list; ``prompt_guidelines`` are added to its guidelines.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[type[BaseModel]] = EmptyParams
    label: ClassVar[str] = ""
    mutating: ClassVar[bool] = False
    prompt_snippet: ClassVar[str | None] = None
    prompt_guidelines: ClassVar[tuple[str, ...]] = ()

    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        # building a JSON schema costs milliseconds and every model request asks for it: once per parameters model
        schema = _SCHEMAS.get(self.parameters)
        if schema is None:
            schema = self.parameters.model_json_schema()
            schema.pop("title", None)
            schema = _SCHEMAS[self.parameters] = _inline_refs(schema)
        return ToolSpec(name=self.name, description=self.description, parameters=copy.deepcopy(schema))

    def validate_args(self, args: dict[str, Any]) -> P:
        """Validate raw arguments; raises :class:`ToolArgumentError` with a readable message."""
        try:
            return self.parameters.model_validate(args)  # type: ignore[return-value]
        except ValidationError as exc:
            raise ToolArgumentError(format_validation_error(self.name, exc, args)) from None

    async def execute(self, args: P, ctx: ToolContext) -> ToolResult | str:
        """Run the tool. Return a :class:`ToolResult` or a string (one text block)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


class ToolArgumentError(ValueError):
    """The model's arguments did not match the tool's parameters."""


def format_validation_error(tool_name: str, exc: ValidationError, args: Any) -> str:
    """A message the model can act on: which argument, what is wrong, what it sent."""
    lines = [f'Validation failed for tool "{tool_name}":']
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"  - {loc}: {err['msg']}")
    try:
        shown = json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(args)
    lines.append(f"\nReceived arguments:\n{shown[:2000]}")
    return "\n".join(lines)


class FunctionTool(Tool[BaseModel]):
    """A tool made from a function by :func:`tool`."""

    def __init__(self, fn: Callable[..., Any], name: str, description: str, parameters: type[BaseModel], mutating: bool) -> None:
        self._fn = fn
        self.name = name  # type: ignore[misc]
        self.description = description  # type: ignore[misc]
        self.parameters = parameters  # type: ignore[misc]
        self.mutating = mutating  # type: ignore[misc]
        self._wants_ctx = "ctx" in inspect.signature(fn).parameters

    async def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult | str:
        kwargs = {k: getattr(args, k) for k in type(args).model_fields}
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        out = self._fn(**kwargs)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, (ToolResult, str)):
            return out
        return json.dumps(out, ensure_ascii=False, default=str)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    mutating: bool = False,
) -> Any:
    """Make a tool from a (sync or async) function; its annotated arguments become the schema.

    >>> @tool
    ... def add(a: int, b: int) -> str:
    ...     "Add two integers."
    ...     return str(a + b)
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        from pydantic import create_model

        sig = inspect.signature(f)
        fields: dict[str, Any] = {}
        for pname, param in sig.parameters.items():
            if pname == "ctx":
                continue
            ann = param.annotation if param.annotation is not inspect.Parameter.empty else Any
            default = param.default if param.default is not inspect.Parameter.empty else ...
            fields[pname] = (ann, default)
        params = create_model(f"{f.__name__}_params", **fields)
        doc = inspect.getdoc(f) or ""
        return FunctionTool(f, name or f.__name__, description or doc, params, mutating)

    return wrap(fn) if fn is not None else wrap


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$defs`` references: several vendors reject ``$ref`` in tool schemas."""
    defs = schema.pop("$defs", None)
    if not defs:
        return schema

    def resolve(node: Any, depth: int = 0) -> Any:
        if depth > 32:
            return node
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = dict(defs.get(ref.split("/")[-1], {}))
                target.pop("title", None)
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **rest}, depth + 1)
            return {k: resolve(v, depth + 1) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v, depth + 1) for v in node]
        return node

    return resolve(schema)


_redacted: weakref.WeakValueDictionary[int, ToolResult] = weakref.WeakValueDictionary()
"""Results :func:`redact_result` made (by id), so a result is not scanned twice on its way out."""


def redact_result(result: ToolResult) -> ToolResult:
    """``result`` with secrets removed from its text blocks and its details (images are left as they are).

    A result this function made comes back as it is (what :func:`run_tool` returned is not
    scanned again when the loop finishes the call); redacting is idempotent anyway.
    """
    if _redacted.get(id(result)) is result:
        return result
    content = [TextContent(text=redact(b.text)) if isinstance(b, TextContent) else b for b in result.content]
    details = redact_value(result.details) if result.details is not None else None
    out = ToolResult(content=content, details=details, is_error=result.is_error)
    _redacted[id(out)] = out
    return out


def redact_partial_result(result: ToolResult) -> ToolResult:
    """A partial result as it may be shown while the tool still runs.

    Its text blocks are snapshots of output that is still growing, so the tail of each that
    could still become a secret (a key printed one character at a time) is held back
    (:func:`~pi_jupyter.agent.redact.redact_partial`); the rest is redacted as in
    :func:`redact_result`. The final result shows everything, redacted.
    """
    content = [TextContent(text=redact_partial(b.text)) if isinstance(b, TextContent) else b for b in result.content]
    details = redact_value(result.details) if result.details is not None else None
    return ToolResult(content=content, details=details, is_error=result.is_error)


async def run_tool(tool_obj: Tool[Any], raw_args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Validate and execute one tool call; every failure becomes an error result.

    The result is redacted (:func:`redact_result`) and every partial update (``ctx.update``)
    too, with the unfinished tail held back (:func:`redact_partial_result`), whichever tool
    produced them.
    """
    outer_update = ctx.update
    ctx = dataclasses.replace(ctx, update=lambda partial: outer_update(redact_partial_result(partial)))
    try:
        args = tool_obj.validate_args(raw_args)
    except ToolArgumentError as exc:
        return redact_result(ToolResult.error(str(exc)))
    try:
        out = await tool_obj.execute(args, ctx)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a tool's failure is the model's information
        out = ToolResult.error(f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc))
    if isinstance(out, str):
        out = ToolResult.text(out)
    return redact_result(out)


ToolHook = Callable[..., Awaitable[Any] | Any]
