"""Pathological input lines for ``pi-jupyter rpc`` (issue 29): each gets one error answer in pi's shape, and the server goes on.

Deep nesting (which Python's JSON reader cannot follow), numbers too long to read, invalid
UTF-8 and a line far longer than any command are each answered with
``{"type": "response", "command": "parse", "success": false, "error": "..."}`` (with the id
when it can be read), never a traceback; the commands around them, even in the same write,
are answered as usual. The server is a real subprocess fed through its stdin.
"""

from __future__ import annotations

import pytest

from pi_jupyter.cli.rpc_protocol import MAX_LINE_BYTES

DEEP = 100_000
FAST = 20.0
"""Seconds an answer may take: a server that stopped answering fails here, by name, not after a minute."""


def _answers_around(rpc, *bad: bytes) -> dict:
    """Send a good command, the pieces of a bad line and another good command in one stream; return the answer to the bad line."""
    server = rpc("--no-session")
    server.timeout = FAST
    server.send(b'{"id":"before","type":"get_state"}\n' + bad[0])
    for piece in bad[1:]:
        server.send(piece)
    server.send(b'\n{"id":"after","type":"get_state"}\n')
    assert server.response("before")["success"] is True
    error = server.until("response")
    assert error["success"] is False and error["type"] == "response", error
    assert server.response("after")["success"] is True  # the same write: not lost with the bad line
    assert server.call({"id": "later", "type": "get_state"})["success"] is True  # and the server goes on
    assert server.finish() == 0
    stderr = b"".join(server.stderr)
    assert b"Traceback" not in stderr, stderr[-2000:]
    return error


@pytest.mark.parametrize(
    "bad",
    [
        b"[" * 1000,
        b"[" * DEEP + b"]" * DEEP,
        b'{"a":' * DEEP + b"1" + b"}" * DEEP,
        b'{"id":"x","type":"prompt","message":"hi","images":' + b"[" * DEEP + b"]" * DEEP + b"}",
        b'{"type":"extension_ui_response","value":' + b"[" * DEEP + b"]" * DEEP + b"}",
    ],
    ids=["1000-brackets", "deep-array", "deep-object", "deep-field", "deep-ui-response"],
)
def test_deep_nesting_is_one_error_answer(rpc, bad):
    error = _answers_around(rpc, bad)
    assert error["command"] in ("parse", "prompt", "extension_ui_response")
    assert "deep" in error["error"] or "nest" in error["error"] or "images" in error["error"], error


def test_a_number_too_long_to_read_is_one_error_answer(rpc):
    error = _answers_around(rpc, b'{"id":"n","type":"get_state","x":' + b"9" * 100_000 + b"}")
    assert error["command"] == "parse" and error.get("id") == "n"


def test_a_huge_id_is_refused_or_echoed_exactly(rpc):
    server = rpc("--no-session")
    digits = "7" * 4000
    server.send(f'{{"id":{digits},"type":"get_state"}}')
    line = server.until("response")
    assert line["success"] is True and line["id"] == int(digits)
    assert server.finish() == 0


def test_invalid_utf8_is_one_error_answer(rpc):
    error = _answers_around(rpc, b'{"id":"u","type":"get_state","x":"\xc3\x28\xed\xa0\x80"}')
    assert error["command"] == "parse" and "UTF-8" in error["error"]


def test_a_line_longer_than_a_command_may_be_is_refused_without_being_kept(rpc):
    """Far more than any prompt with images: read through to its end, answered once, not held in memory."""
    block = b"x" * (1 << 20)
    pieces = [b'{"id":"big","type":"prompt","message":"', *[block] * ((MAX_LINE_BYTES >> 20) + 1), b'"}']
    error = _answers_around(rpc, *pieces)
    assert error["command"] == "parse" and "MiB" in error["error"]
