"""Rewind from a script: the RPC's ``checkout`` moves the conversation and its world, or one of them, and says which.

A real ``pi-jupyter rpc`` server (the offline model told to call ``python`` and ``write``), as
another program drives it: the variables of the server's namespace and the files of its folder
follow a ``checkout``, stay with ``"rewind": "conversation"``, or come alone with
``"rewind": "world"``; the answer's ``line`` says what moved.
"""

from __future__ import annotations

import json

from rpc_client import entries


def _turn(server, cid: str, code: str, note: str) -> str:
    text = "call python with " + json.dumps({"code": code}) + "\ncall write with " + json.dumps({"path": "notes.txt", "content": note})
    server.data({"id": cid, "type": "prompt", "message": text})
    server.until("agent_end")
    return server.data({"id": cid + "-s", "type": "get_state"})["sessionFile"]


def _leaf(path) -> str:
    return [e for e in entries(path) if e.get("type") == "message"][-1]["id"]


def _python(server, cid: str, code: str) -> str:
    server.data({"id": cid, "type": "prompt", "message": "call python with " + json.dumps({"code": code})})
    end = server.until("agent_end")
    results = [m for m in end["messages"] if m.get("role") == "toolResult"]
    return "".join(b.get("text", "") for b in results[-1]["content"])


def test_rpc_checkout_rewinds_the_conversation_the_world_or_both(rpc, tmp_path):
    session = tmp_path / "s.jsonl"
    server = rpc("--session", str(session), "--tools", "python,write")
    path = _turn(server, "a", "plan = 'A'", "A")
    leaf_a = _leaf(session)
    _turn(server, "b", "plan = 'B'", "B")
    leaf_b = _leaf(session)
    assert path == str(session) and (tmp_path / "notes.txt").read_text() == "B"
    # the world alone: a's variables and files, the conversation stays at b
    brought = server.data({"id": "w", "type": "checkout", "entryId": leaf_a, "rewind": "world"})
    record = brought["leafId"]
    assert brought["line"] == (
        f"brought the world of {leaf_a} into this conversation (the conversation did not move): "
        f"restored plan and notes.txt; recorded on the branch as entry {record}"
    )
    assert (tmp_path / "notes.txt").read_text() == "A" and leaf_b in [e["id"] for e in entries(session) if e["id"] == leaf_b]
    assert "A" in _python(server, "p1", "print(plan)")
    # both: b's world again
    both = server.data({"id": "c", "type": "checkout", "entryId": leaf_b})
    assert both == {"leafId": leaf_b, "line": f"checked out {leaf_b}; leaf is now {leaf_b}; restored plan and notes.txt"}
    assert (tmp_path / "notes.txt").read_text() == "B"
    # the conversation alone: at a, with b's variables and files
    talk = server.data({"id": "t", "type": "checkout", "entryId": leaf_a, "rewind": "conversation"})
    kept = talk["leafId"]
    assert talk["line"] == (
        f"checked out {leaf_a} (the conversation only); leaf is now {kept}; the variables and files stay as they were: "
        f"plan and notes.txt differ from that node's world, recorded on the branch as entry {kept}"
    )
    assert (tmp_path / "notes.txt").read_text() == "B" and "B" in _python(server, "p2", "print(plan)")
    # the user's own change, then --force: restored, and the user's version kept on the branch left
    (tmp_path / "notes.txt").write_text("mine")
    forced = server.data({"id": "f", "type": "checkout", "entryId": leaf_a, "force": True})
    assert (
        forced["line"].startswith(f"checked out {leaf_a}; leaf is now {leaf_a}; restored ")
        and "your version of notes.txt is kept in entry" in forced["line"]
    )
    assert (tmp_path / "notes.txt").read_text() == "A"
    bad = server.call({"id": "x", "type": "checkout", "entryId": leaf_a, "rewind": "sideways"})
    assert bad["success"] is False and "rewind" in bad["error"]
    assert server.finish() == 0
