"""A long answer streaming into the AgentView of a blocking ``%%pi`` cell, read as a user reads it.

JupyterLab with default settings, headless Chromium, a real kernel and the offline model slowed
down (many small deltas). While the answer streams: the status line and its Stop button stay in
sight at the bottom of the notebook (sticky) however tall the answer grows, and the notebook
scrolls along so the newest text is in view. Once the user scrolls up (the mouse wheel) the
view stops following: the scroll position stays where the user put it while text keeps
arriving. Back at the bottom, it follows again; the sticky Stop then stops the run.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.thinking = "off"
%pi new follow-demo
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("drip", delta_delay_s=0.1))
long_prompt = "\\n\\n".join(f"P {n:03d}." for n in range(250))
print("setup-end")
"""

# the offline model echoes the prompt (its first 2,000 characters): 250 short paragraphs, many
# times taller than the page, in about 170 deltas (the prompt comes from a variable, so the
# cell's input is two lines and the answer is what fills the page)
LONG = "%%pi --model offline/drip\n{long_prompt}"

# Where the view, its last text, the status line and Stop are, relative to the notebook's scroller.
METRICS = """(i) => {
  const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];
  const root = cell && cell.querySelector('.piav-root');
  if (!root) return null;
  const sp = root.closest('.jp-WindowedPanel-outer');  // the notebook's window (JupyterLab 4)
  const s = sp.getBoundingClientRect();
  const texts = root.querySelectorAll('.piav-assistant .piav-text');
  const last = texts.length ? texts[texts.length - 1] : null;
  const status = root.querySelector('.piav-status').getBoundingClientRect();
  const stop = root.querySelector('button.piav-stop');
  const b = stop.getBoundingClientRect();
  const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
  const t = last ? last.getBoundingClientRect() : null;
  return {
    state: root.dataset.state,
    scrollTop: sp.scrollTop,
    viewHeight: root.getBoundingClientRect().height,
    scrollerHeight: s.height,
    chars: last ? last.innerText.length : 0,
    lastLine: last ? last.innerText.trim().split('\\n').pop() : '',
    lastInView: !!t && t.bottom <= s.bottom + 2 && t.bottom >= s.top,
    lastBelow: !!t && t.bottom > s.bottom + 2,
    statusInView: status.top >= s.top - 1 && status.bottom <= s.bottom + 1,
    stopUsable: !stop.disabled && stop.offsetParent !== null && (hit === stop || stop.contains(hit)),
  };
}"""


def _scroll_landed(lab, frames: int = 8) -> None:
    """Wait until the notebook's scroll position holds still for ``frames`` animation frames (a wheel's scroll has landed)."""
    lab.page.wait_for_function(
        """(frames) => {
          const sp = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer');
          const w = (window.__piScroll = window.__piScroll || { last: -1, same: 0 });
          w.same = sp && sp.scrollTop === w.last ? w.same + 1 : 0;
          w.last = sp ? sp.scrollTop : -1;
          return w.same >= frames;
        }""",
        arg=frames,
        polling="raf",
        timeout=30_000,
    )


def _metrics(lab, cell):
    m = lab.page.evaluate(METRICS, cell)
    assert m is not None, f"no AgentView in cell {cell}: {lab.output_text(cell)}"
    return m


def _streaming(m):
    return m["state"] == "streaming"


def test_a_long_answer_keeps_stop_in_sight_and_follows_until_the_user_scrolls_up(lab):
    lab.write_notebook("follow.ipynb", [SETUP, LONG])
    lab.open_notebook("follow.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    lab.run_cell(1)

    # the answer grows taller than the notebook's window while it streams
    deadline = time.monotonic() + 60
    m = None
    while time.monotonic() < deadline:
        m = lab.page.evaluate(METRICS, 1) or m
        if m and m["state"] == "streaming" and m["viewHeight"] > m["scrollerHeight"] * 1.2:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the answer never streamed taller than the page: {m}\n{lab.output_text(1)[-300:]}")

    # following: each sample shows the newest text and the sticky status line with a usable Stop, until new text
    # arrived and the notebook scrolled along with it (samples follow the stream, not the clock)
    first = _metrics(lab, 1)
    seen = [(first["scrollTop"], first["lastLine"])]
    m = first
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (m["lastLine"] == first["lastLine"] or m["scrollTop"] <= first["scrollTop"]):
        time.sleep(0.05)
        m = _metrics(lab, 1)
        assert _streaming(m), m
        assert m["lastInView"], f"the newest text is out of view while following: {m}"
        assert m["statusInView"] and m["stopUsable"], f"status line or Stop not in sight while streaming: {m}"
        seen.append((m["scrollTop"], m["lastLine"]))
    assert seen[-1][0] > seen[0][0], f"the notebook did not scroll along with the stream: {seen[-3:]}"
    assert seen[-1][1] != seen[0][1], f"no new text arrived while following: {seen[-3:]}"
    lab.screenshot("follow_streaming.png")

    # the user scrolls up with the mouse wheel: the view stays where the user put it
    box = lab.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").bounding_box()
    lab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    lab.page.mouse.wheel(0, -600)
    _scroll_landed(lab)
    before = _metrics(lab, 1)
    assert _streaming(before), before
    after = before
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _streaming(after) and after["chars"] < before["chars"] + 200:  # more text came
        time.sleep(0.05)
        after = _metrics(lab, 1)
    assert _streaming(after) and after["chars"] > before["chars"], f"the answer stopped growing: {before} {after}"
    assert abs(after["scrollTop"] - before["scrollTop"]) <= 2, f"the view moved although the user scrolled up: {before} {after}"
    assert after["lastBelow"], f"the newest text was pulled into view after the user scrolled up: {after}"
    assert after["statusInView"] and after["stopUsable"], f"status line or Stop gone after scrolling up: {after}"
    lab.screenshot("follow_scrolled_up.png")

    # back at the bottom (the wheel to the end of the notebook, past the view): it follows again;
    # the answer grows into the space below it, then the notebook scrolls along
    lab.page.mouse.wheel(0, 100_000)
    back = _metrics(lab, 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _streaming(back) and not back["lastInView"]:  # the wheel's scroll has landed
        time.sleep(0.05)
        back = _metrics(lab, 1)
    samples = []
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        m = _metrics(lab, 1)
        if not _streaming(m):
            break
        assert m["lastInView"] and m["statusInView"], f"not following after scrolling back down: {back} {m}"
        samples.append(m)
        if m["scrollTop"] > back["scrollTop"] + 100:
            break
        time.sleep(0.3)
    assert samples and samples[-1]["scrollTop"] > back["scrollTop"] + 100, f"the notebook did not scroll along again: {back} {samples[-1:]}"
    assert samples[-1]["chars"] > back["chars"]

    # the sticky Stop stops the blocking cell; the partial answer is kept
    lab.cell(1).locator(".piav-root button.piav-stop").click()
    out = lab.wait_for_static(1, "Stopped", timeout=60)
    assert "partial answer is kept as entry" in out and "Traceback" not in out, out
