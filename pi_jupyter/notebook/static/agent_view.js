// AgentView, part 4 of 4: the view (items, blocks, tool cards) and the widget's render().
//
// The browser half of pi_jupyter.notebook.agent_view.view.AgentView (an anywidget ESM, joined from
// agent_view_store.js, agent_view_markdown.js, agent_view_status.js and this file).

function oneLine(text, max) {
  const s = String(text || "")
    .slice(0, max * 4)
    .replace(/\s+/g, " ")
    .trim();
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}

function argsPreview(text) {
  // The streamed arguments are JSON (raw while streaming, pretty at the end).
  try {
    const obj = JSON.parse(text);
    if (obj && typeof obj === "object" && !Array.isArray(obj)) {
      return oneLine(
        Object.entries(obj)
          .map(([k, v]) => k + "=" + (typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v)))
          .join(", "),
        120,
      );
    }
  } catch (_e) {
    // still streaming: show the raw fragment
  }
  return oneLine(text, 120);
}

const PROMPT_FOLD = 600; // characters of a prompt shown before "show more" (as the static rendering)

class View {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.doc = el.ownerDocument || document;
    this.store = new Store();
    this.nodes = new Map(); // item id -> {node, json}
    this.ui = new Map(); // "item:block" -> open (a user's toggle survives re-renders)
    this.renderQueued = false;
    this.build();
  }

  build() {
    const d = this.doc;
    this.root = el(d, "div", "piav-root");
    this.header = el(d, "div", "piav-header");
    this.titleEl = el(d, "span", "piav-title");
    this.header.appendChild(this.titleEl);
    this.body = el(d, "div", "piav-body");
    this.empty = el(d, "div", "piav-empty", "Waiting for the agent…");
    this.body.appendChild(this.empty);
    this.statusLine = new StatusLine(d, () => this.send({ type: "stop" }));
    this.statusEl = this.statusLine.node;
    this.root.append(this.header, this.body, this.statusEl);
    this.el.appendChild(this.root);
    this.root.addEventListener("click", (ev) => {
      const btn = ev.target && ev.target.closest ? ev.target.closest(".piav-insert") : null;
      if (btn) {
        ev.preventDefault();
        this.insertCode(btn);
      }
    });
  }

  /** "Insert as cell": a new code cell below this output; where the front end cannot, the code is copied. */
  insertCode(btn) {
    const text = btn._piavCode || "";
    const done = (label) => {
      btn.textContent = label;
      setTimeout(() => (btn.textContent = "Insert as cell"), 1800);
    };
    if (insertCodeCell(this.model, this.root, text)) return done("Inserted below");
    copyText(text).then((ok) => done(ok ? "Copied: paste it in a new cell" : "Copy it by hand"));
  }

  start() {
    this.onTitle();
    this.onScale();
    this.onSnapshot();
    // A view rendered late (a display update, a re-opened tab) shows its transcript at once,
    // never "Waiting for the agent…" next to a finished status.
    this.renderNow();
    this.onStatus(this.model.get("status") || {});
    this._onSnap = () => this.onSnapshot();
    this._onStatus = () => this.onStatus(this.model.get("status") || {});
    this._onTitle = () => this.onTitle();
    this._onScale = () => this.onScale();
    this.model.on("change:scale", this._onScale);
    this._onMsg = (msg) => this.onMessage(msg);
    this.model.on("change:transcript_seq", this._onSnap);
    this.model.on("change:transcript", this._onSnap);
    this.model.on("change:status", this._onStatus);
    this.model.on("change:title", this._onTitle);
    this.model.on("msg:custom", this._onMsg);
    // Ask for what happened since the snapshot (a view rendered or reloaded mid-run).
    this.send({ type: "sync", seq: this.store.base });
  }

  send(content) {
    try {
      this.model.send(content);
    } catch (err) {
      // No kernel (a saved notebook rendered from its widget state): nothing to ask or stop.
      console.warn("AgentView: cannot reach the kernel", err);
    }
  }

  stop() {
    this.model.off("change:transcript_seq", this._onSnap);
    this.model.off("change:transcript", this._onSnap);
    this.model.off("change:status", this._onStatus);
    this.model.off("change:title", this._onTitle);
    this.model.off("change:scale", this._onScale);
    this.model.off("msg:custom", this._onMsg);
    this.statusLine.dispose();
  }

  onScale() {
    const scale = Number(this.model.get("scale") || 1);
    this.root.style.setProperty("--pi-scale", String(scale > 0 ? scale : 1));
  }

  onTitle() {
    const t = this.model.get("title") || "";
    this.titleEl.textContent = t;
    this.header.style.display = t ? "" : "none";
  }

  onSnapshot() {
    const items = this.model.get("transcript") || [];
    const seq = this.model.get("transcript_seq") || 0;
    if (items === this.lastSnapshot && seq === this.store.base) return; // both traits fire for one update
    this.lastSnapshot = items;
    if (this.store.loadSnapshot(items, seq)) this.queueRender();
  }

  onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "ops") {
      this.store.applyOps(msg.ops);
      this.queueRender();
    } else if (msg.type === "acted") {
      this.onActed(msg);
    } else if (msg.type === "state") {
      if (Array.isArray(msg.items)) this.store.loadSnapshot(msg.items, msg.seq);
      if (msg.status) this.onStatus(msg.status);
      this.queueRender();
    }
  }

  queueRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    const run = () => {
      if (!this.renderQueued) return;
      this.renderQueued = false;
      this.render();
    };
    // rAF pauses in a background tab; the timeout keeps the DOM current anyway.
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(run);
    setTimeout(run, 60);
  }

  renderNow() {
    this.renderQueued = false;
    this.render();
  }

  /** The notebook's scrolling element around this view (cached), or null. */
  scroller() {
    if (this._scroller && this._scroller.isConnected && this._scroller.contains(this.root)) return this._scroller;
    let n = this.root.parentElement;
    while (n && n !== this.doc.body) {
      const oy = getComputedStyle(n).overflowY;
      // an output box with overflow-x set computes overflowY "auto" too but does not scroll: skip it
      if ((oy === "auto" || oy === "scroll") && n.scrollHeight > n.clientHeight + 1) return (this._scroller = n);
      n = n.parentElement;
    }
    return null;
  }

  /** True while a run streams and the end of this view is in sight (or nothing scrolls yet): the reader follows the stream. */
  following() {
    if (!this.statusLine.status.running) return false;
    const sp = this.scroller();
    if (!sp) return true;
    const r = this.root.getBoundingClientRect();
    const s = sp.getBoundingClientRect();
    return r.bottom <= s.bottom + 48 && r.bottom > s.top;
  }

  render() {
    // follow the stream unless the reader scrolled up (then the end of the view is out of sight)
    const follow = this.following();
    this.renderItems();
    const sp = follow ? this.scroller() : null;
    if (sp) {
      const over = this.root.getBoundingClientRect().bottom - sp.getBoundingClientRect().bottom;
      if (over > 0) sp.scrollTop += over;
    }
  }

  renderItems() {
    const store = this.store;
    const structural = store.structural;
    const dirty = store.dirty;
    store.structural = false;
    store.dirty = new Set();
    if (structural) {
      const keep = new Set();
      let prev = null;
      for (const item of store.items) {
        keep.add(item.id);
        const node = this.renderItem(item, false);
        const want = prev ? prev.nextSibling : this.body.firstChild;
        if (node !== want) this.body.insertBefore(node, want);
        prev = node;
      }
      for (const [id, entry] of this.nodes) {
        if (!keep.has(id)) {
          entry.node.remove();
          this.nodes.delete(id);
        }
      }
    } else {
      for (const id of dirty) {
        const item = store.byId.get(id);
        if (item) this.renderItem(item, true);
      }
    }
    this.empty.style.display = store.items.length ? "none" : "";
    if (this.empty.parentNode !== this.body || this.body.lastChild !== this.empty) this.body.appendChild(this.empty);
  }

  renderItem(item, replaceInPlace) {
    const json = JSON.stringify(item);
    const entry = this.nodes.get(item.id);
    if (entry && entry.json === json) return entry.node;
    const node = this.buildItem(item, entry);
    if (entry && entry.node !== node && entry.node.parentNode) entry.node.replaceWith(node);
    else if (!entry && replaceInPlace) this.body.insertBefore(node, this.empty);
    this.nodes.set(item.id, { node, json, blocks: node._piavBlocks || [] });
    return node;
  }

  buildItem(item, entry) {
    const d = this.doc;
    const kind = item.kind;
    if (kind === "assistant" || kind === "tool") {
      // Re-use the unchanged blocks of the old node, so only what streamed is rebuilt.
      const node = entry && entry.node.dataset.kind === kind ? entry.node : el(d, "div", "piav-item piav-" + kind);
      node.dataset.kind = kind;
      node.dataset.id = item.id;
      const old = (entry && entry.node === node && entry.blocks) || [];
      const blocks = [];
      const wanted = [];
      const streaming = kind === "assistant" && !item.stopReason;
      const last = (item.blocks || []).length - 1;
      (item.blocks || []).forEach((block, b) => {
        // Only the last block of a streaming message is still growing; its label says so.
        const live = streaming && b === last;
        const bjson = (live ? "~" : "") + JSON.stringify(block);
        const prev = old[b];
        const bnode = prev && prev.json === bjson ? prev.node : this.buildBlock(item, block, b, live);
        blocks.push({ json: bjson, node: bnode });
        wanted.push(bnode);
      });
      const footer = this.buildFooter(item);
      if (footer) wanted.push(footer);
      const forget = kind === "assistant" ? this.forgetBar(item.entry, item.forgotten) : null;
      if (forget) wanted.push(forget);
      node.replaceChildren(...wanted);
      node._piavBlocks = blocks;
      return node;
    }
    const node = el(d, "div", "piav-item piav-" + kind);
    node.dataset.kind = kind;
    node.dataset.id = item.id;
    if (kind === "user") {
      node.appendChild(el(d, "div", "piav-label", "You"));
      const text = item.text || "";
      if (text.length > PROMPT_FOLD) {
        // a long prompt (a pasted table, a file) folds behind its first line
        const det = this.details(item.id + ":p", false, "piav-prompt-fold");
        det.appendChild(el(d, "summary", null, oneLine(text, 140) + "  (show more)"));
        det.appendChild(renderMarkdown(d, text));
        node.appendChild(det);
      } else {
        node.appendChild(renderMarkdown(d, text));
      }
      if (item.images) node.appendChild(el(d, "div", "piav-muted", `[${item.images} image${item.images > 1 ? "s" : ""}]`));
      const forget = this.forgetBar(item.entry, item.forgotten);
      if (forget) node.appendChild(forget);
    } else if (kind === "custom") {
      node.appendChild(el(d, "div", "piav-label", item.customType || "custom"));
      node.appendChild(renderMarkdown(d, item.text));
    } else if (kind === "bash") {
      node.appendChild(el(d, "div", "piav-label", "Shell"));
      node.appendChild(el(d, "pre", "piav-code", "$ " + (item.command || "")));
      if (item.output) node.appendChild(el(d, "pre", "piav-output", item.output));
      if (item.exitCode) node.appendChild(el(d, "div", "piav-muted", "exit " + item.exitCode));
    } else if (kind === "summary") {
      const det = this.details(item.id + ":s", false, "piav-summary");
      det.appendChild(el(d, "summary", null, item.label || "Summary"));
      det.appendChild(renderMarkdown(d, item.text));
      node.appendChild(det);
    } else if (kind === "notice") {
      node.classList.add("piav-tone-" + (item.tone || "info"));
      if (item.active) node.appendChild(el(d, "span", "piav-spinner"));
      node.appendChild(el(d, "span", null, item.text || ""));
      if (item.step && item.waiting) node.appendChild(this.goButton());
    } else {
      node.appendChild(el(d, "span", "piav-muted", item.text || "[" + kind + "]"));
    }
    return node;
  }

  /** Step mode: the replay is held until the class has guessed; the click lets it go on. */
  goButton() {
    const btn = el(this.doc, "button", "piav-go", "Go on ▶");
    btn.type = "button";
    btn.title = "Let the replay go on to its next pause";
    btn.addEventListener("click", (ev) => {
      ev.preventDefault();
      btn.disabled = true;
      this.send({ type: "go" });
    });
    return btn;
  }

  /** The outputs of the tool calls shown in this view (what an answer may quote). */
  toolOutputs() {
    const out = [];
    for (const item of this.store.items) {
      for (const block of item.blocks || []) {
        if (block && block.x && typeof block.x.output === "string") out.push(block.x.output);
      }
    }
    return out;
  }

  details(key, defaultOpen, cls) {
    const det = el(this.doc, "details", cls);
    const initial = this.ui.has(key) ? this.ui.get(key) : defaultOpen;
    det.open = initial;
    // Setting `open` fires "toggle" too: only a change away from what we set is the user's.
    det.addEventListener("toggle", () => {
      if (det.open !== initial || this.ui.has(key)) this.ui.set(key, det.open);
    });
    return det;
  }

  buildBlock(item, block, b, live) {
    const d = this.doc;
    if (!block) return el(d, "span");
    if (block.type === "text") {
      // "Insert as cell" on the code the agent wrote for the user, not on what it quotes of a tool's output
      const node = renderMarkdown(d, block.text, { insert: (code, lang) => insertableCode(code, lang, this.toolOutputs()) });
      node.classList.add("piav-text");
      return node;
    }
    if (block.type === "thinking") {
      const det = this.details(item.id + ":" + b, false, "piav-thinking");
      const sum = el(d, "summary");
      sum.appendChild(el(d, "span", "piav-thinking-label", block.redacted ? "Thinking (redacted)" : live ? "Thinking…" : "Thought"));
      sum.appendChild(el(d, "span", "piav-muted", " " + oneLine(block.text, 90)));
      det.appendChild(sum);
      det.appendChild(renderMarkdown(d, block.text));
      return det;
    }
    if (block.type === "toolCall") return this.buildTool(item, block, b, live);
    return el(d, "div", "piav-muted", block.text || "");
  }

  buildTool(item, block, b, streaming) {
    const d = this.doc;
    const x = block.x || null;
    const status = x ? x.status : streaming ? "streaming" : "pending";
    const running = status === "running" || status === "streaming";
    const key = item.id + ":" + b;
    const det = this.details(key, running || status === "error", "piav-tool piav-tool-" + status);
    det.dataset.status = status;
    det.dataset.callId = block.id || "";
    const sum = el(d, "summary", "piav-tool-head");
    const icon = el(d, "span", "piav-tool-icon");
    if (running) icon.appendChild(el(d, "span", "piav-spinner"));
    else icon.textContent = status === "done" ? "✓" : status === "error" ? "✗" : "•";
    sum.appendChild(icon);
    sum.appendChild(el(d, "span", "piav-tool-name", block.name || "tool"));
    sum.appendChild(el(d, "span", "piav-tool-args", argsPreview(block.text)));
    const meta = x && typeof x.ms === "number" ? fmtDuration(x.ms) : status === "streaming" ? "preparing…" : status === "running" ? "running…" : "";
    sum.appendChild(el(d, "span", "piav-tool-meta", meta));
    det.appendChild(sum);
    const body = el(d, "div", "piav-tool-body");
    if (block.text) {
      body.appendChild(el(d, "div", "piav-label", "Arguments"));
      body.appendChild(el(d, "pre", "piav-code piav-args", block.text));
    }
    if (x && (x.output || status !== "running")) {
      body.appendChild(el(d, "div", "piav-label", status === "error" ? "Error" : status === "running" ? "Output so far" : "Result"));
      body.appendChild(el(d, "pre", "piav-output" + (status === "error" ? " piav-error-text" : ""), x.output || "(no output)"));
    }
    if (x && x.changed) body.appendChild(el(d, "div", "piav-world", "changed: " + x.changed)); // what it did to the world
    const forget = x ? this.forgetBar(x.entry, x.forgotten) : null;
    if (forget) body.appendChild(forget);
    det.appendChild(body);
    return det;
  }

  /** "forget this" for a written message (or "not sent any more" once forgotten); null before it is written. */
  forgetBar(entry, forgotten) {
    if (!entry) return null;
    const d = this.doc;
    const bar = el(d, "div", "piav-forget-bar");
    bar.dataset.entry = entry;
    const said = this.acted && this.acted.get(entry);
    if (forgotten) {
      bar.classList.add("piav-forgotten");
      // a forget asked mid-run says when it happens; otherwise the mark says what happened
      if (said) bar.append("↑ ", el(d, "span", "piav-act-note", said));
      else bar.textContent = "↑ not sent any more: forgotten from the context (the session file keeps it)";
      return bar;
    }
    const btn = el(d, "button", "piav-forget", "forget this");
    btn.type = "button";
    btn.title = "drop this message from what the model is sent (the session file keeps it): %pi forget " + entry;
    btn.addEventListener("click", (ev) => {
      ev.preventDefault();
      ev.stopPropagation();
      btn.disabled = true;
      this.send({ type: "forget", entry });
    });
    bar.appendChild(btn);
    if (said) bar.appendChild(el(d, "span", "piav-act-note", said));
    return bar;
  }

  onActed(msg) {
    this.acted = this.acted || new Map();
    this.acted.set(msg.entry, msg.text || "");
    for (const bar of this.root.querySelectorAll(".piav-forget-bar")) {
      if (bar.dataset.entry !== msg.entry) continue;
      const btn = bar.querySelector("button");
      if (btn) btn.disabled = false;
      if (bar.classList.contains("piav-forgotten") && !bar.querySelector(".piav-act-note")) bar.textContent = "↑ ";
      let note = bar.querySelector(".piav-act-note");
      if (!note) note = bar.appendChild(el(this.doc, "span", "piav-act-note"));
      note.textContent = msg.text || "";
    }
  }

  buildFooter(item) {
    if (item.kind !== "assistant") return null;
    if (item.stopReason === "error") return el(this.doc, "div", "piav-item-error", "Error: " + (item.errorMessage || "unknown error"));
    if (item.stopReason === "aborted") return el(this.doc, "div", "piav-muted piav-aborted", "Stopped.");
    return null;
  }

  onStatus(st) {
    // The status must never run ahead of the transcript (a "done" next to a missing last line).
    if (this.renderQueued) this.renderNow();
    this.root.dataset.state = this.statusLine.update(st);
  }
}

function render({ model, el }) {
  const view = new View(model, el);
  view.start();
  return () => view.stop();
}

export default { render };
