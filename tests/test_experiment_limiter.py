"""The per-provider limiter: a burst of rate-limit replies is one pause and one halving; successes open it again."""

from __future__ import annotations

import asyncio

from pi_jupyter.experiment.limiter import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_of_429s_is_one_strike_and_successes_reopen():
    clock = Clock()
    limiter = RateLimiter(8, clock=clock)

    async def scenario():
        for _ in range(8):
            await limiter.acquire("openai")
        for _ in range(8):  # eight calls in flight all get a 429: one burst
            limiter.release("openai", rate_limited=True, retry_after=None)
        stats = limiter.stats()["openai"]
        assert stats["limit"] == 4 and stats["rate_limited"] == 8 and 0 < stats["paused_s"] <= 0.5
        clock.now += 10  # the pause is over
        await limiter.acquire("openai")
        limiter.release("openai", rate_limited=True, retry_after=3.0)  # a new burst, with Retry-After
        stats = limiter.stats()["openai"]
        assert stats["limit"] == 2 and stats["paused_s"] == 3.0
        clock.now += 5
        for _ in range(3):
            await limiter.acquire("openai")
            limiter.release("openai")
        assert limiter.stats()["openai"]["limit"] == 5  # additive increase, one per success
        assert "anthropic" not in limiter.stats()  # providers do not share a gate

    asyncio.run(scenario())


def test_calls_beyond_the_limit_wait_their_turn():
    limiter = RateLimiter(2)
    order: list[str] = []

    async def call(name: str) -> None:
        await limiter.acquire("p")
        order.append(f"start {name}")
        await asyncio.sleep(0.01)
        order.append(f"end {name}")
        limiter.release("p")

    async def scenario():
        await asyncio.gather(*(call(n) for n in "abc"))

    asyncio.run(scenario())
    assert order.index("start c") > min(order.index("end a"), order.index("end b"))


def test_a_later_shorter_retry_after_never_shortens_the_clusters_pause():
    """A worker hears Retry-After 20 s, another then hears 1 s: every worker still waits the 20 s (a shorter pause
    heard later would send calls into the provider's refusal); a longer one heard later extends it."""
    import pytest

    distributed = pytest.importorskip("distributed", reason="the Dask executor is the optional 'dask' extra")
    from pi_jupyter.experiment.cluster_limit import ClusterLimiter

    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0", silence_logs=50)
    client = distributed.Client(cluster)
    try:
        limiter = ClusterLimiter("pi-limit-test")
        limiter.start(client)
        limiter.bind(client)
        limiter.pause("openai", 20.0)
        limiter.pause("openai", 1.0)  # heard later, shorter
        assert 15.0 < limiter.reserve("openai", "c1") <= 20.0
        limiter.pause("openai", 40.0)
        assert 35.0 < limiter.reserve("openai", "c2") <= 40.0
        assert limiter.reserve("anthropic", "c3") <= 0  # another provider is not paused
        limiter.stop(client)
    finally:
        client.close()
        cluster.close()
