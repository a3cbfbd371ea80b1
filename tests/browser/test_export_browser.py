"""The exported session page in headless Chromium: no network, the tree drawn, a click on a node shows its branch, search.

The page is opened from a file with every network request recorded: it must make none.
Search shows how many matches there are, scrolls to the current one and highlights it, and
steps through them (buttons, Enter, Shift+Enter), switching branch where a match lives; the
tree fits its pane (no node cut at the edge); the header names the session and its file,
never the folder it was in. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_export import _two_branches  # noqa: E402

from pi_jupyter.cli.main import main  # noqa: E402
from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

CURRENT_MATCH_IN_VIEW = """() => {
  const m = document.querySelector('#transcript .pi-cur');
  if (!m) return null;
  const r = m.getBoundingClientRect(), p = document.querySelector('#transcript').getBoundingClientRect();
  return {text: m.textContent, inView: r.top >= p.top && r.bottom <= p.bottom && r.height > 0,
          highlighted: getComputedStyle(m).backgroundColor, plain: getComputedStyle(document.body).backgroundColor};
}"""

TREE = """() => {
  const tree = document.querySelector('#tree'), pane = tree.getBoundingClientRect();
  const nodes = [...document.querySelectorAll('#tree g.node')].map(g => g.getBoundingClientRect());
  const sel = document.querySelector('#tree g.node.sel').getBoundingClientRect();
  const texts = [...document.querySelectorAll('#tree g.node text')].map(t => t.getBoundingClientRect().height);
  return {
    cut: nodes.filter(r => r.left < pane.left - 1 || r.right > pane.right + 1).length,
    beyondScroll: nodes.filter(r => r.right - pane.left + tree.scrollLeft > tree.scrollWidth + 1).length,
    currentShown: sel.left >= pane.left && sel.right <= pane.right && sel.top >= pane.top && sel.bottom <= pane.bottom,
    textHeight: Math.max(...texts),
  };
}"""


def _many_branches(tmp_path) -> str:
    """A wide tree: one question answered twelve ways, each answer mentioning the word searched for."""
    s = _two_branches(tmp_path)
    root = next(e["id"] for e in s.raw_entries() if "It diverges." in str(e.get("message")))
    for i in range(12):
        s.checkout(root)
        s.append_message(UserMessage.text(f"Variant {i}: how would a warmup of {i * 100} steps change it?"))
        s.append_message(AssistantMessage(content=[TextContent(text=f"With {i * 100} warmup steps the loss settles.")]))
    return s.path


def test_export_page_switches_branches_by_the_tree_and_searches(browser, tmp_path):
    s = _two_branches(tmp_path)
    out = tmp_path / "study.html"
    assert main(["export", s.path, "-o", str(out)]) == 0
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    try:
        page.goto(out.as_uri())
        transcript = page.locator("#transcript")
        # the current branch (the right one) is shown first, with its compaction summary
        page.wait_for_function("() => document.querySelector('#transcript').innerText.includes('The right branch explodes.')")
        assert "The left branch converges." not in transcript.inner_text()
        assert "Find a stable rate." in transcript.inner_text()
        tree = page.evaluate(TREE)  # a small tree is shown whole, at a size that reads
        assert tree["cut"] == 0 and tree["currentShown"] and tree["textHeight"] >= 6, tree
        branches = page.locator("a[data-leaf]").all_inner_texts()
        assert len(branches) == 2 and any(b.startswith("baseline") for b in branches), branches
        # the header names the file, not the folder it was in
        header = page.locator("header").inner_text()
        assert "study.jsonl" in header and str(tmp_path) not in header and str(tmp_path) not in page.title()
        # a click on the node of the left branch's last turn shows that branch (its label too)
        node = page.locator("#tree g.node", has_text="The left branch").first
        node.click()
        page.wait_for_function("() => document.querySelector('#transcript').innerText.includes('The left branch converges.')")
        text = transcript.inner_text()
        assert "The right branch explodes." not in text and "baseline" in text and "1.0" in text
        assert "First question about the loss." in text  # the shared start of both branches
        # search finds text on any branch; its hit shows that branch
        page.fill("#search", "explodes")
        hit = page.locator("#hits a").first
        hit.wait_for()
        hit.click()
        page.wait_for_function("() => document.querySelector('#transcript').innerText.includes('The right branch explodes.')")
        assert page.locator("#search-count").inner_text() == "1 of 1"
        page.screenshot(path=str(ARTIFACTS / "export_page.png"))
    finally:
        context.close()
    assert requests == []  # self-contained: nothing fetched


def test_search_counts_scrolls_to_and_steps_through_matches(browser, tmp_path):
    path = _many_branches(tmp_path)
    out = tmp_path / "wide.html"
    assert main(["export", path, "-o", str(out)]) == 0
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(out.as_uri())
        page.wait_for_selector("#tree g.node")
        # a tree too wide for the pane is drawn large enough to read, the current node in view, the rest a scroll away
        tree = page.evaluate(TREE)
        assert tree["currentShown"] and tree["beyondScroll"] == 0 and tree["textHeight"] >= 6, tree
        page.screenshot(path=str(ARTIFACTS / "export_page_wide_tree.png"))
        page.click("#tree-fit")  # "whole tree": every node inside the pane
        assert page.evaluate(TREE)["cut"] == 0
        page.click("#tree-fit")

        page.fill("#search", "warmup")
        page.wait_for_function("() => document.querySelector('#search-count').textContent === '1 of 24'")
        first = page.evaluate(CURRENT_MATCH_IN_VIEW)
        assert first["text"].lower() == "warmup" and first["inView"], first
        assert first["highlighted"] != first["plain"]  # the current match stands out
        assert page.locator("#transcript mark.pi-hit:visible").count() >= 2  # every match on the shown branch is marked
        page.screenshot(path=str(ARTIFACTS / "export_page_search.png"))

        # next and previous, by button and by key; a match on another branch switches to it
        page.click("#search-next")
        page.wait_for_function("() => document.querySelector('#search-count').textContent === '2 of 24'")
        page.press("#search", "Enter")
        page.wait_for_function("() => document.querySelector('#search-count').textContent === '3 of 24'")
        third = page.evaluate(CURRENT_MATCH_IN_VIEW)
        assert third["inView"], third
        assert "Variant 1:" in page.locator("#transcript").inner_text()  # the third match is on the second variant's branch
        assert "Variant 0:" not in page.locator("#transcript").inner_text()
        page.press("#search", "Shift+Enter")
        page.wait_for_function("() => document.querySelector('#search-count').textContent === '2 of 24'")
        page.click("#search-prev")
        page.click("#search-prev")  # from the first match back to the last
        page.wait_for_function("() => document.querySelector('#search-count').textContent === '24 of 24'")
        assert "Variant 11:" in page.locator("#transcript").inner_text()

        page.fill("#search", "no such words")
        page.wait_for_function("() => document.querySelector('#search-count').textContent === 'no match'")
        assert page.locator("#transcript mark.pi-hit").count() == 0
        page.press("#search", "Escape")
        page.wait_for_function("() => document.querySelector('#search-count').textContent === ''")
    finally:
        context.close()


READABLE = """() => {
  const D = JSON.parse(document.getElementById('pi-data').textContent);
  const tree = document.querySelector('#tree'), pane = tree.getBoundingClientRect();
  const heights = [...document.querySelectorAll('#tree g.node text')].map(t => t.getBoundingClientRect().height).sort((a, b) => a - b);
  const onPath = new Set();
  for (let id = D.leaf; id && !onPath.has(id); id = D.parents[id]) onPath.add(id);
  const ids = g => D.nodes[g.querySelector('title').textContent] || [];
  const path = [...document.querySelectorAll('#tree g.node')].filter(g => ids(g).some(id => onPath.has(id)));
  const whole = r => r.left >= pane.left - 1 && r.right <= pane.right + 1 && r.top >= pane.top - 1 && r.bottom <= pane.bottom + 1;
  const pathWhole = path.map(g => whole(g.getBoundingClientRect()));
  return {median: heights[Math.floor(heights.length / 2)], pathWhole: pathWhole, paneWidth: pane.width};
}"""


def _lesson(tmp_path: Path) -> str:
    """A session as a notebook leaves it: the model, thinking level and system prompt recorded, then a question
    answered three ways (a tree wider than the pane at a size that reads)."""
    from pi_jupyter import Agent, Session
    from pi_jupyter.agent.sync import run_blocking  # Playwright runs an event loop in this thread

    agent = Agent(Session.create(path=tmp_path / "lesson.jsonl"), model="offline/echo")
    run_blocking(agent.prompt("First, what is a learning rate?"))
    start = agent.session.leaf_id
    for i in range(3):
        run_blocking(agent.checkout(start))
        run_blocking(agent.prompt(f"Way {i}: why would the loss diverge?"))
    return agent.session.path


def test_the_tree_reads_and_playback_starts_at_the_first_prompt(browser, tmp_path):
    out = tmp_path / "lesson.html"
    assert main(["export", _lesson(tmp_path), "-o", str(out)]) == 0
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(out.as_uri())
        page.wait_for_function("() => !!window.piPlayback && !!document.querySelector('#tree g.node.sel')")
        page.screenshot(path=str(ARTIFACTS / "export_page_readable_tree.png"))
        tree = page.evaluate(READABLE)
        assert tree["median"] >= 10, tree  # the node text reads (it was about 5 px)
        assert all(tree["pathWhole"]) and len(tree["pathWhole"]) >= 2, tree  # the first and the current node: whole, not cut
        text = page.locator("#transcript").inner_text()
        assert "[system message]" not in text and "The model's instructions" in text  # what the recorded prompt did, in words
        # one step of playback shows the first prompt: the settings before it are the scene, shown, not played
        page.click(".pb-step")
        shown = page.evaluate(
            "() => [...document.querySelectorAll('#transcript .entry.on')].filter(e => !e.classList.contains('pb-future'))"
            ".map(e => e.innerText)"
        )
        assert any("First, what is a learning rate?" in t for t in shown), shown
        assert any("Model: offline/echo" in t for t in shown) and not any("You said" in t for t in shown), shown
        page.screenshot(path=str(ARTIFACTS / "export_page_playback_first_step.png"))
    finally:
        context.close()
