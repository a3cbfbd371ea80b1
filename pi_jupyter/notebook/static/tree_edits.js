// TreeView context edits (joined last by the kernel). In the side panel, each message of the
// selected node says whether the model is sent it (forgotten, edited, restored) with what is
// sent instead, and offers Forget, Edit… and Restore; the kernel appends pi 1.x context_edit
// entries and redraws. The marks and their legend are drawn in the SVG by the kernel.

const CTX_WORDS = { sent: "sent", dropped: "✂ forgotten", edited: "✎ edited", restored: "restored" };
const CTX_TITLES = {
  sent: "the model is sent this message as the file holds it",
  dropped: "not sent to the model on this branch; the session file keeps it",
  edited: "the model is sent other text on this branch; the session file keeps the original",
  restored: "forgotten or edited before, now sent as the file holds it again",
};

Object.assign(View.prototype, {
  /** The "what the model is sent" section of a node's panel, or null for a node without messages. */
  contextPanel(det, caps) {
    const d = this.doc;
    const rows = det.context || [];
    if (det.folded || !rows.length) return null;
    const box = el(d, "div", "pitv-ctx");
    const head = el(d, "div", "pitv-ctx-head");
    head.append(el(d, "span", "pitv-ctx-title", "What the model is sent"));
    const live = rows.filter((r) => r.state !== "dropped");
    if (rows.length > 1 && live.length) {
      head.append(button(d, "Forget turn", "drop every message of this node from the context (the file keeps them)",
        () => this.send({ type: "action", action: "forget", key: det.key }), "pitv-act-forget-node"));
    }
    box.append(head);
    const note = det.contextNote;
    if (note && note.text) box.append(el(d, "div", `pitv-ctx-note pitv-ctx-note-${note.kind || "info"}`, note.text));
    for (const row of rows) box.append(this.contextRow(row));
    if (caps.readonly) {
      for (const b of box.querySelectorAll("button, textarea")) b.disabled = true;
      box.title = "the session was opened read-only";
    }
    return box;
  },

  contextRow(row) {
    const d = this.doc;
    const line = el(d, "div", `pitv-ctx-row pitv-ctx-${row.state}`);
    line.dataset.entry = row.id;
    const top = el(d, "div", "pitv-ctx-top");
    const state = el(d, "span", `pitv-ctx-state pitv-ctx-state-${row.state}`, CTX_WORDS[row.state] || row.state);
    state.title = CTX_TITLES[row.state] || "";
    top.append(el(d, "span", "pitv-ctx-role", row.role), el(d, "code", "pitv-id", row.id), state);
    const acts = el(d, "span", "pitv-ctx-acts");
    const editor = el(d, "div", "pitv-ctx-editor");
    editor.style.display = "none";
    if (row.state !== "dropped") {
      acts.append(button(d, "Forget", "drop this message from what the model is sent (the file keeps it)",
        () => this.send({ type: "action", action: "forget", entry: row.id }), "pitv-act-forget"));
    }
    acts.append(button(d, "Edit…", "send the model other text instead of this message (the file keeps the original)", () => {
      editor.style.display = editor.style.display === "none" ? "" : "none";
      if (editor.style.display === "") area.focus();
    }, "pitv-act-edit"));
    if (row.state === "dropped" || row.state === "edited") {
      acts.append(button(d, "Restore", "send this message as the file holds it again",
        () => this.send({ type: "action", action: "restore", entry: row.id }), "pitv-act-restore"));
    }
    top.append(acts);
    line.append(top);
    if (!row.onPath) line.append(el(d, "div", "pitv-ctx-off", "not on the current branch: an edit here is refused; check out a node below it first"));
    if (row.state === "dropped") line.append(el(d, "div", "pitv-ctx-what", "Not sent to the model; the session file keeps the original below."));
    if (row.state === "edited") {
      line.append(el(d, "div", "pitv-ctx-what", "Sent to the model instead of the original below:"));
      line.append(el(d, "pre", "pitv-pre pitv-ctx-replacement", row.sent || ""));
    }
    const area = el(d, "textarea", "pitv-ctx-text");
    area.rows = 4;
    area.value = row.sent != null ? row.sent : row.original || "";
    const save = button(d, "Send this instead", "replace what the model is sent of this message", () =>
      this.send({ type: "action", action: "edit_context", entry: row.id, text: area.value }), "pitv-primary pitv-act-edit-save");
    const cancel = button(d, "Cancel", null, () => (editor.style.display = "none"));
    const bar = el(d, "div", "pitv-row");
    bar.append(save, cancel);
    editor.append(area, bar);
    line.append(editor);
    return line;
  },

  /** Strike or flag the rendered messages the current branch forgot or edited. */
  markPanelMessages(body, det) {
    for (const row of det.context || []) {
      for (const msg of body.querySelectorAll(".pitv-msg")) {
        if (msg.getAttribute("data-entry") !== row.id) continue;
        msg.classList.toggle("pitv-ctx-msg-dropped", row.state === "dropped");
        msg.classList.toggle("pitv-ctx-msg-edited", row.state === "edited");
      }
    }
  },
});
