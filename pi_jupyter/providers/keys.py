"""API keys: where they come from, and keeping them out of everything that is shown or stored.

A key is passed in (``StreamOptions.api_key``, a pydantic ``SecretStr``) or read from the
provider's environment variable (:data:`ENV_KEYS`). :func:`scrub` removes keys from any
text that leaves a provider (error messages), so a server that echoes a key back never
puts it in a session file, an event or a log.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from pydantic import SecretStr

ENV_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "huggingface": ("HF_TOKEN",),
    "zai": ("ZAI_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
}
"""Environment variables consulted for each provider, first match wins."""

# Generic secret shapes, masked even when we do not know the exact key.
_SECRET_SHAPES = re.compile(r"\b(sk-(?:ant-|proj-|or-)?)[A-Za-z0-9_\-]{12,}|\b(Bearer\s+)[A-Za-z0-9_\-.=]{12,}")


def env_api_key(provider: str) -> SecretStr | None:
    """The key for ``provider`` from its environment variable (:data:`ENV_KEYS`), if set.

    An unknown provider also tries ``<PROVIDER>_API_KEY`` (upper case, ``-`` and ``.`` as ``_``).
    """
    names = ENV_KEYS.get(provider) or (re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_API_KEY",)
    for name in names:
        value = os.environ.get(name)
        if value:
            return SecretStr(value)
    return None


def env_key_names(provider: str) -> tuple[str, ...]:
    """The environment variable names :func:`env_api_key` looks at for ``provider``."""
    return ENV_KEYS.get(provider) or (re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_API_KEY",)


def scrub(text: str, secrets: Iterable[str | SecretStr | None] = ()) -> str:
    """``text`` with every given secret, and anything shaped like an API key, replaced by ``***``."""
    if not text:
        return text
    for secret in secrets:
        value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return _SECRET_SHAPES.sub(lambda m: (m.group(1) or m.group(2)) + "***", text)
