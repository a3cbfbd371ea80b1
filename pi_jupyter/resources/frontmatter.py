"""YAML front matter as pi reads it (``utils/frontmatter.ts``).

The text must start with ``---``; the YAML is everything after that first line up to the
first ``\\n---``; the body is the rest, trimmed. CRLF and lone CR are normalised to LF first.
The YAML is read with YAML 1.2 scalars, as pi's ``yaml`` package reads it: only
``true``/``false`` are booleans (``yes``/``on`` stay strings) and dates stay strings.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["FrontmatterError", "parse_frontmatter", "strip_frontmatter"]


class FrontmatterError(ValueError):
    """The front matter is not valid YAML, or not a mapping."""


class _Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema booleans and no timestamps."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def _normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _split(text: str) -> tuple[str | None, str]:
    normalized = _normalize_newlines(text)
    if not normalized.startswith("---"):
        return None, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return None, normalized
    return normalized[4:end], normalized[end + 4 :].strip()


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``text`` into ``(front matter mapping, body)``.

    Without front matter the mapping is empty and the body is the whole (newline-normalised)
    text. Raises :class:`FrontmatterError` when the YAML is invalid or is not a mapping.
    """
    yaml_text, body = _split(text)
    if not yaml_text:
        return {}, body
    try:
        parsed = yaml.load(yaml_text, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML front matter: {exc}") from None
    if parsed is None:
        return {}, body
    if not isinstance(parsed, dict):
        raise FrontmatterError(f"front matter must be a YAML mapping, got {type(parsed).__name__}")
    return parsed, body


def strip_frontmatter(text: str) -> str:
    """The body of ``text`` without its front matter (trimmed when front matter was present).

    Unlike :func:`parse_frontmatter` this never raises: invalid YAML still counts as front matter.
    """
    return _split(text)[1]
