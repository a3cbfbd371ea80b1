// TreeView side panel (joined after tree_view.js by the kernel): a node's messages, facts and
// actions, a comparison, and the status line.

Object.assign(View.prototype, {
  startCompare(key) {
    this.comparing = key;
    this.root.classList.add("pitv-picking");
    this.noteEl.textContent = "Click another node to compare with; Esc cancels.";
    this.noteEl.className = "pitv-note pitv-info";
  },

  cancelCompare() {
    if (!this.comparing) return;
    this.comparing = null;
    this.root.classList.remove("pitv-picking");
    this.onStatus();
  },

  onDetails() {
    this.showDetails();
    this.onStatus(); // the "click a node" hint goes once the panel is open
    // the canvas makes room for the panel's contents (unless the user sized it)
    if (this.svgEl && this.fitted && !this.userSized()) {
      if (!this.userMoved) this.initialView();
      else this.fitHeight(this.viewSize().h);
    }
  },

  showDetails() {
    const d = this.doc;
    const det = this.model.get("details") || {};
    const caps = this.model.get("capabilities") || {};
    this.panel.textContent = "";
    // the side panel opens with the first node shown in it: until then the tree has the whole width
    this.root.classList.toggle("pitv-panel-idle", !det.kind);
    if (!det.kind) {
      this.panel.appendChild(el(d, "div", "pitv-hint", "Click a node to see its messages and act on it. Double-click a folded node to open it."));
      return;
    }
    if (det.kind === "comparison" || det.kind === "lens") {
      const head = el(d, "div", "pitv-panel-head");
      head.append(el(d, "span", "pitv-panel-title", det.title || `Compare ${det.a} with ${det.b}`));
      if (det.key) head.append(button(d, "Back", "back to the selected node", () => this.send({ type: "select", key: det.key })));
      const body = el(d, "div", "pitv-body " + (det.kind === "lens" ? "pitv-lens-panel" : "pitv-compare"));
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
    const context = this.contextPanel(det, caps); // tree_edits.js: forget, edit, restore
    if (context) this.panel.append(context);
    const body = el(d, "div", "pitv-body");
    body.innerHTML = det.html || ""; // built and escaped by the kernel
    this.markPanelMessages(body, det);
    this.panel.appendChild(body);
  },

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
    const [summarize, sumLabel] = checkbox(d, "pitv-summarize", " with branch summary",
      caps.summarize ? "summarize the branch being left (asks the model)" : `branch summary ${why}`);
    summarize.disabled = !caps.summarize;
    const instructions = el(d, "textarea", "pitv-instructions");
    instructions.placeholder = "focus for the summary (optional)";
    instructions.rows = 2;
    instructions.style.display = "none";
    summarize.addEventListener("change", () => {
      instructions.style.display = summarize.checked ? "" : "none";
    });
    // what a checkout moves: the conversation and its variables and files, or one of them alone
    const rewind = el(d, "select", "pitv-rewind");
    for (const [value, text, title] of [
      ["both", "conversation and world", "the leaf moves here, and the variables and files the tools changed come back as they were here"],
      ["conversation", "conversation only", "the leaf moves here; the variables and files stay as they are now"],
      ["world", "world only", "the variables and files come back as they were here; the conversation stays where it is"],
    ]) {
      const option = el(d, "option");
      option.value = value;
      option.textContent = text;
      option.title = title;
      rewind.append(option);
    }
    rewind.title = "what the check out moves";
    rewind.disabled = !caps.world;
    const [force, forceLabel] = checkbox(d, "pitv-force", " over my changes",
      "also restore the variables and files you changed yourself (your versions are kept on the branch you leave)");
    force.disabled = !caps.world;
    const checkout = button(d, "Check out", "continue from the end of this node (the leaf moves here)", () =>
      this.send({ type: "action", action: "checkout", key, summarize: summarize.checked, instructions: instructions.value,
        rewind: rewind.value, force: force.checked && rewind.value !== "conversation" }), "pitv-primary pitv-act-checkout");
    const update = () => {
      checkout.disabled = !!det.isLeaf && !summarize.checked && rewind.value === "both" && !force.checked;
      summarize.disabled = !caps.summarize || rewind.value === "world";
      force.disabled = !caps.world || rewind.value === "conversation";
    };
    for (const input of [summarize, rewind, force]) input.addEventListener("change", update);
    update();
    row1.append(checkout, sumLabel);
    const row1b = el(d, "div", "pitv-row");
    if (caps.world) row1b.append(rewind, forceLabel);
    // fork, compact, copy, compare
    const row2 = el(d, "div", "pitv-row");
    const fork = button(d, "Fork", "copy the branch ending here into a new session file, and show it", () => this.send({ type: "action", action: "fork", key }), "pitv-act-fork");
    // offered only where a compaction has something to do; else the button says why not
    const compactWhy = caps.compact ? det.compactWhy || "" : `compaction ${why}`;
    const compact = button(d, "Compact up to here", compactWhy || "check out this node, then summarize older history into a compaction",
      () => this.send({ type: "action", action: "compact", key }), "pitv-act-compact");
    compact.disabled = !!compactWhy;
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
    box.append(row1, row1b, instructions, row2, row3);
    if (caps.readonly) {
      for (const b of box.querySelectorAll("button, input, textarea")) b.disabled = true;
      box.title = "the session was opened read-only";
    }
    return box;
  },

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
  },

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
  },

  onStatus() {
    this.headerEl.textContent = this.model.get("header") || "";
    if (this.comparing) return;
    const st = this.model.get("status") || {};
    // before anything happened, the status line says where to start (the side panel is not open yet)
    const idle = !st.text && this.root.classList.contains("pitv-panel-idle");
    this.noteEl.textContent = idle ? "Click a node to see its messages and act on it." : st.text || "";
    this.noteEl.className = "pitv-note pitv-" + (st.kind || "info");
  },
});
