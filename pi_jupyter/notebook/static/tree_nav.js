// TreeView navigation (joined after tree_view.js by the kernel): the overview (minimap),
// search, the keyboard, shift-click picking for "compare these", and the context lens.

const MINI_W = 200;
const MINI_H = 150;

Object.assign(View.prototype, {
  // ------------------------------------------------------------------ overview

  buildMinimap() {
    const d = this.doc;
    this.mini = el(d, "div", "pitv-minimap");
    this.mini.title = "overview: click or drag to move there";
    this.miniCanvas = el(d, "canvas", "pitv-minimap-canvas");
    this.miniView = el(d, "div", "pitv-minimap-view");
    this.mini.append(this.miniCanvas, this.miniView);
    this.viewport.appendChild(this.mini);
    const go = (ev) => {
      const r = this.miniCanvas.getBoundingClientRect();
      const m = this.miniScale || 1;
      const x = (ev.clientX - r.left) / m;
      const y = (ev.clientY - r.top) / m;
      const v = this.viewSize();
      this.userMoved = true;
      this.tx = v.w / 2 - x * this.scale;
      this.ty = v.h / 2 - y * this.scale;
      this.apply();
    };
    this.mini.addEventListener("pointerdown", (ev) => {
      ev.preventDefault();
      ev.stopPropagation();
      this.miniDrag = true;
      try {
        this.mini.setPointerCapture(ev.pointerId);
      } catch (_e) {
        // pointer capture is a nicety
      }
      go(ev);
    });
    this.mini.addEventListener("pointermove", (ev) => this.miniDrag && go(ev));
    const stop = () => (this.miniDrag = false);
    this.mini.addEventListener("pointerup", stop);
    this.mini.addEventListener("pointercancel", stop);
  },

  /** Node boxes in the stage's own (unscaled) pixels, measured once per drawing. */
  measureNodes() {
    const stageR = this.stage.getBoundingClientRect();
    const s = this.scale || 1;
    const boxes = new Map();
    for (const [key, g] of this.groups) {
      const r = g.getBoundingClientRect();
      boxes.set(key, { x: (r.left - stageR.left) / s, y: (r.top - stageR.top) / s, w: r.width / s, h: r.height / s });
    }
    return boxes;
  },

  /** Draw the overview once the browser has painted the current picture (several calls, one drawing). */
  drawMinimapSoon() {
    if (this.miniPending) return;
    this.miniPending = true;
    const win = this.doc.defaultView || window;
    // in the frame after the next: the next one shows the new picture as soon as it can
    win.requestAnimationFrame(() =>
      win.requestAnimationFrame(() => {
        this.miniPending = false;
        if (this.root.isConnected) this.drawMinimap();
      }),
    );
  },

  drawMinimap() {
    if (!this.svgEl || !this.naturalW) return;
    const m = Math.min(MINI_W / this.naturalW, MINI_H / this.naturalH);
    this.miniScale = m;
    const c = this.miniCanvas;
    const ratio = (this.doc.defaultView && this.doc.defaultView.devicePixelRatio) || 1;
    const w = Math.max(20, Math.round(this.naturalW * m));
    const h = Math.max(20, Math.round(this.naturalH * m));
    c.width = w * ratio;
    c.height = h * ratio;
    c.style.width = `${w}px`;
    c.style.height = `${h}px`;
    const ctx = c.getContext && c.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const nodes = this.model.get("nodes") || {};
    const boxes = this.measureNodes();
    this.boxes = boxes;
    const matches = new Set(this.matches);
    const lens = this.lensOn ? (this.model.get("lens") || {}).nodes || {} : null;
    const leaf = this.model.get("leaf");
    for (const [key, b] of boxes) {
      const n = nodes[key] || {};
      let fill = "#9aa4ae";
      if (n.onPath) fill = "#1f6feb";
      if (lens) fill = { in: "#1f6feb", summary: "#8250df", replaced: "#c4c9cf", out: "#bf8700" }[lens[key]] || "#e1e4e8";
      if (matches.has(key)) fill = "#fb8500";
      if (key === leaf) fill = "#e3b341";
      ctx.fillStyle = fill;
      ctx.fillRect(b.x * m, b.y * m, Math.max(2, b.w * m), Math.max(2, b.h * m));
    }
    this.drawViewRect();
  },

  drawViewRect() {
    if (!this.mini || !this.naturalW) return;
    const v = this.viewSize();
    // only for a tree well beyond the view, and only in a corner where it covers no node
    const big = this.naturalW * this.scale > 1.5 * v.w || this.naturalH * this.scale > 1.5 * v.h;
    const shown = big && this.svgEl && this.stage.style.display !== "none" && this.placeMinimap(v);
    this.mini.style.display = shown ? "" : "none";
    if (!shown) return;
    const m = this.miniScale || 1;
    const x = (-this.tx / this.scale) * m;
    const y = (-this.ty / this.scale) * m;
    Object.assign(this.miniView.style, {
      left: `${x}px`,
      top: `${y}px`,
      width: `${(v.w / this.scale) * m}px`,
      height: `${(v.h / this.scale) * m}px`,
    });
  },

  /** Move the overview to the first corner of the view where it covers no node (nor the lens bar); false if none. */
  placeMinimap(v) {
    const c = this.miniCanvas;
    const mw = (parseFloat(c.style.width) || MINI_W) + 8;
    const mh = (parseFloat(c.style.height) || MINI_H) + 8;
    const gap = 8;
    const covered = [];
    const s = this.scale;
    for (const b of (this.boxes || new Map()).values()) {
      covered.push([this.tx + b.x * s, this.ty + b.y * s, this.tx + (b.x + b.w) * s, this.ty + (b.y + b.h) * s]);
    }
    if (this.lensOn && this.lensBar.offsetHeight) {
      const r = this.lensBar.getBoundingClientRect();
      covered.push([r.left - v.left, r.top - v.top, r.right - v.left, r.bottom - v.top]);
    }
    const corners = [
      ["right", "bottom"],
      ["right", "top"],
      ["left", "bottom"],
      ["left", "top"],
    ];
    for (const [across, down] of corners) {
      const x0 = across === "left" ? gap : v.w - gap - mw;
      const y0 = down === "top" ? gap : v.h - gap - mh;
      const x1 = x0 + mw;
      const y1 = y0 + mh;
      if (x0 < 0 || y0 < 0) continue;
      if (covered.some(([a, b, c2, d]) => a < x1 && c2 > x0 && b < y1 && d > y0)) continue;
      Object.assign(this.mini.style, {
        left: across === "left" ? `${gap}px` : "auto",
        right: across === "right" ? `${gap}px` : "auto",
        top: down === "top" ? `${gap}px` : "auto",
        bottom: down === "bottom" ? `${gap}px` : "auto",
      });
      return true;
    }
    return false;
  },

  // ------------------------------------------------------------------ search

  runSearch(keepPosition) {
    const nodes = this.model.get("nodes") || {};
    const current = this.matchAt >= 0 ? this.matches[this.matchAt] : null;
    const query = this.search.value;
    this.matches = searchNodes(nodes, this.order, query);
    // the kernel looks inside folded turns too; its answer arrives as `found`
    const found = this.model.get("found") || {};
    const answered = found.query === query && !!found.keys;
    // the query the kernel's whole-session answer is merged for (a reader, or a test, can wait for it)
    this.root.dataset.searched = answered ? query : "";
    if (answered) {
      const all = new Set([...this.matches, ...found.keys]);
      this.matches = this.order.filter((k) => all.has(k));
    } else if (query.trim().length >= 2 && !keepPosition) {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.send({ type: "search", query }), 250);
    }
    const on = this.search.value.trim() !== "";
    this.root.classList.toggle("pitv-searching", on);
    const set = new Set(this.matches);
    for (const [key, g] of this.groups) {
      g.classList.toggle("pitv-match", set.has(key));
      g.classList.remove("pitv-current");
    }
    this.matchAt = keepPosition && current ? this.matches.indexOf(current) : -1;
    this.showMatchInfo();
    if (this.matchAt >= 0) this.groups.get(this.matches[this.matchAt]).classList.add("pitv-current");
    if (!keepPosition) this.drawMinimap();
  },

  stepMatch(dir) {
    if (!this.matches.length) {
      this.showMatchInfo();
      return;
    }
    if (this.matchAt >= 0) {
      const g = this.groups.get(this.matches[this.matchAt]);
      if (g) g.classList.remove("pitv-current");
    }
    this.matchAt = this.matchAt < 0 && dir < 0 ? this.matches.length - 1 : (this.matchAt + dir + this.matches.length) % this.matches.length;
    const key = this.matches[this.matchAt];
    const g = this.groups.get(key);
    if (g) g.classList.add("pitv-current");
    this.userMoved = true;
    this.centerOn(key, true);
    this.showMatchInfo();
  },

  showMatchInfo() {
    const q = this.search.value.trim();
    if (!q) this.matchInfo.textContent = "";
    else if (!this.matches.length) this.matchInfo.textContent = "no match";
    else this.matchInfo.textContent = `${this.matchAt >= 0 ? this.matchAt + 1 : "–"} / ${this.matches.length}`;
  },

  // ------------------------------------------------------------------ keyboard

  /** The node keyboard moves start from: the selected one, else the leaf. */
  cursorKey() {
    const sel = this.model.get("selected");
    if (sel && this.groups.has(sel)) return sel;
    return this.model.get("leaf") || this.order[0];
  },

  neighbour(key, where) {
    const nodes = this.model.get("nodes") || {};
    const n = nodes[key];
    if (!n) return null;
    if (where === "parent") return n.parent || null;
    if (where === "child") {
      const kids = n.children || [];
      return kids.find((k) => nodes[k] && nodes[k].onPath) || kids[0] || null;
    }
    const siblings = n.parent ? (nodes[n.parent] || {}).children || [] : this.order.filter((k) => nodes[k] && !nodes[k].parent);
    const i = siblings.indexOf(key);
    const j = i + (where === "next" ? 1 : -1);
    return i >= 0 && j >= 0 && j < siblings.length ? siblings[j] : null;
  },

  moveTo(where) {
    const from = this.cursorKey();
    const to = from && this.neighbour(from, where);
    if (!to) return;
    this.selectKey(to);
    this.userMoved = true;
    this.reveal(to);
  },

  onKey(ev) {
    const step = 60;
    const k = ev.key;
    let used = true;
    if (k === "+" || k === "=") this.zoomCenter(1.25);
    else if (k === "-" || k === "_") this.zoomCenter(1 / 1.25);
    else if (k === "0") this.fit();
    else if (ev.shiftKey && k === "ArrowLeft") this.pan(step, 0);
    else if (ev.shiftKey && k === "ArrowRight") this.pan(-step, 0);
    else if (ev.shiftKey && k === "ArrowUp") this.pan(0, step);
    else if (ev.shiftKey && k === "ArrowDown") this.pan(0, -step);
    else if (k === "ArrowUp") this.moveTo("parent");
    else if (k === "ArrowDown") this.moveTo("child");
    else if (k === "ArrowLeft") this.moveTo("prev");
    else if (k === "ArrowRight") this.moveTo("next");
    else if (k === "l" || k === "L") this.goLeaf(true);
    else if (k === "/") this.search.focus();
    else if (k === "n") this.stepMatch(1);
    else if (k === "N") this.stepMatch(-1);
    else if (k === "c" || k === "C") this.toggleLens();
    else if (k === "Escape") {
      this.cancelCompare();
      this.clearPicked();
    } else if (k === "Enter") {
      const key = this.matchAt >= 0 ? this.matches[this.matchAt] : this.model.get("selected");
      const n = key && (this.model.get("nodes") || {})[key];
      if (n && n.folded && key === this.model.get("selected")) this.send({ type: "action", action: "expand", key });
      else if (key) this.selectKey(key);
    } else used = false;
    if (used) {
      ev.preventDefault();
      ev.stopPropagation();
    }
  },

  // ------------------------------------------------------------------ compare N picked leaves

  pick(key) {
    const i = this.picked.indexOf(key);
    if (i >= 0) this.picked.splice(i, 1);
    else this.picked.push(key);
    this.markPicked();
  },

  clearPicked() {
    this.picked = [];
    this.markPicked();
  },

  markPicked() {
    const keep = this.picked.filter((k) => this.groups.has(k));
    this.picked = keep;
    for (const [key, g] of this.groups) g.classList.toggle("pitv-picked", keep.includes(key));
    if (!this.pickBar) {
      this.pickBar = el(this.doc, "span", "pitv-pick-bar");
      this.statusEl.insertBefore(this.pickBar, this.noteEl);
    }
    this.pickBar.textContent = "";
    if (!keep.length) return;
    this.pickBar.append(el(this.doc, "span", null, `${keep.length} picked (shift-click) `));
    const go = button(this.doc, `Compare ${keep.length}`, "compare the branches ending at the picked nodes, cell by cell when they ran notebook cells", () => {
      this.send({ type: "action", action: "compare_many", keys: keep.slice() });
      this.togglePanel(true);
    }, "pitv-primary pitv-act-compare-picked");
    go.disabled = keep.length < 2;
    this.pickBar.append(go, button(this.doc, "Clear", "forget the picked nodes (Esc)", () => this.clearPicked()));
  },

  // ------------------------------------------------------------------ context lens

  toggleLens(on) {
    this.lensOn = on === undefined ? !this.lensOn : on;
    this.lensBtn.classList.toggle("pitv-on", this.lensOn);
    this.root.classList.toggle("pitv-lensing", this.lensOn);
    this.lensFocus = this.lensOn; // when the lens arrives, show where the compaction cuts the history
    if (this.lensOn) this.send({ type: "action", action: "lens", key: this.model.get("selected") || "" });
    else this.send({ type: "action", action: "lens_off" });
    this.paintLens();
    this.drawMinimap();
  },

  onLens() {
    this.paintLens();
    this.drawMinimap();
    const lens = this.model.get("lens") || {};
    if (this.lensOn && this.lensFocus && lens.from) {
      this.lensFocus = false;
      this.userMoved = true;
      this.centerOn(lens.compaction && this.groups.has(lens.compaction) ? lens.compaction : lens.from, true);
    }
  },

  paintLens() {
    const lens = this.model.get("lens") || {};
    const states = this.lensOn ? lens.nodes || {} : {};
    // with the lens off and no node painted since it was last on, there is nothing to clear (a new node has no lens marks)
    const paint = this.lensOn || this.lensPainted;
    this.lensPainted = this.lensOn;
    for (const [key, g] of paint ? this.groups : []) {
      const st = states[key];
      for (const c of ["in", "summary", "replaced", "out", "mixed", "off"]) g.classList.toggle("pitv-lens-" + c, this.lensOn && (st || "off") === c);
      g.classList.toggle("pitv-lens-firstkept", this.lensOn && key === lens.firstKept);
      g.classList.toggle("pitv-lens-from", this.lensOn && key === lens.from);
    }
    this.lensBar.textContent = "";
    this.lensBar.style.display = this.lensOn ? "" : "none";
    if (!this.lensOn) return;
    if (!lens.from) {
      this.lensBar.append(el(this.doc, "span", null, "Context lens: computing…"));
      return;
    }
    const close = button(this.doc, "×", "turn the context lens off (C)", () => this.toggleLens(false), "pitv-lens-close");
    this.lensBar.append(close, el(this.doc, "div", "pitv-lens-title", lens.headline || ""));
    const legend = el(this.doc, "div", "pitv-lens-legend");
    const keys = [["from", "the request is built from here"], ["in", "sent"], ["summary", "sent as a summary"]];
    if (lens.firstKept) keys.push(["firstkept", "first entry the compaction kept"]);
    keys.push(["replaced", "replaced by the compaction or forgotten (not sent)"], ["out", "on the path, never sent"], ["off", "other branches"]);
    for (const [cls, text] of keys) {
      const item = el(this.doc, "span", "pitv-lens-key pitv-lens-key-" + cls);
      item.append(el(this.doc, "i"), this.doc.createTextNode(text));
      legend.append(item);
    }
    this.lensBar.append(legend);
  },
});

function render({ model, el: host }) {
  const view = new View(model, host);
  view.start();
  return () => view.stop();
}

export default { render };
