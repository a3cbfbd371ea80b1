"""Cost of a response: token counts times the model's prices (US dollars per million tokens).

:func:`calculate_cost` is pi's formula, used for every response. The built-in models take
their prices from the ``genai-prices`` package's bundled data (read offline, never updated
over the network) through :func:`prices_from_genai`. Mind the difference in counting:
genai-prices' ``input_tokens`` *includes* cache reads and writes, while pi's (and our)
``Usage.input`` counts only the uncached input; :func:`genai_cost` converts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..messages import Cost, Usage
from .base import Model, ModelCost


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Set ``usage.cost`` from ``model.cost`` (per million tokens) and return it.

    ``cost.total`` is the sum of the four parts, as pi computes it.
    """
    prices = model.cost
    cost = usage.cost
    cost.input = prices.input / 1_000_000 * usage.input
    cost.output = prices.output / 1_000_000 * usage.output
    cost.cache_read = prices.cache_read / 1_000_000 * usage.cache_read
    cost.cache_write = prices.cache_write / 1_000_000 * usage.cache_write
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost


# genai-prices names some providers differently from pi.
_GENAI_PROVIDER = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openrouter": "openrouter",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x-ai",
    "mistral": "mistral",
    "google": "google",
    "fireworks": "fireworks",
    "together": "together",
}


def _base(price: Any) -> float:
    if price is None:
        return 0.0
    base = getattr(price, "base", price)  # TieredPrices -> the price below the first tier
    return float(base)


@lru_cache(maxsize=512)
def prices_from_genai(provider: str, model_id: str) -> ModelCost | None:
    """Base prices of ``provider``/``model_id`` from genai-prices' bundled data, or ``None`` if unknown.

    Tiered prices (e.g. above 200k input tokens) are reduced to their base tier, as pi's
    price table does. Never touches the network.
    """
    genai_provider = _GENAI_PROVIDER.get(provider)
    if genai_provider is None:
        return None
    try:
        from datetime import datetime, timezone

        from genai_prices import data_snapshot

        snapshot = data_snapshot.get_snapshot()
        _prov, info = snapshot.find_provider_model(model_id, None, genai_provider, None)
        prices = info.get_prices(datetime.now(tz=timezone.utc))
    except Exception:  # noqa: BLE001 - an unknown model or a data change just means "no price"
        return None
    return ModelCost(
        input=_base(getattr(prices, "input_mtok", None)),
        output=_base(getattr(prices, "output_mtok", None)),
        cache_read=_base(getattr(prices, "cache_read_mtok", None)),
        cache_write=_base(getattr(prices, "cache_write_mtok", None)),
    )


def genai_cost(usage: Usage, provider: str, model_id: str) -> Cost | None:
    """The cost of ``usage`` as genai-prices computes it (tiers included), or ``None`` if unknown.

    Converts pi's counting to genai-prices': its ``input_tokens`` is ``input + cache_read +
    cache_write``.
    """
    genai_provider = _GENAI_PROVIDER.get(provider)
    if genai_provider is None:
        return None
    try:
        from genai_prices import Usage as GenaiUsage
        from genai_prices import calc_price

        calc = calc_price(
            GenaiUsage(
                input_tokens=usage.input + usage.cache_read + usage.cache_write,
                cache_read_tokens=usage.cache_read,
                cache_write_tokens=usage.cache_write,
                output_tokens=usage.output,
            ),
            model_id,
            provider_id=genai_provider,
        )
    except Exception:  # noqa: BLE001
        return None
    return Cost(input=float(calc.input_price), output=float(calc.output_price), total=float(calc.total_price))
