"""Secrets never reach tool output: environment keys, known key formats, registered values."""

from __future__ import annotations

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
