// TreeView drawing (joined after tree_view.js by the kernel): puts the kernel's SVG on the stage.
//
// After a redraw the kernel sends the whole picture (trait `svg`) and, when the previous
// drawing is known, a patch of it (`svg_patch`, based on revision `patch_base`): the same SVG
// with every node drawn exactly as before replaced by a stub <g class="node" data-at="X,Y">
// naming the node and the first point of its outline in the new layout. Applying the patch
// moves the nodes this view already has (a translation) and inserts only the new and changed
// nodes and the edges, so a redraw of a large tree does not parse and lay out every node again.

/** The first point of a node's outline (its first path or polygon), in the SVG's coordinates; null if none. */
function outlineStart(g) {
  const shape = g.querySelector("path, polygon");
  const spec = shape && (shape.getAttribute("d") || shape.getAttribute("points") || "");
  const m = spec && /M?\s*(-?[\d.]+)[ ,]+(-?[\d.]+)/.exec(spec);
  return m ? [Number(m[1]), Number(m[2])] : null;
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
    for (const g of imported.querySelectorAll("g.node")) this.addGroup(g);
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

  /** Apply the kernel's patch to the picture on the stage; false when it does not apply (then draw the whole). */
  drawPatch() {
    const patch = this.model.get("svg_patch") || "";
    const base = this.model.get("patch_base") || 0;
    if (!patch || !base || base !== this.drawnRevision || !this.svgEl || !this.svgEl.isConnected) return false;
    const holder = this.doc.createElement("div");
    holder.innerHTML = patch;
    const next = holder.querySelector("svg");
    const graph = this.svgEl.querySelector(":scope > g.graph");
    const incoming = next && next.querySelector(":scope > g.graph");
    if (!graph || !incoming) return false;
    const keyOf = (g) => {
      const t = g.querySelector(":scope > title");
      return t ? t.textContent : null;
    };
    const items = [...incoming.children];
    for (const child of items) {
      if (child.hasAttribute("data-at") && !this.groups.has(keyOf(child))) return false; // a node this view lacks
    }
    // the picture's new size (for zoom and pan) and the graph's placement; the <svg> keeps its first
    // viewBox (overflow visible): changing it would make the browser lay out every node's text again
    this.sizeFrom(next);
    graph.setAttribute("transform", incoming.getAttribute("transform") || "");
    const kept = new Set();
    const old = this.groups;
    this.groups = new Map();
    this.order = [];
    const front = [];
    const rest = [];
    let seenGroup = false;
    for (const child of items) {
      const at = child.getAttribute("data-at");
      if (at !== null) {
        // a node drawn as before: move this view's copy to where the new layout put it
        const g = old.get(keyOf(child));
        const start = g.__pitvStart || (g.__pitvStart = outlineStart(g));
        const [x, y] = at.split(",").map(Number);
        if (start) g.setAttribute("transform", `translate(${x - start[0]} ${y - start[1]})`);
        kept.add(g);
        this.addGroup(g);
        seenGroup = true;
        continue;
      }
      const isGroup = child.tagName.toLowerCase() === "g";
      seenGroup = seenGroup || isGroup;
      (seenGroup ? rest : front).push(child);
      if (isGroup && child.classList.contains("node")) this.addGroup(child);
    }
    for (const child of [...graph.children]) if (!kept.has(child)) child.remove();
    // the background and the graph's label go first (under the nodes); new nodes and edges after
    const first = graph.firstChild;
    for (const el of front) graph.insertBefore(el, first);
    for (const el of rest) graph.appendChild(el);
    return true;
  },
});
