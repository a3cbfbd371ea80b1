// AgentView, part 3 of 4: the status line (state, model, tokens, cost, elapsed time, Stop).

const STATE_LABELS = {
  idle: "idle",
  running: "working",
  streaming: "streaming",
  tool: "running tool",
  compacting: "compacting",
  retrying: "retrying",
  stopping: "stopping…",
  done: "done",
  aborted: "aborted",
  error: "error",
};

function fmtInt(n) {
  return Number(n || 0).toLocaleString("en-US");
}

function fmtDuration(ms) {
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  const m = Math.floor(ms / 60000);
  return m + " min " + Math.round((ms % 60000) / 1000) + " s";
}

/** The status line under the transcript: a spinner and state, the model, tokens, cost, a note, the time, Stop. */
class StatusLine {
  constructor(doc, onStop) {
    this.doc = doc;
    this.status = {};
    this.statusAt = 0;
    this.timer = null;
    this.node = el(doc, "div", "piav-status");
    this.stateEl = el(doc, "span", "piav-state");
    this.infoEl = el(doc, "span", "piav-info");
    this.noteEl = el(doc, "span", "piav-note");
    this.elapsedEl = el(doc, "span", "piav-elapsed");
    this.stopBtn = el(doc, "button", "piav-stop", "Stop");
    this.stopBtn.type = "button";
    this.stopBtn.title = "Stop the agent (the partial answer is kept)";
    this.stopBtn.addEventListener("click", () => {
      onStop();
      this.stopBtn.disabled = true;
      this.stopBtn.textContent = "Stopping…";
    });
    this.node.append(this.stateEl, this.infoEl, this.noteEl, this.elapsedEl, el(doc, "span", "piav-spacer"), this.stopBtn);
  }

  /** Show `st` (the kernel's status dict); returns the state name. */
  update(st) {
    this.status = st || {};
    this.statusAt = performance.now();
    const state = this.status.state || "idle";
    this.stateEl.replaceChildren();
    if (this.status.running) this.stateEl.appendChild(el(this.doc, "span", "piav-spinner"));
    this.stateEl.appendChild(el(this.doc, "span", "piav-state-label piav-state-" + state, STATE_LABELS[state] || state));
    const bits = [];
    if (this.status.model) bits.push(this.status.model);
    const t = this.status.tokens || {};
    if (t.input || t.output) bits.push(`↑${fmtInt(t.input)} ↓${fmtInt(t.output)} tokens`);
    if (this.status.cost) bits.push("$" + Number(this.status.cost).toFixed(4));
    this.infoEl.textContent = bits.join(" · ");
    // a note (e.g. "model is now … for the next cells") stands out from the figures
    this.noteEl.textContent = this.status.note || "";
    this.noteEl.style.display = this.status.note ? "" : "none";
    const showStop = !!this.status.running;
    this.stopBtn.style.display = showStop ? "" : "none";
    if (state === "stopping") {
      this.stopBtn.disabled = true;
      this.stopBtn.textContent = "Stopping…";
    } else if (showStop) {
      this.stopBtn.disabled = false;
      this.stopBtn.textContent = "Stop";
    }
    this.tick();
    if (this.status.running && !this.timer) this.timer = setInterval(() => this.tick(), 250);
    if (!this.status.running) this.dispose();
    return state;
  }

  tick() {
    const base = Number(this.status.elapsedMs || 0);
    const ms = this.status.running ? base + (performance.now() - this.statusAt) : base;
    this.elapsedEl.textContent = ms > 0 ? fmtDuration(ms) : "";
  }

  dispose() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
