"""Redact secrets from text before it is persisted or shown.

Three sources of secrets are recognised:

* the values of environment variables whose names look secret (``*KEY*``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``) and whose values are long
  enough to be a key (8 characters or more, not an existing file path). The environment is
  read on every call, so a key set in a notebook cell after import is covered;
* well-known key formats (OpenAI ``sk-...``, Anthropic ``sk-ant-...``, GitHub ``ghp_...`` /
  ``github_pat_...``, AWS ``AKIA...``, Slack ``xox?-...``, Google ``AIza...``, Hugging Face
  ``hf_...``, GitLab ``glpat-...``, Stripe, npm, JWTs, PEM private keys, bearer tokens,
  passwords in URLs such as ``postgres://user:PASSWORD@host``);
* values registered with :func:`register_secret` (for example the API key a provider was
  given) and values passed as ``extra_secrets``.

A match becomes ``[REDACTED:<what>]``, e.g. ``[REDACTED:OPENAI_API_KEY]`` or
``[REDACTED:openai-key]``; the label names where the secret came from, never the secret.
Redaction is a last line of defence for outputs, not a sandbox: a tool that can run code can
still send a key somewhere.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, SecretStr

__all__ = [
    "SECRET_NAME_RE",
    "find_secrets",
    "redact",
    "redact_json",
    "redact_partial",
    "redact_typed",
    "redact_value",
    "register_secret",
    "registered_secret_count",
    "secret_env_values",
    "stream_safe_length",
]

SECRET_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
"""Environment variable names whose values are treated as secrets."""

_MIN_ENV_SECRET = 8
_MIN_EXTRA_SECRET = 4

# (label, regex, substrings one of which every match contains). The hints let a text skip
# a pattern with one fast substring test: most outputs contain no key at all. Order
# matters: the more specific formats come first so their label wins.
_PATTERNS: list[tuple[str, str, tuple[str, ...]]] = [
    # A key cut off before its END line (a truncated print) still hides its body.
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s]*)",
        ("PRIVATE KEY-----",),
    ),
    # The end of a key whose BEGIN line was cut off (an output view that starts inside it).
    ("private-key", r"(?m)(?:^[A-Za-z0-9+/=]{16,}\r?\n)+-----END [A-Z0-9 ]*PRIVATE KEY-----", ("PRIVATE KEY-----",)),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", ("sk-ant-",)),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    ("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", ("_live_", "_test_")),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{30,}", ("github_pat_",)),
    ("github-token", r"\bgh[pousr]_[A-Za-z0-9]{30,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    ("groq-key", r"\bgsk_[A-Za-z0-9]{40,}", ("gsk_",)),
    ("xai-key", r"\bxai-[A-Za-z0-9]{40,}", ("xai-",)),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", ("eyJ",)),
]
_COMPILED = [(label, re.compile(p), hints) for label, p, hints in _PATTERNS]
# A password in a URL (``postgres://user:PASSWORD@host``): the user, host and path stay.
# Passwords are often written with a raw ``@`` or ``/`` in them (``user:p@ss/word@host``),
# although RFC 3986 wants them percent-encoded: the password runs to the last ``@`` before
# any ``?``/``#`` that is followed by something shaped like a host. When in doubt (an ``@``
# later in the path) more is hidden, never less. The scheme starts at any ASCII letter that
# follows no other: after a digit or a letter of another script too ("été0postgres://").
_URL_PASSWORD_RE = re.compile(
    r"((?<![A-Za-z])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)([^\s?#]+)(@)"
    r"(?=(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%\-]+)(?::\d*)?(?:[/?#\s\"'<>(),;\]}]|$))"
)
# The header name is kept so the text still reads; only the credential goes.
_BEARER_RE = re.compile(r"(?i)(\bbearer\s+|\bauthorization:\s*(?:token|basic)\s+)([A-Za-z0-9._~+/\-]{16,}=*)")

_SPACE_RE = re.compile(r"\s")


# A password written raw, with a "#", a "?" or a space in it (RFC 3986 wants them percent-encoded,
# but a tool prints what it was given: ``postgres://bob:my pa#ss@db/x``): it runs to the first "@"
# followed by a host, on the same line, at most 200 characters.
_RAW_URL_PASSWORD_RE = re.compile(
    r"((?<![A-Za-z])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)([^\n@]{1,200}?)(@)"
    r"(?=(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%\-]+)(?::\d*)?(?:[/?#\s\"'<>(),;\]}]|$))"
)
_RAW_PASSWORD_CHARS = re.compile(r"[#?\s]")
# "host:8080/path..." or "host:8080 and words": a port, then the path or the sentence goes on (an
# "@" further on is an address in the path or the text, not the end of a password)
_PORT_THEN_MORE = re.compile(r"\d{1,5}[/?#\s]")


def _url_password_matches(text: str) -> list[re.Match[str]]:
    """The URL-password matches in ``text``, found around each ``://`` (a scan at every word is slow)."""
    found: list[re.Match[str]] = []
    done = 0
    at = text.find("://")
    while at != -1:
        start = max(done, at - 64)
        space = _SPACE_RE.search(text, at)
        end = space.start() if space else len(text)
        m = _URL_PASSWORD_RE.search(text, start, end)
        while m is not None and _PORT_THEN_MORE.match(m.group(2)):
            # http://localhost:8080/api,admin@example.com: a port and a path, no password (a URL inside it may have one)
            m = _URL_PASSWORD_RE.search(text, m.start() + 1, end)
        if m is None:
            line_end = text.find("\n", at)
            stop = min(len(text) if line_end == -1 else line_end, at + 300)
            raw = _RAW_URL_PASSWORD_RE.search(text, start, stop)
            while raw is not None and (not _RAW_PASSWORD_CHARS.search(raw.group(2)) or _PORT_THEN_MORE.match(raw.group(2))):
                raw = _RAW_URL_PASSWORD_RE.search(text, raw.start() + 1, stop)
            m = raw
        if m is not None:
            found.append(m)
            done = m.end()
        at = text.find("://", max(at + 3, done))
    return found


_registered: set[str] = set()


def register_secret(value: str | SecretStr | None) -> None:
    """Remember ``value`` (in memory only) so every later :func:`redact` call hides it.

    Values shorter than 4 characters are ignored: redacting them would shred ordinary text.
    """
    if value is None:
        return
    raw = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
    if len(raw) >= _MIN_EXTRA_SECRET:
        _registered.add(raw)


def registered_secret_count() -> int:
    """How many secrets :func:`register_secret` holds (the values themselves are never exposed)."""
    return len(_registered)


def _looks_like_path(value: str) -> bool:
    # A path in a *_CREDENTIALS variable points at a secret; it is not one, and redacting
    # it everywhere would garble ordinary tool output.
    return value.startswith(("/", "~", ".")) and os.path.exists(os.path.expanduser(value))


def secret_env_values(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables treated as secrets: ``{name: value}``."""
    source = os.environ if env is None else env
    out: dict[str, str] = {}
    for name, value in source.items():
        if not value or len(value) < _MIN_ENV_SECRET or not SECRET_NAME_RE.search(name):
            continue
        if any(ch.isspace() for ch in value) and len(value) < 32:
            continue  # short multi-word values are settings ("vi emacs"), not keys
        if _looks_like_path(value):
            continue
        out[name] = value
    return out


def _literals(extra_secrets: Iterable[str | SecretStr], env: Mapping[str, str] | None) -> dict[str, str]:
    """Every exact secret value known now, with its replacement label."""
    literal: dict[str, str] = {}
    for value in _registered:
        literal[value] = "[REDACTED]"
    for secret in extra_secrets:
        raw = secret.get_secret_value() if isinstance(secret, SecretStr) else str(secret)
        if len(raw) >= _MIN_EXTRA_SECRET:
            literal[raw] = "[REDACTED]"
    for name, value in secret_env_values(env).items():
        literal[value] = f"[REDACTED:{name}]"
    return literal


def redact(text: str, extra_secrets: Iterable[str | SecretStr] = (), *, env: Mapping[str, str] | None = None) -> str:
    """``text`` with secrets replaced by ``[REDACTED:<what>]``.

    ``extra_secrets`` are hidden as ``[REDACTED]``; ``env`` replaces ``os.environ`` (tests).
    For a line of JSON use :func:`redact_json`: this function does not know JSON syntax.
    """
    if not text:
        return text
    return _redact(text, _literals(extra_secrets, env))


_ALL_HINTS = tuple(dict.fromkeys(h for _label, _regex, hints in _COMPILED for h in hints))


class _Probe:
    """Which signs of a secret a text holds; :meth:`hit` then tests a part of it for those signs only.

    A text without any sign (no key prefix, no ``://`` with an ``@``, no "bearer" or
    "authorization", no known secret value) is left as it is by :func:`_redact`.
    """

    def __init__(self, text: str, values: Iterable[str]) -> None:
        self.hints = [h for h in _ALL_HINTS if h in text]
        self.url = "://" in text and "@" in text
        lowered = text.lower()
        self.credential = "bearer" in lowered or "authorization" in lowered
        self.values = [v for v in values if v in text]

    def __bool__(self) -> bool:
        return bool(self.hints or self.url or self.credential or self.values)

    def hit(self, part: str) -> bool:
        if any(h in part for h in self.hints) or any(v in part for v in self.values):
            return True
        if self.url and "://" in part and "@" in part:
            return True
        return self.credential and _CREDENTIAL_WORD_RE.search(part) is not None


_CREDENTIAL_WORD_RE = re.compile(r"bearer|authorization", re.IGNORECASE)
# A JSON string token: the unrolled loop reads a long string in one step per run of plain characters.
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def redact_json(line: str, extra_secrets: Iterable[str | SecretStr] = (), *, env: Mapping[str, str] | None = None) -> str:
    """One line of JSON with every string in it (keys too) redacted on its own, as :func:`redact` would.

    Redaction happens inside the decoded value of each string and the result is encoded
    again, so it never reaches across JSON syntax: a URL in one value and an ``@domain`` in
    the next are two texts, and the line still parses. Numbers, ``true``/``false``/``null``
    and punctuation are left as they are. ``line`` must be valid JSON (what an encoder
    wrote); a line that holds nothing :func:`redact` could change is returned as it is.
    """
    literal = _literals(extra_secrets, env)
    # A sign of a secret is found as is in the encoded line, unless it has a character JSON
    # escapes (a quote, a backslash, a control character; non-ASCII in an ASCII-only line):
    # a secret value like that is looked for in each decoded string instead.
    plain = all(v.isascii() and v.isprintable() and '"' not in v and "\\" not in v for v in literal)
    probe = _Probe(line, literal)
    if plain and not probe:
        return line
    parts: list[str] = []
    done = 0
    for match in _JSON_STRING_RE.finditer(line):
        token = match.group()
        if plain and not probe.hit(token):
            continue
        value = json.loads(token) if "\\" in token else token[1:-1]
        changed = _redact(value, literal)
        if changed != value:
            parts.append(line[done : match.start()])
            parts.append(json.dumps(changed, ensure_ascii=token.isascii()))  # an ASCII line stays ASCII (lone surrogates)
            done = match.end()
    if not parts:
        return line
    parts.append(line[done:])
    return "".join(parts)


def _redact(text: str, literal: dict[str, str]) -> str:
    # Longest first, so a key that contains another key is replaced whole.
    for value in sorted(literal, key=len, reverse=True):
        if value in text:
            text = text.replace(value, literal[value])
    for label, regex, hints in _COMPILED:
        if any(h in text for h in hints):
            text = regex.sub(f"[REDACTED:{label}]", text)
    if "://" in text and "@" in text:
        parts: list[str] = []
        done = 0
        for m in _url_password_matches(text):
            parts.append(text[done : m.start(2)] + "[REDACTED:url-password]")
            done = m.end(2)
        text = "".join(parts) + text[done:]
    lowered = text.lower()
    if "bearer" in lowered or "authorization" in lowered:
        text = _BEARER_RE.sub(lambda m: f"{m.group(1)}[REDACTED]", text)
    return text


def redact_value(value: Any, extra_secrets: Iterable[str | SecretStr] = (), *, env: Mapping[str, str] | None = None) -> Any:
    """Redact every string inside ``value`` (dicts, lists, tuples, pydantic models); other values pass through.

    Dict keys are left alone; base64 image payloads are strings too, and a key pattern
    inside one is so unlikely that the cost of scanning them is accepted.
    """
    extra = list(extra_secrets)
    if isinstance(value, str):
        return redact(value, extra, env=env)
    if isinstance(value, dict):
        return {k: redact_value(v, extra, env=env) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, extra, env=env) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v, extra, env=env) for v in value)
    if isinstance(value, BaseModel):
        data = {name: redact_value(getattr(value, name), extra, env=env) for name in type(value).model_fields}
        return value.model_copy(update=data)
    return value


def find_secrets(text: str, extra_secrets: Iterable[str | SecretStr] = (), *, env: Mapping[str, str] | None = None) -> list[str]:
    """What :func:`redact` would hide in ``text``: the labels (``OPENAI_API_KEY``, ``openai-key``), in order, once each.

    The values themselves are never returned, so the answer can be shown and logged.
    """
    found = _LABEL_RE.findall(redact(text, extra_secrets, env=env))
    return list(dict.fromkeys(label or "secret" for label in found))


_LABEL_RE = re.compile(r"\[REDACTED(?::([^\]]+))?\]")

# -- streamed output ------------------------------------------------------------------
#
# A partial output is a snapshot of text that is still growing. A secret printed one
# character at a time matches neither its exact value nor its pattern until it is whole, so
# redacting each snapshot is not enough: the tail that could still become a secret is held
# back until it is complete (and then redacted) or turns out to be ordinary text.

# How every pattern's match begins: a token at a word boundary that starts with one of these,
# or could still grow into one, may be a key in the making.
_LEADS = (
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "pk_live_",
    "pk_test_",
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "glpat-",
    "AKIA",
    "ASIA",
    "xox",
    "AIza",
    "hf_",
    "gsk_",
    "xai-",
    "npm_",
    "eyJ",
)
_MAX_HELD = 16384
"""The longest tail held back: a single token longer than this streams anyway, minus its last 16 KB."""
_TRAILING_TOKEN_RE = re.compile(r"\S+\Z")
_END_LINE_RE = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_KEY_BODY_BEFORE_RE = re.compile(r"(?m)(?:^[A-Za-z0-9+/=]{16,}\r?\n)+\Z")
_CREDENTIAL_HEADER_RE = re.compile(r"(?i)(?:\bbearer|\bauthorization:\s*(?:token|basic))\s+\Z")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _token_hold(text: str) -> int:
    """Where a trailing token that may still grow into a key starts (``len(text)``: nothing held)."""
    n = len(text)
    start = max(0, n - _MAX_HELD)
    m = _TRAILING_TOKEN_RE.search(text, start)
    if m is None:
        return n
    t0 = m.start()
    token = m.group()
    if "://" in token or _CREDENTIAL_HEADER_RE.search(text, max(0, t0 - 64), t0):
        return t0
    for j in range(t0, n):
        if not _is_word(text[j]) or (j > 0 and _is_word(text[j - 1])):
            continue
        rest = text[j : j + 12]
        if any(rest.startswith(lead) or lead.startswith(rest) for lead in _LEADS):
            return j
    return n


_OPEN_URL_PASSWORD_RE = re.compile(r"(?<![A-Za-z])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:([^\n@]{0,200})(?:@[^\s/?#]*)?\Z")


def _open_url_hold(text: str) -> int:
    """Where a URL whose password (spaces allowed) or the host after it may still be being written starts."""
    n = len(text)
    at = text.rfind("://", max(0, n - 400))
    if at == -1:
        return n
    m = _OPEN_URL_PASSWORD_RE.search(text, max(0, at - 64))
    if m is None or _PORT_THEN_MORE.match(m.group(1)):
        return n
    return m.start()


def _literal_hold(text: str, values: Iterable[str]) -> int:
    """Where the longest unfinished start of an exact secret value at the end of ``text`` begins."""
    n = len(text)
    cut = n
    for value in values:
        for k in range(min(len(value) - 1, n), 0, -1):
            if n - k >= cut:
                break
            if text.endswith(value[:k]):
                cut = n - k
                break
    return cut


def _secret_spans(text: str, values: Iterable[str]) -> list[tuple[int, int]]:
    """Every whole secret in ``text`` as ``(start, end)``: exact values and pattern matches."""
    spans: list[tuple[int, int]] = []
    for value in values:
        at = text.find(value)
        while at != -1:
            spans.append((at, at + len(value)))
            at = text.find(value, at + 1)
    for _label, regex, hints in _COMPILED:
        if any(h in text for h in hints):
            spans.extend(m.span() for m in regex.finditer(text))
    if "://" in text and "@" in text:
        spans.extend(m.span() for m in _url_password_matches(text))
    lowered = text.lower()
    if "bearer" in lowered or "authorization" in lowered:
        spans.extend(m.span() for m in _BEARER_RE.finditer(text))
    return spans


def stream_safe_length(text: str, extra_secrets: Iterable[str | SecretStr] = (), *, env: Mapping[str, str] | None = None) -> int:
    """How much of a still-growing ``text`` may be shown now: a cut no secret crosses or may yet cross.

    Held back: the unfinished start of a known secret value at the end, a trailing token that
    begins like a key format (``sk-``, ``ghp_``, ``eyJ``...), a URL or a credential after
    ``Bearer`` that may still be typed, and a private key block whose END line has not come.
    Whatever is before the cut redacts now exactly as it will in the whole text.
    """
    if not text:
        return 0
    values = list(_literals(extra_secrets, env))
    cut = min(_token_hold(text), _literal_hold(text, values), _open_url_hold(text))
    begin = text.rfind("-----BEGIN")
    if begin != -1 and text.find("-----END", begin) == -1:
        cut = min(cut, begin)
    end = text.rfind("-----END")
    if end != -1 and _END_LINE_RE.match(text, end) is None:
        # an END line still being written: the key lines before it are held with it
        body = _KEY_BODY_BEFORE_RE.search(text, 0, end)
        cut = min(cut, body.start() if body is not None else end)
    spans = _secret_spans(text, values)
    moved = True
    while moved:  # a whole secret the cut would split is held back entirely
        moved = False
        for start, end in spans:
            if start < cut < end:
                cut, moved = start, True
    return cut


def redact_partial(text: str, extra_secrets: Iterable[str | SecretStr] = (), *, env: Mapping[str, str] | None = None) -> str:
    """The part of a still-growing ``text`` that may be shown now (:func:`stream_safe_length`), redacted."""
    return redact(text[: stream_safe_length(text, extra_secrets, env=env)], extra_secrets, env=env)


# -- text a user typed ------------------------------------------------------------------


def redact_typed(text: str) -> str:
    """Redact text a user typed (a prompt, an edit, instructions, a label, a name, a ``--vary`` value).

    The same as :func:`redact`, which hides URL passwords written raw too (with a ``#``, a ``?``
    or a space in them: ``postgres://bob:my pa#ss@db/x``), whoever wrote them.
    """
    return redact(text)
