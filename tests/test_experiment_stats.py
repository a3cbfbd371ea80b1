"""The experiment's statistics against scipy and statsmodels, and their coverage on simulated studies."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statistics_reference import (
    contingency,
    multitest,
    power,
    proportion,
    quick_multitest,  # noqa: F401 - a fixture
    scipy_stats,
)

from pi_jupyter.experiment import stats


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 29, 30, 101, 2000])
def test_student_t_matches_scipy(df):
    for t in (-6.0, -2.3, -0.4, 0.0, 0.9, 2.1, 4.5):
        assert stats.t_cdf(t, df) == pytest.approx(scipy_stats.t.cdf(t, df), abs=1e-10)
    for p in (0.6, 0.9, 0.975, 0.995, 0.025):
        assert stats.t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-8)


@pytest.mark.parametrize("successes,n", [(0, 1), (0, 5), (3, 5), (5, 5), (1, 20), (17, 20), (50, 100), (2.5, 6)])
def test_wilson_matches_statsmodels(successes, n):
    low, high = stats.wilson(successes, n)
    ref = proportion.proportion_confint(successes, n, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx(ref, abs=1e-9)


def test_mean_interval_is_wilson_for_0_1_and_t_otherwise():
    binary = stats.mean_estimate([1, 0, 1, True, 1])
    assert binary.method == "wilson" and (binary.low, binary.high) == pytest.approx(proportion.proportion_confint(4, 5, method="wilson"))
    xs = [7.5, 6.0, 8.25, 9.0, 5.5, 7.0]
    est = stats.mean_estimate(xs)
    ref = scipy_stats.t.interval(0.95, len(xs) - 1, loc=sum(xs) / len(xs), scale=scipy_stats.sem(xs))
    assert est.method == "t" and (est.low, est.high) == pytest.approx(ref, rel=1e-9)
    assert est.sd == pytest.approx(scipy_stats.tstd(xs))
    one = stats.mean_estimate([3.0])
    assert one.mean == 3.0 and one.low is None and one.high is None


def test_paired_t_matches_scipy():
    a = [7.1, 6.3, 8.8, 5.2, 9.0, 6.6, 7.7]
    b = [6.0, 6.1, 7.2, 5.9, 7.5, 6.0, 6.2]
    est = stats.paired_estimate(a, b)
    ref = scipy_stats.ttest_rel(a, b)
    assert est.p == pytest.approx(ref.pvalue, rel=1e-8)
    ci = ref.confidence_interval(0.95)
    assert (est.low, est.high) == pytest.approx((ci.low, ci.high), rel=1e-8)


@pytest.mark.parametrize("n10,n01,n00,n11", [(7, 1, 2, 0), (3, 3, 4, 0), (0, 0, 5, 5), (12, 2, 10, 6), (0, 4, 1, 1)])
def test_paired_0_1_is_mcnemar_exact(n10, n01, n00, n11):
    a = [1] * n10 + [0] * n01 + [0] * n00 + [1] * n11
    b = [0] * n10 + [1] * n01 + [0] * n00 + [1] * n11
    est = stats.paired_estimate(a, b)
    table = [[n11, n10], [n01, n00]]
    assert est.p == pytest.approx(contingency.mcnemar(table, exact=True).pvalue, rel=1e-10)
    assert est.mean == pytest.approx((n10 - n01) / len(a))
    assert -1 <= est.low <= est.high <= 1


def test_paired_without_spread_uses_the_sign_test_and_its_exact_interval():
    """Every pair differs by 2: no t statistic. At n = 3 the sign test cannot decide at 5% (p = 0.25), so its
    interval for the median difference is unbounded, not [+2, +2]; from 6 pairs on it is [2, 2], exactly."""
    est = stats.paired_estimate([5, 6, 7], [3, 4, 5])
    assert est.mean == 2 and est.method == "sign"
    assert est.p == pytest.approx(scipy_stats.binomtest(3, 3, 0.5).pvalue)
    assert (est.low, est.high) == (-math.inf, math.inf)
    assert stats.pairs_to_decide(est) == 6 == min(n for n in range(1, 20) if scipy_stats.binomtest(n, n, 0.5).pvalue < 0.05)
    six = stats.paired_estimate([5] * 6, [3] * 6)
    assert (six.low, six.high) == (2, 2) and six.p < 0.05
    same = stats.paired_estimate([5, 6], [5, 6])
    assert same.mean == 0 and same.p == 1.0 and same.low <= 0 <= same.high


@pytest.mark.parametrize("alpha", [0.05, 0.025, 0.0125, 0.2])
@pytest.mark.parametrize(
    "differences",
    [[1.0] * 3, [1.0] * 8, [0.0] * 7, [0, 0, 1, 1, 1, 2, 5, -1, 3, 3], [float(i) for i in range(-3, 17)], [2, 2, 2, 2, 2, 2, 2, -1]],
)
def test_the_sign_interval_holds_exactly_the_medians_the_sign_test_keeps(differences, alpha):
    """Checked by inverting scipy's exact binomial test at every candidate median between and at the values."""
    low, high = stats.sign_interval(differences, alpha)
    values = sorted(set(differences))
    candidates = sorted({*values, *[(a + b) / 2 for a, b in zip(values, values[1:], strict=False)], values[0] - 1, values[-1] + 1})

    def kept(m: float) -> bool:
        pos, neg = sum(d > m for d in differences), sum(d < m for d in differences)
        return pos + neg == 0 or scipy_stats.binomtest(pos, pos + neg, 0.5).pvalue > alpha

    # at a value itself ties drop out of the sign test, so the test is read between the values (and beyond them)
    between = [m for m in candidates if m not in values]
    assert all(kept(m) for m in between if low <= m <= high)
    assert all(not kept(m) for m in between if not low <= m <= high)
    if len(values) == 1:  # no spread: the one value is the median, and it is inside
        assert low <= values[0] <= high


def test_holm_matches_statsmodels():
    ps = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2]
    assert stats.holm(ps) == pytest.approx(list(multitest.multipletests(ps, method="holm")[1]))
    # where the running maximum matters: 3 x 0.010 = 0.030 comes before 2 x 0.011 = 0.022
    ps = [0.010, 0.011, 0.04]
    assert stats.holm(ps) == pytest.approx(list(multitest.multipletests(ps, method="holm")[1]))
    assert stats.holm(ps)[1] == pytest.approx(0.03)


@settings(max_examples=300, deadline=None)
@given(ps=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12))
def test_holm_matches_statsmodels_on_any_p_values(ps):
    assert stats.holm(ps) == pytest.approx(list(multitest.multipletests(ps, method="holm")[1]), abs=1e-12)


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 2, 0.05 / 3, 0.001])
def test_paired_t_interval_at_any_level_matches_scipy(alpha):
    a = [7.1, 6.3, 8.8, 5.2, 9.0, 6.6, 7.7]
    b = [6.0, 6.1, 7.2, 5.9, 7.5, 6.0, 6.2]
    est = stats.paired_estimate(a, b, alpha)
    ci = scipy_stats.ttest_rel(a, b).confidence_interval(1 - alpha)
    assert (est.low, est.high) == pytest.approx((ci.low, ci.high), rel=1e-8) and est.alpha == alpha
    # the interval excludes 0 exactly when the test decides at that level
    assert (est.low > 0 or est.high < 0) == (est.p < alpha)


@pytest.mark.parametrize("df", [101, 102, 200, 1000, 10**6])
def test_the_quick_t_quantile_is_within_1e_4_of_scipy(df):
    for p in (0.975, 0.99, 0.9992, 0.99999):
        assert stats._t_quantile_near(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), abs=1e-4)


def test_pairs_to_decide_matches_scipy_for_the_t_test():
    est = stats.paired_estimate([5, 6, 7.5, 6], [4, 5, 5, 5.5])  # mean 1.25, sd 0.87: p = 0.06 at n = 4
    want = next(n for n in range(2, 100) if scipy_stats.t.ppf(0.975, n - 1) * est.sd / math.sqrt(n) < est.mean)
    assert stats.pairs_to_decide(est) == want == 5
    want = next(n for n in range(2, 100) if scipy_stats.t.ppf(1 - 0.0125 / 2, n - 1) * est.sd / math.sqrt(n) < est.mean)
    assert stats.pairs_to_decide(est, 0.0125) == want


def test_degenerate_cases_agree_with_scipy_and_statsmodels():
    # n = 1: a mean, no interval; a pair, no test
    one = stats.mean_estimate([3.0])
    assert one.low is None and one.high is None
    assert stats.paired_estimate([3.0], [2.0]).p is None
    # all equal, 0/1: McNemar's exact test has nothing to count (p = 1), the interval is around 0
    allsame = stats.paired_estimate([1, 1, 1], [1, 1, 1])
    assert allsame.p == contingency.mcnemar([[3, 0], [0, 0]], exact=True).pvalue == 1.0
    assert allsame.low < 0 < allsame.high
    # n = 3, every pair discordant one way: p = 0.25 as statsmodels says, and not decided at 5%
    three = stats.paired_estimate([1, 1, 1], [0, 0, 0])
    assert three.p == pytest.approx(contingency.mcnemar([[0, 3], [0, 0]], exact=True).pvalue)
    # ties among the differences: the paired t test as scipy runs it
    a, b = [3, 4, 4, 5, 7, 7], [3, 3, 4, 4, 6, 7]
    tied = stats.paired_estimate(a, b)
    assert tied.p == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue)
    # a mean without spread: the exact interval of the median (unbounded below 6 values), not [5, 5]
    flat = stats.mean_estimate([5.0, 5.0, 5.0])
    assert flat.mean == 5 and (flat.low, flat.high) == (-math.inf, math.inf)
    assert (stats.mean_estimate([5.0] * 6).low, stats.mean_estimate([5.0] * 6).high) == (5, 5)


@pytest.mark.parametrize("big", [1e308, -1e308, 1.7e308])
def test_scores_near_the_largest_float_never_overflow(big):
    est = stats.mean_estimate([big, big, big / 2, big])
    assert est.mean == pytest.approx(sum(v / 4 for v in (big, big, big / 2, big)))
    assert est.low <= est.mean <= est.high
    mixed = stats.paired_estimate([big, -big, big], [-big, big, big])
    assert mixed.p is not None and mixed.low <= mixed.mean <= mixed.high
    same_way = stats.paired_estimate([big] * 4, [-big] * 4)  # each difference is past the largest float
    assert math.isinf(same_way.mean) and same_way.method == "sign" and stats.pairs_to_decide(same_way) == 6
    assert stats.pairs_needed(1e-300, big) is None and stats.pairs_needed(big, 1e-300) == 2


def test_pass_at_k_and_pass_hat_k():
    # by enumeration over every k-subset of the n runs
    from itertools import combinations

    runs = [1, 0, 1, 1, 0]
    for k in range(1, 6):
        subsets = list(combinations(runs, k))
        assert stats.pass_at_k(5, 3, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
        assert stats.pass_hat_k(5, 3, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))


@pytest.mark.parametrize(
    "difference,sd,alpha", [(0.2, 0.5, 0.05), (0.2, 0.9, 0.05), (1.0, 3.0, 0.0125), (0.5, 0.4, 0.05), (0.1, 1.0, 0.025)]
)
def test_pairs_needed_matches_statsmodels_power(difference, sd, alpha):
    exact = power.TTestPower().solve_power(effect_size=difference / sd, alpha=alpha, power=0.8)
    assert abs(stats.pairs_needed(difference, sd, alpha) - exact) <= 1


def _coverage(simulate, trials=2000, seed=7):
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        est, truth = simulate(rng)
        hits += est.low <= truth <= est.high
    return hits / trials


def test_paired_intervals_cover_the_true_difference_95_percent_of_the_time():
    # 2,000 simulated grids each: two variants answer the same questions
    def continuous(rng):
        # 12 questions of varying difficulty, variant B about 0.4 better, noisy judge scores
        base = [rng.gauss(6, 1.5) for _ in range(12)]
        a = [q + rng.gauss(0, 1) for q in base]
        b = [q + 0.4 + rng.gauss(0, 1) for q in base]
        return stats.paired_estimate(b, a), 0.4

    def skewed(rng):
        base = [rng.expovariate(1 / 50) for _ in range(15)]  # answer lengths
        a = [q + rng.expovariate(1 / 10) for q in base]
        b = [q + rng.expovariate(1 / 15) for q in base]
        return stats.paired_estimate(b, a), 5.0

    def pass_fail(rng):
        # 30 questions; each has its own difficulty, so the two variants' outcomes are correlated
        a, b = [], []
        for _ in range(30):
            easy = rng.random()
            a.append(int(rng.random() < 0.3 + 0.5 * easy))
            b.append(int(rng.random() < 0.5 + 0.45 * easy))
        truth = (0.5 + 0.45 * 0.5) - (0.3 + 0.5 * 0.5)
        return stats.paired_estimate(b, a), truth

    for simulate in (continuous, skewed, pass_fail):
        assert 0.93 <= _coverage(simulate) <= 0.97, simulate.__name__


def test_mean_intervals_cover_the_true_mean_95_percent_of_the_time():
    def wilson_small(rng):
        return stats.mean_estimate([int(rng.random() < 0.7) for _ in range(10)]), 0.7

    def t_small(rng):
        return stats.mean_estimate([rng.gauss(7, 2) for _ in range(5)]), 7.0

    for simulate in (wilson_small, t_small):
        assert 0.93 <= _coverage(simulate) <= 0.97, simulate.__name__


def test_sequential_looks_keep_the_error_rate():
    """Under no difference, deciding at any of 5 looks with the spent levels is wrong at most 5% of the time;
    testing at 5% at every look (what a naive loop does) is wrong far more often."""
    repeats, looks = 20, [4, 8, 12, 16, 20]
    levels = stats.look_levels(looks, repeats)
    assert sum(levels) == pytest.approx(0.05)
    rng = random.Random(11)
    honest = naive = 0
    trials = 2000
    for _ in range(trials):
        a = [rng.gauss(0, 1) for _ in range(repeats)]
        b = [rng.gauss(0, 1) for _ in range(repeats)]
        ps = [stats.paired_estimate(a[:r], b[:r]).p for r in looks]
        honest += any(p < level for p, level in zip(ps, levels, strict=True))
        naive += any(p < 0.05 for p in ps)
    assert honest / trials <= 0.05
    assert naive / trials > 0.08
