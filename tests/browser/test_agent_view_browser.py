"""AgentView in a real JupyterLab, a real ipykernel and headless Chromium.

The notebook feeds two views a synthetic event stream from a background thread (as the
agent's loop thread would). Checked in the page: the text grows in several steps while it
streams, Markdown is rendered (and raw HTML in model text is not), the tool card shows its
result, the status line ends at "done", Stop reaches Python, and after a page reload the
transcript comes back from the widget's snapshot. Checked in the kernel: the number of comm
messages stays far below the number of stream events.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

HERE = Path(__file__).parent

SETUP = f"""
import sys, threading, time
sys.path.insert(0, {str(HERE)!r})
from IPython.display import display
from pi_jupyter.notebook.agent_view.view import AgentView
from fake_agent import ANSWER, full_run, feed

def count_messages(view):
    # Every comm message the widget sends (custom ops and state updates) goes through comm.send.
    counter = {{"n": 0}}
    send = view.comm.send
    def counting(*args, **kwargs):
        counter["n"] += 1
        return send(*args, **kwargs)
    view.comm.send = counting
    return counter
print("setup ok")
"""

RUN1 = """
view1 = AgentView(title="Run 1: streamed answer", model="offline/fake-model")
sent1 = count_messages(view1)
handle1 = display(view1, display_id=True)
rendered1 = threading.Event()
# The view says "sync" when it renders; the kernel reads it once this cell has returned.
view1.on_msg(lambda _w, content, _b: rendered1.set() if content.get("type") == "sync" else None)
stats1 = {}
def run1():
    rendered1.wait(60)
    t0 = time.monotonic()
    n = 0
    for ev in full_run(chunk=2, delay=0.004):
        n += ev.type == "message_update"
        view1.handle(ev)
    stats1.update(updates=n, seconds=time.monotonic() - t0)
t1 = threading.Thread(target=run1, daemon=True)
t1.start()
"""

REPORT1 = """
t1.join()
print(f"RUN1 updates={stats1['updates']} messages={sent1['n']} seconds={stats1['seconds']:.3f}")
handle1.update(view1.bundle(), raw=True)  # what %%pi does at the end of a run: the saved output gets the transcript
"""

RUN2 = """
view2 = AgentView(title="Run 2: stopped", model="offline/fake-model")
stop2 = threading.Event()
clicked = []
view2.on_stop(lambda: (clicked.append(True), stop2.set()))
display(view2)
t2 = feed(view2, full_run(answer=ANSWER * 40, chunk=2, delay=0.01, stop=stop2))
"""

CHECK2 = """
t2.join(timeout=30)
print("STOPPED", bool(clicked), view2.state)
"""


def _view_text(lab, index: int) -> str:
    return lab.page.locator(".piav-root").nth(index).locator(".piav-body").inner_text()


def test_agent_view_streams_stops_and_survives_reload(lab, save_widget_state):
    lab.write_notebook("agent_view.ipynb", [SETUP, RUN1])
    lab.open_notebook("agent_view.ipynb")
    lab.run_all()  # both cells return at once; the stream runs in a thread
    lab.wait_for_output(0, "setup ok")

    view1 = lab.page.locator(".piav-root").nth(0)
    view1.wait_for(timeout=30_000)

    # Sample the text while it streams: it must grow in many steps, not arrive at once.
    lengths: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lengths.append(len(_view_text(lab, 0)))
        if view1.get_attribute("data-state") == "done":
            break
        time.sleep(0.05)
    assert view1.get_attribute("data-state") == "done", f"status never reached done; console: {lab.console[-10:]}"
    steps = [b for a, b in zip(lengths, lengths[1:], strict=False) if b > a]
    assert len(steps) >= 5, f"text did not grow in steps while streaming: {lengths}"

    # Kernel side: far fewer comm messages than stream events, and about 30 a second at most.
    lab.append_and_run(REPORT1)
    out = lab.wait_for_output(2, "RUN1")
    m = re.search(r"updates=(\d+) messages=(\d+) seconds=([\d.]+)", out)
    assert m, out
    updates, messages, seconds = int(m.group(1)), int(m.group(2)), float(m.group(3))
    assert updates > 300
    assert messages < updates / 4, out
    assert messages <= 30 * seconds + 20, out

    _check_final_view(lab, 0)
    lab.screenshot("agent_view.png", view1)

    # Stop: click while the second run streams; the callback runs in the kernel.
    lab.append_and_run(RUN2)
    view2 = lab.page.locator(".piav-root").nth(1)
    view2.wait_for(timeout=30_000)
    lab.page.wait_for_function(
        "() => { const r = document.querySelectorAll('.piav-root')[1];"
        " return r && r.dataset.state === 'streaming' && r.querySelectorAll('.piav-text').length >= 2; }",
        timeout=30_000,
    )
    stop = view2.locator("button.piav-stop")
    assert stop.is_visible()
    # the status line (and its Stop) stays in sight while a long answer streams
    assert view2.locator(".piav-status").evaluate("e => getComputedStyle(e).position") == "sticky"
    lab.screenshot("agent_view_streaming.png", view2)
    stop.click()
    lab.page.wait_for_function("() => document.querySelectorAll('.piav-root')[1].dataset.state === 'aborted'", timeout=30_000)
    assert not stop.is_visible(), "the Stop button stays visible after the run ended"
    assert "Stopped." in _view_text(lab, 1)
    lab.append_and_run(CHECK2)
    assert "STOPPED True aborted" in lab.wait_for_output(4, "STOPPED")

    # Reload: outputs come from the saved file, the widget's state from the live kernel.
    lab.save()
    saved = json.loads((lab.server.root / "agent_view.ipynb").read_text())
    markdown = ["".join(o["data"]["text/markdown"]) for o in saved["cells"][1]["outputs"] if "text/markdown" in o.get("data", {})]
    assert markdown and "Why the loss diverges" in markdown[0] and "bash(command=" in markdown[0]
    lab.reload()
    lab.page.wait_for_function(
        "() => { const r = document.querySelector('.piav-root');"
        " return r && r.dataset.state === 'done' && r.innerText.includes('Why the loss diverges'); }",
        timeout=60_000,
    )
    _check_final_view(lab, 0)
    lab.screenshot("agent_view_reloaded.png", lab.page.locator(".piav-root").nth(0))

    lab.command("apputils:change-theme", {"theme": "JupyterLab Dark"})
    lab.page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    lab.settled(lab.page.locator(".piav-root").nth(0))  # the theme's colours have landed
    lab.screenshot("agent_view_dark.png", lab.page.locator(".piav-root").nth(0))
    lab.command("apputils:change-theme", {"theme": "JupyterLab Light"})

    # Without its kernel: the view renders from the widget state saved in the notebook (the snapshot).
    lab.save()
    saved = json.loads((lab.server.root / "agent_view.ipynb").read_text())
    assert "application/vnd.jupyter.widget-state+json" in saved["metadata"].get("widgets", {})
    lab.shutdown_kernel()
    lab.page.reload()
    lab.page.wait_for_function(
        "() => { const r = document.querySelector('.piav-root');"
        " return r && r.dataset.state === 'done' && r.innerText.includes('Why the loss diverges'); }",
        timeout=60_000,
    )
    _check_final_view(lab, 0)

    errors = [c for c in lab.console if c.startswith("pageerror") or any(w in c.lower() for w in ("piav", "agentview", "agent_view"))]
    assert not errors, errors


def _check_final_view(lab, index: int) -> None:
    root = lab.page.locator(".piav-root").nth(index)
    text = root.inner_text()
    assert "Why does the loss diverge?" in text  # the user message
    assert root.locator("h2", has_text="Why the loss diverges").count() == 1
    assert root.locator("strong", has_text="too high").count() == 1
    assert root.locator("table td", has_text="0.42").count() == 1
    assert root.locator("pre code.language-python", has_text="AdamW").count() == 1
    # highlighted by the shipped highlighter, with a copy button
    assert root.locator("pre code.language-python .piav-hl-n", has_text="10_000").count() == 1
    assert root.locator(".piav-codewrap button.piav-copy").count() >= 1
    assert root.locator("a[href='https://pytorch.org/docs/stable/optim.html']").count() == 1
    # Raw HTML in model text stays text.
    assert root.locator(".piav-md b, .piav-md img").count() == 0
    assert "<b>not bold</b>" in text
    assert lab.page.evaluate("() => window.__piav_xss") is None
    # The tool card: name, arguments, result, duration.
    card = root.locator(".piav-tool[data-call-id='call_1']")
    assert card.count() == 1 and card.get_attribute("data-status") == "done"
    assert "bash" in card.inner_text() and "tail -n 3 train.log" in card.inner_text()
    assert "step 220 loss nan" in card.text_content()
    assert re.search(r"\d+ ms|\d+\.\d s", card.locator(".piav-tool-meta").inner_text())
    # Thinking is there, collapsed.
    thinking = root.locator("details.piav-thinking")
    assert thinking.count() == 1 and thinking.get_attribute("open") is None
    assert "training log" in thinking.text_content()
    # The status line.
    status = root.locator(".piav-status").inner_text()
    assert "done" in status and "offline/fake-model" in status and "tokens" in status
