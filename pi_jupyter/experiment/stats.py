"""The statistics of an experiment's table, in plain Python (no scipy at run time).

Small, textbook formulas, each checked against scipy or statsmodels in the tests
(``tests/test_experiment_stats.py``) and, for the intervals, by coverage on simulated studies:

- a mean with its 95% interval: Wilson's score interval for 0/1 scores (right at small n and
  near 0 or 1, where the normal interval is not), Student's t interval for other scores;
- a paired difference (the same question asked two ways), at any error rate ``alpha`` (the
  verdicts' level after correcting for several comparisons): for 0/1 scores the Bonett-Price
  adjusted interval and McNemar's exact test on the discordant pairs; for other scores the
  paired t interval and test; when every pair differs by the same amount (no spread, so no t
  statistic) the sign test and its exact interval for the median difference (from the order
  statistics: unbounded when there are too few pairs for the test to decide at all, never a
  made-up ``[+1, +1]``);
- how many pairs the same effect would need to be decided (:func:`pairs_to_decide`);
- Holm's correction for several comparisons; pass@k and pass^k over repeats; how many pairs a
  paired t test needs to detect a difference; and the share of the error rate a sequential
  look may spend (Lan-DeMets, Pocock type).

Scores as large as ``1e308`` are fine: values are scaled by a power of two before they are
squared or summed, so nothing overflows (a difference too large for a float is infinite).
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
    alpha: float = ALPHA
    """The error rate of the interval (``1 - alpha`` is its confidence)."""


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


def _t_quantile_near(p: float, df: int) -> float:
    """Student's t quantile by the Cornish-Fisher expansion around the normal one (to 1e-4 past 100 degrees
    of freedom): quick where :func:`t_quantile` would sum hundreds of terms at each of its steps."""
    z = z_quantile(p)
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def _scale(values: Sequence[float]) -> float:
    """A power of two that brings the largest value near 1 when values are large enough to overflow when squared (else 1)."""
    top = max((abs(v) for v in values), default=0.0)
    if not top < 1e150:
        return math.ldexp(1.0, math.frexp(top)[1] - 1) if math.isfinite(top) else 1.0
    return 1.0


def _mean(values: Sequence[float]) -> float:
    s = _scale(values)
    return math.fsum(v / s for v in values) / len(values) * s


def _sd(values: Sequence[float], mean: float) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    s = _scale([*values, mean])
    return math.sqrt(math.fsum(((v - mean) / s) ** 2 for v in values) / (n - 1)) * s


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
    """The mean of ``values`` with its interval: Wilson for 0/1 values, Student's t otherwise (the sign
    test's exact interval of the median when the values do not vary: unbounded below 6 values)."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    mean = _mean(xs)
    sd = _sd(xs, mean) if n > 1 else None
    if is_binary(xs):
        low, high = wilson(sum(xs), n, alpha)
        return Estimate(mean=mean, low=low, high=high, n=n, sd=sd, method="wilson", alpha=alpha)
    if n < 2:
        return Estimate(mean=mean, n=n, method="t", alpha=alpha)
    if not sd:  # no spread seen: the exact interval of the median, not a made-up [mean, mean]
        low, high = sign_interval(xs, alpha)
        return Estimate(mean=mean, low=low, high=high, n=n, sd=sd, method="sign", alpha=alpha)
    half = t_quantile(1 - alpha / 2, n - 1) * (sd or 0.0) / math.sqrt(n)
    return Estimate(mean=mean, low=mean - half, high=mean + half, n=n, sd=sd, method="t", alpha=alpha)


def sign_test(positive: int, negative: int) -> float:
    """Two-sided exact binomial test of ``positive`` vs ``negative`` at 1/2 (McNemar's exact test, the sign test)."""
    n = positive + negative
    if n == 0:
        return 1.0
    k = min(positive, negative)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_estimate(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Estimate:
    """The mean of ``a - b`` over pairs, its ``1 - alpha`` interval and the p-value of "no difference".

    0/1 scores: Bonett & Price's adjusted interval (2012) and McNemar's exact test. Other scores:
    the paired t interval and test; when every pair differs by the same amount (no spread, so
    no t statistic) the sign test and its exact interval for the median difference
    (:func:`sign_interval`), which is unbounded while the pairs are too few to decide.
    """
    if len(a) != len(b):
        raise ValueError("paired values come in pairs")
    n = len(a)
    if n == 0:
        raise ValueError("no pairs")
    xs, ys = [float(x) for x in a], [float(y) for y in b]
    s = _scale([*xs, *ys])
    d = [(x / s - y / s) for x, y in zip(xs, ys, strict=True)]  # in units of s: no difference overflows
    mean_s = math.fsum(d) / n
    sd_s = _sd(d, mean_s) if n > 1 else None
    mean, sd = mean_s * s, (sd_s * s if sd_s is not None else None)
    if is_binary(xs) and is_binary(ys):
        n10, n01 = sum(1 for v in d if v > 0), sum(1 for v in d if v < 0)
        low, high = bonett_price(n10, n01, n, alpha)
        return Estimate(mean=mean, low=low, high=high, n=n, sd=sd, p=sign_test(n10, n01), method="mcnemar", alpha=alpha)
    if n < 2:
        return Estimate(mean=mean, n=n, sd=sd, p=None, method="t", alpha=alpha)
    if not sd_s or sd_s < 1e-12 * max(1.0, abs(mean_s)):
        pos, neg = sum(1 for v in d if v > 0), sum(1 for v in d if v < 0)
        low, high = sign_interval([v * s for v in d], alpha)
        return Estimate(mean=mean, low=low, high=high, n=n, sd=0.0, p=sign_test(pos, neg), method="sign", alpha=alpha)
    se_s = sd_s / math.sqrt(n)
    t = mean_s / se_s
    p = 2 * (1 - t_cdf(abs(t), n - 1))
    half_s = t_quantile(1 - alpha / 2, n - 1) * se_s
    low, high = (mean_s - half_s) * s, (mean_s + half_s) * s
    return Estimate(mean=mean, low=low, high=high, n=n, sd=sd, p=min(1.0, max(0.0, p)), method="t", alpha=alpha)


def bonett_price(n10: int, n01: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Bonett & Price's adjusted interval for a paired difference of proportions (``n10``/``n01``: the discordant pairs of ``n``)."""
    p10, p01 = (n10 + 1) / (n + 2), (n01 + 1) / (n + 2)
    z = z_quantile(1 - alpha / 2)
    half = z * math.sqrt(max(0.0, p10 + p01 - (p10 - p01) ** 2) / (n + 2))
    centre = p10 - p01
    return max(-1.0, centre - half), min(1.0, centre + half)


def sign_interval(differences: Sequence[float], alpha: float = ALPHA) -> tuple[float, float]:
    """The exact ``1 - alpha`` interval for the median of ``differences`` that the sign test gives.

    Between the order statistics ``d[k]`` and ``d[n-1-k]`` for the largest ``k`` whose binomial
    tail ``P(B <= k)`` stays within ``alpha / 2``: it holds exactly the medians the two-sided
    sign test at ``alpha`` does not reject. With too few pairs for any ``k`` (fewer than 6 at
    5%) it is unbounded: ``(-inf, inf)``.
    """
    d = sorted(differences)
    n = len(d)
    k, tail = -1, 0.0
    while k + 1 < n:
        nxt = tail + math.comb(n, k + 1) / 2**n
        if nxt > alpha / 2:
            break
        k, tail = k + 1, nxt
    if k < 0:
        return -math.inf, math.inf
    return d[k], d[n - 1 - k]


def pairs_to_decide(est: Estimate, alpha: float | None = None, *, limit: int = 1_000_000) -> int | None:
    """The fewest pairs at which the effect ``est`` shows (its mean, spread, or share of discordant pairs)
    would be decided at ``alpha`` (default: the estimate's own); ``None`` without an effect or beyond ``limit``."""
    level = est.alpha if alpha is None else alpha
    if est.n < 1 or not est.mean or math.isnan(est.mean) or (math.isinf(est.mean) and est.method != "sign"):
        return None

    def decides(n: int) -> bool:
        if est.method == "sign":
            return sign_test(n, 0) < level
        if est.method == "mcnemar":
            # the shares of pairs that differ one way and the other, kept as seen: (n10 + n01) / n from the
            # mean and spread of the differences (each -1, 0 or 1), (n10 - n01) / n is the mean
            both = (est.sd or 0.0) ** 2 * (est.n - 1) / est.n + est.mean**2 if est.n > 1 else abs(est.mean)
            both = min(1.0, max(both, abs(est.mean)))
            n10, n01 = round(n * (both + abs(est.mean)) / 2), round(n * (both - abs(est.mean)) / 2)
            low, high = bonett_price(n10, n01, n, level)
            return sign_test(n10, n01) < level and (low > 0 or high < 0)
        if not est.sd or n < 2:
            return False
        q = t_quantile(1 - level / 2, n - 1) if n <= 101 else _t_quantile_near(1 - level / 2, n - 1)
        return q * est.sd / math.sqrt(n) < abs(est.mean)

    if decides(est.n):
        return est.n
    lo, hi = est.n, max(2, est.n * 2)
    while not decides(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > 1:  # the smallest n that decides (deciding is monotone in n for a fixed effect)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decides(mid) else (mid, hi)
    return hi


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
    if not sd > 0 or not difference or not math.isfinite(sd) or not math.isfinite(difference):
        return None
    z_a, z_b = z_quantile(1 - alpha / 2), z_quantile(power)
    ratio = sd / abs(difference)
    if not ratio < 1e6:  # more pairs than any grid runs (and the square would overflow)
        return None
    n = ((z_a + z_b) * ratio) ** 2 + z_a**2 / 2
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
