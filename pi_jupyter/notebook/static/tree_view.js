// TreeView: the browser half of pi_jupyter.notebook.tree_view.view.TreeView (an anywidget ESM).
//
// The kernel draws the graph (Graphviz SVG in the trait `svg`) and renders each node's
// messages (trait `details.html`, escaped by the kernel). This file shows them and sends
// user intent back: {type: "select", key}, {type: "action", action, key, ...}.
// A node's key is the text of its <title> in the SVG (Graphviz writes the node name there).
// The kernel joins this file with tree_panel.js (the side panel) and tree_nav.js (overview,
// search, keyboard, lens) into one module; those add methods to View.
//
// Zoom and pan: Ctrl/Cmd + wheel or the +/- buttons zoom around the pointer; drag pans; with
// the graph focused, the wheel pans, + - 0 zoom / fit, arrows move the selection (parent,
// child, siblings), Shift+arrows pan, L goes to the leaf, / searches, N / Shift+N step
// through matches, Esc cancels.

const PT_TO_PX = 96 / 72;
const MIN_SCALE = 0.04;
const MAX_SCALE = 4;
// Graphviz labels are 10 pt; at zoom 1 they are 13.3 px. A tree is shown whole when it fits
// at LEGIBLE_ZOOM (10 px labels) or more; a larger one opens at READABLE_ZOOM (12 px), both
// times the presentation scale.
const READABLE_ZOOM = 0.92;
const LEGIBLE_ZOOM = 0.75;
// The canvas is as tall as the tree needs, between these (and 72% of the window).
// (taller while the side panel shows a node: its actions and messages need room).
const MIN_CANVAS = 200;
const PANEL_CANVAS = 420;
const MAX_CANVAS = 1100;

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

/** A checkbox in its label: [input, label]. */
function checkbox(doc, cls, text, title) {
  const input = el(doc, "input", cls);
  input.type = "checkbox";
  const label = el(doc, "label", "pitv-check");
  label.append(input, doc.createTextNode(text));
  label.title = title;
  return [input, label];
}

/** Node key of an SVG element inside a Graphviz node group, or null. */
export function nodeKey(target) {
  const g = target && target.closest ? target.closest("g.node") : null;
  if (!g) return null;
  const title = g.querySelector(":scope > title");
  return title ? title.textContent : null;
}

/** Keys whose search text (or labels) contain every word of the query, in drawing order. */
export function searchNodes(nodes, order, query) {
  const words = (query || "").trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [];
  const phrase = words.join(" ");
  const out = [];
  for (const key of order) {
    const n = nodes[key];
    if (!n) continue;
    const hay = ((n.search || "") + " " + (n.labels || []).join(" ") + " " + key).toLowerCase().replace(/\s+/g, " ");
    if (hay.includes(phrase) || words.every((w) => hay.includes(w))) out.push(key);
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
    this.picked = []; // leaves picked with shift-click for "compare these"
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
    this.search.placeholder = "Search text, labels, errors, models (/)";
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
    const prev = button(d, "‹", "previous match (Shift+Enter, Shift+N)", () => this.stepMatch(-1));
    const next = button(d, "›", "next match (Enter, N)", () => this.stepMatch(1));
    this.modeTurns = button(d, "Turns", "one node per turn", () => this.send({ type: "action", action: "mode", mode: "turns" }), "pitv-toggle");
    this.modeFull = button(d, "Entries", "one node per entry", () => this.send({ type: "action", action: "mode", mode: "full" }), "pitv-toggle");
    this.lensBtn = button(d, "Lens", "context lens: what the next request would send from the selected node (or the leaf) (C)", () => this.toggleLens(), "pitv-toggle pitv-act-lens");
    const zoomOut = button(d, "−", "zoom out (-)", () => this.zoomCenter(1 / 1.25));
    const zoomIn = button(d, "+", "zoom in (+)", () => this.zoomCenter(1.25));
    const fit = button(d, "Fit", "fit the whole tree (0)", () => this.fit());
    const leaf = button(d, "Leaf", "go to the current leaf (L)", () => this.goLeaf(true));
    const fold = button(d, "Fold", "fold everything again", () => this.send({ type: "action", action: "collapse" }));
    this.panelBtn = button(d, "Panel", "show or hide the side panel", () => this.togglePanel(), "pitv-toggle pitv-on pitv-act-panel");
    this.toolbar.append(
      this.search, prev, next, this.matchInfo, el(d, "span", "pitv-sep"),
      this.modeTurns, this.modeFull, this.lensBtn, el(d, "span", "pitv-sep"),
      zoomOut, zoomIn, fit, leaf, fold, el(d, "span", "pitv-sep"), this.panelBtn,
    );
    // main: viewport + splitter + side panel
    this.main = el(d, "div", "pitv-main");
    this.viewport = el(d, "div", "pitv-viewport");
    this.viewport.tabIndex = 0;
    this.viewport.setAttribute("aria-label", "session tree; drag to pan, Ctrl+wheel to zoom, arrows to move between nodes");
    this.stage = el(d, "div", "pitv-stage");
    this.viewport.appendChild(this.stage);
    this.textEl = el(d, "pre", "pitv-text");
    this.viewport.appendChild(this.textEl);
    this.lensBar = el(d, "div", "pitv-lens-bar");
    this.viewport.appendChild(this.lensBar);
    this.buildMinimap();
    this.splitter = el(d, "div", "pitv-splitter");
    this.splitter.title = "drag to resize the side panel; double-click to hide it";
    this.panel = el(d, "div", "pitv-panel");
    this.root.classList.add("pitv-panel-idle");
    this.main.append(this.viewport, this.splitter, this.panel);
    // status
    this.statusEl = el(d, "div", "pitv-status");
    this.headerEl = el(d, "span", "pitv-header");
    this.noteEl = el(d, "span", "pitv-note");
    this.statusEl.append(this.headerEl, this.noteEl);
    this.root.append(this.toolbar, this.main, this.statusEl);
    this.host.appendChild(this.root);
    this.bindPointer();
    this.bindSplitter();
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
    on("change:lens", () => this.onLens());
    on("change:found", () => this.runSearch(true));
    on("change:scale", () => this.onScale());
    this.onScale();
    this.onSvg();
    this.onMode();
    this.onDetails();
    this.onStatus();
  }

  stop() {
    for (const [name, fn] of this.handlers) this.model.off(name, fn);
    this.handlers = [];
    if (this.resizer) this.resizer.disconnect();
    clearTimeout(this.movingTimer);
  }

  send(msg) {
    this.model.send(msg);
  }

  onScale() {
    const s = Number(this.model.get("scale"));
    this.presentation = Number.isFinite(s) && s > 0 ? Math.min(4, Math.max(0.5, s)) : 1;
    this.root.style.setProperty("--pi-scale", String(this.presentation));
  }

  // ------------------------------------------------------------------ the graph

  /** Screen position (in the viewport) of a node's centre, or null. */
  screenOf(key) {
    const g = key && this.groups.get(key);
    if (!g || !g.isConnected) return null;
    const r = g.getBoundingClientRect();
    const v = this.viewport.getBoundingClientRect();
    return { x: r.left + r.width / 2 - v.left, y: r.top + r.height / 2 - v.top };
  }

  onSvg() {
    const svgText = this.model.get("svg") || "";
    const text = this.model.get("text") || "";
    // a redraw keeps what the user looks at: the selected node (else the leaf) stays where it was
    const anchorKey = this.model.get("selected") || this.model.get("leaf");
    const anchor = this.fitted && this.userMoved ? this.screenOf(this.anchorKey || anchorKey) : null;
    const anchorWas = this.anchorKey || anchorKey;
    if (this.svgEl && svgText && svgText === this.drawnSvg) return; // this picture is on the stage already
    // tree_draw.js: move the nodes drawn as before and insert the rest, else draw the whole picture
    const drawn = this.drawPatch() || this.drawWhole(svgText, text);
    this.drawnSvg = drawn ? svgText : null;
    if (!drawn) return;
    this.drawnRevision = this.model.get("revision");
    if (!this.fitted) this.initialView();
    else if (anchor && this.groups.has(anchorWas)) {
      this.apply();
      const now = this.screenOf(anchorWas);
      if (now) {
        this.tx += anchor.x - now.x;
        this.ty += anchor.y - now.y;
      }
      this.apply();
    } else if (!this.userMoved) this.initialView(); // the tree grew: follow it while the user has not moved
    else this.apply();
    this.sizesSeen = new Set();
    this.anchorKey = null;
    this.onSelected();
    this.markPicked();
    this.runSearch(true);
    if (this.search.value.trim().length >= 2) this.send({ type: "search", query: this.search.value }); // folds changed
    this.paintLens();
    this.drawMinimapSoon(); // after this picture is painted: measuring every node now would hold the paint back
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
    if (this.drawViewRect) this.drawViewRect();
  }

  viewSize() {
    const r = this.viewport.getBoundingClientRect();
    return { w: r.width || 800, h: r.height || 500, left: r.left, top: r.top };
  }

  /** The zoom at which node labels read at about 12 px (times the presentation scale). */
  readableZoom() {
    return READABLE_ZOOM * (this.presentation || 1);
  }

  /** The smallest zoom a first view or Fit uses: labels at about 10 px (times the presentation scale). */
  legibleZoom() {
    return LEGIBLE_ZOOM * (this.presentation || 1);
  }

  /** True when the user resized the canvas (its corner handle): the view then never resizes it. */
  userSized() {
    const h = this.main.style.height;
    return !!h && h !== this.autoHeight;
  }

  /** Give the canvas the height the tree needs (between MIN_CANVAS and 72% of the window); returns the canvas height. */
  fitHeight(need) {
    if (!this.userSized()) {
      const win = this.doc.defaultView;
      const most = Math.max(MIN_CANVAS, Math.min(MAX_CANVAS, 0.72 * ((win && win.innerHeight) || 900)));
      const busy = !this.root.classList.contains("pitv-panel-idle") && !this.root.classList.contains("pitv-panel-hidden");
      const least = busy ? PANEL_CANVAS : MIN_CANVAS;
      const px = `${Math.round(Math.max(least, Math.min(most, need)))}px`;
      if (this.main.style.height !== px) this.main.style.height = px;
      this.autoHeight = px;
    }
    return this.viewSize().h;
  }

  /** The zoom that shows the whole tree in a canvas of width w and height h, not above 1.25 × readable. */
  wholeZoom(w, h) {
    return Math.min(this.readableZoom() * 1.25, (w - 16) / this.naturalW, (h - 16) / this.naturalH);
  }

  centre() {
    const { w, h } = this.viewSize();
    this.tx = Math.max(8, (w - this.naturalW * this.scale) / 2);
    this.ty = Math.max(8, (h - this.naturalH * this.scale) / 2);
    this.apply();
  }

  /** Size the canvas to the tree and choose the zoom: the whole tree, centred, when it shows whole at
   * a legible size (returns true); else a readable zoom, the whole width when it fits (returns false). */
  frame() {
    const { w } = this.viewSize();
    const legible = this.legibleZoom();
    const byWidth = Math.min(this.readableZoom() * 1.25, (w - 16) / this.naturalW);
    const scale = byWidth >= legible ? byWidth : this.readableZoom();
    const h = this.fitHeight(this.naturalH * scale + 16); // just as tall as the tree needs (up to 72% of the window)
    const whole = this.wholeZoom(w, h);
    if (whole >= legible) {
      this.scale = whole;
      this.centre();
      return true;
    }
    this.scale = Math.min(scale, this.readableZoom());
    this.apply();
    return false;
  }

  initialView() {
    // until the user zooms or pans, the view follows the widget's size and the tree's growth
    this.fitted = true;
    const moved = this.userMoved;
    // too large to show whole: the leaf low in the view, so the path leading to it shows above it
    if (!this.frame() && !this.placeLeaf()) this.centre();
    this.userMoved = moved;
  }

  /** Put the current leaf near the bottom of the view (time runs down); across, the tree centred when it fits, else the leaf. */
  placeLeaf() {
    const leaf = this.model.get("leaf");
    const pos = this.screenOf(leaf);
    if (!pos) return false;
    const v = this.viewSize();
    const g = this.groups.get(leaf).getBoundingClientRect();
    const width = this.naturalW * this.scale;
    const height = this.naturalH * this.scale;
    this.tx = width <= v.w - 16 ? (v.w - width) / 2 : this.tx + v.w / 2 - pos.x;
    this.ty = height <= v.h - 16 ? (v.h - height) / 2 : this.ty + Math.max(v.h / 2, v.h - g.height / 2 - 40) - pos.y;
    this.clamp();
    this.apply();
    return true;
  }

  /** No empty band beyond the tree's edges when it is larger than the view. */
  clamp() {
    const v = this.viewSize();
    const w = this.naturalW * this.scale;
    const h = this.naturalH * this.scale;
    if (w > v.w) this.tx = Math.min(8, Math.max(v.w - w - 8, this.tx));
    if (h > v.h) this.ty = Math.min(8, Math.max(v.h - h - 8, this.ty));
  }

  /** Show the whole tree (the canvas grows up to 72% of the window); a tree too large to show whole
   * at a legible size stays at a readable zoom around the selected node (or the leaf), and the status line says so. */
  fit(auto) {
    if (!auto) this.userMoved = true;
    if (this.frame()) return;
    const moved = this.userMoved;
    const key = this.model.get("selected") || this.model.get("leaf");
    if (!this.centerOn(key, false)) this.centre();
    this.userMoved = moved;
    if (!auto) this.note("The whole tree does not fit at a legible size: drag to pan, or use the overview.");
  }

  /** A passing note in the status line (the next status from the kernel replaces it). */
  note(text) {
    this.noteEl.textContent = text;
    this.noteEl.className = "pitv-note pitv-info";
  }

  /** The user pans or zooms: the stage gets its own layer until they stop (see tree_view.css). */
  moving() {
    this.root.classList.add("pitv-moving");
    clearTimeout(this.movingTimer);
    this.movingTimer = setTimeout(() => this.root.classList.remove("pitv-moving"), 400);
  }

  zoomAt(factor, cx, cy) {
    this.moving();
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
    this.moving();
    this.userMoved = true;
    this.tx += dx;
    this.ty += dy;
    this.apply();
  }

  /** Centre a node; below the readable zoom, zoom in to it first (a match must be legible). */
  centerOn(key, readable) {
    const g = this.groups.get(key);
    if (!g) return false;
    if (readable && this.scale < this.readableZoom()) {
      this.scale = this.readableZoom();
      this.apply();
    }
    const pos = this.screenOf(key);
    const v = this.viewSize();
    this.pan(v.w / 2 - pos.x, v.h / 2 - pos.y);
    this.clamp();
    this.apply();
    return true;
  }

  /** Bring a node into view if it is (partly) outside it; returns true when it moved. */
  reveal(key) {
    const g = this.groups.get(key);
    if (!g) return false;
    const r = g.getBoundingClientRect();
    const v = this.viewport.getBoundingClientRect();
    const inside = r.left >= v.left && r.right <= v.right && r.top >= v.top && r.bottom <= v.bottom;
    if (inside && this.scale >= this.readableZoom() * 0.8) return false;
    return this.centerOn(key, true);
  }

  goLeaf(user) {
    const leaf = this.model.get("leaf");
    if (!leaf) return false;
    if (user) this.userMoved = true;
    return this.centerOn(leaf, true);
  }

  bindPointer() {
    const vp = this.viewport;
    if (typeof ResizeObserver === "function") {
      let last = "";
      this.resizer = new ResizeObserver(() => {
        const r = vp.getBoundingClientRect();
        const size = `${Math.round(r.width)}x${Math.round(r.height)}`;
        // a size seen before since the last drawing is a scrollbar coming and going: do not chase it
        const seen = this.sizesSeen && this.sizesSeen.has(size);
        if (r.width && size !== last && !seen && !this.userMoved && this.svgEl) this.initialView();
        if (this.sizesSeen) this.sizesSeen.add(size);
        last = size;
        this.drawMinimap();
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
      if (ev.button !== 0 || (ev.target.closest && ev.target.closest(".pitv-minimap, .pitv-lens-bar"))) return;
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
        this.moving();
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

  bindSplitter() {
    const sp = this.splitter;
    sp.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      ev.preventDefault();
      const startX = ev.clientX;
      const startW = this.panel.getBoundingClientRect().width;
      try {
        sp.setPointerCapture(ev.pointerId);
      } catch (_e) {
        // pointer capture is a nicety
      }
      const move = (e) => {
        const total = this.main.getBoundingClientRect().width;
        const w = Math.max(160, Math.min(total * 0.75, startW - (e.clientX - startX)));
        this.panel.style.flexBasis = `${Math.round(w)}px`;
        this.panel.style.maxWidth = "none";
      };
      const up = () => {
        sp.removeEventListener("pointermove", move);
        sp.removeEventListener("pointerup", up);
        this.drawMinimap();
      };
      sp.addEventListener("pointermove", move);
      sp.addEventListener("pointerup", up);
    });
    sp.addEventListener("dblclick", () => this.togglePanel(false));
  }

  togglePanel(show) {
    const hidden = this.root.classList.contains("pitv-panel-hidden");
    const want = show === undefined ? hidden : show;
    this.root.classList.toggle("pitv-panel-hidden", !want);
    this.panelBtn.classList.toggle("pitv-on", want);
  }

  onClick(ev) {
    const key = nodeKey(ev.target);
    if (!key) return;
    if (ev.shiftKey) {
      this.pick(key);
      return;
    }
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
    if (this.lensOn) this.send({ type: "action", action: "lens", key });
  }

  markSelected(key) {
    for (const g of this.stage.querySelectorAll("g.node.pitv-selected")) g.classList.remove("pitv-selected");
    const g = key && this.groups.get(key);
    if (g) g.classList.add("pitv-selected");
  }

  onSelected() {
    this.markSelected(this.model.get("selected"));
  }
}
