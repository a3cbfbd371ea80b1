"""Session builders and summarizers for the compaction tests, and invariants over generated sessions.

The other compaction test files import the helpers from here (``tests/`` is on ``sys.path``):

* :class:`QuotingSummarizer`: a deterministic summarize function that returns pi's section
  structure and quotes every user line of the conversation (and the previous summary), so
  a test can check that nothing said before a compaction disappears from the context.
* :class:`HashSummarizer`: replies ``summary:<sha256[:12] of the prompt>:<max_tokens>``,
  exactly what ``tests/interop/pi_compaction_oracle.mjs`` makes pi's summarizer reply.
* :class:`Builder`: appends realistic turns (tool calls on files, long tool results,
  settings entries, bash, custom messages) to a real :class:`~pi_jupyter.session.Session`.
* :func:`random_session`: many turns, branches and compactions (made by our own
  ``compact``), for the parity and invariant tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from typing import Any

import pytest

from pi_jupyter.compaction import (
    CompactionSettings,
    NothingToCompact,
    SummaryRequest,
    conversation_text,
    find_valid_cut_points,
    prepare_compaction,
)
from pi_jupyter.compaction import compact_session as library_compact_session
from pi_jupyter.compaction.entries import message_for_compaction
from pi_jupyter.messages import AssistantMessage, TextContent
from pi_jupyter.session import Session

_SURROGATES = re.compile("[\ud800-\udfff]")


def js_digest(text: str) -> dict[str, Any]:
    """``{sha256, length}`` as the oracle reports a text (node encodes lone surrogates as U+FFFD)."""
    from pi_jupyter.messages import js_len

    data = _SURROGATES.sub("\ufffd", text).encode("utf-8")
    return {"sha256": hashlib.sha256(data).hexdigest(), "length": js_len(text)}


def section(text: str, tag: str) -> str | None:
    """The body of ``<tag>\\n...\\n</tag>`` in ``text``, or ``None``."""
    m = re.search(f"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return m.group(1) if m else None


class QuotingSummarizer:
    """Summarize by quoting: pi's sections, every ``[User]:`` line, and the previous summary's quotes."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    async def __call__(self, request: SummaryRequest) -> AssistantMessage:
        self.requests.append(request)
        await asyncio.sleep(0)
        conversation = section(request.prompt_text, "conversation") or ""
        previous = section(request.prompt_text, "previous-summary") or ""
        quotes = [p[len("[User]: ") :].split("\n")[0] for p in conversation.split("\n\n") if p.startswith("[User]: ")]
        old = [line for line in previous.split("\n") if line.startswith("- [x] said: ")]
        done = old + [f"- [x] said: {q}" for q in quotes]
        text = "\n".join(
            [
                "## Goal",
                quotes[0] if quotes else "(continue)",
                "",
                "## Progress",
                "### Done",
                *done,
                "",
                "## Next Steps",
                f"1. continue ({request.kind})",
            ]
        )
        return AssistantMessage(content=[TextContent(text=text)], stop_reason="stop")


class HashSummarizer:
    """Reply with ``summary:<sha256(prompt)[:12]>:<max_tokens>``, as the node oracle's fake provider does."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    async def __call__(self, request: SummaryRequest) -> AssistantMessage:
        self.requests.append(request)
        digest = js_digest(request.prompt_text)["sha256"][:12]
        return AssistantMessage(content=[TextContent(text=f"summary:{digest}:{request.max_tokens}")], stop_reason="stop")


class Builder:
    """Appends realistic conversation to a session. Every method returns the id of its last entry."""

    def __init__(
        self, session: Session, seed: int = 0, model: tuple[str, str, str] = ("anthropic", "claude-sonnet-4-5", "anthropic-messages")
    ):
        self.s = session
        self.rnd = random.Random(seed)
        self.ms = 1_760_000_000_000
        self.model = model
        self.n = 0

    def _ms(self) -> int:
        self.ms += 1000
        return self.ms

    def user(self, text: str, images: int = 0) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}] * images
        return self.s.append_message({"role": "user", "content": content, "timestamp": self._ms()})

    def assistant(
        self,
        text: str | None = "ok",
        calls: list[tuple[str, dict[str, Any]]] = (),
        total: int = 0,
        stop: str | None = None,
        thinking: str | None = None,
        **extra: Any,
    ) -> str:
        provider, model, api = self.model
        content: list[dict[str, Any]] = []
        if thinking is not None:
            content.append({"type": "thinking", "thinking": thinking})
        if text is not None:
            content.append({"type": "text", "text": text})
        self.pending = []
        for name, args in calls:
            self.n += 1
            cid = f"call_{self.n}"
            content.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
            self.pending.append((cid, name))
        message = {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": {
                "input": total,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": total,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": stop or ("toolUse" if calls else "stop"),
            "timestamp": self._ms(),
        }
        message.update(extra)
        return self.s.append_message(message)

    def results(self, text: str = "done") -> str:
        last = ""
        for cid, name in self.pending:
            last = self.s.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": cid,
                    "toolName": name,
                    "content": [{"type": "text", "text": text}],
                    "isError": False,
                    "timestamp": self._ms(),
                }
            )
        self.pending = []
        return last

    def turn(self, text: str, rounds: int = 0, result: str = "done", tool: str = "read", total: int = 0) -> str:
        """A user message, ``rounds`` assistant tool calls with results, and a final answer."""
        self.user(text)
        for r in range(rounds):
            self.assistant(f"step {r} for {text[:20]}", [(tool, {"path": f"src/f{self.n % 7}.py"})], total=total)
            self.results(result)
        return self.assistant(f"answer to {text[:30]}", total=total)

    def random_turn(self) -> str:
        rnd = self.rnd
        text = rnd.choice(WORDS) + " " + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 60)))
        self.user(f"u{self.n}: {text}")
        self.n += 1
        for _ in range(rnd.choice([0, 0, 1, 2, 3, 6])):
            name = rnd.choice(["read", "write", "edit", "bash", "grep"])
            path = rnd.choice(["src/a.py", "./src/b.py", "/work/project/src/c.py", "docs/x.md", "/etc/hosts"])
            args: dict[str, Any] = {"command": "ls -la"} if name == "bash" else {"path": path}
            if name == "edit":
                args.update(oldText="x = 1.0", newText="x = 2", count=1.5)
            thinking = "hmm " * rnd.randint(1, 30) if rnd.random() < 0.3 else None
            self.assistant(rnd.choice([None, "let me look"]), [(name, args)], total=rnd.randint(1000, 9000), thinking=thinking)
            size = rnd.choice([10, 200, 1500, 2100, 6000])
            self.results(("résultat 中文 🎉 " * (size // 12 + 1))[:size])
        return self.assistant(rnd.choice(["done", "All tests pass.", "Here is the plan:\n1. a\n2. b"]), total=rnd.randint(1000, 9000))


WORDS = "the model reads files runs tests fixes bugs in parser loader widget kernel session tree branch summary compaction".split()


async def compact_session(
    session: Session, summarize: Any, keep: int, *, pi_compatible: bool = False, custom: str | None = None
) -> str | None:
    """Compact the current branch keeping ``keep`` tokens; the new entry's id, or ``None`` when there is nothing to compact."""
    try:
        outcome = await library_compact_session(
            session, summarize, keep_recent_tokens=keep, custom_instructions=custom, pi_compatible=pi_compatible
        )
    except NothingToCompact:
        return None
    return outcome.entry_id


def random_session(path: str | None, seed: int, turns: int = 40, *, pi_compatible: bool = True) -> Session:
    """A session with branches, settings entries, bash and custom messages, and compactions made by us."""
    rnd = random.Random(seed)
    s = Session.open(path, create=True, cwd="/work/project") if path else Session.in_memory(cwd="/work/project")
    b = Builder(s, seed)
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    s.append_thinking_level_change("medium")
    summarizer = HashSummarizer()
    for _ in range(turns):
        r = rnd.random()
        if r < 0.08:
            s.append_thinking_level_change(rnd.choice(["low", "high"]))  # settings right before a user message
        elif r < 0.12:
            s.append_message(
                {
                    "role": "bashExecution",
                    "command": "make",
                    "output": "ok " * rnd.randint(0, 50),
                    "exitCode": rnd.choice([0, 2]),
                    "cancelled": False,
                    "truncated": False,
                    "timestamp": b._ms(),
                }
            )
        elif r < 0.15:
            s.append_custom_message("ext.note", rnd.choice(["a note", [{"type": "text", "text": "blocks"}]]))
        elif r < 0.18 and len(s) > 10:
            ids = s.branch_ids()
            s.checkout(rnd.choice(ids[len(ids) // 2 :]))  # go back a little and continue: a branch
        elif r < 0.2:
            s.label(s.leaf_id, f"l{rnd.randint(0, 9)}")
        b.random_turn()
        if rnd.random() < 0.12:
            asyncio.run(compact_session(s, summarizer, rnd.choice([200, 1000, 3000]), pi_compatible=pi_compatible))
    return s


# ---------------------------------------------------------------------------------------- invariants


def _context_text(session: Session) -> str:
    return conversation_text(session.context().raw_messages)


@pytest.mark.parametrize("seed", range(6))
def test_every_user_message_survives_repeated_compaction(seed: int) -> None:
    """Compacting again and again never loses a user message: it is kept, or quoted in the summary (pi-design §10 items 10, 11)."""
    rnd = random.Random(seed)
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s, seed)
    summarizer = QuotingSummarizer()
    said: list[str] = []
    compactions = 0
    for i in range(60):
        text = f"request {i} " + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 20)))
        said.append(text)
        b.turn(text, rounds=rnd.choice([0, 1, 4, 12]), result="x" * rnd.choice([50, 800, 3000]))
        if i % 7 == 6:
            if asyncio.run(compact_session(s, summarizer, rnd.choice([100, 400, 2000, 6000]))) is not None:
                compactions += 1
    assert compactions >= 3
    context = _context_text(s)
    missing = [t for t in said if t not in context]
    assert not missing, f"lost after {compactions} compactions: {missing[:3]}"


@pytest.mark.parametrize("seed", range(8))
def test_preparation_partitions_the_branch(seed: int) -> None:
    """Summarized + turn prefix + kept messages are exactly the messages of the range, in order, and the cut is valid."""
    s = random_session(None, seed, turns=30, pi_compatible=False)
    branch = s.raw_branch()
    for keep in (0, 50, 500, 2000, 8000):
        try:
            prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=keep))
        except NothingToCompact:
            continue
        first = prep.first_kept_index
        original_cut = first
        while branch[original_cut].get("type") not in ("message", "custom_message", "branch_summary"):
            original_cut += 1  # absorbed settings entries lead up to the real cut
        assert original_cut in find_valid_cut_points(branch, prep.boundary_start, len(branch))
        assert branch[first]["id"] == prep.first_kept_entry_id
        summarized = prep.messages_to_summarize + prep.turn_prefix_messages
        expected = [m for e in branch[prep.boundary_start : first] if (m := message_for_compaction(e)) is not None]
        assert summarized == expected
        if prep.is_split_turn:
            assert prep.turn_prefix_messages and prep.cut.turn_start_index >= prep.boundary_start
