// TreeView: the browser half of pi_jupyter.notebook.tree_view.TreeView (an anywidget ESM).
//
// The kernel draws the graph (Graphviz SVG in the trait `svg`) and renders each node's
// messages (trait `details.html`, escaped by the kernel). This file shows them and sends
// user intent back: {type: "select", key}, {type: "action", action, key, ...}.
// A node's key is the text of its <title> in the SVG (Graphviz writes the node name there).
//
// Zoom and pan: Ctrl/Cmd + wheel or the +/- buttons zoom around the pointer; drag pans; with
// the graph focused, the wheel pans, + - 0 zoom / fit, arrows pan, L goes to the leaf,
// / searches, N / Shift+N step through matches, Esc cancels.

const PT_TO_PX = 96 / 72;
const MIN_SCALE = 0.04;
const MAX_SCALE = 4;

function el(doc, tag, cls, text) {
  const node = doc.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function button(doc, label, title, onClick, cls) {
  const b = el(doc, "button", "pitv-btn" + (cls ? " " + cls : ""), label);
  b.type = "button";
  if (title) b.title = title;
  b.addEventListener("click", (ev) => {
    ev.preventDefault();
    onClick(ev);
  });
  return b;
}

/** Node key of an SVG element inside a Graphviz node group, or null. */
export function nodeKey(target) {
  const g = target && target.closest ? target.closest("g.node") : null;
  if (!g) return null;
  const title = g.querySelector(":scope > title");
  return title ? title.textContent : null;
}

/** Keys whose search text (or labels) contain the query, in drawing order. */
export function searchNodes(nodes, order, query) {
  const q = (query || "").trim().toLowerCase();
  if (!q) return [];
  const out = [];
  for (const key of order) {
    const n = nodes[key];
    if (!n) continue;
    const hay = (n.search || "") + " " + (n.labels || []).join(" ").toLowerCase() + " " + key.toLowerCase();
    if (hay.includes(q)) out.push(key);
  }
  return out;
}

class View {
  constructor(model, host) {
    this.model = model;
    this.host = host;
    this.doc = host.ownerDocument || document;
    this.scale = 1;
    this.tx = 0;
    this.ty = 0;
    this.fitted = false;
    this.groups = new Map(); // key -> <g>
    this.order = [];
    this.matches = [];
    this.matchAt = -1;
    this.comparing = null; // key picked first for "compare with…"
    this.drag = null;
    this.handlers = [];
    this.build();
  }

  // ------------------------------------------------------------------ layout

  build() {
    const d = this.doc;
    this.root = el(d, "div", "pitv-root");
    // toolbar
    this.toolbar = el(d, "div", "pitv-toolbar");
    this.search = el(d, "input", "pitv-search");
    this.search.type = "search";
    this.search.placeholder = "Search labels and text  (/)";
    this.search.setAttribute("aria-label", "search the tree");
    this.search.addEventListener("input", () => this.runSearch());
    this.search.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        this.stepMatch(ev.shiftKey ? -1 : 1);
      } else if (ev.key === "Escape") {
        this.search.value = "";
        this.runSearch();
        this.viewport.focus();
      }
    });
    this.matchInfo = el(d, "span", "pitv-match-info");
    const prev = button(d, "‹", "previous match (Shift+Enter)", () => this.stepMatch(-1));
    const next = button(d, "›", "next match (Enter)", () => this.stepMatch(1));
    this.modeTurns = button(d, "Turns", "one node per turn", () => this.send({ type: "action", action: "mode", mode: "turns" }), "pitv-toggle");
    this.modeFull = button(d, "Entries", "one node per entry", () => this.send({ type: "action", action: "mode", mode: "full" }), "pitv-toggle");
    const zoomOut = button(d, "−", "zoom out (-)", () => this.zoomCenter(1 / 1.25));
    const zoomIn = button(d, "+", "zoom in (+)", () => this.zoomCenter(1.25));
    const fit = button(d, "Fit", "fit the whole tree (0)", () => this.fit());
    const leaf = button(d, "Leaf", "go to the current leaf (L)", () => this.goLeaf());
    const fold = button(d, "Fold", "fold everything again", () => this.send({ type: "action", action: "collapse" }));
    this.toolbar.append(
      this.search, prev, next, this.matchInfo, el(d, "span", "pitv-sep"),
      this.modeTurns, this.modeFull, el(d, "span", "pitv-sep"),
      zoomOut, zoomIn, fit, leaf, fold,
    );
    // main: viewport + side panel
    this.main = el(d, "div", "pitv-main");
    this.viewport = el(d, "div", "pitv-viewport");
    this.viewport.tabIndex = 0;
    this.viewport.setAttribute("aria-label", "session tree; drag to pan, Ctrl+wheel to zoom");
    this.stage = el(d, "div", "pitv-stage");
    this.viewport.appendChild(this.stage);
    this.textEl = el(d, "pre", "pitv-text");
    this.viewport.appendChild(this.textEl);
    this.panel = el(d, "div", "pitv-panel");
    this.panel.appendChild(el(d, "div", "pitv-hint", "Click a node to see its messages and act on it."));
    this.main.append(this.viewport, this.panel);
    // status
    this.statusEl = el(d, "div", "pitv-status");
    this.headerEl = el(d, "span", "pitv-header");
    this.noteEl = el(d, "span", "pitv-note");
    this.statusEl.append(this.headerEl, this.noteEl);
    this.root.append(this.toolbar, this.main, this.statusEl);
    this.host.appendChild(this.root);
    this.bindPointer();
  }

  start() {
    const on = (name, fn) => {
      this.model.on(name, fn);
      this.handlers.push([name, fn]);
    };
    on("change:svg", () => this.onSvg());
    on("change:text", () => this.onSvg());
    on("change:nodes", () => this.onNodes());
    on("change:selected", () => this.onSelected());
    on("change:details", () => this.onDetails());
    on("change:status", () => this.onStatus());
    on("change:header", () => this.onStatus());
    on("change:mode", () => this.onMode());
    on("change:capabilities", () => this.onDetails());
    this.onSvg();
    this.onMode();
    this.onDetails();
    this.onStatus();
  }

  stop() {
    for (const [name, fn] of this.handlers) this.model.off(name, fn);
    this.handlers = [];
    if (this.resizer) this.resizer.disconnect();
  }

  send(msg) {
    this.model.send(msg);
  }

  // ------------------------------------------------------------------ the graph

  onSvg() {
    const svgText = this.model.get("svg") || "";
    const text = this.model.get("text") || "";
    this.stage.textContent = "";
    this.groups = new Map();
    this.order = [];
    if (!svgText) {
      this.textEl.style.display = "";
      this.textEl.textContent = text || "(nothing to draw)";
      this.stage.style.display = "none";
      this.root.classList.add("pitv-textmode");
      return;
    }
    this.root.classList.remove("pitv-textmode");
    this.textEl.style.display = "none";
    this.stage.style.display = "";
    const parsed = new DOMParser().parseFromString(svgText, "image/svg+xml");
    const svg = parsed.documentElement;
    if (!svg || svg.nodeName.toLowerCase() !== "svg") {
      this.textEl.style.display = "";
      this.textEl.textContent = text || "(the SVG could not be read)";
      return;
    }
    const imported = this.doc.importNode(svg, true);
    const box = (imported.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
    if (box.length === 4 && box.every((v) => Number.isFinite(v))) {
      this.naturalW = box[2] * PT_TO_PX;
      this.naturalH = box[3] * PT_TO_PX;
      imported.setAttribute("width", String(this.naturalW));
      imported.setAttribute("height", String(this.naturalH));
    } else {
      this.naturalW = 800;
      this.naturalH = 600;
    }
    this.stage.appendChild(imported);
    this.svgEl = imported;
    for (const g of imported.querySelectorAll("g.node")) {
      const title = g.querySelector(":scope > title");
      if (!title) continue;
      const key = title.textContent;
      g.setAttribute("data-key", key);
      this.groups.set(key, g);
      this.order.push(key);
    }
    if (!this.fitted) this.initialView();
    else this.apply();
    this.onSelected();
    this.runSearch(true);
  }

  onNodes() {
    this.runSearch(true);
  }

  onMode() {
    const mode = this.model.get("mode");
    this.modeTurns.classList.toggle("pitv-on", mode !== "full");
    this.modeFull.classList.toggle("pitv-on", mode === "full");
  }

  // ------------------------------------------------------------------ zoom and pan

  apply() {
    this.stage.style.transform = `translate(${this.tx}px, ${this.ty}px) scale(${this.scale})`;
  }

  viewSize() {
    const r = this.viewport.getBoundingClientRect();
    return { w: r.width || 800, h: r.height || 500, left: r.left, top: r.top };
  }

  initialView() {
    // until the user zooms or pans, the view follows the widget's size (it has none before it is shown)
    this.fitted = true;
    const moved = this.userMoved;
    const { w } = this.viewSize();
    const s = Math.min(1, w / (this.naturalW + 16));
    if (s >= 0.55) {
      this.scale = s;
      this.tx = Math.max(8, (w - this.naturalW * s) / 2);
      this.ty = 8;
      this.apply();
    } else {
      this.scale = 0.7;
      this.apply();
      if (!this.goLeaf()) this.fit();
    }
    this.userMoved = moved;
  }

  fit() {
    this.userMoved = true;
    const { w, h } = this.viewSize();
    const s = Math.max(MIN_SCALE, Math.min(1.5, (w - 16) / this.naturalW, (h - 16) / this.naturalH));
    this.scale = s;
    this.tx = (w - this.naturalW * s) / 2;
    this.ty = Math.max(8, (h - this.naturalH * s) / 2);
    this.apply();
  }

  zoomAt(factor, cx, cy) {
    this.userMoved = true;
    const s = Math.max(MIN_SCALE, Math.min(MAX_SCALE, this.scale * factor));
    const k = s / this.scale;
    this.tx = cx - (cx - this.tx) * k;
    this.ty = cy - (cy - this.ty) * k;
    this.scale = s;
    this.apply();
  }

  zoomCenter(factor) {
    const { w, h } = this.viewSize();
    this.zoomAt(factor, w / 2, h / 2);
  }

  pan(dx, dy) {
    this.userMoved = true;
    this.tx += dx;
    this.ty += dy;
    this.apply();
  }

  centerOn(key) {
    const g = this.groups.get(key);
    if (!g) return false;
    const r = g.getBoundingClientRect();
    const v = this.viewSize();
    const cx = r.left + r.width / 2 - v.left;
    const cy = r.top + r.height / 2 - v.top;
    this.pan(v.w / 2 - cx, v.h / 2 - cy);
    // no empty band beyond the tree's edges when it is larger than the view
    const w = this.naturalW * this.scale;
    const h = this.naturalH * this.scale;
    if (w > v.w) this.tx = Math.min(8, Math.max(v.w - w - 8, this.tx));
    if (h > v.h) this.ty = Math.min(8, Math.max(v.h - h - 8, this.ty));
    this.apply();
    return true;
  }

  goLeaf() {
    const leaf = this.model.get("leaf");
    return leaf ? this.centerOn(leaf) : false;
  }

  bindPointer() {
    const vp = this.viewport;
    if (typeof ResizeObserver === "function") {
      let last = 0;
      this.resizer = new ResizeObserver(() => {
        const w = Math.round(vp.getBoundingClientRect().width);
        if (w && w !== last && !this.userMoved && this.svgEl) this.initialView();
        last = w;
      });
      this.resizer.observe(vp);
    }
    vp.addEventListener("wheel", (ev) => {
      const r = vp.getBoundingClientRect();
      if (ev.ctrlKey || ev.metaKey) {
        ev.preventDefault();
        this.zoomAt(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
      } else if (this.doc.activeElement === vp) {
        ev.preventDefault();
        this.pan(-ev.deltaX, -ev.deltaY);
      }
    }, { passive: false });
    vp.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      vp.focus({ preventScroll: true });
      this.drag = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty, moved: false, id: ev.pointerId };
    });
    vp.addEventListener("pointermove", (ev) => {
      const drag = this.drag;
      if (!drag) return;
      const dx = ev.clientX - drag.x;
      const dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) > 4) {
        drag.moved = true;
        try {
          vp.setPointerCapture(drag.id);
        } catch (_e) {
          // pointer capture is a nicety
        }
        vp.classList.add("pitv-dragging");
      }
      if (drag.moved) {
        this.userMoved = true;
        this.tx = drag.tx + dx;
        this.ty = drag.ty + dy;
        this.apply();
      }
    });
    const end = (ev) => {
      const drag = this.drag;
      this.drag = null;
      vp.classList.remove("pitv-dragging");
      if (drag && !drag.moved && ev.type === "pointerup") this.onClick(ev);
    };
    vp.addEventListener("pointerup", end);
    vp.addEventListener("pointercancel", end);
    vp.addEventListener("dblclick", (ev) => {
      const key = nodeKey(ev.target);
      const n = key && (this.model.get("nodes") || {})[key];
      if (n && n.folded) this.send({ type: "action", action: "expand", key });
    });
    vp.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  onKey(ev) {
    const step = 60;
    const k = ev.key;
    let used = true;
    if (k === "+" || k === "=") this.zoomCenter(1.25);
    else if (k === "-" || k === "_") this.zoomCenter(1 / 1.25);
    else if (k === "0") this.fit();
    else if (k === "ArrowLeft") this.pan(step, 0);
    else if (k === "ArrowRight") this.pan(-step, 0);
    else if (k === "ArrowUp") this.pan(0, step);
    else if (k === "ArrowDown") this.pan(0, -step);
    else if (k === "l" || k === "L") this.goLeaf();
    else if (k === "/") this.search.focus();
    else if (k === "n") this.stepMatch(1);
    else if (k === "N") this.stepMatch(-1);
    else if (k === "Escape") this.cancelCompare();
    else if (k === "Enter" && this.matchAt >= 0) this.selectKey(this.matches[this.matchAt]);
    else used = false;
    if (used) {
      ev.preventDefault();
      ev.stopPropagation();
    }
  }

  onClick(ev) {
    const key = nodeKey(ev.target);
    if (!key) return;
    if (this.comparing && this.comparing !== key) {
      const first = this.comparing;
      this.cancelCompare();
      this.send({ type: "action", action: "compare", key: first, other: key });
      return;
    }
    this.selectKey(key);
  }

  selectKey(key) {
    this.markSelected(key);
    this.send({ type: "select", key });
  }

  markSelected(key) {
    for (const g of this.stage.querySelectorAll("g.node.pitv-selected")) g.classList.remove("pitv-selected");
    const g = key && this.groups.get(key);
    if (g) g.classList.add("pitv-selected");
  }

  onSelected() {
    this.markSelected(this.model.get("selected"));
  }

  // ------------------------------------------------------------------ search

  runSearch(keepPosition) {
    const nodes = this.model.get("nodes") || {};
    const current = this.matchAt >= 0 ? this.matches[this.matchAt] : null;
    this.matches = searchNodes(nodes, this.order, this.search.value);
    const on = this.search.value.trim() !== "";
    this.root.classList.toggle("pitv-searching", on);
    for (const [key, g] of this.groups) {
      g.classList.toggle("pitv-match", this.matches.includes(key));
      g.classList.remove("pitv-current");
    }
    this.matchAt = keepPosition && current ? this.matches.indexOf(current) : -1;
    if (!keepPosition && this.matches.length) this.matchAt = -1;
    this.showMatchInfo();
    if (this.matchAt >= 0) this.groups.get(this.matches[this.matchAt]).classList.add("pitv-current");
  }

  stepMatch(dir) {
    if (!this.matches.length) {
      this.showMatchInfo();
      return;
    }
    if (this.matchAt >= 0) {
      const g = this.groups.get(this.matches[this.matchAt]);
      if (g) g.classList.remove("pitv-current");
    }
    this.matchAt = (this.matchAt + dir + this.matches.length) % this.matches.length;
    const key = this.matches[this.matchAt];
    const g = this.groups.get(key);
    if (g) g.classList.add("pitv-current");
    this.centerOn(key);
    this.showMatchInfo();
  }

  showMatchInfo() {
    const q = this.search.value.trim();
    if (!q) this.matchInfo.textContent = "";
    else if (!this.matches.length) this.matchInfo.textContent = "no match";
    else this.matchInfo.textContent = `${this.matchAt >= 0 ? this.matchAt + 1 : "–"} / ${this.matches.length}`;
  }

  // ------------------------------------------------------------------ side panel

  startCompare(key) {
    this.comparing = key;
    this.root.classList.add("pitv-picking");
    this.noteEl.textContent = "Click another node to compare with; Esc cancels.";
    this.noteEl.className = "pitv-note pitv-info";
  }

  cancelCompare() {
    if (!this.comparing) return;
    this.comparing = null;
    this.root.classList.remove("pitv-picking");
    this.onStatus();
  }

  onDetails() {
    const d = this.doc;
    const det = this.model.get("details") || {};
    const caps = this.model.get("capabilities") || {};
    this.panel.textContent = "";
    if (!det.kind) {
      this.panel.appendChild(el(d, "div", "pitv-hint", "Click a node to see its messages and act on it. Double-click a folded node to open it."));
      return;
    }
    if (det.kind === "comparison") {
      const head = el(d, "div", "pitv-panel-head");
      head.append(el(d, "span", "pitv-panel-title", `Compare ${det.a} with ${det.b}`));
      if (det.key) head.append(button(d, "Back", "back to the selected node", () => this.send({ type: "select", key: det.key })));
      const body = el(d, "div", "pitv-body pitv-compare");
      body.innerHTML = det.html || ""; // built and escaped by the kernel
      this.panel.append(head, body);
      return;
    }
    const head = el(d, "div", "pitv-panel-head");
    head.append(el(d, "span", "pitv-panel-title", det.title || det.key));
    const badges = el(d, "div", "pitv-badges");
    if (det.isLeaf) badges.append(el(d, "span", "pitv-badge pitv-badge-leaf", "current leaf"));
    else if (det.onPath) badges.append(el(d, "span", "pitv-badge pitv-badge-path", "on the current path"));
    for (const label of det.labels || []) badges.append(el(d, "span", "pitv-badge pitv-badge-label", label));
    if (det.cell) badges.append(el(d, "span", "pitv-badge", `cell ${String(det.cell).slice(0, 8)}` + (det.executionCount != null ? ` · In [${det.executionCount}]` : "")));
    this.panel.append(head, badges, this.actions(det, caps), this.facts(det));
    const body = el(d, "div", "pitv-body");
    body.innerHTML = det.html || ""; // built and escaped by the kernel
    this.panel.appendChild(body);
  }

  actions(det, caps) {
    const d = this.doc;
    const box = el(d, "div", "pitv-actions");
    const key = det.key;
    if (det.folded) {
      box.append(button(d, "Expand", "show the turns inside this node", () => this.send({ type: "action", action: "expand", key }), "pitv-primary pitv-act-expand"));
      return box;
    }
    const why = caps.reason || "";
    // check out, optionally with a branch summary
    const row1 = el(d, "div", "pitv-row");
    const summarize = el(d, "input");
    summarize.type = "checkbox";
    summarize.className = "pitv-summarize";
    summarize.disabled = !caps.summarize;
    const sumLabel = el(d, "label", "pitv-check");
    sumLabel.append(summarize, d.createTextNode(" with branch summary"));
    sumLabel.title = caps.summarize ? "summarize the branch being left (asks the model)" : `branch summary ${why}`;
    const instructions = el(d, "textarea", "pitv-instructions");
    instructions.placeholder = "focus for the summary (optional)";
    instructions.rows = 2;
    instructions.style.display = "none";
    summarize.addEventListener("change", () => {
      instructions.style.display = summarize.checked ? "" : "none";
    });
    const checkout = button(d, "Check out", "continue from the end of this node (the leaf moves here)", () =>
      this.send({ type: "action", action: "checkout", key, summarize: summarize.checked, instructions: instructions.value }), "pitv-primary pitv-act-checkout");
    checkout.disabled = !!det.isLeaf && !summarize.checked;
    row1.append(checkout, sumLabel);
    // fork, compact, copy, compare
    const row2 = el(d, "div", "pitv-row");
    const fork = button(d, "Fork", "copy the branch ending here into a new session file, and show it", () => this.send({ type: "action", action: "fork", key }), "pitv-act-fork");
    const compact = button(d, "Compact up to here", caps.compact ? "check out this node, then summarize older history into a compaction" : `compaction ${why}`,
      () => this.send({ type: "action", action: "compact", key }), "pitv-act-compact");
    compact.disabled = !caps.compact;
    const copy = button(d, "Copy id", `copy ${det.target}`, () => this.copy(det.target, copy), "pitv-act-copy");
    const cmp = button(d, "Compare with…", "then click another node", () => this.startCompare(key), "pitv-act-compare");
    row2.append(fork, compact, copy, cmp);
    // label
    const row3 = el(d, "div", "pitv-row");
    const input = el(d, "input", "pitv-label-input");
    input.type = "text";
    input.placeholder = "label";
    input.value = (det.labels && det.labels[det.labels.length - 1]) || "";
    const setLabel = () => this.send({ type: "action", action: "label", key, text: input.value });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        setLabel();
      }
    });
    row3.append(input, button(d, "Set label", "label the last step of this node ('' clears it)", setLabel, "pitv-act-label"));
    box.append(row1, instructions, row2, row3);
    if (caps.readonly) {
      for (const b of box.querySelectorAll("button, input, textarea")) b.disabled = true;
      box.title = "the session was opened read-only";
    }
    return box;
  }

  copy(text, btn) {
    const done = () => {
      btn.textContent = "Copied";
      setTimeout(() => (btn.textContent = "Copy id"), 1200);
    };
    const fallback = () => {
      const area = this.doc.createElement("textarea");
      area.value = text;
      this.root.appendChild(area);
      area.select();
      try {
        this.doc.execCommand("copy");
        done();
      } catch (_e) {
        btn.textContent = text;
      }
      area.remove();
    };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, fallback);
    else fallback();
  }

  facts(det) {
    const d = this.doc;
    const box = el(d, "div", "pitv-facts");
    const u = det.usage || {};
    const rows = [
      ["tokens", `${det.tokensText || 0} (in ${u.input || 0}, out ${u.output || 0}, cache ${(u.cacheRead || 0) + (u.cacheWrite || 0)})`],
      ["cost", det.costText || "$0"],
    ];
    if (det.models && det.models.length) rows.push(["model", det.models.join(", ")]);
    const stops = Object.entries(det.stopReasons || {}).map(([k, v]) => `${k} ×${v}`).join(", ");
    if (stops) rows.push(["stop", stops]);
    for (const [k, v] of rows) {
      const line = el(d, "div", "pitv-fact");
      line.append(el(d, "span", "pitv-fact-k", k), el(d, "span", "pitv-fact-v", v));
      box.appendChild(line);
    }
    const ids = el(d, "details", "pitv-ids");
    ids.append(el(d, "summary", null, `${det.entryCount} entr${det.entryCount === 1 ? "y" : "ies"}: ${det.firstId || ""}${det.entryCount > 1 ? " … " + (det.target || "") : ""}`));
    ids.append(el(d, "div", "pitv-id-list", (det.entryIds || []).join("  ")));
    box.appendChild(ids);
    return box;
  }

  onStatus() {
    this.headerEl.textContent = this.model.get("header") || "";
    if (this.comparing) return;
    const st = this.model.get("status") || {};
    this.noteEl.textContent = st.text || "";
    this.noteEl.className = "pitv-note pitv-" + (st.kind || "info");
  }
}

function render({ model, el: host }) {
  const view = new View(model, host);
  view.start();
  return () => view.stop();
}

export default { render };
