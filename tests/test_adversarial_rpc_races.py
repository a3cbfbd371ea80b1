"""Commands that race each other on ``pi-jupyter rpc`` (issue 29): an abort sent right behind what it aborts is never lost.

``abort_bash`` is handled the moment it is read, while ``bash`` waits its turn in the queue
(or is still starting its process): the abort must still reach it. Both lines go out in one
write, the tightest race a client can make. The command would create a file once the test
lets it go on; it must never get that far.
"""

from __future__ import annotations

import time

from rpc_client import entries

FAST = 20.0


def test_abort_bash_sent_right_after_bash_stops_it(rpc, tmp_path):
    server = rpc("--session", str(tmp_path / "s.jsonl"))
    server.timeout = FAST  # the unfixed server answered only when the command ended on its own
    wait = "while [ ! -f release ]; do sleep 0.02; done; touch ran"
    for n in range(5):
        server.send(f'{{"id":"b{n}","type":"bash","command":"{wait}"}}\n{{"id":"a{n}","type":"abort_bash"}}\n'.encode())
        assert server.response(f"a{n}")["success"] is True
        result = server.response(f"b{n}")
        assert result["success"] is True and result["data"]["cancelled"] is True, result
        assert "exitCode" not in result["data"]  # as pi: no exit code for a cancelled command
    (tmp_path / "release").touch()
    time.sleep(1.0)  # a command that was not stopped sees the file within 0.02 s
    assert not (tmp_path / "ran").exists()
    # a later bash runs as usual: the abort was spent on the commands before it
    assert server.data({"id": "later", "type": "bash", "command": "echo still here"})["output"] == "still here\n"
    assert server.finish() == 0
    recorded = [e["message"] for e in entries(tmp_path / "s.jsonl") if e.get("type") == "message"]
    bash = [m for m in recorded if m["role"] == "bashExecution"]
    assert [m["cancelled"] for m in bash] == [True] * 5 + [False]
