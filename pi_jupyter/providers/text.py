"""Small text helpers shared by the adapters."""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile(r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def sanitize_surrogates(text: str) -> str:
    """``text`` without unpaired UTF-16 surrogates (they make vendors reject the JSON)."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("", text)
