"""Scorers: plain callables over a branch, a registry of named ones, and the model-graded ``judge``.

A scorer takes a :class:`ScoredBranch` (the final answer, the messages, the tool results, the
variant) and returns a number, a bool or a dict of them; it may be async. Its name is its
``name`` attribute or ``__name__``; its version its ``version`` attribute (default ``"1"``).
Every score is appended to the session as a ``pi_jupyter.score`` entry on the scored leaf.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..messages import ToolResultMessage, UserMessage, text_of

Score = float | int | bool | dict[str, float | int | bool]


class ScoredBranch(BaseModel):
    """What a scorer sees of one branch."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: int
    values: dict[str, str] = Field(default_factory=dict)
    repeat: int = 0
    leaf: str
    answer: str = ""
    prompt: str = ""
    messages: list[Any] = Field(default_factory=list)
    """The branch's context at its leaf (neutral message objects)."""
    stop_reason: str | None = None

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        """The tool results on the branch, in order."""
        return [m for m in self.messages if isinstance(m, ToolResultMessage)]


def scorer_name(fn: Any) -> str:
    """The name a scorer's values are stored under."""
    return str(getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__)


def scorer_version(fn: Any) -> str:
    """The version recorded with a scorer's values (``version`` attribute, default ``"1"``)."""
    return str(getattr(fn, "version", None) or "1")


def check_value(name: str, value: Any) -> Score:
    """A scorer's return value, checked: a number, a bool, or a dict of them."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, (bool, int, float)) for k, v in value.items()):
        return value
    raise TypeError(f"scorer {name!r} returned {type(value).__name__}; return a number, a bool or a dict of them")


async def call_scorer(fn: Callable[[ScoredBranch], Any], branch: ScoredBranch) -> Score:
    """Run a scorer (sync or async) and check what it returns."""
    value = fn(branch)
    if asyncio.iscoroutine(value):
        value = await value
    return check_value(scorer_name(fn), value)


class Judge:
    """A model-graded scorer: the rubric and the answer go to ``model``, which returns a 0-10 score.

    On the offline model (the default) a deterministic stand-in answers instead: the share of
    the rubric's words (4+ letters) that appear in the answer, times 10. It is not a judgement,
    only a stable number, so tests and demos run without a key.
    """

    version = "1"

    def __init__(
        self, rubric: str = "The answer is correct, complete and clear.", model: str = "offline/echo", name: str = "judge"
    ) -> None:
        self.rubric = rubric
        self.model = model
        self.name = name

    def prompt(self, branch: ScoredBranch) -> str:
        """The grading request."""
        return (
            'Grade the answer against the rubric. Reply with JSON only: {"score": N} with N from 0 to 10.\n\n'
            f"<rubric>\n{self.rubric}\n</rubric>\n<question>\n{branch.prompt}\n</question>\n<answer>\n{branch.answer}\n</answer>"
        )

    async def __call__(self, branch: ScoredBranch) -> float:
        from .. import providers
        from ..providers.base import LlmRequest

        model = providers.get_model(self.model)
        if model.api == "offline":
            words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", self.rubric)}
            found = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", branch.answer)}
            return round(10.0 * len(words & found) / len(words), 2) if words else 0.0
        reply = await providers.complete(model, LlmRequest(messages=[UserMessage.text(self.prompt(branch))]))
        if reply.stop_reason == "error":
            raise RuntimeError(f"judge: {reply.error_message}")
        return parse_grade(reply.text)


def parse_grade(text: str) -> float:
    """The score in a judge's reply: ``{"score": N}``, else the first number; clamped to 0-10."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            value = float(json.loads(match.group(0))["score"])
            return max(0.0, min(10.0, value))
        except (ValueError, KeyError, TypeError):
            pass
    number = re.search(r"-?\d+(?:\.\d+)?", text)
    if number is None:
        raise ValueError(f"judge: no score in the reply {text[:80]!r}")
    return max(0.0, min(10.0, float(number.group(0))))


def answer_length(branch: ScoredBranch) -> int:
    """Characters in the final answer."""
    return len(branch.answer)


def answered(branch: ScoredBranch) -> bool:
    """True when the branch ended normally with a non-empty answer."""
    return bool(branch.answer.strip()) and branch.stop_reason not in ("error", "aborted", None)


answer_length.name = "length"  # type: ignore[attr-defined]

_registry: dict[str, Callable[..., Any]] = {"judge": Judge(), "length": answer_length, "answered": answered}


def register_scorer(fn: Callable[[ScoredBranch], Any], name: str | None = None) -> Callable[[ScoredBranch], Any]:
    """Make ``fn`` available by name (``--score NAME``, ``%pi score REF NAME``); returns ``fn``."""
    if name and scorer_name(fn) != name:
        try:
            fn.name = name  # type: ignore[attr-defined]  # its values are stored under the name it is known by
        except AttributeError:
            inner = fn

            async def renamed(branch: ScoredBranch) -> Any:
                return await call_scorer(inner, branch)

            renamed.name, renamed.version = name, scorer_version(inner)  # type: ignore[attr-defined]
            fn = renamed
    _registry[name or scorer_name(fn)] = fn
    return fn


def get_scorer(name: str) -> Callable[[ScoredBranch], Any]:
    """The registered scorer called ``name``; an unknown name is a one-line error listing the known ones."""
    try:
        return _registry[name]
    except KeyError:
        raise ValueError(f"unknown scorer {name!r}; registered: {', '.join(sorted(_registry))} (register_scorer adds one)") from None


def registered() -> list[str]:
    """Names of the registered scorers."""
    return sorted(_registry)


def branch_for_scoring(session: Any, row: Any, prompt: str = "") -> ScoredBranch:
    """A :class:`ScoredBranch` for a table row (see :mod:`.records`)."""
    messages = list(session.context(row.leaf).messages) if row.leaf else []
    full = ""
    for m in reversed(messages):
        if getattr(m, "role", None) == "assistant" and m.text.strip():
            full = m.text.strip()
            break
    if not prompt:
        prompt = next((text_of(m.content) for m in reversed(messages) if isinstance(m, UserMessage)), "")
    return ScoredBranch(
        index=row.index,
        values=row.values,
        repeat=row.repeat,
        leaf=row.leaf,
        answer=full,
        prompt=prompt,
        messages=messages,
        stop_reason=row.stop_reason,
    )
