"""The grid of an experiment: ``--vary`` parsing, validation before anything runs, and expansion.

A grid is the product of the values of every varied key, each combination run ``repeat``
times. Three keys configure the agent (``model``, ``thinking``, ``tools``); every other key
is bound for ``{key}`` in the prompt. Validation happens before a single entry is written:
a bad grid is one :class:`GridError` line naming the option and the value.
"""

from __future__ import annotations

import itertools
import shlex
import string
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..agent.prompt_code import code_and_prose
from ..messages import THINKING_LEVELS

AGENT_KEYS = ("model", "thinking", "tools")
"""Keys that configure a branch's agent; any other key is a prompt binding."""

DEFAULT_LIMIT = 64
"""Grids with more branches than this need ``yes=True`` (``--yes``): a typo should not start 1,000 paid calls."""

MAX_BRANCHES = 100_000
"""The most branches one experiment runs, ``--yes`` or not: checked before the grid is expanded
(a million-branch typo is refused at once, not after gigabytes of branch records)."""

DEFAULT_CONCURRENCY = 128
"""Branches at once when ``--concurrency`` is not given. Measured with bench/bench_experiment.py
(1,000 branches of 3 requests, 0.5 s per reply) against the bare SDK sending the same requests:
128 took 1.02-1.10x its time on a calm machine, 64 took 1.28-1.75x (too few in flight to hide
the latency), 256 took 1.66x (the server's queue and timeouts). Grids under the 64-branch limit
run all at once; larger ones need ``--yes``, and the limiter halves the calls in flight at the
first 429."""

NO_TOOLS = ("", "none")


class GridError(ValueError):
    """A bad grid option: reported as one line before anything runs."""


class Variant(BaseModel):
    """One branch of the grid: its combination of values and its repeat index."""

    index: int
    """Position in the grid (combinations in order, repeats of one combination together)."""
    values: dict[str, str] = Field(default_factory=dict)
    repeat: int = 0

    @property
    def bindings(self) -> dict[str, str]:
        """The values bound for ``{name}`` in the prompt (every key but model, thinking, tools)."""
        return {k: v for k, v in self.values.items() if k not in AGENT_KEYS}

    @property
    def label(self) -> str:
        """``model=a · tone=terse #1``: what a person reads in a table or a progress row."""
        shown = " · ".join(f"{k}={v}" for k, v in self.values.items()) or "(no variation)"
        return f"{shown} #{self.repeat}"


def split_values(text: str, where: str = "--vary") -> list[str]:
    """Split ``V1,V2`` on commas outside quotes (``'a, b',c`` is two values); quotes are removed."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace = ","
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        values = [v.strip() for v in lexer]
    except ValueError as exc:
        raise GridError(f"{where}: {exc} in {text!r}") from None
    if text.rstrip().endswith(","):
        values.append("")
    return values


def parse_vary(items: Sequence[str]) -> dict[str, list[str]]:
    """``["model=a,b", "tone=terse,warm"]`` -> ``{"model": ["a", "b"], "tone": ["terse", "warm"]}``."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, rest = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise GridError(f"--vary {item!r}: write KEY=V1,V2 (e.g. --vary model=offline/echo,offline/tools)")
        if not key.isidentifier():
            raise GridError(f"--vary {item!r}: the key {key!r} is not a name (letters, digits and _)")
        if key in out:
            raise GridError(f"--vary {key}: given twice; list every value once, e.g. --vary {key}=V1,V2")
        values = split_values(rest, f"--vary {key}")
        if not rest.strip() or not [v for v in values if v or key == "tools"]:
            raise GridError(f"--vary {key}: no values; write --vary {key}=V1,V2")
        out[key] = values
    return out


def prompt_fields(template: str) -> list[str]:
    """The ``{name}`` fields of a prompt template's prose (``{{`` and ``}}`` are literal braces; code is never a field)."""
    names: list[str] = []
    for code, piece in code_and_prose(template):
        if code:
            continue
        try:
            parsed = list(string.Formatter().parse(piece))
        except ValueError as exc:
            raise GridError(f"prompt: {exc} (write {{{{ and }}}} for literal braces)") from None
        names += [name for _, name, _, _ in parsed if name is not None]
    return names


def fill(template: str, bindings: Mapping[str, str]) -> str:
    """The prompt of one branch: ``{name}`` in its prose replaced by its bound value; code blocks and inline code as written."""
    values = dict(bindings)
    return "".join(piece if code else piece.format_map(values) for code, piece in code_and_prose(template))


def tool_names(value: str) -> list[str]:
    """A ``tools`` value: names joined by ``+`` or spaces (``read+python``); ``none`` or empty for no tools."""
    if value.strip().lower() in NO_TOOLS:
        return []
    return [t for t in value.replace("+", " ").split() if t]


def validate(
    vary: Mapping[str, Sequence[str]],
    *,
    repeat: int,
    concurrency: int,
    budget: float | None,
    limit: int,
    yes: bool,
    template: str | None,
    known_tools: Sequence[str] = (),
    bound_elsewhere: bool = False,
    base_url: str | None = None,
) -> None:
    """Check a grid before it runs; raises :class:`GridError` with one line naming the problem.

    ``template``: the prompt whose ``{name}`` fields must each be varied (``None``: the caller
    has filled the prompt already, as the notebook does with its namespace).
    ``bound_elsewhere``: a varied name the template lacks is allowed (it was bound already).
    ``base_url``: models are served by that OpenAI-compatible server (any ``provider/model``).
    """
    from .. import providers

    if repeat < 1:
        raise GridError(f"--repeat {repeat}: give 1 or more")
    if concurrency < 1:
        raise GridError(f"--concurrency {concurrency}: give 1 or more")
    if budget is not None and not budget >= 0:
        raise GridError(f"--budget {budget}: a budget is a cost in US dollars, 0 or more")
    for key, values in vary.items():
        if not values:
            raise GridError(f"--vary {key}: no values; write --vary {key}=V1,V2")
        if len(set(values)) != len(values):
            raise GridError(f"--vary {key}: a value is listed twice ({', '.join(values)})")
    for ref in vary.get("model", ()):
        # at a base_url (an OpenAI-compatible server) any provider/model is that server's model
        if providers.find_model(ref) is None and not (base_url and "/" in ref):
            raise GridError(f"--vary model: unknown model {ref!r} (%pi models or pi-jupyter info --models lists them)")
    for level in vary.get("thinking", ()):
        if level not in THINKING_LEVELS:
            raise GridError(f"--vary thinking: unknown level {level!r}; choose from {', '.join(THINKING_LEVELS)}")
    if known_tools:
        for value in vary.get("tools", ()):
            unknown = [t for t in tool_names(value) if t not in known_tools]
            if unknown:
                raise GridError(f"--vary tools: unknown tool {unknown[0]!r} in {value!r}; known: {', '.join(known_tools)}")
    if template is not None:
        fields = prompt_fields(template)
        for name in fields:
            if not name.isidentifier():
                raise GridError(f"prompt: the field {{{name}}} is not a name; use {{{{ and }}}} for literal braces")
            if name not in vary or name in AGENT_KEYS:
                raise GridError(f"prompt: {{{name}}} is bound by no --vary (add --vary {name}=V1,V2, or write {{{{{name}}}}})")
        if not bound_elsewhere:
            for key in vary:
                if key not in AGENT_KEYS and key not in fields:
                    raise GridError(f"--vary {key}: the prompt has no {{{key}}} to bind it to")
    size = grid_size(vary, repeat)
    if size > MAX_BRANCHES:
        raise GridError(f"the grid has {size:,} branches; one experiment runs at most {MAX_BRANCHES:,} (split it into several)")
    if size > limit and not yes:
        raise GridError(f"the grid has {size:,} branches, more than the limit of {limit:,}: add --yes (yes=True) to run it")


def grid_size(vary: Mapping[str, Sequence[Any]], repeat: int) -> int:
    """How many branches a grid has."""
    size = repeat
    for values in vary.values():
        size *= len(values)
    return size


def expand(vary: Mapping[str, Sequence[str]], repeat: int) -> list[Variant]:
    """Every branch of the grid, in order: combinations (first key slowest), each ``repeat`` times."""
    keys = list(vary)
    out: list[Variant] = []
    for combo in itertools.product(*(vary[k] for k in keys)):
        for r in range(repeat):
            out.append(Variant(index=len(out), values=dict(zip(keys, combo, strict=True)), repeat=r))
    return out
