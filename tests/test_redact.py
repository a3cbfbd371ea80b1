"""Secrets never reach tool output: environment keys, known key formats, registered values."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, SecretStr

from pi_jupyter.agent.redact import redact, redact_value, register_secret, secret_env_values

OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
ANTHROPIC = "sk-ant-api03-" + "x" * 40
GITHUB = "ghp_" + "a1B2" * 9
AWS = "AKIA" + "ABCDEFGHIJKLMNOP"
SLACK = "xoxb-1234567890-abcdefghij"


def test_env_values_with_secret_names_are_redacted_with_their_name():
    env = {"MY_SERVICE_TOKEN": "tok-value-123456", "DB_PASSWORD": "hunter2hunter2", "HOME": "/home/me"}
    out = redact("token tok-value-123456 and pw hunter2hunter2 in /home/me", env=env)
    assert "tok-value-123456" not in out and "hunter2hunter2" not in out
    assert "[REDACTED:MY_SERVICE_TOKEN]" in out and "[REDACTED:DB_PASSWORD]" in out
    assert "/home/me" in out  # HOME is not a secret name


def test_short_env_values_and_existing_paths_are_not_treated_as_secrets(tmp_path):
    creds = tmp_path / "creds.json"
    creds.write_text("{}")
    env = {"KEYTIMEOUT": "1", "GOOGLE_APPLICATION_CREDENTIALS": str(creds), "API_KEY": "short"}
    assert secret_env_values(env) == {}
    text = f"using {creds} with timeout 1"
    assert redact(text, env=env) == text


def test_known_key_formats_are_redacted_without_env():
    text = f"openai={OPENAI} anthropic={ANTHROPIC} gh={GITHUB} aws={AWS} slack={SLACK}"
    out = redact(text, env={})
    for secret in (OPENAI, ANTHROPIC, GITHUB, AWS, SLACK):
        assert secret not in out
    assert "[REDACTED:anthropic-key]" in out and "[REDACTED:openai-key]" in out
    assert "[REDACTED:github-token]" in out and "[REDACTED:aws-access-key]" in out and "[REDACTED:slack-token]" in out


def test_private_key_blocks_and_bearer_tokens():
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----"
    out = redact(f"key:\n{pem}\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz012345", env={})
    assert "MIIEow" not in out and "[REDACTED:private-key]" in out
    assert "abcdefghijklmnopqrstuvwxyz012345" not in out and "Bearer [REDACTED]" in out


def test_passwords_in_urls_are_redacted_and_the_rest_of_the_url_kept():
    out = redact("engine = postgres://ada:s3cret-Pass@db.local:5432/sales and redis://:hunter2hunter2@cache:6379/0", env={})
    assert "s3cret-Pass" not in out and "hunter2hunter2" not in out
    assert "postgres://ada:[REDACTED:url-password]@db.local:5432/sales" in out
    assert "redis://:[REDACTED:url-password]@cache:6379/0" in out
    plain = "see https://example.com/a:b@c, git@github.com:org/repo.git and ssh://git@host:22/x and http://user@host/"
    assert redact(plain, env={}) == plain


def test_ordinary_text_and_code_are_left_alone():
    text = "def token_count(tokens):\n    password = get_password()\n    return len(tokens)  # sk-learn is fine\n"
    assert redact(text, env={}) == text


def test_extra_and_registered_secrets():
    register_secret(SecretStr("registered-secret-value"))
    register_secret("abc")  # too short to redact safely: ignored
    out = redact("a registered-secret-value b extra-one c abc", extra_secrets=["extra-one"], env={})
    assert out == "a [REDACTED] b [REDACTED] c abc"


def test_longest_secret_wins_when_one_contains_another():
    env = {"A_KEY": "abcdefgh", "B_KEY": "abcdefgh-ijkl"}
    assert redact("x abcdefgh-ijkl y abcdefgh", env=env) == "x [REDACTED:B_KEY] y [REDACTED:A_KEY]"


def test_redact_value_walks_nested_structures():
    class M(BaseModel):
        text: str
        n: int = 1

    value = {"a": [OPENAI, ("t", OPENAI)], "m": M(text=OPENAI), "n": 3}
    out = redact_value(value, env={})
    assert OPENAI not in repr(out)
    assert out["n"] == 3 and out["m"].n == 1 and isinstance(out["a"][1], tuple)


def test_environment_is_read_at_call_time(monkeypatch):
    monkeypatch.setenv("LATE_API_KEY", "set-after-import-123")
    assert redact("v=set-after-import-123") == "v=[REDACTED:LATE_API_KEY]"


# --------------------------------------------------------------- in an agent run

RUN_KEY = "sk-proj-" + "Zq9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0"


def _user_tools():
    """One tool of each kind a user writes: a ``@tool`` function, a ``Tool`` subclass that
    streams partial results and details, and a tool an extension registers."""
    import os

    from pi_jupyter import tool
    from pi_jupyter.agent.tools import Tool, ToolResult

    @tool
    def getenv(name: str) -> str:
        """Read an environment variable."""
        return os.environ[name]

    class EnvParams(BaseModel):
        name: str

    class EnvDump(Tool[EnvParams]):
        name = "envdump"
        description = "Show an environment variable, streaming."
        parameters = EnvParams

        async def execute(self, args, ctx):
            value = os.environ[args.name]
            ctx.update(ToolResult.text(f"so far: {value}", details={"partial": value}))
            ctx.update(ToolResult.text(f"so far: {value}!", details={"partial": [value]}))
            return ToolResult.text(f"{args.name}={value}", details={"value": value, "nested": {"v": (value,)}})

    class Ext:
        def tools(self):
            @tool
            def extenv(name: str) -> dict:
                """Read an environment variable (an extension's tool)."""
                return {"name": name, "value": os.environ[name]}

            return [extenv]

    return [getenv, EnvDump()], Ext()


def test_results_of_user_defined_tools_are_redacted_in_the_file_the_events_and_the_context(tmp_path, monkeypatch):
    import asyncio
    import json

    from pi_jupyter import Agent, Session

    monkeypatch.setenv("OPENAI_API_KEY", RUN_KEY)
    tools, ext = _user_tools()
    session = Session.create(tmp_path / "sessions")
    agent = Agent(session, model="offline/echo", tools=tools, extensions=[ext])
    events: list[str] = []
    agent.subscribe(lambda e: events.append(json.dumps(e.to_dict(), default=str)))
    prompt = " ".join(f'call {name} with {{"name": "OPENAI_API_KEY"}}' for name in ("getenv", "envdump", "extenv"))
    result = asyncio.run(agent.prompt(prompt))
    assert result.ok, result.error_message

    tool_results = [m for m in result.messages if m.role == "toolResult"]
    assert [m.tool_name for m in tool_results] == ["getenv", "envdump", "extenv"]
    assert all("[REDACTED:OPENAI_API_KEY]" in m.text for m in tool_results)
    assert tool_results[1].details == {"value": "[REDACTED:OPENAI_API_KEY]", "nested": {"v": ("[REDACTED:OPENAI_API_KEY]",)}}
    updates = [json.loads(e) for e in events if '"tool_execution_update"' in e]
    assert [u["partialResult"]["details"]["partial"] for u in updates] == ["[REDACTED:OPENAI_API_KEY]", ["[REDACTED:OPENAI_API_KEY]"]]

    assert RUN_KEY not in "\n".join(events)
    assert RUN_KEY not in Path(session.path).read_text()
    rebuilt = Session.open(session.path).context().messages
    assert RUN_KEY not in json.dumps([m.to_dict() for m in rebuilt], default=str)
    assert RUN_KEY not in json.dumps([m.to_dict() for m in agent.messages], default=str)


def test_results_replaced_by_an_after_tool_hook_are_redacted(tmp_path, monkeypatch):
    import asyncio

    from pi_jupyter import Agent, Session, tool
    from pi_jupyter.agent.tools import ToolResult

    monkeypatch.setenv("OPENAI_API_KEY", RUN_KEY)

    @tool
    def noop() -> str:
        """Do nothing."""
        return "nothing"

    seen = []

    def after(call):
        seen.append(call.result.text_content)
        return ToolResult.text(f"the key is {RUN_KEY}")

    session = Session.create(tmp_path / "sessions")
    agent = Agent(session, model="offline/echo", tools=[noop], after_tool_call=after)
    result = asyncio.run(agent.prompt("call noop with {}"))
    assert seen == ["nothing"]
    assert [m.text for m in result.messages if m.role == "toolResult"] == ["the key is [REDACTED:OPENAI_API_KEY]"]
    assert RUN_KEY not in Path(session.path).read_text()


def test_builtin_results_are_not_changed_by_being_redacted_again(monkeypatch):
    from pi_jupyter.agent.tools import ToolResult, redact_result

    monkeypatch.setenv("SERVICE_TOKEN", "tok-abcdefgh-123")
    raw = ToolResult.text(
        f"a {OPENAI} b tok-abcdefgh-123 c postgres://u:pw12345@h/db Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
        details={"k": ANTHROPIC},
    )
    once = redact_result(raw)
    assert redact_result(once) is once  # what redact_result made is not scanned again
    assert redact_result(once.model_copy(deep=True)) == once  # and scanning it again changes nothing
    assert OPENAI not in once.text_content and "tok-abcdefgh-123" not in once.text_content
