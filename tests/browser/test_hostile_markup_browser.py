"""Hostile markup in every field, in Chromium: no payload runs, none becomes live markup, every field is shown.

The worlds of :mod:`hostile` (one vector written into every field by a real run) are rendered
and loaded in headless Chromium, each rendering in its own page: the static HTML of a cell and
of its re-run (with the sibling pager's script running), their Markdown and the Markdown
export read by readers that pass raw HTML, the export page (its own script must still run),
the Graphviz SVG inline, the TreeView's side panel and comparison, the grid's table, and the
live widgets' JavaScript (AgentView, TreeView, ExperimentView) rendering their synced state
through a stand-in for the widget model. A payload that runs calls ``__pwn``; the page must end
with no call, no ``on*`` handler, no ``javascript:`` URL, no element a payload made, and the
marker of every field it shows in its visible text.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hostile import SHOWN, VECTORS, World, build_world, marker, missing_fields  # noqa: E402
from test_hostile_markup import HTML_RENDERINGS, MARKDOWN_RENDERINGS, READERS  # noqa: E402

TRAP = "window.__pwned = []; window.__pwn = function (f) { window.__pwned.push(String(f)); }; window.alert = window.__pwn;"

INSPECT = """() => {
  const bad = [];
  const textAttrs = new Set(["title", "xlink:title", "aria-label", "alt", "placeholder", "value", "id", "name"]);
  for (const el of document.querySelectorAll("*")) {
    const tag = el.tagName.toLowerCase();
    if (["iframe", "object", "embed", "base", "frame", "frameset", "form", "math"].includes(tag)) bad.push("<" + tag + ">");
    if (tag === "img" && (el.getAttribute("src") || "x") === "x") bad.push("<img src=x>");
    if (tag === "meta" && el.hasAttribute("http-equiv")) bad.push("<meta http-equiv>");
    const data = tag === "script" && el.type === "application/json";
    if ((tag === "script" && !data) || tag === "style") {
      if (el.textContent.includes("__pwn")) bad.push("payload inside <" + tag + ">");
    }
    for (const a of el.attributes) {
      const n = a.name.toLowerCase(), v = a.value;
      if (n.startsWith("on")) bad.push(`<${tag} ${n}>`);
      else if (/^(href|xlink:href|src|action|formaction|data|srcdoc)$/.test(n) && /^\\s*(javascript|vbscript|data:text)/i.test(v))
        bad.push(`<${tag} ${n}=${v.slice(0, 40)}>`);
      else if (v.includes("__pwn") && !textAttrs.has(n) && !n.startsWith("data-") && !v.startsWith("#"))
        bad.push(`<${tag} ${n}=${v.slice(0, 40)}>`);
    }
  }
  const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  let text = "";
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (p && !p.closest("script, style, template")) text += n.nodeValue;
  }
  return { bad, text, pwned: window.__pwned || [] };
}"""

ALIVE = {
    # our own scripts still run beside the payloads (a swallowed script is a payload's win too)
    "export page": "() => document.body.classList.contains('js') && !!document.querySelector('#transcript .entry.on')",
    "rerun html": "() => document.querySelectorAll('.pi-sib-nav').length === 2",
}

FAKE_MODEL = """
window.makeModel = function (state) {
  const handlers = {};
  return {
    state,
    get(k) { return state[k]; },
    set(k, v) { state[k] = v; },
    on(name, cb) { (handlers[name] = handlers[name] || []).push(cb); },
    off(name, cb) { handlers[name] = (handlers[name] || []).filter((h) => h !== cb); },
    send() {},
    save_changes() {},
    fire(name) { (handlers[name] || []).forEach((h) => h()); },
  };
};
window.mountWidget = async function (src, state) {
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const mod = await import(url);
  const el = document.createElement("div");
  document.body.appendChild(el);
  window.model = window.makeModel(state);
  mod.default.render({ model: window.model, el });
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
};
window.setTraits = async function (traits) {
  for (const [k, v] of Object.entries(traits)) { window.model.set(k, v); window.model.fire("change:" + k); }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
};
"""


@pytest.fixture(scope="module")
def worlds(tmp_path_factory, wire_server) -> dict[str, World]:
    base = tmp_path_factory.mktemp("hostile-browser")
    # Playwright's sync API keeps an event loop running in this thread: the worlds are made in another
    with ThreadPoolExecutor(1) as pool:
        try:
            return pool.submit(lambda: {v: build_world(base / v, wire_server, v) for v in VECTORS}).result()
        finally:
            wire_server.reset()


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.add_init_script(TRAP)
    pg = context.new_page()
    pg.folder = tmp_path_factory.mktemp("pages")  # type: ignore[attr-defined]
    yield pg
    context.close()


def _load(page: Any, name: str, html: str) -> None:
    if "<html" not in html[:200].lower():
        html = f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{html}</body></html>"
    path = page.folder / (name.replace(" ", "-").replace("/", "-") + ".html")
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_timeout(30)  # a failed image's onerror, an svg's onload


def _verdict(page: Any, world: World, rendering: str, shown: tuple[str, ...]) -> list[str]:
    seen = page.evaluate(INSPECT)
    problems = [f"{rendering}: ran {seen['pwned']}"] if seen["pwned"] else []
    problems += [f"{rendering}: live {b}" for b in seen["bad"]]
    problems += [f"{rendering}: field not shown: {f}" for f in missing_fields(seen["text"], shown)]
    alive = ALIVE.get(rendering)
    if alive and not page.evaluate(alive):
        problems.append(f"{rendering}: its own script did not run")
    return [f"{world.vector} in {p}" for p in problems]


def test_static_renderings_in_a_browser(worlds, page):
    problems: list[str] = []
    # the Markdown readers (pandoc is a process per text) work ahead in threads while the browser checks pages
    with ThreadPoolExecutor(3) as pool:
        for world in worlds.values():
            read_ahead = []
            for rendering, make in MARKDOWN_RENDERINGS.items():
                text = make(world)
                read_ahead += [(rendering, reader, pool.submit(read, text)) for reader, read in READERS.items()]
            for rendering, make in HTML_RENDERINGS.items():
                _load(page, f"{world.vector}-{rendering}", make(world))
                problems += _verdict(page, world, rendering, SHOWN[rendering])
            for rendering, reader, html in read_ahead:
                _load(page, f"{world.vector}-{rendering}-{reader}", html.result())
                problems += _verdict(page, world, f"{rendering} ({reader})", SHOWN[rendering])
    assert not problems, "\n".join(problems)


def _widget_page(page: Any, world: World, name: str) -> None:
    _load(page, f"{world.vector}-{name}", f"<script>{FAKE_MODEL}</script>")


def test_live_widgets_in_a_browser(worlds, page):
    from pi_jupyter.notebook.agent_view.view import esm_source
    from pi_jupyter.notebook.experiments.view import ExperimentView
    from pi_jupyter.notebook.tree_view.view import TreeView

    agent_js = esm_source()
    experiment_js = str(ExperimentView._esm)
    problems: list[str] = []
    for world in worlds.values():
        for name, shown in (("agent", "agent widget"), ("rerun", "rerun widget")):
            _widget_page(page, world, name)
            page.evaluate("([src, state]) => mountWidget(src, state)", [agent_js, world.widgets[name]])
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            problems += _verdict(page, world, shown, SHOWN[shown])

        _widget_page(page, world, "experiment")
        page.evaluate("([src, state]) => mountWidget(src, state)", [experiment_js, world.widgets["experiment"]])
        problems += _verdict(page, world, "experiment widget", SHOWN["experiment widget"])

        view = TreeView(world.session)
        try:
            state = json.loads(json.dumps({k: v for k, v in view.get_state().items() if not k.startswith("_")}, default=str))
            _widget_page(page, world, "tree")
            page.evaluate("([src, state]) => mountWidget(src, state)", [view._esm, state])
            text = ""
            for key in list(view.nodes):
                view.select(key)
                page.evaluate("(t) => setTraits(t)", {"selected": key, "details": view.details})
                seen = page.evaluate(INSPECT)
                text += seen["text"]
                problems += [f"{world.vector} in tree widget ({key}): {p}" for p in seen["bad"] + seen["pwned"]]
            view.compare(world.answer_leaf, world.rerun_leaf)
            page.evaluate("(t) => setTraits(t)", {"details": view.details})
            problems += _verdict(page, world, "tree widget (comparison)", ())
            missing = [f for f in SHOWN["tree panel"] if marker(f) not in text]
            problems += [f"{world.vector} in tree widget: field not shown: {f}" for f in missing]
        finally:
            view.close()
    assert not problems, "\n".join(problems)
