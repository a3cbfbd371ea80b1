"""``Experiment``: a grid of sibling branches from one node, run, budgeted, scored and recorded.

Everything is checked in the constructor (nothing is written before :meth:`Experiment.run`):
the grid, the models and their keys, the prompt's ``{name}`` fields, the size limit and the
budget. :meth:`run` writes each branch below the start node, scores it, records what was
skipped, and moves the session to the branch the next prompt continues from (the first
combination's first repeat when it succeeded, else the first branch that did, as the file
records them; ``continue_from="start"`` leaves the session where it was).

With ``until_decided`` the repeats run in rounds (:func:`looks_for`): after each round the
paired comparisons are tested at that look's share of the 5% error rate (see
:mod:`.analysis`), and the grid stops once every comparison is decided; the branches it did not
need are recorded as skipped (``decided``).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from .. import providers
from ..agent.typed_text import scrub
from ..session import Session
from .branch_session import BranchSession
from .choose import executor_for
from .executors import Executor
from .limiter import RateLimiter
from .records import EXPERIMENT_TYPE, VARIANT_TYPE, Grid, Row, branch_stats, experiment_data, read_experiment, started_branch, variant_data
from .result import ExperimentResult
from .runner import BranchOutcome, BranchSpec, BranchStatus, mark_lost, run_branch, spec_tools
from .scorers import SCORER_TIMEOUT_S
from .scoring import score_rows
from .variants import DEFAULT_CONCURRENCY, DEFAULT_LIMIT, GridError, Variant, expand, fill, validate


class Experiment:
    """A grid of branches from ``session``'s current leaf (or ``start``); ``await exp.run()`` runs it.

    ``prompt``: the text, with ``{name}`` bound by ``vary`` (``render`` may fill it instead, as the
    notebook does with its namespace). ``vary``: ``{"model": [...], "thinking": [...], "tools":
    ["read+python", "none"], "tone": [...]}``. ``repeat``: runs per combination. ``concurrency``:
    branches at once (default :data:`~.variants.DEFAULT_CONCURRENCY`). ``budget``: US dollars;
    no branch is launched once the spent cost plus the estimate (:attr:`estimate`) for each
    running branch and the new one would pass it. ``scorers``: callables or registered names,
    each given ``scorer_timeout`` seconds per branch. ``compare``: the keys whose values the
    summary compares (default: every varied key). ``until_decided``: run the repeats in rounds
    and stop once every comparison is decided (needs a scorer and ``repeat`` of 2 or more).
    ``rate_limit``: requests per second to each provider for the whole grid (on every Dask
    worker together too); a rate-limit reply's ``Retry-After`` pauses the grid either way.
    ``replay``:
    ``True`` serves every branch from its recorded counterpart (same prompt, variant and
    repeat in this session); ``None`` (default) does so only for models without a key.
    ``model``, ``thinking``, ``tools``: for branches that do not vary them (default model: the
    session's, if its key is set, else the offline model; default tools: none). ``yes``: allow
    more than ``limit`` branches. ``start``: the node the branches grow from (default: the
    current leaf). ``continue_from``: ``"first"`` moves the session to the first finished
    branch at the end, ``"start"`` leaves it. ``max_retries``/``retry_delay_ms``: each branch's
    retry of transient provider errors. ``base_url``: an OpenAI-compatible server every
    branch's model is served by (as ``PiMagics.base_url``). ``agent_options``: more keyword
    arguments for each branch's :class:`~pi_jupyter.agent.Agent` (``tool_extra``, ``policy``:
    the notebook gives its namespace, confirm policy and tool timeout); the local executor
    only, they need not be picklable. Bad options raise :class:`GridError` (one line) here,
    before anything is written.
    """

    def __init__(
        self,
        session: Session,
        prompt: str,
        *,
        vary: Mapping[str, Sequence[str]] | None = None,
        repeat: int = 1,
        concurrency: int | None = None,
        budget: float | None = None,
        scorers: Sequence[Any] = (),
        scorer_timeout: float | None = SCORER_TIMEOUT_S,
        compare: Sequence[str] | None = None,
        until_decided: bool = False,
        rate_limit: float | None = None,
        model: str | None = None,
        thinking: str | None = None,
        tools: Sequence[str] = (),
        replay: bool | None = None,
        yes: bool = False,
        limit: int = DEFAULT_LIMIT,
        start: str | None | Literal["leaf"] = "leaf",
        continue_from: Literal["first", "start"] = "first",
        render: Callable[[Variant], str] | None = None,
        cwd: str | None = None,
        max_retries: int = 3,
        retry_delay_ms: int = 2000,
        base_url: str | None = None,
        agent_options: Mapping[str, Any] | None = None,
    ) -> None:
        from ..agent.toolbox import KNOWN_TOOLS
        from .scorers import get_scorer

        self.session = session
        self.base_url = base_url or None
        self.agent_options = dict(agent_options or {})
        # values are typed text: a key in one is never sent, stored or shown as typed (the prompt is redacted when sent)
        self.vary = {k: [scrub(str(v)) for v in values] for k, values in (vary or {}).items()}
        concurrency = DEFAULT_CONCURRENCY if concurrency is None else concurrency
        self.repeat, self.concurrency, self.budget = repeat, concurrency, budget
        validate(
            self.vary,
            repeat=repeat,
            concurrency=concurrency,
            budget=budget,
            limit=limit,
            yes=yes,
            template=None if render else prompt,
            known_tools=list(KNOWN_TOOLS),
            bound_elsewhere=render is not None,
            base_url=self.base_url,
        )
        unknown_tools = [t for t in tools if t not in KNOWN_TOOLS]
        if unknown_tools:
            raise GridError(f"tools: unknown tool {unknown_tools[0]!r}; known: {', '.join(KNOWN_TOOLS)}")
        self.scorers = [get_scorer(s) if isinstance(s, str) else s for s in scorers]
        self.scorer_timeout = scorer_timeout
        self.compare = _check_compare(self.vary, compare)
        self.until_decided = until_decided
        if until_decided:
            _check_until_decided(self.vary, self.compare, repeat, self.scorers)
        self.start = session.leaf_id if start == "leaf" else start
        self.default_model = self._default_model(model)
        self.variants = expand(self.vary, repeat)
        self.grid = Grid(
            id=uuid.uuid4().hex[:12],
            start=self.start,
            prompt=scrub(prompt),
            vary=self.vary,
            repeat=repeat,
            size=len(self.variants),
            budget=budget,
            compare=self.compare,
        )
        self.continue_from = continue_from
        self.cwd = cwd or session.cwd or os.getcwd()
        recordings = _recordings(session, prompt) if replay is not False else {}
        self.specs: list[BranchSpec] = []
        for variant in self.variants:
            text = render(variant) if render else fill(prompt, variant.bindings)
            model_ref = variant.values.get("model", self.default_model)
            recorded = recordings.get((tuple(sorted(variant.values.items())), variant.repeat))
            needs_key = providers.api_key_for(self.model_for(model_ref)) is None
            if replay and recorded is None:
                raise GridError(f"--replay: no recorded branch for {variant.label} of this prompt in {session.path or 'the session'}")
            if needs_key and recorded is None:
                raise GridError(f"no API key for {model_ref} (set its key, or replay a recorded run of this experiment)")
            use_replay = recorded is not None and (replay or needs_key)
            self.specs.append(
                BranchSpec(
                    experiment=self.grid.id,
                    variant=variant,
                    prompt=text,
                    start=self.start,
                    model=model_ref,
                    thinking=variant.values.get("thinking", thinking),
                    tools=spec_tools(variant.values.get("tools"), list(tools)),
                    variant_data=variant_data(self.grid, variant.index, variant.values, variant.repeat),
                    replay_start=recorded[0] if use_replay and recorded else None,
                    replay_leaf=recorded[1] if use_replay and recorded else None,
                    cwd=self.cwd,
                    max_retries=max_retries,
                    retry_delay_ms=retry_delay_ms,
                    base_url=self.base_url,
                )
            )
        self.replayed = sum(1 for s in self.specs if s.replay_leaf)
        self.statuses = [BranchStatus(index=v.index, label=v.label) for v in self.variants]
        if rate_limit is not None and not rate_limit > 0:
            raise GridError(f"--rate-limit {rate_limit}: give requests per second, more than 0")
        self.rate_limit = rate_limit
        self.limiter = RateLimiter(concurrency, rate=rate_limit)
        self._aborts: dict[int, Callable[[], None]] = {}
        self._stopped = False
        self._budget_hit = False
        self.estimate = self._prior_estimate()
        """The cost a branch is counted at before branches have finished (then the mean of finished ones, if higher)."""
        self.started: float | None = None
        self.result: ExperimentResult | None = None

    # ---------------------------------------------------------------- setup helpers

    def model_for(self, ref: str) -> Any:
        """The model a branch uses for ``ref`` (at :attr:`base_url` when one is set)."""
        return providers.resolve_model(ref, base_url=self.base_url) if self.base_url else providers.get_model(ref)

    def _default_model(self, model: str | None) -> str:
        if model:
            if providers.find_model(model) is None and not (self.base_url and "/" in model):
                raise GridError(f"--model: unknown model {model!r}")
            return self.model_for(model).ref
        recorded = self.session.context(self.start).model
        if recorded is not None and recorded.provider and recorded.model_id:
            found = providers.find_model(f"{recorded.provider}/{recorded.model_id}")
            if found is not None and found.api != "replay":
                return found.ref
        return providers.default_model().ref

    def _prior_estimate(self) -> float:
        """Cost of one branch before any has finished: the context twice as input, 1,000 tokens out."""
        from ..compaction import estimate_context_tokens

        try:
            ctx_tokens = estimate_context_tokens(self.session.context(self.start).messages).tokens
        except Exception:  # noqa: BLE001 - an estimate only
            ctx_tokens = 0
        worst = 0.0
        for spec in self.specs:
            if spec.replay_leaf:
                continue
            model = self.model_for(spec.model or self.default_model)
            tokens_in = 2 * (ctx_tokens + len(spec.prompt) // 4 + 500)
            worst = max(worst, (tokens_in * model.cost.input + 1000 * model.cost.output) / 1e6)
        return worst

    # ---------------------------------------------------------------- the Job the executor sees

    @property
    def session_path(self) -> str | None:
        """The session file (``None`` in memory)."""
        return self.session.path

    def spent(self) -> float:
        """Cost so far: finished branches and what running ones have spent."""
        return sum(s.cost for s in self.statuses)

    def _estimate_per_branch(self) -> float:
        done = [s.cost for s in self.statuses if s.state in ("done", "failed", "aborted")]
        return max(self.estimate, sum(done) / len(done)) if done else self.estimate

    def skip_reason(self, spec: BranchSpec) -> str | None:
        """Why a branch must not start now: Stop was pressed, or the budget would be passed."""
        if self._stopped:
            return "stopped"
        if self._budget_hit:
            return "budget"
        if self.budget is None or spec.replay_leaf:
            return None
        est = self._estimate_per_branch()
        running = sum(max(s.cost, est) for s in self.statuses if s.state == "running")
        finished = sum(s.cost for s in self.statuses if s.state not in ("running", "queued", "skipped"))
        if finished + running + est > self.budget + 1e-12:
            self._budget_hit = True
            return "budget"
        return None

    def skip(self, spec: BranchSpec, reason: str) -> None:
        """Mark a branch as not run."""
        status = self.statuses[spec.variant.index]
        status.state, status.error = "skipped", reason
        self.grid.skipped[spec.variant.index] = reason

    def launched(self, spec: BranchSpec) -> None:
        """Mark a branch as running."""
        status = self.statuses[spec.variant.index]
        status.state, status.started = "running", time.monotonic()

    async def run_here(self, spec: BranchSpec) -> BranchOutcome:
        """Run one branch in this process."""
        status = self.statuses[spec.variant.index]
        return await run_branch(
            self.session,
            spec,
            stream=self.limiter.wrap(providers.stream),
            resources=self._resources,
            status=status,
            register_abort=lambda fn: self._aborts.__setitem__(spec.variant.index, fn),
            agent_options=self.agent_options,
        )

    async def finished(self, outcome: BranchOutcome) -> None:
        """A branch ended: update its status (a remote one's too) and score it.

        A branch whose worker was lost (``outcome.lost``) is never run again: if the file holds
        its start, its partial entries stay and an end record marks it failed; if not, it never
        started and is skipped."""
        self._aborts.pop(outcome.index, None)
        if outcome.lost:
            outcome = self._lost(outcome)
        if outcome.state == "skipped":  # a worker did not start it (Stop, no session file there)
            self.skip(self.specs[outcome.index], outcome.error or "not run")
            return
        status = self.statuses[outcome.index]
        status.state, status.error, status.leaf = outcome.state, outcome.error, outcome.leaf
        status.cost, status.tokens = max(status.cost, outcome.cost), max(status.tokens, outcome.tokens)
        status.tail = status.tail or outcome.tail
        if status.ended is None:
            status.ended = time.monotonic()
        if self.session.path is not None and outcome.leaf is not None and outcome.leaf not in self.session:
            self.session.refresh()  # a worker wrote it
        if self.scorers and outcome.state == "done" and outcome.leaf:
            spec = self.specs[outcome.index]
            last = (self.session.raw_entry(outcome.leaf).get("message") or {}).get("stopReason")
            row = Row(
                index=outcome.index,
                values=spec.variant.values,
                repeat=spec.variant.repeat,
                state="done",
                leaf=outcome.leaf,
                stop_reason=last,
            )
            await score_rows(self.session, self.grid.id, [row], self.scorers, prompt=spec.prompt, timeout=self.scorer_timeout)

    def _lost(self, outcome: BranchOutcome) -> BranchOutcome:
        spec = self.specs[outcome.index]
        if self.session.path is not None:
            self.session.refresh()
        leaf = mark_lost(self.session, spec, outcome.error or "its worker was lost")
        if leaf is None:
            self.skip(spec, "its worker was lost before the branch started")
            return outcome.model_copy(update={"state": "skipped", "leaf": None})
        return outcome.model_copy(update={"state": "failed", "leaf": leaf})

    # ---------------------------------------------------------------- control

    @property
    def stopped(self) -> bool:
        """True once :meth:`abort` was called (Stop, an interrupt)."""
        return self._stopped

    def abort(self) -> None:
        """Stop: launch no more branches and abort the running ones (their partial answers are kept)."""
        self._stopped = True
        for abort in list(self._aborts.values()):
            abort()

    def watch(self) -> None:
        """Update the running branches' tokens, cost and answer tail from the session file (what Dask workers appended)."""
        if self.session.path is None:
            return
        self.session.refresh()
        for status in self.statuses:
            if status.state != "running":
                continue
            spec = self.specs[status.index]
            found = started_branch(self.session, spec.start, spec.experiment, spec.variant.index)
            if found is None:
                continue
            stats = branch_stats(self.session, found[0], found[1])
            status.tokens, status.cost = stats["tokens_in"] + stats["tokens_out"], stats["cost"]
            if stats["answer"]:
                status.tail = stats["answer"][-80:]

    def progress(self) -> dict[str, Any]:
        """Counts by state (``stopped``: aborted by Stop, their partial answers kept), cost so far, the budget and seconds elapsed."""
        counts = {k: 0 for k in ("done", "running", "queued", "failed", "stopped", "skipped")}
        for s in self.statuses:
            key = "stopped" if s.state == "aborted" else s.state
            counts[key] = counts.get(key, 0) + 1
        elapsed = time.monotonic() - self.started if self.started else 0.0
        return {**counts, "total": len(self.statuses), "cost": self.spent(), "budget": self.budget, "elapsed": elapsed}

    def prepare(self, executor: str | Executor | None = None, **executor_options: Any) -> Executor:
        """The executor for ``executor`` (see :meth:`run`), checked: it connects to its cluster and every
        worker can see the session file, or an ``ExecutorError`` says why in one line (nothing is written)."""
        runner = executor_for(executor, **executor_options)
        check = getattr(runner, "prepare", None)
        if callable(check):
            check(self)
        return runner

    async def run(self, executor: str | Executor | None = None, **executor_options: Any) -> ExperimentResult:
        """Run the grid (``executor``: ``"local"`` (default), ``"dask"`` (a LocalCluster), a scheduler address
        ``"tcp://host:8786"`` or an :class:`Executor`); returns the result."""
        from ..resources import load_resources

        self.started = time.monotonic()
        self._resources = load_resources(self.cwd)
        # a cluster that cannot run the grid is one line here, before anything is written
        runner = await asyncio.to_thread(self.prepare, executor, **executor_options)
        try:
            if self.until_decided:
                await self._run_rounds(runner)
            else:
                await runner.run(self)
        finally:
            close = getattr(runner, "close", None)
            if callable(close):
                close()
            if self.session.path is not None:
                self.session.refresh()  # whatever other processes (Dask workers) appended
            for s in self.statuses:
                if s.state == "queued":
                    self.skip(self.specs[s.index], "stopped" if self._stopped else "not run")
            self.grid.continue_from = self._continue_from() if self.continue_from == "first" else None
            BranchSession(self.session, self.start).append_custom(EXPERIMENT_TYPE, experiment_data(self.grid))
            if self.grid.continue_from is not None:
                self.session.checkout(self.grid.continue_from)
            self.session.sync()
            self.result = ExperimentResult(self.session, self.grid.id)
        return self.result

    def _continue_from(self) -> str | None:
        """The first finished branch in grid order, as the file records it (so the table and the session agree)."""
        try:
            _, rows = read_experiment(self.session, self.grid.id)
        except KeyError:  # no branch was started
            return None
        return next((r.leaf for r in rows if r.state == "done" and r.leaf), None)

    async def _run_rounds(self, runner: Executor) -> None:
        """``until_decided``: one round of repeats per look; stop when every comparison is decided."""
        from .analysis import sequential_comparisons

        looks = looks_for(self.repeat)
        taken: list[int] = []
        before = 0
        for repeats in looks:
            await runner.run(_Round(self, [s for s in self.specs if before <= s.variant.repeat < repeats]))
            before = repeats
            taken.append(repeats)
            self.grid.sequential = {"looks": list(taken), "planned": self.repeat}
            if self._stopped or self._budget_hit or repeats == self.repeat:
                return
            if self.session.path is not None:
                self.session.refresh()
            grid, rows = read_experiment(self.session, self.grid.id)
            grid.sequential, grid.compare = self.grid.sequential, self.compare
            found = sequential_comparisons(grid, rows, compare=self.compare)
            if found and all(c.decided for c in found):
                for spec in self.specs:
                    if spec.variant.repeat >= repeats:
                        self.skip(spec, "decided")
                return


def progress_line(progress: dict[str, Any]) -> str:
    """``8 branches: 5 done · 2 running · 1 queued · 0 failed · 0 skipped · $0.0123 of $1.00 · 3.2s`` (``· 2 stopped`` when some were)."""
    keys = [k for k in ("done", "running", "queued", "failed", "stopped", "skipped") if k != "stopped" or progress.get(k)]
    parts = [f"{progress.get(k, 0)} {k}" for k in keys]
    budget = progress.get("budget")
    cost = f"${progress.get('cost', 0.0):.4f}" + (f" of ${budget:.2f}" if budget is not None else "")
    total = progress.get("total", 0)
    return f"{total} branch{'es' if total != 1 else ''}: " + " · ".join(parts) + f" · {cost} · {progress.get('elapsed', 0.0):.1f}s"


async def experiment(session: Session, prompt: str, **options: Any) -> ExperimentResult:
    """Run a grid of sibling branches and return its :class:`ExperimentResult` (see :class:`Experiment`).

    ``executor`` (``"local"``, ``"dask"`` or an :class:`Executor`) and ``executor_options``
    go to :meth:`Experiment.run`; every other option to :class:`Experiment`.
    """
    executor = options.pop("executor", None)
    executor_options = options.pop("executor_options", {})
    return await Experiment(session, prompt, **options).run(executor, **executor_options)


def _recordings(session: Session, template: str) -> dict[tuple[Any, int], tuple[str | None, str]]:
    """Recorded branches of this prompt: (values, repeat) -> (start, leaf), the latest finished one each."""
    from .records import END_TYPE

    ends: dict[str, tuple[str, str]] = {}
    for e in session.custom_entries(END_TYPE):
        data = e.get("data") or {}
        ends[f"{data.get('experiment')}:{data.get('index')}"] = (e.get("parentId") or "", str(data.get("state")))
    out: dict[tuple[Any, int], tuple[str | None, str]] = {}
    for e in session.custom_entries(VARIANT_TYPE):
        data = e.get("data")
        if not isinstance(data, dict) or (data.get("grid") or {}).get("prompt") != template:
            continue
        end = ends.get(f"{data.get('experiment')}:{data.get('index')}")
        if end is None or end[1] != "done":
            continue
        key = (tuple(sorted((data.get("values") or {}).items())), int(data.get("repeat") or 0))
        out[key] = (e["id"], end[0])
    return out


def looks_for(repeat: int) -> list[int]:
    """When ``--until-decided`` looks: after about every fifth of the repeats, the first look after 2."""
    return sorted({min(repeat, max(2, -(-repeat * j // 5))) for j in range(1, 6)})


class _Round:
    """One round of an ``until_decided`` grid: the experiment, with only this round's branches to run."""

    def __init__(self, experiment: Experiment, specs: list[BranchSpec]) -> None:
        self.experiment = experiment
        self.specs = specs
        self.concurrency = experiment.concurrency

    def __getattr__(self, name: str) -> Any:
        return getattr(self.experiment, name)


def _check_compare(vary: Mapping[str, Sequence[str]], compare: Sequence[str] | None) -> list[str] | None:
    if compare is None:
        return None
    for key in compare:
        if key not in vary:
            raise GridError(f"--compare {key}: not a --vary key (varied: {', '.join(vary) or 'none'})")
        if len(vary[key]) < 2:
            raise GridError(f"--compare {key}: it has one value; a comparison needs two or more")
    return list(compare)


def _check_until_decided(vary: Mapping[str, Sequence[str]], compare: list[str] | None, repeat: int, scorers: Sequence[Any]) -> None:
    if not scorers:
        raise GridError("--until-decided: give a --score to decide on (a verdict compares scores)")
    if repeat < 2:
        raise GridError("--until-decided: give --repeat 2 or more (the most repeats it may run); it stops earlier once decided")
    from .analysis import compared_keys

    if not compared_keys(Grid(id="", vary={k: list(v) for k, v in vary.items()}, compare=compare)):
        raise GridError("--until-decided: nothing to compare; --vary a key with two or more values (or name one with --compare)")
