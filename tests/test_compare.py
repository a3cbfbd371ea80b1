"""``Session.compare()``: common ancestor, per-branch numbers, refs, the table, the diff and the figure."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pi_jupyter.messages import AssistantMessage, TextContent, Usage
from pi_jupyter.session import EntryNotFoundError, Session, SessionError
from pi_jupyter.views import Comparison, write_turn
from pi_jupyter.views.digest import CELL_TYPE


def two_branches(tmp_path: Path) -> tuple[Session, dict[str, list[list[str]]]]:
    s = Session.create(path=tmp_path / "s.jsonl")
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    shared = write_turn(s, "load the data", "loaded", tokens=500, cost=0.001)
    a = [
        write_turn(s, "fit a linear model", "The slope is 1.8 and R² is 0.71.", tools=2, tokens=1000, cost=0.01),
        write_turn(s, "plot residuals", "Residuals look fine.", tokens=2000, cost=0.02),
    ]
    s.label(a[-1][-1], "linear")
    s.checkout(shared[-1])
    b = [
        write_turn(s, "fit a random forest", "", tools=1, tokens=3000, cost=0.03, tool_error=True),
        write_turn(s, "why did it fail?", "", stop="error", error="429 rate limit", tokens=100, cost=0.0),
        write_turn(s, "try again", "The forest gets R² 0.83; the slope is not defined.", tokens=4000, cost=0.04),
    ]
    s.label(b[-1][-1], "forest")
    return s, {"shared": [shared], "a": a, "b": b}


def test_two_branches_from_their_common_ancestor(tmp_path):
    s, t = two_branches(tmp_path)
    c = s.compare("linear", "forest")
    assert isinstance(c, Comparison)
    assert c.ancestor_id == t["shared"][0][-1] and c.ancestor_preview == "loaded"
    lin, forest = c.branches
    assert (lin.name, lin.label, lin.leaf_id) == ("linear", "linear", t["a"][-1][-1])
    assert lin.entry_ids == [eid for turn in t["a"] for eid in turn]
    assert (lin.turns, lin.tool_calls, lin.tool_errors) == (2, 2, 0)
    assert lin.tokens == 3 * 1000 + 2000 and lin.cost == pytest.approx(0.05)
    assert lin.input_tokens == 3 * 900 + 1800 and lin.output_tokens == 3 * 100 + 200
    assert lin.stop_reasons == {"toolUse": 2, "stop": 2} and lin.final_stop_reason == "stop"
    assert lin.final_answer == "Residuals look fine."
    assert [turn.tokens for turn in lin.per_turn] == [3000, 2000]
    assert [turn.prompt for turn in lin.per_turn] == ["fit a linear model", "plot residuals"]
    assert (forest.turns, forest.tool_calls, forest.tool_errors) == (3, 1, 1)
    assert forest.stop_reasons == {"toolUse": 1, "stop": 2, "error": 1}
    assert forest.final_answer.startswith("The forest gets R² 0.83")
    assert forest.models == ["anthropic/claude-sonnet-4-5"]
    assert [turn.stop_reason for turn in forest.per_turn] == ["stop", "error", "stop"]


def test_refs_can_be_ids_prefixes_prompts_cells_and_markers(tmp_path):
    s, t = two_branches(tmp_path)
    end_a, end_b = t["a"][-1][-1], t["b"][-1][-1]
    # an id prefix, and a prompt id, which stands for its whole turn
    c = s.compare(end_a[:6], t["b"][-1][0])
    assert [b.leaf_id for b in c.branches] == [end_a, end_b]
    # a cell id: the end of that cell's latest run
    s.append_custom(
        CELL_TYPE, {"cellId": "cell-42", "startedFrom": t["shared"][0][-1], "produced": t["b"][-1], "end": end_b, "executionCount": 9}
    )
    c = s.compare("linear", "cell-42")
    assert c.branches[1].leaf_id == end_b and c.branches[1].cell_id == "cell-42"
    # a checkout marker stands for the entry it checked out
    s.checkout(end_a)
    marker = s.raw_entries()[-1]["id"]
    assert s.compare(marker, "forest").branches[0].leaf_id == end_a
    # one ref is compared with the current leaf
    assert [b.leaf_id for b in s.compare("forest").branches] == [end_b, end_a]


def test_bad_refs_are_named(tmp_path):
    s, _ = two_branches(tmp_path)
    with pytest.raises(EntryNotFoundError, match="nope"):
        s.compare("linear", "nope")
    with pytest.raises(TypeError, match="refs are entry ids"):
        s.compare("linear", 3)
    with pytest.raises(ValueError, match="limit"):
        s.compare(limit=0)
    lone = Session.in_memory()
    write_turn(lone, "hi", "hello")
    with pytest.raises(SessionError, match="fewer than two branches"):
        lone.compare()


def test_a_branch_that_contains_the_other_has_nothing_after_the_ancestor(tmp_path):
    s, t = two_branches(tmp_path)
    c = s.compare(t["a"][0][-1], "linear")
    first, second = c.branches
    assert c.ancestor_id == t["a"][0][-1]
    assert first.turns == 0 and first.entry_ids == [] and first.final_answer == "The slope is 1.8 and R² is 0.71."
    assert second.turns == 1


def test_duration_is_the_sum_of_each_turns_time(tmp_path):
    def entry(eid, parent, ts, role, text="", stop="stop"):
        message = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
        if role == "assistant":
            message.update(stopReason=stop, usage={"input": 10, "output": 5, "totalTokens": 15, "cost": {"total": 0.5}})
        return {"type": "message", "id": eid, "parentId": parent, "timestamp": f"2025-01-01T00:{ts}.000Z", "message": message}

    lines = [
        {"type": "session", "version": 3, "id": "h", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"},
        entry("u0", None, "00:00", "user", "start"),
        entry("a0", "u0", "00:01", "assistant", "ok"),
        entry("u1", "a0", "01:00", "user", "slow"),
        entry("a1", "u1", "01:30", "assistant", "done slowly"),
        entry("u2", "a1", "10:00", "user", "slow again"),  # nine idle minutes before it are not counted
        entry("a2", "u2", "10:12", "assistant", "done again"),
        entry("u3", "a0", "20:00", "user", "fast"),
        entry("a3", "u3", "20:02", "assistant", "done fast"),
    ]
    path = tmp_path / "timed.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    c = Session.open(path, readonly=True).compare("a2", "a3")
    slow, fast = c.branches
    assert [t.duration_s for t in slow.per_turn] == [30.0, 12.0] and slow.duration_s == 42.0
    assert fast.duration_s == 2.0
    assert slow.cost == pytest.approx(1.0) and fast.tokens == 15
    assert "42.0 s" in c.table_html() and "2.0 s" in c.table_html()


def test_an_entry_appended_much_later_does_not_stretch_the_duration(tmp_path):
    """A model change or label written today on a branch recorded a year ago is no part of any turn."""

    def msg(eid, parent, ts, role, text):
        message = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
        if role == "assistant":
            message.update(stopReason="stop", usage={"input": 10, "output": 5, "totalTokens": 15})
        return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": message}

    lines = [
        {"type": "session", "version": 3, "id": "h", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"},
        msg("u0", None, "2025-01-01T00:00:00.000Z", "user", "start"),
        msg("a0", "u0", "2025-01-01T00:00:01.000Z", "assistant", "ok"),
        msg("u1", "a0", "2025-01-01T00:01:00.000Z", "user", "old branch"),
        msg("a1", "u1", "2025-01-01T00:01:05.000Z", "assistant", "recorded"),
        {"type": "model_change", "id": "m1", "parentId": "a1", "timestamp": "2026-01-15T09:00:00.000Z"}
        | {"provider": "offline", "modelId": "echo"},
        {"type": "label", "id": "l1", "parentId": "m1", "timestamp": "2026-01-15T09:00:01.000Z", "targetId": "a1", "label": "old"},
        msg("u2", "a0", "2025-01-01T00:02:00.000Z", "user", "other branch"),
        msg("a2", "u2", "2025-01-01T00:02:03.000Z", "assistant", "fine"),
        # a later turn on the other branch, after a much later settings entry: its own time only
        {"type": "thinking_level_change", "id": "t2", "parentId": "a2", "timestamp": "2026-01-15T09:00:00.000Z", "thinkingLevel": "high"},
        msg("u3", "t2", "2026-01-15T09:00:10.000Z", "user", "again"),
        msg("a3", "u3", "2026-01-15T09:00:14.000Z", "assistant", "again done"),
    ]
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    c = Session.open(path, readonly=True).compare("l1", "a3")
    old, other = c.branches
    assert [t.duration_s for t in old.per_turn] == [5.0] and old.duration_s == 5.0
    assert [t.duration_s for t in other.per_turn] == [3.0, 4.0] and other.duration_s == 7.0
    assert "5.0 s" in c.table_html() and "min" not in str(c)


def test_a_retry_counts_as_the_rest_of_the_turn(tmp_path):
    s = Session.create(path=tmp_path / "r.jsonl")
    ids = write_turn(s, "summarise", "", stop="error", error="overloaded", tokens=10)
    s.checkout(ids[0])  # the agent retries from the prompt: the new reply is a sibling of the failed one
    ok = s.append_message(AssistantMessage(content=[TextContent(text="The summary.")], usage=Usage(total_tokens=40)))
    c = s.compare(ids[-1], ok)
    assert c.ancestor_id == ids[0]
    failed, retried = c.branches
    assert failed.turns == 0 and len(failed.per_turn) == 1 and failed.per_turn[0].stop_reason == "error"
    assert failed.final_answer == "(error: overloaded)"
    assert retried.per_turn[0].tokens == 40 and retried.final_answer == "The summary."


def test_n_branches_as_a_data_frame_and_an_html_table(tmp_path, monkeypatch):
    s, t = two_branches(tmp_path)
    s.checkout(t["shared"][0][-1])
    write_turn(s, "a third idea", "third", tokens=7)
    c = s.compare("linear", "forest", s.leaf_id)
    frame = c.to_frame()
    assert list(frame.index) == ["linear", "forest", s.leaf_id]
    assert frame.loc["forest", "turns"] == 3 and frame.loc[s.leaf_id, "tokens"] == 7
    assert {"tool_calls", "cost", "duration_s", "stop_reasons", "final_answer", "final_stop_reason"} <= set(frame.columns)
    assert c.table() is not None and c.table().shape == (3, len(frame.columns))
    # without pandas: an HTML table, and a clear error from to_frame
    monkeypatch.setitem(sys.modules, "pandas", None)
    table = c.table()
    assert "<table" in table._repr_html_() and "forest" in table._repr_html_()
    with pytest.raises(ImportError, match="needs pandas"):
        c.to_frame()
    # with no refs: the most recent tips
    everything = s.compare()
    assert {b.leaf_id for b in everything.branches} == {t["a"][-1][-1], t["b"][-1][-1], s.leaf_id}


def test_the_side_by_side_diff_of_the_final_answers(tmp_path):
    s = Session.create(path=tmp_path / "d.jsonl")
    root = write_turn(s, "evaluate", "ok")
    a = write_turn(s, "on the test set", "The model fits well: R² is 0.71 on the test set.")[-1]
    s.checkout(root[-1])
    b = write_turn(s, "on the test set again", "The model fits badly: R² is 0.35 on the test set.")[-1]
    d = s.compare(a, b).diff()
    page = d._repr_html_()
    deleted = [part.split(">", 1)[1].split("</del>")[0] for part in page.split("<del ")[1:]]
    inserted = [part.split(">", 1)[1].split("</ins>")[0] for part in page.split("<ins ")[1:]]
    assert deleted == ["well:", "0.71"] and inserted == ["badly:", "0.35"]
    assert str(d).startswith(f"--- {a}\n+++ {b}") and "-The model fits well" in str(d)
    assert 0.5 < d.ratio < 1
    s2, _ = two_branches(tmp_path)
    same = s2.compare("linear", "linear").diff()
    assert same.ratio == 1 and "are the same" in str(same)
    html_escaped = Session.in_memory()
    write_turn(html_escaped, "q", "<b>bold</b>")
    other = write_turn(html_escaped, "q2", "<script>x</script>")
    diff = html_escaped.compare(html_escaped.raw_entries()[1]["id"], other[-1]).diff()._repr_html_()
    assert "<script>" not in diff and "&lt;script&gt;" in diff


def test_the_figure_is_svg_with_one_mark_per_turn_and_branch(tmp_path):
    s, _ = two_branches(tmp_path)
    c = s.compare("linear", "forest")
    svg = c.figure().svg
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert len(bars) == 2 * (2 + 3)  # tokens and cost panels, 2 + 3 turns
    titles = [r.find(f"{ns}title").text for r in bars]
    assert "forest, turn 3: 4.0k" in titles and "linear, turn 1: $0.030" in titles
    page = c._repr_html_()
    assert "Common ancestor" in page and "<svg" in page and "pi-answer-diff" in page
    assert "forest" in str(c) and "common ancestor" in str(c)


def test_many_turns_draw_lines(tmp_path):
    s = Session.create(path=tmp_path / "long.jsonl")
    root = write_turn(s, "start", "ok")
    for i in range(30):
        write_turn(s, f"a{i}", "x", tokens=100 + i)
    end_a = s.leaf_id
    s.checkout(root[-1])
    for i in range(30):
        write_turn(s, f"b{i}", "y", tokens=200 + i)
    svg = s.compare(end_a, s.leaf_id).figure().svg
    assert svg.count("<polyline") == 4 and svg.count("<circle") == 4 * 30


def test_with_no_refs_a_labelled_turn_that_was_continued_is_not_a_tip(tmp_path):
    # a label entry is appended after the leaf and the next turn hangs under it (pi's tree), and
    # a model change may end a branch: neither makes the message before it the end of a branch
    s = Session.create(path=tmp_path / "tips.jsonl")
    shared = write_turn(s, "load the data", "loaded")
    a1 = write_turn(s, "fit a linear model", "slope 1.8")
    s.label(a1[-1], "linear")
    a2 = write_turn(s, "plot residuals", "fine")
    s.checkout(shared[-1])
    b = write_turn(s, "fit a forest", "R² 0.83")
    s.append_model_change("openai", "gpt-4.1")
    c = s.compare()
    assert [br.leaf_id for br in c.branches] == [a2[-1], b[-1]]
    assert c.ancestor_id == shared[-1]
