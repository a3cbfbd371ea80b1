// TreeView drawing (joined after tree_view.js by the kernel): puts the kernel's SVG on the stage.
//
// After a redraw the kernel sends the whole picture (trait `svg`) and, when the previous
// drawing is known, a patch of it (`svg_patch`, based on revision `patch_base`; see
// pi_jupyter/notebook/tree_view/patch.py): only what changed. A node or edge drawn exactly as before
// is left out; a node the layout moved comes as a stub <g class="node" data-at="X,Y"> naming the
// first point of its outline in the new layout; a new or changed element comes whole; one no
// longer drawn comes as <g data-gone>. Applying the patch moves the nodes this view has (a
// translation), replaces or inserts the rest and removes what is gone, so a redraw of a large
// tree does not parse and lay out every node again.

/** The first point of a node's outline (its first path or polygon), in the SVG's coordinates; null if none. */
function outlineStart(g) {
  const shape = g.querySelector("path, polygon");
  const spec = shape && (shape.getAttribute("d") || shape.getAttribute("points") || "");
  const m = spec && /M?\s*(-?[\d.]+)[ ,]+(-?[\d.]+)/.exec(spec);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** The translation of a picture's graph group ([x, y], SVG units): where its coordinates land. */
function shiftOf(graph) {
  const m = /translate\((-?[\d.]+)[ ,]+(-?[\d.]+)\)/.exec((graph && graph.getAttribute("transform")) || "");
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

Object.assign(View.prototype, {
  /** Read the picture's size from its viewBox and give it that size in pixels. */
  sizeFrom(svg) {
    const box = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
    if (box.length === 4 && box.every((v) => Number.isFinite(v))) {
      this.naturalW = box[2] * PT_TO_PX;
      this.naturalH = box[3] * PT_TO_PX;
    } else {
      this.naturalW = 800;
      this.naturalH = 600;
    }
  },

  /** Show the whole SVG (or the text tree); false when there is no picture to show. */
  drawWhole(svgText, text) {
    this.stage.textContent = "";
    this.groups = new Map();
    this.edgeEls = new Map();
    this.order = [];
    if (!svgText) {
      this.textEl.style.display = "";
      this.textEl.textContent = text || "(nothing to draw)";
      this.stage.style.display = "none";
      this.root.classList.add("pitv-textmode");
      return false;
    }
    this.root.classList.remove("pitv-textmode");
    this.textEl.style.display = "none";
    this.stage.style.display = "";
    // the HTML parser reads inline SVG about twice as fast as DOMParser + importNode (a 10k-entry
    // session's picture is ~0.4 MB); the SVG is Graphviz's, every text in it escaped by the kernel
    const holder = this.doc.createElement("div");
    holder.innerHTML = svgText;
    const imported = holder.querySelector("svg");
    if (!imported) {
      this.textEl.style.display = "";
      this.textEl.textContent = text || "(the SVG could not be read)";
      return false;
    }
    this.sizeFrom(imported);
    imported.setAttribute("width", String(this.naturalW));
    imported.setAttribute("height", String(this.naturalH));
    this.stage.appendChild(imported);
    this.svgEl = imported;
    this.shift = shiftOf(imported.querySelector(":scope > g.graph"));
    for (const g of imported.querySelectorAll("g.node")) this.addGroup(g);
    for (const g of imported.querySelectorAll("g.edge")) this.addEdge(g);
    return true;
  },

  addGroup(g) {
    const title = g.querySelector(":scope > title");
    if (!title) return;
    const key = title.textContent;
    g.setAttribute("data-key", key);
    this.groups.set(key, g);
    this.order.push(key);
  },

  addEdge(g) {
    const title = g.querySelector(":scope > title");
    if (title) this.edgeEls.set(title.textContent, g);
  },

  /** Apply the kernel's patch to the picture on the stage; false when it does not apply (then draw the whole). */
  drawPatch() {
    const patch = this.model.get("svg_patch") || "";
    const base = this.model.get("patch_base") || 0;
    if (!patch || !base || base !== this.drawnRevision || !this.svgEl || !this.svgEl.isConnected || !this.edgeEls) return false;
    const holder = this.doc.createElement("div");
    holder.innerHTML = patch;
    const next = holder.querySelector("svg");
    const graph = this.svgEl.querySelector(":scope > g.graph");
    const incoming = next && next.querySelector(":scope > g.graph");
    if (!graph || !incoming) return false;
    const isPart = (g) => g.classList.contains("node") || g.classList.contains("edge");
    const keyOf = (g) => {
      const t = g.querySelector(":scope > title");
      return t ? t.textContent : null;
    };
    const mapOf = (g) => (g.classList.contains("node") ? this.groups : this.edgeEls);
    const items = [...incoming.children];
    const at = items.findIndex(isPart);
    const head = at < 0 ? items : items.slice(0, at);
    const body = at < 0 ? [] : items.slice(at);
    for (const child of body) {
      if (!isPart(child)) return false;
      const stub = child.hasAttribute("data-at") || child.hasAttribute("data-gone");
      if (stub && !mapOf(child).has(keyOf(child))) return false; // an element this view lacks
    }
    // the picture's new size (for zoom and pan); the <svg> keeps its first viewBox (overflow visible)
    // and its graph its first translation: changing either would make the browser lay out every
    // node's text again. What the patch brings is moved by the difference of the translations.
    this.sizeFrom(next);
    const [sx, sy] = shiftOf(incoming);
    const dx = sx - this.shift[0];
    const dy = sy - this.shift[1];
    const place = (el) => {
      // an element placed before the layout (tree_quick.py) carries its own translation: add ours
      const [ox, oy] = shiftOf(el);
      if (dx + ox || dy + oy) el.setAttribute("transform", `translate(${dx + ox} ${dy + oy})`);
      else el.removeAttribute("transform");
    };
    // the graph's title and background go first (under the nodes), as the new picture has them
    for (const child of [...graph.children]) {
      if (isPart(child)) break;
      child.remove();
    }
    const first = graph.firstChild;
    for (const el of head) {
      place(el);
      graph.insertBefore(el, first);
    }
    for (const child of body) {
      const key = keyOf(child);
      const map = mapOf(child);
      const mine = map.get(key);
      if (child.hasAttribute("data-gone")) {
        mine.remove();
        map.delete(key);
      } else if (child.hasAttribute("data-at")) {
        // a node drawn as before: move this view's copy to where the new layout put it
        const start = mine.__pitvStart || (mine.__pitvStart = outlineStart(mine));
        const [x, y] = child.getAttribute("data-at").split(",").map(Number);
        if (start) mine.setAttribute("transform", `translate(${x + dx - start[0]} ${y + dy - start[1]})`);
      } else {
        place(child);
        if (mine) mine.replaceWith(child);
        else graph.appendChild(child);
        if (map === this.groups) {
          child.setAttribute("data-key", key);
          this.groups.set(key, child);
        } else this.edgeEls.set(key, child);
      }
    }
    // the nodes in the kernel's order (search steps through them in it)
    this.order = Object.keys(this.model.get("nodes") || {}).filter((k) => this.groups.has(k));
    return true;
  },
});
