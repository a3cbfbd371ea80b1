"""Playback drift: how far a replay performed at the recorded pace strays from the recorded timeline.

Target (issue 28): no more than 1 frame (1/60 s) of drift per 100 events.

Two players, both on the real pi sessions of the fixtures (``large-session.jsonl``,
``before-compaction.jsonl``, recorded by pi with Claude and GPT models):

* **kernel**: every recorded assistant reply is streamed by the replay provider
  (:class:`pi_jupyter.providers.ReplayProvider`) for the conversation it answered, paced from
  the file's timestamps at a speed factor that makes the whole file play in about
  ``--seconds``; each event's due time and the time it went out are logged.
* **page**: the exported page (``pi-jupyter export``) plays the current branch in headless
  Chromium at a speed factor that makes it last about ``--seconds``; the page's player logs
  when each event was due and when it was shown (``performance.now()``).

Printed per player and file: events, the largest lateness of any event, the 99th percentile,
and the drift that builds up: the least-squares slope of lateness against the event's index,
per 100 events, in frames. A player that schedules every event from one start time keeps the
slope near zero however long it plays.

Usage: ``python bench/bench_playback.py [--seconds 20] [--kernel] [--page]`` (both by default).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pi_jupyter.providers import LlmRequest, ReplayProvider, StreamOptions
from pi_jupyter.providers.replay_records import load_recording
from pi_jupyter.session import Session

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi"
FILES = ("large-session.jsonl", "before-compaction.jsonl")
FRAME = 1 / 60


def slope_per_100(lateness: list[float]) -> float:
    """Least-squares slope of lateness (s) against event index, times 100."""
    n = len(lateness)
    if n < 2:
        return 0.0
    xs = range(n)
    mx = (n - 1) / 2
    my = sum(lateness) / n
    num = sum((x - mx) * (y - my) for x, y in zip(xs, lateness, strict=True))
    den = sum((x - mx) ** 2 for x in xs)
    return 100 * num / den


def report(name: str, lateness: list[float], wall: float, pace: float) -> None:
    ordered = sorted(lateness)
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    slope = slope_per_100(lateness)
    print(
        f"  {name:<26} {len(lateness):>6,} events at {pace:>5.0f}x in {wall:5.1f} s · "
        f"lateness max {max(lateness) * 1000:5.1f} ms ({max(lateness) / FRAME:.2f} frames), p99 {p99 * 1000:4.1f} ms, "
        f"mean {statistics.fmean(lateness) * 1000:4.1f} ms · drift {slope / FRAME:+.4f} frames per 100 events"
    )


async def play_all(provider: ReplayProvider, requests: list[LlmRequest], log: list[tuple[float, float]]) -> list[float]:
    """Stream every request's recorded reply; the lateness of every paced event."""
    lateness: list[float] = []
    for request in requests:
        log.clear()
        async for _ in provider.stream(provider.model, request, StreamOptions()):
            pass
        lateness.extend(actual - target for target, actual in log)
    return lateness


def bench_kernel(seconds: float) -> None:
    print("kernel: the replay provider streaming every recorded reply at a pace from the file's timestamps")
    for name in FILES:
        path = FIXTURES / name
        records, _ = load_recording(str(path))
        total = sum(r.duration_ms or 0 for r in records) / 1000
        pace = max(1.0, total / seconds)
        session = Session.open(path, readonly=True)
        requests = [LlmRequest(messages=session.context(session.raw_entry(r.entry_id).get("parentId")).llm()) for r in records]
        session.close()
        log: list[tuple[float, float]] = []
        provider = ReplayProvider(path, pace=pace, drift_log=log, on_note=lambda _: None)
        t0 = time.perf_counter()
        lateness = asyncio.run(play_all(provider, requests, log))
        report(name, lateness, time.perf_counter() - t0, pace)


def bench_page(seconds: float) -> None:
    from playwright.sync_api import sync_playwright

    from pi_jupyter.views.export.page import export_html

    print("page: the exported page's player in headless Chromium, the current branch at a pace from the file's timestamps")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            for name in FILES:
                session = Session.open(FIXTURES / name, readonly=True)
                page_path = Path(tmp) / (name + ".html")
                page_path.write_text(export_html(session), encoding="utf-8")
                session.close()
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(page_path.as_uri())
                length = page.evaluate("() => window.piPlayback.length()")
                pace = max(1.0, length / 1000 / seconds)
                t0 = time.perf_counter()
                page.evaluate(f"() => window.piPlayback.play({{speed: {pace}, log: true}})")
                page.wait_for_function("() => window.piPlayback.state() === 'ended'", timeout=(seconds * 4 + 30) * 1000, polling=200)
                wall = time.perf_counter() - t0
                log = page.evaluate("() => window.piPlayback.log()")
                page.close()
                report(name, [(shown - due) / 1000 for due, shown in log], wall, pace)
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="how long each file plays")
    parser.add_argument("--kernel", action="store_true")
    parser.add_argument("--page", action="store_true")
    args = parser.parse_args()
    both = not (args.kernel or args.page)
    if args.kernel or both:
        bench_kernel(args.seconds)
    if args.page or both:
        bench_page(args.seconds)


if __name__ == "__main__":
    sys.exit(main())
