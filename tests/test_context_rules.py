"""The context rebuild rules, pinned directly (pi's ``buildSessionContext``).

Every message's text is its own entry id, so a rebuilt context is compared as the exact list
of entries it kept. Cases written out by hand (where an off-by-one would land), then random
branches checked against a plain reading of pi's rules, for the store (the index-based rebuild)
and for :func:`context_from_path` (the list-based one), which must agree.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_jupyter.session import Session, context_from_path


def user(s: Session) -> str:
    eid = s.append_message({"role": "user", "content": "pending", "timestamp": 1})
    s.raw_entry(eid)["message"]["content"] = eid  # the text names the entry
    return eid


def assistant(s: Session, model: str = "m1") -> str:
    eid = s.append_message(
        {"role": "assistant", "content": [], "api": "x", "provider": "p", "model": model, "usage": {}, "stopReason": "stop", "timestamp": 2}
    )
    s.raw_entry(eid)["message"]["content"] = [{"type": "text", "text": eid}]
    return eid


def kept(ctx: Any) -> list[str]:
    """The context as entry ids (``summary`` for a compaction summary, ``custom:``/``branch:`` prefixes)."""
    out = []
    for m in ctx["messages"] if isinstance(ctx, dict) else ctx.raw_messages:
        role = m.get("role")
        if role == "compactionSummary":
            out.append(f"summary:{m['summary']}")
        elif role == "custom":
            out.append(f"custom:{m['content']}")
        elif role == "branchSummary":
            out.append(f"branch:{m['summary']}")
        elif role == "user":
            out.append(m["content"])
        else:
            out.append(m["content"][0]["text"])
    return out


def both(s: Session) -> list[str]:
    """The store's context, checked against the list-based rebuild of the same branch."""
    store = kept(s.context())
    assert kept(context_from_path(s.raw_branch())) == store
    return store


def test_without_a_compaction_every_message_on_the_branch_in_order() -> None:
    s = Session.in_memory()
    a = user(s)
    s.append_thinking_level_change("high")
    b = assistant(s)
    s.append_custom("not.seen", {"x": 1})
    s.label(a, "start")
    c = s.append_custom_message("note", "c-note")
    d = user(s)
    assert both(s) == [a, b, "custom:c-note", d]
    assert c in s


def test_after_a_compaction_summary_then_from_first_kept_up_to_it_then_everything_after() -> None:
    s = Session.in_memory()
    a, b, c, d = user(s), assistant(s), user(s), assistant(s)
    s.append_compaction("S1", c, 100)
    e, f = user(s), assistant(s)
    assert both(s) == ["summary:S1", c, d, e, f]
    assert a and b  # summarized away


def test_first_kept_at_the_first_entry_keeps_all_and_right_before_the_compaction_keeps_one() -> None:
    s = Session.in_memory()
    a, b = user(s), assistant(s)
    s.append_compaction("S", a, 10)
    assert both(s) == ["summary:S", a, b]
    t = Session.in_memory()
    a, b = user(t), assistant(t)
    t.append_compaction("S", b, 10)
    c = user(t)
    assert both(t) == ["summary:S", b, c]


def test_a_first_kept_id_not_on_the_branch_keeps_nothing_before_the_compaction() -> None:
    s = Session.in_memory()
    user(s), assistant(s)
    s.append_compaction("S", "not-there", 10)
    c = user(s)
    assert both(s) == ["summary:S", c]


def test_only_the_latest_compaction_counts() -> None:
    s = Session.in_memory()
    a, b, c = user(s), assistant(s), user(s)
    s.append_compaction("S1", b, 10)
    d, e = assistant(s), user(s)
    s.append_compaction("S2", d, 20)
    f = assistant(s)
    assert both(s) == ["summary:S2", d, e, f]
    assert a and c


def test_thinking_level_and_model_come_from_the_last_on_the_branch() -> None:
    s = Session.in_memory()
    user(s)
    s.append_thinking_level_change("low")
    s.append_model_change("prov", "m0")
    assistant(s, "m2")
    s.append_thinking_level_change("high")
    ctx = s.context().to_pi_json()
    assert ctx["thinkingLevel"] == "high" and ctx["model"] == {"provider": "p", "modelId": "m2"}
    s.append_model_change("prov", "m3")
    assert s.context().to_pi_json()["model"] == {"provider": "prov", "modelId": "m3"}


def test_a_checked_out_branch_rebuilds_only_its_own_path() -> None:
    s = Session.in_memory()
    a, b = user(s), assistant(s)
    c = user(s)
    s.checkout(b)
    d = user(s)
    assert both(s) == [a, b, d]
    s.checkout(c)
    assert both(s) == [a, b, c]


# ----------------------------------------------------------------- random branches against pi's rules

OPS = st.lists(
    st.one_of(
        st.just(("user",)),
        st.just(("assistant",)),
        st.tuples(st.just("compaction"), st.integers(min_value=-1, max_value=40)),
        st.tuples(st.just("thinking"), st.sampled_from(["off", "low", "high"])),
        st.tuples(st.just("model"), st.sampled_from(["a", "b"])),
        st.just(("custom_message",)),
        st.just(("branch_summary",)),
        st.just(("custom",)),
    ),
    max_size=30,
)


def pis_rules(path: list[dict]) -> list[str]:
    """pi's buildSessionContext, read plainly: the latest compaction's summary, the kept entries, the rest."""

    def emit(entry: dict) -> list[str]:
        kind = entry["type"]
        if kind == "message":
            m = entry["message"]
            return [m["content"] if m["role"] == "user" else m["content"][0]["text"]]
        if kind == "custom_message":
            return [f"custom:{entry['content']}"]
        if kind == "branch_summary" and entry.get("summary"):
            return [f"branch:{entry['summary']}"]
        return []

    at = max((i for i, e in enumerate(path) if e["type"] == "compaction"), default=None)
    if at is None:
        return [x for e in path for x in emit(e)]
    compaction = path[at]
    out = [f"summary:{compaction['summary']}"]
    ids = [e["id"] for e in path[:at]]
    start = ids.index(compaction["firstKeptEntryId"]) if compaction["firstKeptEntryId"] in ids else at
    for e in path[start:at] + path[at + 1 :]:
        out.extend(emit(e))
    return out


@settings(max_examples=200, deadline=None)
@given(ops=OPS)
def test_random_branches_follow_pis_rules(ops: list[tuple]) -> None:
    s = Session.in_memory()
    made: list[str] = []
    for op in ops:
        kind = op[0]
        if kind == "user":
            made.append(user(s))
        elif kind == "assistant":
            made.append(assistant(s))
        elif kind == "compaction":
            target = made[op[1]] if 0 <= op[1] < len(made) else "missing"
            made.append(s.append_compaction(f"S{len(made)}", target, 1))
        elif kind == "thinking":
            s.append_thinking_level_change(op[1])
        elif kind == "model":
            s.append_model_change("prov", op[1])
        elif kind == "custom_message":
            made.append(s.append_custom_message("t", f"cm{len(made)}"))
        elif kind == "branch_summary":
            made.append(s.branch_with_summary(s.leaf_id, f"bs{len(made)}"))
        else:
            s.append_custom("x", None)
    assert both(s) == pis_rules(s.raw_branch())
