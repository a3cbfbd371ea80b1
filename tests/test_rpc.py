"""``pi-jupyter rpc``, driven as a subprocess exactly as a client drives it: JSON lines in, JSON lines out.

The offline model answers (no key, no network) except in the wire-server test. A run that
must still be going when the next command arrives calls the ``bash`` tool with a command
that waits for a file the test creates (``release``), so nothing depends on timing; the
timeouts below only keep a broken server from hanging the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from plugins import install_extensions
from rpc_client import KEY, TIMEOUT, WAIT, entries, release, texts
from wire.server import openai_reply

from pi_jupyter.session import Session

# ---------------------------------------------------------------------------- the basics


def test_prompt_streams_pi_events_and_end_of_input_waits_for_the_run_to_be_saved(rpc, tmp_path):
    session_file = tmp_path / "s.jsonl"
    server = rpc("--session", str(session_file))
    server.send({"id": "p1", "type": "prompt", "message": "Hello from the client"})
    assert server.finish() == 0  # stdin closed right after the prompt: the run still completes
    first = server.seen[0]
    assert first == {"id": "p1", "type": "response", "command": "prompt", "success": True, "data": {"disposition": "started"}}
    kinds = [o["type"] for o in server.seen[1:]]
    assert kinds[0] == "agent_start" and kinds[-2:] == ["agent_end", "agent_settled"]  # pi 1.6 ends with agent_settled
    assert {"turn_start", "message_start", "message_update", "message_end", "turn_end"} <= set(kinds)
    update = next(o for o in server.seen if o["type"] == "message_update")
    assert set(update) == {"type", "usage", "assistantMessageEvent"}  # pi 1.6's shape by default (its toJsonEvent)
    end = server.seen[-2]
    assert server.seen[-1] == {"type": "agent_settled", "aborted": False}
    assert texts(end["messages"])[0] == "Hello from the client"
    assert "Hello from the client" in texts(end["messages"])[-1]
    # one compact JSON object per line
    for raw in server.raw:
        assert raw == json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    # the run was persisted before the process exited
    reopened = Session.open(session_file)
    roles = [m.role for m in reopened.context().messages]
    assert roles == ["system", "user", "assistant"]  # the prompt recorded first, as pi 1.x does
    assert "Hello from the client" in reopened.context().messages[2].text
    assert b"offline" in b"".join(server.stderr)  # the note that the offline model answers


def test_message_update_leaves_the_partial_message_out_unless_full_updates_is_asked(rpc, tmp_path):
    server = rpc("--no-session", "--delta-only")  # --delta-only: the default now, still accepted
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    server.send({"id": "p", "type": "prompt", "message": "short", "images": [image]})
    assert server.finish() == 0
    user = next(o for o in server.seen if o["type"] == "message_start" and o["message"]["role"] == "user")["message"]
    assert user["content"] == [{"type": "text", "text": "short"}, image]  # pi's order: text first, then images
    updates = [o for o in server.seen if o["type"] == "message_update"]
    assert updates and all("message" not in o and "partial" not in o["assistantMessageEvent"] for o in updates)
    assert all(set(o) == {"type", "usage", "assistantMessageEvent"} for o in updates)  # pi 1.6's toJsonEvent shape
    deltas = "".join(o["assistantMessageEvent"].get("delta", "") for o in updates if o["assistantMessageEvent"]["type"] == "text_delta")
    final = next(o for o in server.seen if o["type"] == "message_end" and o["message"]["role"] == "assistant")
    assert deltas == texts([final["message"]])[0]
    full = rpc("--no-session", "--full-updates")  # pi 0.73's shape: the whole partial message in every update
    full.send({"id": "p", "type": "prompt", "message": "short"})
    assert full.finish() == 0
    updates = [o for o in full.seen if o["type"] == "message_update"]
    assert updates and all(set(o) == {"type", "message", "assistantMessageEvent"} for o in updates)
    final = next(o for o in full.seen if o["type"] == "message_end" and o["message"]["role"] == "assistant")
    assert texts([updates[-1]["message"]]) == texts([final["message"]])


def test_malformed_lines_and_failing_commands_are_answered_with_their_id_and_the_server_goes_on(rpc, tmp_path):
    server = rpc("--session", str(tmp_path / "s.jsonl"))
    script: list[bytes] = [
        b'{"id":"a","type":"get_state"}\n',
        b"this is not json\n",
        b'{"id":"b","type":"get_state", oops\n',
        b"[1, 2, 3]\n",
        b'{"id":"c"}\n',
        b'{"id":"d","type":"teleport"}\n',
        b'{"id":"e","type":"prompt"}\n',
        b'{"id":"f","type":"set_session_name","name":"   "}\n',
        b'{"id":"g","type":"switch_session","sessionPath":"nowhere.jsonl"}\n',
        b'{"id":"h","type":"checkout","entryId":"no-such-entry"}\n',
        b'{"id":"i","type":"set_model","provider":"nope","modelId":"x"}\n',
        b'{"id":"j","type":"set_thinking_level","level":"enormous"}\n',
        b'{"id":7,"type":"fork","entryId":"zzzz"}\n',
        b'{"id":"k","type":"set_steering_mode","mode":"sometimes"}\n',
        b"\xff\xfe not utf-8\n",
        '{"id":"l","type":"set_session_name","name":"line\u2028separator\u2029inside"}\n'.encode(),
        b'{"id":"m","type":"get_state"}\r\n',
        b"\n",
        b'{"id":"n","type":"get_state"}',  # the last line may lack its LF
    ]
    for line in script:
        server.send(line)
    assert server.finish() == 0
    responses = [o for o in server.seen if o["type"] == "response"]
    # one response per non-blank line, in the order the lines came
    assert len(responses) == len(script) - 1
    by_id = {r.get("id"): r for r in responses if "id" in r}
    assert [r.get("id") for r in responses] == ["a", None, "b", None, "c", "d", "e", "f", "g", "h", "i", "j", 7, "k", None, "l", "m", "n"]
    assert responses[1]["command"] == "parse" and responses[1]["error"].startswith("Failed to parse command")
    assert by_id["b"]["command"] == "parse" and by_id["b"]["success"] is False  # the id was read from a broken line
    assert responses[3]["command"] == "parse" and "JSON object" in responses[3]["error"]
    assert by_id["c"]["command"] == "parse" and "type" in by_id["c"]["error"]
    assert by_id["d"]["command"] == "teleport" and "Unknown command" in by_id["d"]["error"]
    assert by_id["e"]["command"] == "prompt" and "message" in by_id["e"]["error"]
    assert by_id["f"] == {
        "id": "f",
        "type": "response",
        "command": "set_session_name",
        "success": False,
        "error": "Session name cannot be empty",
    }
    assert by_id["g"]["command"] == "switch_session" and "nowhere.jsonl" in by_id["g"]["error"]
    assert by_id["h"]["command"] == "checkout" and "no-such-entry" in by_id["h"]["error"]
    assert by_id["i"]["command"] == "set_model" and "nope" in by_id["i"]["error"]
    assert by_id["j"]["command"] == "set_thinking_level" and "enormous" in by_id["j"]["error"]
    assert by_id[7]["command"] == "fork" and by_id[7]["success"] is False
    assert by_id["k"]["command"] == "set_steering_mode" and "mode" in by_id["k"]["error"]
    assert responses[14]["command"] == "parse" and "UTF-8" in responses[14]["error"]
    assert by_id["l"]["success"] is True  # U+2028/U+2029 inside a string did not split the line
    assert by_id["m"]["success"] is True and by_id["n"]["success"] is True  # CR stripped; unterminated last line read
    assert by_id["n"]["data"]["sessionName"] == "line\u2028separator\u2029inside"
    assert all(r["success"] is False for r in responses if r.get("id") not in ("a", "l", "m", "n"))


def test_state_messages_stats_name_model_and_thinking(rpc, tmp_path):
    session_file = tmp_path / "s.jsonl"
    server = rpc("--session", str(session_file), "--thinking", "low")
    state = server.data({"id": "s0", "type": "get_state"})
    assert state["model"] == {
        "id": "echo",
        "name": "Offline echo (not a language model)",
        "api": "offline",
        "provider": "offline",
        "reasoning": True,
        "input": ["text"],
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0},
        "contextWindow": 128000,
        "maxTokens": 16384,
    }
    assert state["thinkingLevel"] == "low" and state["isStreaming"] is False and state["isCompacting"] is False
    assert state["steeringMode"] == state["followUpMode"] == "one-at-a-time"
    assert state["sessionFile"] == str(session_file) and state["messageCount"] == 0 and state["pendingMessageCount"] == 0
    assert "sessionName" not in state
    assert server.data({"id": "t0", "type": "get_last_assistant_text"}) == {"text": None}

    server.send({"id": "p", "type": "prompt", "message": 'call ls with {"path": "."}'})
    server.until("agent_end")
    messages = server.data({"id": "m", "type": "get_messages"})["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "toolResult", "assistant"]
    stats = server.data({"id": "st", "type": "get_session_stats"})
    assert stats["sessionFile"] == str(session_file) and stats["sessionId"] == state["sessionId"]
    counts = [stats[k] for k in ("userMessages", "assistantMessages", "toolCalls", "toolResults", "totalMessages")]
    assert counts == [1, 2, 1, 1, 5]  # the total counts the recorded system message
    usage = [m["usage"] for m in messages if m["role"] == "assistant"]
    assert stats["tokens"]["input"] == sum(u["input"] for u in usage) > 0
    assert stats["tokens"]["total"] == sum(stats["tokens"][k] for k in ("input", "output", "cacheRead", "cacheWrite"))
    assert stats["cost"] == 0
    assert stats["contextUsage"]["contextWindow"] == 128000 and stats["contextUsage"]["tokens"] > 0
    last = server.data({"id": "t1", "type": "get_last_assistant_text"})["text"]
    assert last == texts([messages[-1]])[0].strip()

    assert server.data({"id": "n", "type": "set_session_name", "name": "  experiment one  "}) is None
    assert server.data({"id": "th", "type": "set_thinking_level", "level": "high"}) is None
    assert server.data({"id": "sm", "type": "set_steering_mode", "mode": "all"}) is None
    model = server.data({"id": "mo", "type": "set_model", "provider": "offline", "modelId": "echo"})
    assert model["id"] == "echo" and model["provider"] == "offline"
    state = server.data({"id": "s1", "type": "get_state"})
    assert state["sessionName"] == "experiment one" and state["thinkingLevel"] == "high" and state["steeringMode"] == "all"
    assert state["messageCount"] == 5  # with the recorded system message
    # pi 1.6's notes of what changed: the name as stored, the level once (set_model kept it, so no second line)
    assert [o for o in server.seen if o["type"] in ("session_info_changed", "thinking_level_changed")] == [
        {"type": "session_info_changed", "name": "experiment one"},
        {"type": "thinking_level_changed", "level": "high"},
    ]
    assert server.finish() == 0
    reopened = Session.open(session_file)
    assert reopened.name == "experiment one" and reopened.context().thinking_level == "high"


def test_compact_summarizes_history_and_its_failure_keeps_the_id(rpc, tmp_path):
    session_file = tmp_path / "s.jsonl"
    server = rpc("--session", str(session_file))
    small = server.call({"id": "c0", "type": "compact"})
    nothing = "Nothing to compact (session too small)"
    assert small == {"id": "c0", "type": "response", "command": "compact", "success": False, "error": nothing}
    for i in range(4):  # ~6k tokens each, so the default 20k of recent history leaves something to summarize
        server.send({"id": f"p{i}", "type": "prompt", "message": f"fact number {i}: " + "words " * 6000})
        server.until("agent_end")
    before = server.data({"id": "s0", "type": "get_state"})["messageCount"]
    result = server.data({"id": "c", "type": "compact", "customInstructions": "keep the facts"})
    assert {"summary", "firstKeptEntryId", "tokensBefore"} <= set(result) and "fact number 0" in result["summary"]
    state = server.data({"id": "s", "type": "get_state"})
    assert state["isCompacting"] is False and state["messageCount"] < before
    messages = server.data({"id": "m", "type": "get_messages"})["messages"]
    assert [m["role"] for m in messages[:2]] == ["system", "compactionSummary"]  # the prompt snapshot leads
    # pi's rule: the context size is unknown after a compaction until a reply reports usage
    assert server.data({"id": "st", "type": "get_session_stats"})["contextUsage"]["tokens"] is None
    assert server.finish() == 0
    saved = [e for e in entries(session_file) if e["type"] == "compaction"]
    assert len(saved) == 1 and saved[0]["firstKeptEntryId"] == result["firstKeptEntryId"]
    assert b"Traceback" not in b"".join(server.stderr)  # "nothing to compact" is an answer, not a crash


# ---------------------------------------------------------------------------- runs in flight


def test_abort_stops_a_running_prompt_and_the_aborted_answer_is_saved(rpc, tmp_path):
    session_file = tmp_path / "s.jsonl"
    server = rpc("--session", str(session_file), "--tools", "bash", "--delta-only")
    server.send({"id": "p", "type": "prompt", "message": WAIT})
    assert server.response("p")["success"] is True
    server.until("tool_execution_start")  # the run is now waiting inside the bash tool
    state = server.data({"id": "s", "type": "get_state"})
    assert state["isStreaming"] is True
    server.send({"id": "x", "type": "abort"})
    end = server.until("agent_end")
    assert end["messages"][-1]["role"] == "assistant" and end["messages"][-1]["stopReason"] == "aborted"
    tool_result = next(m for m in end["messages"] if m["role"] == "toolResult")
    assert tool_result["isError"] is True
    assert server.response("x") == {"id": "x", "type": "response", "command": "abort", "success": True}
    assert server.data({"id": "s2", "type": "get_state"})["isStreaming"] is False
    # a prompt read before an abort and not started yet is dropped, deterministically
    server.send(b'{"id":"p1","type":"prompt","message":"never runs"}\n{"id":"y","type":"abort"}\n')
    dropped = server.response("p1")
    assert dropped["success"] is False and "aborted before it started" in dropped["error"]
    assert server.response("y")["success"] is True
    # the server takes new prompts after an abort
    server.send({"id": "p2", "type": "prompt", "message": "after the abort"})
    server.until("agent_end")
    assert server.finish() == 0
    saved = [e["message"] for e in entries(session_file) if e["type"] == "message"]
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert saved[4]["stopReason"] == "aborted" and texts(saved[1:])[4] == "after the abort"
    assert [o["type"] for o in server.seen].count("agent_start") == 2
    assert not (tmp_path / "release").exists()


def test_a_second_prompt_during_a_run_needs_streaming_behavior_and_queues_like_pi(rpc, tmp_path):
    server = rpc("--no-session", "--tools", "bash", "--delta-only")
    server.send({"id": "p1", "type": "prompt", "message": WAIT})
    server.until("tool_execution_start")
    busy = server.call({"id": "p2", "type": "prompt", "message": "too early"})
    assert busy["success"] is False and busy["command"] == "prompt"
    assert "streamingBehavior" in busy["error"]
    assert server.call({"id": "p3", "type": "prompt", "message": "queued follow-up", "streamingBehavior": "followUp"})["success"]
    assert server.call({"id": "s1", "type": "steer", "message": "steering note"})["success"]
    assert server.call({"id": "f1", "type": "follow_up", "message": "second follow-up"})["success"]
    state = server.data({"id": "st", "type": "get_state"})
    assert state["isStreaming"] is True and state["pendingMessageCount"] == 3
    refused = server.call({"id": "co", "type": "checkout", "entryId": None})
    assert refused["success"] is False and "running" in refused["error"]
    queue_updates = [o for o in server.seen if o["type"] == "queue_update"]
    assert queue_updates[-1] == {
        "type": "queue_update",
        "steering": ["steering note"],
        "followUp": ["queued follow-up", "second follow-up"],
    }
    release(tmp_path)
    end = server.until("agent_end")
    said = [m for m in end["messages"] if m["role"] != "system"]  # the recorded prompt's content is a string
    users = [t for m, t in zip(said, texts(said), strict=True) if m["role"] == "user"]
    # steering goes in before the next model call; follow-ups when the agent would stop, in order
    assert users == [WAIT, "steering note", "queued follow-up", "second follow-up"]
    assert server.data({"id": "st2", "type": "get_state"})["pendingMessageCount"] == 0
    assert not any(t == "too early" for t in texts(end["messages"]))
    assert server.finish() == 0


def test_commands_are_serialized_and_answered_in_order(rpc, tmp_path):
    server = rpc("--session", str(tmp_path / "s.jsonl"))
    lines = [
        {"id": "1", "type": "set_session_name", "name": "first"},
        {"id": "2", "type": "get_state"},
        {"id": "3", "type": "set_session_name", "name": "second"},
        {"id": "4", "type": "get_state"},
        {"id": "5", "type": "set_thinking_level", "level": "off"},
        {"id": "6", "type": "get_state"},
    ]
    server.send(b"".join(json.dumps(c).encode() + b"\n" for c in lines))  # one write: the server reads them together
    assert server.finish() == 0
    responses = [o for o in server.seen if o["type"] == "response"]
    assert [r["id"] for r in responses] == ["1", "2", "3", "4", "5", "6"]
    assert responses[1]["data"]["sessionName"] == "first"
    assert responses[3]["data"]["sessionName"] == "second"
    assert responses[5]["data"]["thinkingLevel"] == "off"


def test_sigterm_aborts_the_run_saves_it_and_exits_143(rpc, tmp_path):
    session_file = tmp_path / "s.jsonl"
    server = rpc("--session", str(session_file), "--tools", "bash", "--delta-only")
    server.send({"id": "p", "type": "prompt", "message": WAIT})
    server.until("tool_execution_start")
    server.proc.send_signal(signal.SIGTERM)
    end = server.until("agent_end")
    assert end["messages"][-1]["stopReason"] == "aborted"
    assert server.proc.wait(timeout=TIMEOUT) == 143
    saved = [e["message"]["role"] for e in entries(session_file) if e["type"] == "message"]
    assert saved == ["system", "user", "assistant", "toolResult", "assistant"]


# ---------------------------------------------------------------------------- the tree


def test_get_tree_and_checkout_make_a_branch_that_survives_a_restart(rpc, tmp_path):
    session_file = tmp_path / "s.jsonl"
    server = rpc("--session", str(session_file))
    for i, text in enumerate(["first question", "second question"]):
        server.send({"id": f"p{i}", "type": "prompt", "message": text})
        server.until("agent_end")
    tree = server.data({"id": "t", "type": "get_tree", "flat": True})
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert tree["leafId"] == tree["path"][-1] and len(tree["roots"]) == 1
    user_nodes = [n for n in tree["nodes"] if n.get("role") == "user"]
    assert [n["preview"] for n in user_nodes] == ["user: first question", "user: second question"]
    for node in tree["nodes"]:
        assert node["onPath"] is True
        for child in node["children"]:
            assert nodes[child]["parentId"] == node["id"]
    first_answer = next(n for n in tree["nodes"] if n.get("role") == "assistant")
    moved = server.data({"id": "c", "type": "checkout", "entryId": first_answer["id"], "label": "after-first"})
    # as in pi, the label entry is appended under the target, so the leaf is that label entry
    label_node = {n["id"]: n for n in server.data({"id": "t1", "type": "get_tree", "flat": True})["nodes"]}[moved["leafId"]]
    assert label_node["type"] == "label" and label_node["parentId"] == first_answer["id"]
    assert server.data({"id": "s", "type": "get_state"})["messageCount"] == 3  # system, question, answer
    server.send({"id": "p2", "type": "prompt", "message": "another second question"})
    server.until("agent_end")
    tree = server.data({"id": "t2", "type": "get_tree", "flat": True})
    nodes = {n["id"]: n for n in tree["nodes"]}
    branch_point = nodes[first_answer["id"]]
    assert branch_point.get("label") == "after-first"
    old, new = (next(n for n in tree["nodes"] if n["preview"] == f"user: {t}") for t in ("second question", "another second question"))

    def message_parent(node):
        parent = nodes[node["parentId"]]
        return message_parent(parent) if parent["type"] == "label" else parent

    assert message_parent(old)["id"] == message_parent(new)["id"] == first_answer["id"]  # two sibling branches
    assert (old["onPath"], new["onPath"], branch_point["onPath"]) == (False, True, True)
    assert not any(n.get("customType") == "pi_jupyter.checkout" for n in tree["nodes"])  # markers are hidden
    # with a summary of the branch being left (the offline model writes it)
    summarized = server.data({"id": "cs", "type": "checkout", "entryId": first_answer["id"], "summarize": True})
    tree = server.data({"id": "t3", "type": "get_tree", "flat": True})
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert tree["leafId"] == summarized["leafId"]
    summary = [nodes[i] for i in tree["path"] if nodes[i]["type"] == "branch_summary"]
    assert len(summary) == 1 and summary[0]["parentId"] == first_answer["id"]
    # checkout by label
    back = first_answer["id"]
    assert server.data({"id": "c2", "type": "checkout", "entryId": "after-first"}) == {
        "leafId": back,
        "line": f"checked out {back}; leaf is now {back}",
    }
    assert server.finish() == 0
    reopened = Session.open(session_file)
    assert reopened.leaf_id == first_answer["id"]
    assert [m.role for m in reopened.context().messages] == ["system", "user", "assistant"]


def test_fork_new_session_and_switch_session(rpc, tmp_path):
    original = tmp_path / "s.jsonl"
    server = rpc("--session", str(original))
    for i, text in enumerate(["question one", "question two"]):
        server.send({"id": f"p{i}", "type": "prompt", "message": text})
        server.until("agent_end")
    server.data({"id": "n", "type": "set_session_name", "name": "the original"})
    before = original.read_bytes()
    tree = server.data({"id": "t", "type": "get_tree", "flat": True})
    second_user = [n for n in tree["nodes"] if n.get("role") == "user"][1]
    an_assistant = next(n for n in tree["nodes"] if n.get("role") == "assistant")

    bad = server.call({"id": "f0", "type": "fork", "entryId": an_assistant["id"]})
    assert bad["success"] is False and bad["command"] == "fork" and "user message" in bad["error"]

    # fork: the new session holds the branch before the selected user message, whose text comes back
    assert server.data({"id": "f", "type": "fork", "entryId": second_user["id"]}) == {"text": "question two", "cancelled": False}
    state = server.data({"id": "s", "type": "get_state"})
    forked = Path(state["sessionFile"])
    assert forked != original and forked.parent == original.parent and forked.exists()
    assert state["messageCount"] == 3  # system, question, answer
    assert texts(server.data({"id": "m", "type": "get_messages"})["messages"])[0] == "question one"
    assert json.loads(forked.read_text().splitlines()[0])["parentSession"] == str(original)
    assert original.read_bytes() == before  # forking never touches the source

    # new_session: a fresh file beside the current one
    assert server.data({"id": "ns", "type": "new_session", "parentSession": str(original)}) == {"cancelled": False}
    state = server.data({"id": "s2", "type": "get_state"})
    fresh = Path(state["sessionFile"])
    assert fresh not in (original, forked) and fresh.parent == original.parent
    assert state["messageCount"] == 0 and "sessionName" not in state
    assert json.loads(fresh.read_text().splitlines()[0])["parentSession"] == str(original)
    server.send({"id": "p9", "type": "prompt", "message": "in the fresh session"})
    server.until("agent_end")

    # switch_session: back to the original, with its messages and name
    assert server.data({"id": "sw", "type": "switch_session", "sessionPath": str(original)}) == {"cancelled": False}
    state = server.data({"id": "s3", "type": "get_state"})
    assert state["sessionFile"] == str(original) and state["sessionName"] == "the original" and state["messageCount"] == 5
    assert server.finish() == 0
    assert [m.role for m in Session.open(fresh).context().messages] == ["system", "user", "assistant"]


def test_new_session_during_a_run_aborts_it_first_and_keeps_the_aborted_answer(rpc, tmp_path):
    original = tmp_path / "s.jsonl"
    server = rpc("--session", str(original), "--tools", "bash", "--delta-only")
    server.send({"id": "p", "type": "prompt", "message": WAIT})
    server.until("tool_execution_start")
    assert server.data({"id": "ns", "type": "new_session"}) == {"cancelled": False}
    end = next(o for o in server.seen if o["type"] == "agent_end")  # came before the response
    assert end["messages"][-1]["stopReason"] == "aborted"
    assert server.data({"id": "s", "type": "get_state"})["sessionFile"] != str(original)
    assert server.finish() == 0
    saved = [e["message"] for e in entries(original) if e["type"] == "message"]
    assert saved[-1]["role"] == "assistant" and saved[-1]["stopReason"] == "aborted"


# ---------------------------------------------------------------------------- secrets and a real SDK


def test_a_key_never_reaches_the_output_even_when_the_model_repeats_it(rpc, tmp_path):
    server = rpc("--no-session", "--delta-only", env={"OPENAI_API_KEY": KEY})
    server.send({"id": "p", "type": "prompt", "message": f"my key is {KEY} please remember"})
    assert server.finish() == 0
    output = b"".join(server.raw)
    assert KEY.encode() not in output and KEY.encode() not in b"".join(server.stderr)
    assert b"REDACTED" in output  # the echo was there, with the key replaced


def test_wire_server_openai_model_streams_aborts_and_keeps_the_key_out(rpc, tmp_path, wire):
    session_file = tmp_path / "s.jsonl"
    wire.require_key = KEY
    wire.queue("openai", openai_reply(text="one two three four five six seven eight nine ten " * 20, pieces=200).slow(0.02))
    wire.queue("openai", openai_reply(text="The second answer.", usage={"prompt_tokens": 12, "completion_tokens": 4}))
    server = rpc("--session", str(session_file), "--model", "openai/gpt-test", "--base-url", wire.openai_url, env={"OPENAI_API_KEY": KEY})
    state = server.data({"id": "s", "type": "get_state"})
    assert state["model"]["provider"] == "openai" and state["model"]["id"] == "gpt-test"
    assert state["model"]["baseUrl"] == wire.openai_url.rstrip("/") and "headers" not in state["model"]

    server.send({"id": "p1", "type": "prompt", "message": "stream a long answer"})
    server.until(lambda o: o.get("type") == "message_update" and o["assistantMessageEvent"]["type"] == "text_delta")
    server.send({"id": "x", "type": "abort"})
    end = server.until("agent_end")
    aborted = end["messages"][-1]
    assert aborted["stopReason"] == "aborted" and texts([aborted])[0]  # the partial text is kept
    assert server.response("x")["success"] is True

    server.send({"id": "p2", "type": "prompt", "message": "now answer briefly"})
    end = server.until("agent_end")
    assert texts([end["messages"][-1]]) == ["The second answer."]
    assert server.data({"id": "t", "type": "get_last_assistant_text"}) == {"text": "The second answer."}
    assert server.finish() == 0

    assert wire.requests[-1].headers["authorization"] == f"Bearer {KEY}"  # the key was used...
    assert KEY.encode() not in b"".join(server.raw) + b"".join(server.stderr)  # ...and never shown
    assert KEY not in session_file.read_text()
    saved = [e["message"] for e in entries(session_file) if e["type"] == "message"]
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "user", "assistant"]
    assert saved[2]["stopReason"] == "aborted" and saved[4]["model"] == "gpt-test"


def test_a_model_without_its_key_is_refused_before_serving(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PI_JUPYTER_MODEL")}
    done = subprocess.run(
        [sys.executable, "-m", "pi_jupyter", "rpc", "--no-session", "--model", "openai/gpt-4.1"],
        input=b"",
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert b"OPENAI_API_KEY" in done.stderr


def test_abort_during_compact_leaves_the_session_file_as_it_was(rpc, tmp_path, wire):
    """The summary request is on the wire (the server has it) when abort arrives: compact fails with
    its own id, nothing is written, and the server goes on."""
    import time

    session_file = tmp_path / "s.jsonl"
    for i in range(4):
        wire.queue("openai", openai_reply(text=f"noted fact {i}", usage={"prompt_tokens": 100 + 6000 * i, "completion_tokens": 4}))
    wire.queue("openai", openai_reply(text="## Goal\n" + "summary words " * 100, pieces=200).slow(0.05))
    server = rpc("--session", str(session_file), "--model", "openai/gpt-test", "--base-url", wire.openai_url, env={"OPENAI_API_KEY": KEY})
    for i in range(4):
        server.send({"id": f"p{i}", "type": "prompt", "message": f"fact number {i}: " + "words " * 6000})
        server.until("agent_end")
    before = session_file.read_bytes()
    server.send({"id": "c", "type": "compact"})
    deadline = time.monotonic() + TIMEOUT
    while len(wire.requests) < 5:  # the summary request reached the server: the compaction is running
        assert time.monotonic() < deadline, "the summary request never came"
        time.sleep(0.01)
    assert "<conversation>" in json.dumps(wire.requests[4].body)
    server.send({"id": "x", "type": "abort"})
    replies = {}
    while len(replies) < 2:  # abort is answered at once; compact when its summary has stopped
        reply = server.until("response")
        replies[reply["id"]] = reply
    assert replies["c"] == {"id": "c", "type": "response", "command": "compact", "success": False, "error": "Summarization was aborted"}
    assert replies["x"]["success"] is True
    assert session_file.read_bytes() == before
    state = server.data({"id": "s", "type": "get_state"})
    assert state["isCompacting"] is False and state["messageCount"] == 9  # with the recorded system message
    assert server.finish() == 0
    assert session_file.read_bytes() == before
    assert b"Traceback" not in b"".join(server.stderr)  # an expected failure is one line, not a crash report


def test_installed_extensions_are_loaded_for_every_session_and_rebuild_their_state(rpc, tmp_path):
    """Extensions from the pi_jupyter.extensions entry point group run in rpc mode too: their
    state comes back from the session on a restart, each switched-to session gets its own, and a
    broken one is an extension_error line."""
    env = install_extensions(
        tmp_path,
        {"runs": "runs_ext:Runs", "broken": "runs_ext:Broken"},
        (
            "class Runs:\n"
            "    def setup(self, ctx):\n"
            "        self.runs = len(ctx.entries('runs', branch=False))\n"
            "    def before_prompt(self, text, ctx):\n"
            "        return f'runs so far: {self.runs}'\n"
            "    def on_event(self, event, ctx):\n"
            "        if event.type == 'agent_end':\n"
            "            ctx.append_entry('runs', {'n': self.runs})\n"
            "            self.runs += 1\n"
            "class Broken:\n"
            "    pass\n"
        ),
    )
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"

    def notes(path: Path) -> list[str]:
        return [e["content"] for e in entries(path) if e["type"] == "custom_message" and e["customType"] == "runs"]

    server = rpc("--session", str(first), env=env)
    server.send({"id": "p1", "type": "prompt", "message": "one"})
    server.until("agent_end")
    server.send({"id": "p2", "type": "prompt", "message": "two"})
    server.until("agent_end")
    assert server.finish() == 0
    errors = [o for o in server.seen if o["type"] == "extension_error"]
    assert errors == [{"type": "extension_error", "extensionPath": "broken", "event": "load", "error": errors[0]["error"]}]
    assert notes(first) == ["runs so far: 0", "runs so far: 1"]
    announced = [o["entry"] for o in server.seen if o["type"] == "entry_appended"]  # pi 1.6's event for appendEntry
    assert [(e["type"], e["customType"]) for e in announced] == [("custom", "runs"), ("custom", "runs")]

    server = rpc("--session", str(first), env=env)  # a restart: the count comes back from the file
    server.send({"id": "p3", "type": "prompt", "message": "three"})
    server.until("agent_end")
    Session.create(path=second).close()
    assert server.data({"id": "sw", "type": "switch_session", "sessionPath": str(second)}) == {"cancelled": False}
    server.send({"id": "p4", "type": "prompt", "message": "four"})
    server.until("agent_end")
    assert server.finish() == 0
    assert notes(first) == ["runs so far: 0", "runs so far: 1", "runs so far: 2"]
    assert notes(second) == ["runs so far: 0"]  # the other session's own state
