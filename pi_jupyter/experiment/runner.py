"""One branch of an experiment: a plain :class:`~pi_jupyter.agent.Agent` on a :class:`BranchSession`.

:func:`run_branch` writes the branch's variant record as its first entry (a child of the
start node), runs the prompt, and writes the end record (state, error, duration) below the
branch's last entry. A failure of any kind, from a bad tool to a provider error that
outlived its retries, is a branch whose state is ``failed`` with its error, never an
exception out of the grid.

:func:`run_branch` is the one place a branch runs, in the kernel
(:meth:`~pi_jupyter.experiment.core.Experiment.run_here`, for the local executor) and on a
Dask worker (:func:`~pi_jupyter.experiment.dask_executor.run_on_worker`): what a branch's
agent is given (its tools' namespace, its working folder: ``agent_options`` and
``spec.cwd``) is decided by those two callers, which is where a branch's own world of
variables and files is set up and put away.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from ..agent import Agent
from ..session import Session
from ..world.branches import for_branch
from .branch_session import BranchSession
from .records import END_TYPE, VARIANT_TYPE, started_branch
from .variants import Variant, tool_names

TAIL_CHARS = 80


class BranchSpec(BaseModel):
    """Everything a branch needs to run, picklable (Dask sends it to a worker)."""

    experiment: str
    variant: Variant
    prompt: str
    start: str | None = None
    model: str | None = None
    thinking: str | None = None
    tools: list[str] = Field(default_factory=list)
    variant_data: dict[str, Any] = Field(default_factory=dict)
    replay_leaf: str | None = None
    """Serve this recorded branch's answers instead of calling the model (``--replay``)."""
    replay_start: str | None = None
    cwd: str | None = None
    max_retries: int = 3
    retry_delay_ms: int = 2000
    base_url: str | None = None
    """The OpenAI-compatible server the branch's model is served by, if any."""


class BranchStatus(BaseModel):
    """The live state of one branch (what the progress view shows)."""

    index: int
    label: str
    state: str = "queued"
    """``queued``, ``running``, ``done``, ``failed``, ``aborted``, ``skipped``."""
    tail: str = ""
    tokens: int = 0
    cost: float = 0.0
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    leaf: str | None = None

    @property
    def elapsed(self) -> float:
        """Seconds since the branch started (to its end when it has ended)."""
        if self.started is None:
            return 0.0
        return (self.ended or time.monotonic()) - self.started


class BranchOutcome(BaseModel):
    """What a finished branch reports back (from a worker too)."""

    index: int
    state: str
    leaf: str | None = None
    error: str | None = None
    cost: float = 0.0
    tokens: int = 0
    duration_s: float = 0.0
    tail: str = ""
    lost: bool = False
    """The executor lost the branch (its worker died) and does not know how far it got."""


def _state_of(result: Any) -> tuple[str, str | None]:
    if result.stop_reason == "aborted":
        return "aborted", result.error_message or "aborted"
    if result.stop_reason == "error":
        return "failed", result.error_message or "error"
    return "done", None


async def run_branch(
    session: Session,
    spec: BranchSpec,
    *,
    stream: Callable[..., Any] | None = None,
    resources: Any = None,
    status: BranchStatus | None = None,
    on_update: Callable[[BranchStatus], None] | None = None,
    register_abort: Callable[[Callable[[], None]], None] | None = None,
    agent_options: Mapping[str, Any] | None = None,
) -> BranchOutcome:
    """Run one branch below ``spec.start``; never raises for a failure of the branch itself.

    ``agent_options``: more keyword arguments for the branch's agent (``tool_extra``,
    ``policy``, ...), so its tools are built as the caller's own agent builds them.
    """
    from ..agent.agent import AgentSettings, RetrySettings

    status = status or BranchStatus(index=spec.variant.index, label=spec.variant.label)
    status.state, status.started = "running", time.monotonic()
    notify = on_update or (lambda s: None)
    notify(status)
    view = BranchSession(session, spec.start)
    started = time.monotonic()
    view.append_custom(VARIANT_TYPE, spec.variant_data)
    state, error, leaf = "failed", None, view.leaf_id
    try:
        options = dict(agent_options or {})
        options["tool_extra"] = for_branch(session, spec.start, options.get("tool_extra"), spec.cwd)  # a world of its own
        if spec.replay_leaf is not None:
            from .replay import branch_replay_stream

            stream = branch_replay_stream(session, spec.replay_start, spec.replay_leaf, spec.start)
        settings = AgentSettings(retry=RetrySettings(max_retries=spec.max_retries, base_delay_ms=spec.retry_delay_ms))
        agent = Agent(
            view,  # a session view with its own leaf
            model=spec.model,
            thinking=spec.thinking,
            tools=spec.tools,
            stream=stream,
            resources=resources,
            cwd=spec.cwd,
            settings=settings,
            base_url=spec.base_url,
            **options,
        )
        if register_abort is not None:
            register_abort(agent.abort)

        def watch(event: Any) -> None:
            kind = event.type
            if kind == "message_update":
                delta = getattr(getattr(event, "assistant_message_event", None), "delta", None)
                if isinstance(delta, str) and delta:
                    status.tail = (status.tail + delta)[-TAIL_CHARS:]
                    notify(status)
            elif kind == "message_end" and getattr(event.message, "role", None) == "assistant":
                usage = event.message.usage
                status.tokens += usage.input + usage.output + usage.cache_read + usage.cache_write
                status.cost += usage.cost.total
                if event.message.text.strip():
                    status.tail = event.message.text.strip()[-TAIL_CHARS:]
                notify(status)

        agent.subscribe(watch)
        result = await agent.prompt(spec.prompt)
        state, error = _state_of(result)
        leaf = view.leaf_id
    except Exception as exc:  # noqa: BLE001 - a failed branch is a row with its error, not the end of the grid
        error, leaf = f"{type(exc).__name__}: {exc}", view.leaf_id
    duration = time.monotonic() - started
    end = {"experiment": spec.experiment, "index": spec.variant.index, "state": state, "duration_s": round(duration, 3)}
    if error:
        end["error"] = error[:500]
    view.append_custom(END_TYPE, end)
    status.state, status.ended, status.error, status.leaf = state, time.monotonic(), error, leaf
    notify(status)
    return BranchOutcome(
        index=spec.variant.index,
        state=state,
        leaf=leaf,
        error=error,
        cost=status.cost,
        tokens=status.tokens,
        duration_s=duration,
        tail=status.tail,
    )


def mark_lost(session: Session, spec: BranchSpec, error: str) -> str | None:
    """A branch whose worker was lost: if the file holds its start, end it as ``failed`` below its
    partial entries (unless an end is there already) and return its leaf; ``None`` if it never started."""
    found = started_branch(session, spec.start, spec.experiment, spec.variant.index)
    if found is None:
        return None
    _, tip, ended = found
    if not ended:
        end = {"experiment": spec.experiment, "index": spec.variant.index, "state": "failed", "error": error[:500]}
        BranchSession(session, tip).append_custom(END_TYPE, end)
    return tip


def spec_tools(spec_tools_value: str | None, default: list[str]) -> list[str]:
    """A branch's tools: its ``tools`` value when varied, else the experiment's default."""
    return tool_names(spec_tools_value) if spec_tools_value is not None else list(default)
