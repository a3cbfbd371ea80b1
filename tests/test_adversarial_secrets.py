"""Attacks on redaction: secrets streamed in pieces, shown with display(), hidden in URLs, echoed back.

Each test here failed before its fix. The rule they hold the code to: no event, partial or
final tool result, notebook output or file shows any piece of a secret that the final
redaction hides.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from pi_jupyter.agent.redact import find_secrets, redact, redact_partial
from pi_jupyter.agent.toolbox import BashTool, PythonTool
from pi_jupyter.agent.toolbox.output import OutputAccumulator
from pi_jupyter.agent.tools import Tool, ToolContext, ToolResult, run_tool
from pi_jupyter.providers.base import AbortSignal

# Secret bodies use characters that appear neither in the filler text nor in the labels
# ("[REDACTED:SVC_TOKEN]"), so any three of them in a row in an output is a leak, never a
# coincidence. The exact-value secret uses digits, the pattern secrets letters, so one
# never contains another.
SECRET_ALPHABET = "0123456789FGHJLMPQUWXZ"
DIGITS, LETTERS = "0123456789", "FGHJLMPQUWXZ"
ENV_NAME = "SVC_TOKEN"


def _windows(secret: str, size: int = 3) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def _leaks(text: str, bodies: list[str]) -> list[str]:
    return [w for body in bodies for w in _windows(body) if w in text]


def _ctx(updates: list[ToolResult], cwd: str = ".") -> ToolContext:
    return ToolContext(tool_call_id="t1", signal=AbortSignal(), cwd=cwd, update=updates.append)


class _ChunkParams(BaseModel):
    chunks: list[str]


class _Streamer(Tool[_ChunkParams]):
    """A tool that streams its output in the chunks it is given, as bash and python do (snapshots of the tail)."""

    name = "streamer"
    parameters = _ChunkParams

    async def execute(self, args, ctx):
        out = OutputAccumulator("pi-test")
        for chunk in args.chunks:
            out.append_text(chunk)
            ctx.update(ToolResult.text(out.snapshot().content))
        out.finish()
        return ToolResult.text(out.snapshot().content)


_filler = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.:=()\n", max_size=40)
_body = st.text(alphabet=LETTERS, min_size=24, max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    env_secret=st.text(alphabet=DIGITS, min_size=12, max_size=40),
    key_body=_body,
    url_password=_body,
    bearer=_body,
    pem_lines=st.lists(_body, min_size=1, max_size=3),
    fillers=st.lists(_filler, min_size=6, max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=60),
)
def test_no_chunking_of_streamed_output_shows_a_piece_of_a_secret(
    monkeypatch, env_secret, key_body, url_password, bearer, pem_lines, fillers, cuts
):
    monkeypatch.setenv(ENV_NAME, env_secret)
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(pem_lines) + "\n-----END RSA PRIVATE KEY-----"
    pieces = [
        f"token {env_secret} ",
        f" key=sk-proj-{key_body}\n",
        f" db postgres://ada:{url_password}@db.local/x ",
        f"\nAuthorization: Bearer {bearer}\n",
        f"\n{pem}\n",
    ]
    text = "".join(f + p for f, p in zip(fillers, pieces, strict=False)) + fillers[-1]
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]
    updates: list[ToolResult] = []
    final = asyncio.run(run_tool(_Streamer(), {"chunks": chunks}, _ctx(updates)))
    bodies = [env_secret, key_body, url_password, bearer, *pem_lines]
    for update in updates:
        assert _leaks(update.text_content, bodies) == []
    assert _leaks(final.text_content, bodies) == []
    assert "[REDACTED:SVC_TOKEN]" in final.text_content and "[REDACTED:private-key]" in final.text_content


def test_partial_output_without_secrets_streams_whole():
    # holding back is for what could become a key, not for every last word
    for text in ("Downloading 3 of 10", "epoch 4: loss=0.25", "done", "ok\n"):
        assert redact_partial(text, env={}) == text


def test_a_python_tool_printing_a_secret_one_character_at_a_time_leaks_nothing(monkeypatch):
    secret = "QZ7XW9FG3HJ5LM8PU2WQZ"  # 21 characters, as in the audit
    monkeypatch.setenv("SLOW_API_KEY", secret)
    code = (
        "import os, sys, time\n"
        "sys.stdout.write('key: ')\n"
        "for c in os.environ['SLOW_API_KEY']:\n"
        "    sys.stdout.write(c); sys.stdout.flush(); time.sleep(0.03)\n"
        "print()\nprint('done')"
    )
    updates: list[ToolResult] = []
    result = asyncio.run(run_tool(PythonTool(), {"code": code}, _ctx(updates)))
    assert len(updates) >= 3  # it did stream
    for update in updates:
        assert _leaks(update.text_content, [secret]) == []
    assert result.text_content == "key: [REDACTED:SLOW_API_KEY]\ndone"


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
def test_bash_output_cut_at_any_chunk_boundary_leaks_nothing(monkeypatch, tmp_path):
    secret = "QZ7XW9FG3HJ5LM8PU2WQZ"
    monkeypatch.setenv("SLOW_API_KEY", secret)
    command = 'printf "key: "; for i in $(seq 0 20); do printf "%s" "${SLOW_API_KEY:$i:1}"; sleep 0.03; done; echo; echo done'
    updates: list[ToolResult] = []
    result = asyncio.run(run_tool(BashTool(tmp_path), {"command": command}, _ctx(updates, str(tmp_path))))
    assert len([u for u in updates if u.content]) >= 3
    for update in updates:
        assert _leaks(update.text_content, [secret]) == []
    assert result.text_content == "key: [REDACTED:SLOW_API_KEY]\ndone\n"


def test_a_private_key_never_reaches_the_full_output_file_line_by_line(monkeypatch):
    lines = ["MIIEow" + SECRET_ALPHABET * 2 for _ in range(3)]
    out = OutputAccumulator("pi-test", max_lines=2)
    out.append_text("start\n-----BEGIN RSA PRIVATE KEY-----\n")
    for line in lines:
        out.append_text(line + "\n")
    out.append_text("-----END RSA PRIVATE KEY-----\nend\n")
    out.finish()
    saved = open(out.full_output_path, encoding="utf-8").read()
    assert _leaks(saved, lines) == [] and "[REDACTED:private-key]" in saved and saved.endswith("end\n")


def test_a_private_key_cut_off_before_its_end_line_is_still_hidden():
    body = "MIIEow" + SECRET_ALPHABET
    out = redact(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n{body}\n", env={})
    assert body not in out and "[REDACTED:private-key]" in out


# ------------------------------------------------------------------ URL passwords


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:p@ssWORD@host/", "https://user:[REDACTED:url-password]@host/"),
        ("https://user:pa/ssWORD@host/", "https://user:[REDACTED:url-password]@host/"),
        ("mysql://root:a@b/c:d@[::1]:3306/db", "mysql://root:[REDACTED:url-password]@[::1]:3306/db"),
        ("'postgres://u:pw@db.local'", "'postgres://u:[REDACTED:url-password]@db.local'"),
        # an @ later in the path or query is not part of the password
        ("https://u:pw@host/p?mail=a@b.com", "https://u:[REDACTED:url-password]@host/p?mail=a@b.com"),
    ],
)
def test_url_passwords_with_at_signs_and_slashes_are_hidden_whole(url, expected):
    out = redact(f"connect to {url} now", env={})
    assert out == f"connect to {expected} now"
    assert "ssWORD" not in out


# ------------------------------------------------------------------ echoed arguments


class _Strict(BaseModel):
    count: int


class _StrictTool(Tool[_Strict]):
    name = "strict"
    parameters = _Strict

    async def execute(self, args, ctx):
        return "never"


def test_arguments_echoed_in_a_validation_error_are_redacted(monkeypatch):
    monkeypatch.setenv("ECHO_API_KEY", "QZ7XW9FG3HJ5LM8PU2WQZ")
    result = asyncio.run(run_tool(_StrictTool(), {"count": "QZ7XW9FG3HJ5LM8PU2WQZ", "note": "sk-proj-" + "Q" * 30}, _ctx([])))
    assert result.is_error and "Validation failed" in result.text_content
    assert "QZ7XW9FG3HJ5LM8PU2WQZ" not in result.text_content and "QQQQQQQQ" not in result.text_content
    assert "[REDACTED:ECHO_API_KEY]" in result.text_content


def test_find_secrets_names_what_it_found_without_the_values(monkeypatch):
    monkeypatch.setenv("PASTED_API_KEY", "QZ7XW9FG3HJ5LM8PU2WQZ")
    labels = find_secrets("here is my key QZ7XW9FG3HJ5LM8PU2WQZ and sk-ant-api03-" + "x" * 40)
    assert labels == ["PASTED_API_KEY", "anthropic-key"]
    assert find_secrets("nothing to see") == []


def test_a_secret_cut_by_the_start_of_a_long_line_view_leaks_no_end(monkeypatch):
    secret = "QZ7XW9FG3HJ5LM8PU2WQZ"
    monkeypatch.setenv("LONG_API_KEY", secret)
    for offset in range(0, len(secret) + 1, 3):
        out = OutputAccumulator("pi-test", max_bytes=1000)
        # one line: the 1,000-byte view starts `offset` characters into the secret
        out.append_text("x " * 600 + secret + " " + "y" * (1000 - (len(secret) - offset) - 1))
        out.finish()
        view = out.snapshot().content
        assert _leaks(redact(view), [secret]) == [], offset


def test_the_end_of_a_private_key_whose_begin_line_was_cut_off_is_hidden():
    lines = ["MIIEow" + LETTERS * 3 for _ in range(4)]
    out = OutputAccumulator("pi-test", max_lines=5)
    out.append_text("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\nok\n")
    out.finish()
    view = out.snapshot().content
    assert "BEGIN" not in view and "END RSA" in view  # the view starts inside the key
    assert _leaks(redact(view), lines) == [] and "[REDACTED:private-key]" in redact(view)


def test_a_key_in_a_prompt_is_neither_sent_nor_stored_by_the_agent(tmp_path, monkeypatch):
    from pi_jupyter import Agent, Session

    monkeypatch.setenv("TYPED_API_KEY", "QZ7XW9FG3HJ5LM8PU2WQZ")
    session = Session.create(tmp_path)
    agent = Agent(session, model="offline/echo")
    result = asyncio.run(agent.prompt("my key is QZ7XW9FG3HJ5LM8PU2WQZ, keep it"))
    assert "[REDACTED:TYPED_API_KEY]" in result.text
    assert "QZ7XW9FG3HJ5LM8PU2WQZ" not in open(session.path, encoding="utf-8").read()
