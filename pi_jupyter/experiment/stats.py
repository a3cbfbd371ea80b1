"""The statistics of an experiment's table, in plain Python (no scipy at run time).

Small, textbook formulas, each checked against scipy or statsmodels in the tests
(``tests/test_experiment_stats.py``) and, for the intervals, by coverage on simulated studies:

- a mean with its 95% interval: Wilson's score interval for 0/1 scores (right at small n and
  near 0 or 1, where the normal interval is not), Student's t interval for other scores;
- a paired difference (the same question asked two ways): for 0/1 scores the Bonett-Price
  adjusted interval and McNemar's exact test on the discordant pairs; for other scores the
  paired t interval and test (the sign test when every pair differs by the same amount, where
  the t statistic is undefined);
- Holm's correction for several comparisons; pass@k and pass^k over repeats; how many pairs a
  paired t test needs to detect a difference; and the share of the error rate a sequential
  look may spend (Lan-DeMets, Pocock type).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from pydantic import BaseModel

ALPHA = 0.05
"""The error rate of every interval (95%) and test of the table."""

_NORMAL = NormalDist()


class Estimate(BaseModel):
    """A mean (or a mean difference) with its interval; ``low``/``high`` are ``None`` when ``n`` is too small for one."""

    mean: float
    low: float | None = None
    high: float | None = None
    n: int = 0
    sd: float | None = None
    """Standard deviation of the values (of the differences, for a paired estimate)."""
    p: float | None = None
    """Two-sided p-value of "no difference" (paired estimates only)."""
    method: str = ""


def is_binary(values: Sequence[float]) -> bool:
    """True when every value is 0 or 1 (bools included): a pass/fail score."""
    return bool(values) and all(v in (0, 1) for v in values)


def z_quantile(p: float) -> float:
    """The standard normal quantile."""
    return _NORMAL.inv_cdf(p)


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with an integer number of degrees of freedom.

    The finite series of Abramowitz & Stegun 26.7.3-4 in the angle ``atan(t / sqrt(df))``: exact
    for every integer ``df``; beyond 100,000 degrees of freedom t is normal to 1e-6.
    """
    if df < 1:
        raise ValueError("degrees of freedom must be 1 or more")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if df > 100_000:
        return _NORMAL.cdf(t)
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 1:
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        a = (2 / math.pi) * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    else:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        a = s * total
    # a = P(|T| <= |t|)
    return 0.5 + a / 2 if t >= 0 else 0.5 - a / 2


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_cdf`, to 1e-12)."""
    if not 0 < p < 1:
        raise ValueError("a quantile needs 0 < p < 1")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


def _sd(values: Sequence[float], mean: float) -> float:
    n = len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0


def wilson(successes: float, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Wilson's score interval for a proportion (``successes`` may be fractional: ties count half)."""
    if n <= 0:
        raise ValueError("a proportion needs n > 0")
    z = z_quantile(1 - alpha / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_estimate(values: Sequence[float], alpha: float = ALPHA) -> Estimate:
    """The mean of ``values`` with its interval: Wilson for 0/1 values, Student's t otherwise."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    mean = sum(xs) / n
    sd = _sd(xs, mean) if n > 1 else None
    if is_binary(xs):
        low, high = wilson(sum(xs), n, alpha)
        return Estimate(mean=mean, low=low, high=high, n=n, sd=sd, method="wilson")
    if n < 2:
        return Estimate(mean=mean, n=n, method="t")
    half = t_quantile(1 - alpha / 2, n - 1) * (sd or 0.0) / math.sqrt(n)
    return Estimate(mean=mean, low=mean - half, high=mean + half, n=n, sd=sd, method="t")


def sign_test(positive: int, negative: int) -> float:
    """Two-sided exact binomial test of ``positive`` vs ``negative`` at 1/2 (McNemar's exact test, the sign test)."""
    n = positive + negative
    if n == 0:
        return 1.0
    k = min(positive, negative)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_estimate(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Estimate:
    """The mean of ``a - b`` over pairs, its interval and the p-value of "no difference".

    0/1 scores: Bonett & Price's adjusted interval (2012) and McNemar's exact test. Other scores:
    the paired t interval and test; when every pair differs by the same amount (no spread, so
    no t statistic) the p-value is the sign test's and the interval is that one amount.
    """
    if len(a) != len(b):
        raise ValueError("paired values come in pairs")
    n = len(a)
    if n == 0:
        raise ValueError("no pairs")
    d = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    mean = sum(d) / n
    sd = _sd(d, mean) if n > 1 else None
    if is_binary(a) and is_binary(b):
        n10, n01 = sum(1 for v in d if v > 0), sum(1 for v in d if v < 0)
        p10, p01 = (n10 + 1) / (n + 2), (n01 + 1) / (n + 2)
        z = z_quantile(1 - alpha / 2)
        half = z * math.sqrt(max(0.0, p10 + p01 - (p10 - p01) ** 2) / (n + 2))
        centre = p10 - p01
        return Estimate(
            mean=mean, low=max(-1.0, centre - half), high=min(1.0, centre + half), n=n, sd=sd, p=sign_test(n10, n01), method="mcnemar"
        )
    if n < 2:
        return Estimate(mean=mean, n=n, sd=sd, p=None, method="t")
    if not sd or sd < 1e-12 * max(1.0, abs(mean)):
        pos, neg = sum(1 for v in d if v > 0), sum(1 for v in d if v < 0)
        return Estimate(mean=mean, low=mean, high=mean, n=n, sd=0.0, p=sign_test(pos, neg), method="sign")
    se = sd / math.sqrt(n)
    t = mean / se
    p = 2 * (1 - t_cdf(abs(t), n - 1))
    half = t_quantile(1 - alpha / 2, n - 1) * se
    return Estimate(mean=mean, low=mean - half, high=mean + half, n=n, sd=sd, p=min(1.0, max(0.0, p)), method="t")


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` runs passes, from ``c`` passes in ``n`` runs (the unbiased estimator)."""
    if not 0 < k <= n:
        raise ValueError("k must be between 1 and n")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that all of ``k`` runs pass, from ``c`` passes in ``n`` runs (as tau-bench reports it)."""
    if not 0 < k <= n:
        raise ValueError("k must be between 1 and n")
    return math.comb(c, k) / math.comb(n, k)


def pairs_needed(difference: float, sd: float, alpha: float = ALPHA, power: float = 0.8) -> int | None:
    """Pairs a two-sided paired t test at ``alpha`` needs to detect ``difference`` with ``power``,
    given the standard deviation ``sd`` of the differences (normal approximation with Guenther's
    correction for the t test; within one pair of the exact noncentral-t answer). ``None`` without a spread."""
    if sd <= 0 or difference == 0:
        return None
    z_a, z_b = z_quantile(1 - alpha / 2), z_quantile(power)
    n = ((z_a + z_b) * sd / abs(difference)) ** 2 + z_a**2 / 2
    return max(2, math.ceil(n))


def spent(fraction: float, alpha: float = ALPHA) -> float:
    """The error rate a Pocock-type spending function allows by ``fraction`` of the planned repeats
    (Lan & DeMets): it spends early enough that an obvious difference stops the grid at an early look."""
    if fraction <= 0:
        return 0.0
    if fraction >= 1:
        return alpha
    return alpha * math.log(1 + (math.e - 1) * fraction)


def look_levels(repeats: Sequence[int], total: int, alpha: float = ALPHA) -> list[float]:
    """The error rate each look at ``repeats`` (cumulative, ending at ``total``) may spend: the spending
    function's increments. They add up to ``alpha``, so by the union bound the chance of any wrong
    decision over all looks stays at most ``alpha``, however many looks there are."""
    out, before = [], 0.0
    for r in repeats:
        now = spent(r / total, alpha)
        out.append(max(0.0, now - before))
        before = now
    return out
