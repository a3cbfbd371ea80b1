"""Structure of ``Session.graph()`` on generated trees: which nodes, which edges, what is marked, folding counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage
from pi_jupyter.session import Session
from pi_jupyter.views import GraphModel, build_model, parse_options, write_turn
from pi_jupyter.views.digest import CELL_TYPE, CHECKOUT_TYPE, is_head, is_transparent


def new_session(path: Path | None = None) -> Session:
    s = Session.create(path=path) if path is not None else Session.in_memory()
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    s.append_thinking_level_change("medium")
    return s


def model_of(session: Session, **opts) -> GraphModel:
    return build_model(session, parse_options("test", opts))


def node_holding(model: GraphModel, entry_id: str):
    node = model.node_of(entry_id)
    assert node is not None, f"{entry_id} is not drawn"
    return node


def visible_ids(session: Session) -> set[str]:
    return {e["id"] for e in session.raw_entries() if not is_transparent(e)}


# ------------------------------------------------------------------------------ turns


def test_a_turn_is_one_node_with_its_tool_steps_and_settings_join_the_first_turn():
    s = new_session()
    t1 = write_turn(s, "load the data", "loaded", tools=2, tokens=1000, cost=0.002)
    t2 = write_turn(s, "plot it", "plotted")
    t3 = write_turn(s, "fit a model", "fitted", tools=1)
    m = model_of(s, fold=False)
    assert [n.kind for n in m.nodes.values()] == ["turn", "turn", "turn"]
    first = node_holding(m, t1[0])
    # the model and thinking settings before the first prompt are part of the first turn
    assert first.entry_ids[:2] == [e["id"] for e in s.raw_entries()[:2]]
    assert first.entry_ids[2:] == t1
    assert first.models == ["anthropic/claude-sonnet-4-5"]
    assert first.tool_calls == 2 and first.tokens == 3000 and first.cost == pytest.approx(0.006)
    assert first.title == "You: load the data" and first.answer == "→ loaded"
    keys = [node_holding(m, t[0]).key for t in (t1, t2, t3)]
    assert m.edges == [(keys[0], keys[1]), (keys[1], keys[2])]
    assert m.path == keys and m.leaf == keys[2]
    assert node_holding(m, t3[-1]).is_leaf and not first.is_leaf
    assert all(n.on_path for n in m.nodes.values())
    assert m.turn_count == 3 and m.entry_count == len(s)


def test_checkout_markers_and_cell_records_are_hidden_but_the_cell_shows_on_its_turn(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    t1 = write_turn(s, "first", "one")
    s.append_custom(CELL_TYPE, {"cellId": "cell-aaaa-1111", "startedFrom": None, "produced": t1, "end": t1[-1], "executionCount": 7})
    t2 = write_turn(s, "second", "two")
    s.checkout(t1[-1])  # a marker entry
    t3 = write_turn(s, "third", "three")
    hidden = [e["id"] for e in s.raw_entries() if is_transparent(e)]
    assert len(hidden) == 2
    m = model_of(s, fold=False)
    drawn = {eid for n in m.nodes.values() for eid in n.entry_ids}
    assert drawn == visible_ids(s) and not drawn & set(hidden)
    first = node_holding(m, t1[0])
    assert (first.cell_id, first.execution_count) == ("cell-aaaa-1111", 7)
    assert sorted(first.children) == sorted([node_holding(m, t2[0]).key, node_holding(m, t3[0]).key])
    assert m.leaf == node_holding(m, t3[0]).key


def test_a_branch_point_and_the_current_path(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    t1 = write_turn(s, "start", "ok")
    t2 = write_turn(s, "idea A", "A done")
    s.checkout(t1[-1])
    t3 = write_turn(s, "idea B", "B done")
    m = model_of(s, fold=False)
    root, a, b = (node_holding(m, t[0]) for t in (t1, t2, t3))
    assert root.children == [a.key, b.key]
    assert m.path == [root.key, b.key]
    assert b.is_leaf and b.on_path and not a.on_path and not a.is_leaf
    source = "".join(m.dot_body())
    assert "pi-branch-point" in source.split(json.dumps(root.key))[1].split("\n")[0]
    assert f'{json.dumps(root.key)} -> {json.dumps(b.key)} [class="pi-edge pi-path"' in source
    assert f'{json.dumps(root.key)} -> {json.dumps(a.key)} [class="pi-edge"]' in source


def test_labels_show_on_their_turn_and_label_entries_never_make_nodes(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    t1 = write_turn(s, "start", "ok")
    t2 = write_turn(s, "idea A", "A done")
    s.checkout(t1[-1])
    t3 = write_turn(s, "idea B", "B done")
    s.label(t2[-1], "baseline")  # appended after the leaf (t3), as pi does
    s.label(t3[0], "variant")
    m = model_of(s, fold=False)
    assert len(m.nodes) == 3
    assert node_holding(m, t2[0]).labels == ["baseline"]
    leaf = node_holding(m, t3[0])
    assert leaf.labels == ["variant"] and leaf.is_leaf
    # actions on the leaf's node act on its last real step, not on the label entries after it
    assert leaf.target_id == t3[-1] and leaf.last_id != t3[-1]


def test_compaction_and_branch_summary_are_nodes_of_their_own():
    s = new_session()
    t1 = write_turn(s, "a long analysis " * 50, "result " * 80, tools=1)
    t2 = write_turn(s, "more", "more results")
    cid = s.append_compaction("## Goal\nanalyse", t2[0], 50_000)
    t3 = write_turn(s, "after compaction", "fine")
    bid = s.branch_with_summary(
        t1[-1],
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\nTried plan B; it failed.",
    )
    t4 = write_turn(s, "back on plan A", "ok")
    m = model_of(s, fold=False)
    comp = node_holding(m, cid)
    assert comp.kind == "compaction" and comp.entry_ids == [cid]
    assert comp.recorded_tokens_before == 50_000  # what the entry says (a model's count, say)
    # drawn: before and after by one estimate of the rebuilt context, so the two compare
    assert 0 < comp.tokens_after < comp.tokens_before < 50_000
    assert comp.parent == node_holding(m, t2[0]).key and comp.children == [node_holding(m, t3[0]).key]
    summary = node_holding(m, bid)
    assert summary.kind == "branch_summary" and summary.answer == "Tried plan B; it failed."
    assert summary.parent == node_holding(m, t1[0]).key and summary.children == [node_holding(m, t4[0]).key]
    assert m.path == [node_holding(m, t1[0]).key, summary.key, node_holding(m, t4[0]).key]
    source = "".join(m.dot_body())
    from pi_jupyter.views.digest import tokens_text

    drawn = f"≈{tokens_text(comp.tokens_before)} → ≈{tokens_text(comp.tokens_after)} tokens"
    assert drawn in source and 'shape="note"' in source and "did not shrink" not in source


def test_errors_aborts_and_model_changes_are_marked():
    s = new_session()
    bad = write_turn(s, "call the API", "", stop="error", error="429 rate limit exceeded")
    cut = write_turn(s, "write a story", "Once upon", stop="aborted")
    s.append_model_change("openai", "gpt-5")
    switched = write_turn(s, "again with another model", "ok", model="openai/gpt-5")
    s.append_model_change("openai", "gpt-4.1")  # at the leaf: nothing follows it yet
    m = model_of(s, fold=False)
    err = node_holding(m, bad[0])
    assert err.status == "error" and err.error == "429 rate limit exceeded"
    assert node_holding(m, cut[0]).status == "aborted"
    other = node_holding(m, switched[0])
    assert other.models == ["openai/gpt-5", "openai/gpt-4.1"]
    assert node_holding(m, cut[0]).models == []
    source = "".join(m.dot_body())
    assert "✖ error: 429 rate limit exceeded" in source and "■ aborted" in source and "⇄ model openai/gpt-4.1" in source
    assert "pi-error" in source and "pi-aborted" in source and "pi-model-change" in source


def test_a_vendor_error_shows_its_message_not_the_start_of_its_json():
    s = new_session()
    body = (
        '{"type":"error","error":{"type":"invalid_request_error","message":"messages.236: `tool_use` ids were found'
        ' without `tool_result` blocks"},"request_id":"req_011CVvAQm5gLufA1cDeHobKh"}'
    )
    bad = write_turn(s, "yo", "", stop="error", error="400 " + body)
    m = model_of(s, fold=False)
    err = node_holding(m, bad[0])
    assert err.error == "400 " + body  # kept as it was
    source = "".join(m.dot_body())
    assert "✖ error: 400 messages.236: `tool_use` ids" in source
    assert "error: 400 messages.236: `tool_use` ids were found without `tool_result` blocks (invalid_request_error)" in err.tooltip
    assert "ERROR: 400 messages.236: `tool_use` ids were found" in m.text()
    assert s.compare(bad[-1], bad[-1]).branches[0].final_answer == (
        "(error: 400 messages.236: `tool_use` ids were found without `tool_result` blocks (invalid_request_error))"
    )


def test_a_retry_is_a_sibling_continuation_and_a_mid_turn_leaf_splits_the_turn():
    s = new_session()
    u = s.append_message(UserMessage.text("summarise"))
    s.append_message(AssistantMessage(content=[], stop_reason="error", error_message="overloaded"))
    s.checkout(u, persist=False)
    ok = s.append_message(AssistantMessage(content=[TextContent(text="Here is the summary.")]))
    m = model_of(s, fold=False)
    prompt = node_holding(m, u)
    kids = [m.nodes[k] for k in prompt.children]
    assert [k.kind for k in kids] == ["continuation", "continuation"]
    assert [k.status for k in kids] == ["error", "ok"]
    assert node_holding(m, ok).is_leaf
    # check out the tool call in the middle of a turn: the turn is cut at the leaf
    s2 = new_session()
    ids = write_turn(s2, "compute", "42", tools=1)  # user, assistant(toolUse), toolResult, assistant
    s2.checkout(ids[1], persist=False)
    m2 = model_of(s2, fold=False)
    head = node_holding(m2, ids[0])
    assert head.entry_ids[-2:] == ids[:2] and head.is_leaf
    rest = m2.nodes[head.children[0]]
    assert rest.kind == "continuation" and rest.entry_ids == ids[2:] and not rest.on_path


def test_full_mode_draws_one_node_per_entry():
    s = new_session()
    write_turn(s, "one", "1", tools=1)
    write_turn(s, "two", "2")
    m = model_of(s, full=True, fold=False)
    assert len(m.nodes) == len(s)
    assert all(len(n.entry_ids) == 1 for n in m.nodes.values())
    assert m.edges == [(a["id"], b["id"]) for a, b in zip(s.raw_entries(), s.raw_entries()[1:], strict=False)]
    titles = [n.title for n in m.nodes.values()]
    assert titles[2:7] == ["You: one", "Assistant", "Tool result: python", "Assistant", "You: two"]


def test_a_full_mode_fold_inside_a_turn_says_where_it_starts():
    s = new_session()
    s.label(write_turn(s, "one", "the answer", tools=3)[0], "start")  # the prompt stays visible
    m = model_of(s, full=True, keep_recent=1)
    (fold,) = [n for n in m.nodes.values() if n.kind == "fold"]
    assert fold.title == "⋯ 6 entries folded" and fold.entries == 6
    assert fold.answer == "from Assistant → calls python"
    s = new_session()
    s.label(write_turn(s, "one", "a1", tools=1)[-1], "kept")
    s.label(write_turn(s, "two", "a2", tools=1)[-1], "kept too")
    folds = [n for n in model_of(s, full=True, keep_recent=0).nodes.values() if n.kind == "fold"]
    assert [n.title for n in folds] == ["⋯ 1 turn folded", "⋯ 1 turn folded"]  # not "1 turns"
    assert "from Assistant → calls python" in fold.tooltip
    m = model_of(s, full=True, keep_recent=0, fold_min=2)
    assert all(n.answer.strip() != "from" for n in m.nodes.values())


# ------------------------------------------------------------------------------ folding


def linear(n: int) -> tuple[Session, list[list[str]]]:
    s = new_session()
    return s, [write_turn(s, f"turn {i}", f"answer {i}") for i in range(1, n + 1)]


def test_a_long_linear_run_folds_into_one_node_that_counts_its_turns():
    s, turns = linear(30)
    m = model_of(s)  # fold_min 3, keep_recent 3
    folds = [n for n in m.nodes.values() if n.kind == "fold"]
    assert len(folds) == 1
    fold = folds[0]
    assert fold.turns == 25 and fold.title == "⋯ 25 turns folded"
    assert fold.entry_ids == [eid for t in turns[1:26] for eid in t]
    assert fold.on_path and not fold.is_leaf
    shown = [n for n in m.nodes.values() if n.kind == "turn"]
    assert [n.first_id for n in shown] == [e["id"] for e in s.raw_entries()[:1]] + [t[0] for t in turns[26:]]
    assert sum(n.turns for n in m.nodes.values()) == 30
    assert sum(n.entries for n in m.nodes.values()) == len(s)
    assert m.node_of(turns[10][1]) is fold
    assert "⋯ 25 turns folded" in m.text()
    assert m.header().endswith("· 1 run folded")  # not "1 runs"


def test_fold_min_and_keep_recent():
    s, turns = linear(10)
    assert not [n for n in model_of(s, fold_min=20).nodes.values() if n.kind == "fold"]
    m = model_of(s, keep_recent=0)
    (fold,) = [n for n in m.nodes.values() if n.kind == "fold"]
    assert fold.turns == 8  # everything between the root turn and the leaf
    m = model_of(s, keep_recent=5)
    (fold,) = [n for n in m.nodes.values() if n.kind == "fold"]
    assert fold.turns == 3  # turns 2-4: the root turn, and the leaf with the five before it, stay
    assert not [n for n in model_of(s, keep_recent=6).nodes.values() if n.kind == "fold"]  # two left: too few to fold


def test_labelled_turns_and_compactions_are_never_folded():
    s, turns = linear(20)
    s.label(turns[9][-1], "keep me")
    m = model_of(s)
    assert node_holding(m, turns[9][0]).kind == "turn"
    assert [n.turns for n in m.nodes.values() if n.kind == "fold"] == [8, 6]


def test_expanding_a_fold_shows_its_turns_a_chunk_at_a_time():
    s, turns = linear(40)
    m = model_of(s)
    (fold,) = [n for n in m.nodes.values() if n.kind == "fold"]
    opened = model_of(s, expand=[fold.key])
    assert not [n for n in opened.nodes.values() if n.kind == "fold"]
    assert len(opened.nodes) == 40
    # with a small budget a long run opens a chunk (max_nodes // 4) at a time
    small = model_of(s, max_nodes=40, expand=[fold.key])
    (rest,) = [n for n in small.nodes.values() if n.kind == "fold"]
    assert rest.turns == fold.turns - 10
    assert node_holding(small, turns[1][0]).kind == "turn"
    # an entry id keeps the turn holding it visible
    one = model_of(s, expand=[turns[20][1]])
    assert node_holding(one, turns[20][0]).kind == "turn"


def test_a_bushy_tree_stays_under_the_node_budget_and_keeps_labels_and_the_path(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    root = write_turn(s, "root", "r")
    labelled = None
    for b in range(30):
        s.checkout(root[-1])
        branch = [write_turn(s, f"branch {b} step {k}", "x") for k in range(4)]
        if b == 7:
            s.label(branch[-1][-1], "the good one")
            labelled = branch
    s.checkout(root[-1])
    path = [write_turn(s, f"main {k}", "m") for k in range(2)]
    unfolded = model_of(s, fold=False, max_nodes=10_000)
    assert len(unfolded.nodes) == 1 + 30 * 4 + 2
    m = model_of(s, max_nodes=50)
    assert len(m.nodes) <= 50
    assert m.collapsed_branches > 0
    subs = [n for n in m.nodes.values() if n.kind == "sub"]
    assert subs and all(n.turns == 4 and n.tips == 1 and not n.on_path for n in subs)
    assert m.path == [node_holding(m, root[0]).key, node_holding(m, path[0][0]).key, node_holding(m, path[1][0]).key]
    assert node_holding(m, labelled[-1][0]).labels == ["the good one"]
    assert node_holding(m, labelled[-1][0]).kind == "turn"
    assert sum(n.turns for n in m.nodes.values()) == unfolded.turn_count
    # collapsed branches open again by key
    opened = model_of(s, max_nodes=50, expand=[subs[0].key])
    assert node_holding(opened, subs[0].first_id).kind == "turn"


def test_crowded_branch_points_merge_their_middle_siblings(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    root = write_turn(s, "root", "r")
    for b in range(200):
        s.checkout(root[-1])
        write_turn(s, f"retry {b}", "x")
    m = model_of(s, max_nodes=30)
    assert len(m.nodes) <= 30
    (more,) = [n for n in m.nodes.values() if n.kind == "more"]
    assert more.turns == 200 - 1 - 6  # the leaf's branch and three on each side stay
    assert more.title == "⋯ 193 more branches (193 turns)"
    assert sum(n.turns for n in m.nodes.values()) == 201


# ------------------------------------------------------------------------------ odd files and bad options


def write_jsonl(path: Path, entries: list[dict]) -> Path:
    header = {"type": "session", "version": 3, "id": "0000", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/tmp"}
    path.write_text("\n".join(json.dumps(e) for e in [header, *entries]) + "\n")
    return path


def msg(eid: str, parent: str | None, role: str, text: str, ts: str = "2025-01-01T00:00:01.000Z") -> dict:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": {"role": role, "content": content}}


def test_orphans_and_parent_cycles_draw_without_hanging(tmp_path):
    path = write_jsonl(
        tmp_path / "odd.jsonl",
        [
            msg("u1", None, "user", "hello"),
            msg("a1", "u1", "assistant", "hi"),
            msg("u2", "missing", "user", "orphan prompt"),
            msg("c1", "c2", "user", "cycle one"),
            msg("c2", "c1", "assistant", "cycle two"),
            msg("u3", "a1", "user", "back on track"),
        ],
    )
    s = Session.open(path, readonly=True)
    m = model_of(s)
    assert {n.first_id for n in m.nodes.values()} == {"u1", "u2", "u3"}
    assert len(m.roots) == 2  # the orphan is a root of its own
    assert "cycle" not in m.text()


def test_bad_options_name_the_option():
    s, _ = linear(2)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        s.graph(colour="red")
    with pytest.raises(ValueError, match="max_nodes"):
        s.graph(max_nodes=0)
    with pytest.raises(ValueError, match="mode"):
        s.graph(mode="sideways")


def test_an_empty_session_and_a_leaf_before_the_first_entry():
    s = Session.in_memory()
    m = model_of(s)
    assert m.nodes == {} and m.leaf is None and "(no entries)" in m.text()
    t = write_turn(s, "hi", "hello")
    s.checkout(None)
    m = model_of(s)
    assert m.leaf is None and m.path == [] and not node_holding(m, t[0]).on_path
    assert "leaf (before the first entry)" in m.header()


def test_text_tree_marks_the_path_and_the_leaf(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    t1 = write_turn(s, "start", "ok")
    write_turn(s, "idea A", "A done")
    s.checkout(t1[-1])
    write_turn(s, "idea B", "B done")
    lines = model_of(s).text().splitlines()
    assert lines[0].startswith("s.jsonl · ")
    assert lines[1].startswith("* You: start")
    assert lines[2].startswith("  ├─ You: idea A")
    assert lines[3].startswith("▶ └─ You: idea B") and lines[3].endswith("← current leaf")


def test_the_text_tree_indents_only_at_branch_points():
    # a long conversation reads down the page, not ever further to the right
    s = new_session()
    root = write_turn(s, "start", "ok")
    for i in range(40):
        write_turn(s, f"a{i}", "x")
    s.checkout(root[-1])
    for i in range(3):
        write_turn(s, f"b{i}", "y")
    lines = model_of(s, fold=False).text().splitlines()[1:]
    assert len(lines) == 1 + 40 + 3
    assert max(len(line) - len(line.lstrip("*▶ │├└─")) for line in lines) <= 5
    assert lines[1].startswith("  ├─ You: a0") and lines[2].startswith("  │  You: a1") and lines[40].startswith("  │  You: a39")
    assert lines[41].startswith("* └─ You: b0") and lines[42].startswith("*    You: b1") and lines[43].startswith("▶    You: b2")


# ------------------------------------------------------------------------------ invariants on random trees

ops = st.lists(
    st.tuples(
        st.sampled_from(["turn", "turn", "tools", "checkout", "label", "compact", "cell", "model", "error", "summary"]),
        st.integers(0, 10_000),
    ),
    min_size=1,
    max_size=40,
)


def build_random(program: list[tuple[str, int]]) -> Session:
    s = new_session()
    for op, n in program:
        ids = list(s.raw_entries())
        pick = ids[n % len(ids)]["id"] if ids else None
        if op in ("turn", "tools", "error"):
            write_turn(s, f"prompt {n}", f"answer {n}", tools=2 if op == "tools" else 0, stop="error" if op == "error" else "stop")
        elif op == "checkout" and pick and not is_transparent(s.raw_entry(pick)):
            s.checkout(pick, persist=n % 2 == 0)
        elif op == "label" and pick:
            s.label(pick, f"L{n % 5}")
        elif op == "compact" and pick:
            s.append_compaction("summary", pick, n)
        elif op == "cell":
            s.append_custom(CELL_TYPE, {"cellId": f"c{n % 3}", "produced": [pick] if pick else [], "end": pick, "executionCount": n})
        elif op == "model":
            s.append_model_change("p", f"m{n % 3}")
        elif op == "summary" and pick and not is_transparent(s.raw_entry(pick)):
            s.branch_with_summary(pick, f"summary {n}")
    return s


def visible_parent(s: Session, eid: str) -> str | None:
    parent = s.raw_entry(eid).get("parentId")
    while parent is not None and is_transparent(s.raw_entry(parent)):
        parent = s.raw_entry(parent).get("parentId")
    return parent


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=ops, fold=st.booleans(), full=st.booleans(), max_nodes=st.sampled_from([10, 25, 250]))
def test_every_entry_is_drawn_exactly_once_and_edges_follow_the_tree(program, fold, full, max_nodes):
    s = build_random(program)
    m = model_of(s, fold=fold, full=full, max_nodes=max_nodes)
    seen: list[str] = [eid for n in m.nodes.values() for eid in n.entry_ids]
    assert len(seen) == len(set(seen))
    assert set(seen) == visible_ids(s) == set(m.by_entry)
    for node in m.nodes.values():
        for eid in node.entry_ids:
            assert m.by_entry[eid] == node.key
        parent = visible_parent(s, node.first_id)
        if node.parent is None:
            assert parent is None
        else:
            assert parent in m.nodes[node.parent].entry_ids
            assert node.key in m.nodes[node.parent].children
    assert sum(n.turns for n in m.nodes.values()) == sum(1 for e in s.raw_entries() if is_head(e))
    leaf = s.leaf_id
    while leaf is not None and is_transparent(s.raw_entry(leaf)):
        leaf = s.raw_entry(leaf).get("parentId")
    if leaf is None:
        assert m.leaf is None
    else:
        assert leaf in m.nodes[m.leaf].entry_ids and m.path[-1] == m.leaf
        on_path = {eid for k in m.path for eid in m.nodes[k].entry_ids}
        assert set(s.branch_ids(leaf)) - {e["id"] for e in s.raw_entries() if is_transparent(e)} <= on_path
    if not fold and max_nodes == 250 and len(s) < 200:
        assert not [n for n in m.nodes.values() if n.folded]


def test_checkout_type_constant_matches_the_store():
    from pi_jupyter.session import CHECKOUT_TYPE as STORE_CHECKOUT

    assert CHECKOUT_TYPE == STORE_CHECKOUT


def test_a_long_path_full_of_branch_points_folds_stretches_with_their_side_branches(tmp_path):
    s = new_session(tmp_path / "s.jsonl")
    turns = []
    for i in range(60):
        t = write_turn(s, f"main {i}", "ok")
        turns.append(t)
        if i:  # every turn was also re-run once: a side branch off the path
            s.checkout(turns[-2][-1])
            write_turn(s, f"retry of {i}", "other")
            s.checkout(t[-1])
    m = model_of(s, max_nodes=40)
    assert len(m.nodes) <= 40
    deep = [n for n in m.nodes.values() if n.kind == "fold" and n.on_path and "side branch" in n.title]
    assert deep, [n.title for n in m.nodes.values()]
    assert node_holding(m, turns[-1][0]).is_leaf and node_holding(m, turns[-1][0]).kind == "turn"
    assert node_holding(m, turns[0][0]).kind == "turn"  # the root stays
    assert sum(n.turns for n in m.nodes.values()) == 60 + 59
    assert m.path[0] == node_holding(m, turns[0][0]).key and m.path[-1] == m.leaf


def test_hundreds_of_labels_on_the_path_still_fit_the_node_budget():
    s = Session.in_memory()
    ends = []
    for i in range(400):
        ids = write_turn(s, f"step {i}", "ok")
        s.label(ids[-1], f"v{i}")
        ends.append(ids[-1])
    model = s.graph(max_nodes=60, header=False).model
    assert len(model.nodes) <= 60
    shown = {label for n in model.nodes.values() if not n.folded for label in n.labels}
    assert {"v399", "v398", "v390"} <= shown and "v1" not in shown  # the recent labels stay, old ones fold
    assert model.nodes[model.leaf].is_leaf and model.path[-1] == model.leaf
