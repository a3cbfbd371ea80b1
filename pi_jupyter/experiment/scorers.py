"""Scorers: plain callables over a branch, a registry of named ones, and the model-graded ``judge``.

A scorer takes a :class:`ScoredBranch` (the final answer, the messages, the tool results, the
variant) and returns a number, a bool or a dict of them; it may be async. Its name is its
``name`` attribute or ``__name__``; its version its ``version`` attribute (default ``"1"``).
Every score is appended to the session as a ``pi_jupyter.score`` entry on the scored leaf.

A scorer runs with a time limit (:data:`SCORER_TIMEOUT_S`), a sync one on a thread of its
own (so a slow scorer never holds up the grid's event loop, the live view or Stop, and one that
never returns holds only its own thread, never one a later scorer waits for). A scorer
that raises, hangs or returns something that is not a finite number is a :class:`ScorerError`:
one line, recorded on its branch instead of a value.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
import threading
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


SCORER_TIMEOUT_S = 120.0
"""Seconds a scorer may take on one branch (a model-graded judge included) before its branch is marked unscored."""

MAX_EXACT_INT = 2**53
"""Larger integers do not survive JSON readers that hold numbers as doubles (JavaScript, pi): refused."""


class ScorerError(ValueError):
    """A scorer gave a branch no score: it raised, timed out, or returned something that is not a score (one line)."""


def _bad_number(name: str, value: Any, where: str = "") -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if abs(value) <= MAX_EXACT_INT:
            return None
        digits = math.floor(value.bit_length() * math.log10(2)) + 1  # str() refuses integers past 4,300 digits
        return f"scorer {name} returned an integer too large to record ({digits} digits); return a float or a smaller number"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"scorer {name} returned {value}; return a finite number, a bool or a dict of them"
    kind = f"a dict whose {where!r} is {type(value).__name__}" if where else type(value).__name__
    return f"scorer {name} returned {kind}; return a number, a bool or a dict of them"


def check_value(name: str, value: Any) -> Score:
    """A scorer's return value, checked: a finite number, a bool, or a dict of them; else :class:`ScorerError`."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ScorerError(f"scorer {name} returned a dict with the key {key!r}; name its scores with strings")
            problem = _bad_number(name, item, key)
            if problem:
                raise ScorerError(problem)
        return value
    problem = _bad_number(name, value)
    if problem:
        raise ScorerError(problem)
    return value


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


async def _invoke(fn: Callable[[ScoredBranch], Any], branch: ScoredBranch) -> Any:
    if _is_async(fn):
        return await fn(branch)
    value = await _on_its_own_thread(fn, branch)
    return await value if inspect.isawaitable(value) else value


def _on_its_own_thread(fn: Callable[[ScoredBranch], Any], branch: ScoredBranch) -> asyncio.Future[Any]:
    """Run a sync scorer on a thread of its own, not on the event loop and not in a pool: one that never
    returns keeps only its own (daemon) thread, and the next scorer, of this grid or a later one, starts at once."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: Any, failed: bool) -> None:
        if not future.done():
            future.set_exception(outcome) if failed else future.set_result(outcome)

    def run() -> None:
        try:
            outcome, failed = fn(branch), False
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting scorer call, which reports it
            outcome, failed = exc, True
        except BaseException as exc:  # noqa: BLE001 - SystemExit in a scorer ends its score, not the grid
            outcome, failed = ScorerError(f"scorer {scorer_name(fn)} failed: {type(exc).__name__}"), True
        try:
            loop.call_soon_threadsafe(settle, outcome, failed)
        except RuntimeError:  # the grid's loop is gone (the scorer timed out long ago): nobody waits for it
            pass

    threading.Thread(target=run, name=f"pi-scorer-{scorer_name(fn)}", daemon=True).start()
    return future


async def call_scorer(fn: Callable[[ScoredBranch], Any], branch: ScoredBranch, timeout: float | None = SCORER_TIMEOUT_S) -> Score:
    """Run a scorer (async on this loop, sync on a scorer thread) within ``timeout`` seconds and check
    what it returns; every way it can fail is one :class:`ScorerError` line."""
    name = scorer_name(fn)
    try:
        value = await asyncio.wait_for(_invoke(fn, branch), timeout)
    except asyncio.TimeoutError:
        raise ScorerError(f"scorer {name} timed out after {timeout:g} s") from None
    except ScorerError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the scorer raised, its branch says so in one line
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise ScorerError(f"scorer {name} failed: {type(exc).__name__}" + (f": {text}" if text else "")) from None
    return check_value(name, value)


class Judge:
    """A model-graded scorer: the rubric and the answer go to ``model``, which returns a 0-10 score.

    On the offline model (the default) a deterministic stand-in answers instead: the share of
    the rubric's and the question's words (4+ letters) that appear in the answer, times 10. It is not a judgement,
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
            words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", self.rubric + " " + branch.prompt)}
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
                return await _invoke(inner, branch)

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
