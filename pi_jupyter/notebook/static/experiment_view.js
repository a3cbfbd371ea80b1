// ExperimentView: the browser half of pi_jupyter.notebook.experiments.view (an anywidget ESM).
//
// The kernel sends custom messages {type: "rows", rows: [changed rows]} (at most ~10 a second
// in total) and keeps the `snapshot` trait (every row) and `progress` up to date; the view
// merges both. Text reaches the DOM through textContent only.

const STATES = ["done", "running", "queued", "failed", "skipped"];

function fmtCost(v) {
  return "$" + (v || 0).toFixed(4);
}

function progressText(p) {
  if (!p || !p.total) return "starting…";
  // "stopped" (aborted by Stop, partial answers kept) only once some are, as the Python progress line
  const keys = p.stopped ? ["done", "running", "queued", "failed", "stopped", "skipped"] : STATES;
  const parts = keys.map((k) => `${p[k] || 0} ${k}`).join(" · ");
  const budget = p.budget === null || p.budget === undefined ? "" : ` of $${Number(p.budget).toFixed(2)}`;
  return `${p.total} branches: ${parts} · ${fmtCost(p.cost)}${budget} · ${(p.elapsed || 0).toFixed(1)}s`;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "pi-exp";
  const head = document.createElement("div");
  head.className = "pi-exp-head";
  const title = document.createElement("span");
  title.className = "pi-exp-title";
  const line = document.createElement("span");
  line.className = "pi-exp-progress";
  const stop = document.createElement("button");
  stop.className = "pi-exp-stop";
  stop.textContent = "Stop all";
  stop.addEventListener("click", () => {
    stop.disabled = true;
    stop.textContent = "stopping…";
    model.send({ type: "stop" });
  });
  head.append(title, line, stop);
  const table = document.createElement("table");
  table.className = "pi-exp-table";
  const thead = document.createElement("tr");
  for (const h of ["#", "variant", "state", "answer", "tokens", "cost", "elapsed"]) {
    const th = document.createElement("th");
    th.textContent = h;
    thead.append(th);
  }
  table.append(thead);
  root.append(head, table);
  el.append(root);

  const rows = new Map();
  function upsert(r) {
    let tr = rows.get(r.i);
    if (!tr) {
      tr = document.createElement("tr");
      for (let k = 0; k < 7; k++) tr.append(document.createElement("td"));
      rows.set(r.i, tr);
      // keep grid order
      const after = [...rows.keys()].filter((i) => i > r.i).sort((a, b) => a - b)[0];
      if (after !== undefined && rows.get(after).parentNode === table) table.insertBefore(tr, rows.get(after));
      else table.append(tr);
    }
    const cells = tr.children;
    cells[0].textContent = String(r.i);
    cells[1].textContent = r.label;
    cells[2].textContent = r.state;
    cells[3].textContent = r.error && r.state !== "done" ? r.error : r.tail;
    cells[4].textContent = (r.tokens || 0).toLocaleString();
    cells[5].textContent = fmtCost(r.cost);
    cells[6].textContent = (r.elapsed || 0).toFixed(1) + "s";
    tr.className = "pi-exp-" + r.state;
  }
  function fromModel() {
    title.textContent = model.get("title") || "experiment";
    const p = model.get("progress");
    line.textContent = progressText(p);
    const finished = p && p.total && !p.running && !p.queued;
    if (finished) {
      stop.disabled = true;
      stop.textContent = "finished";
    }
    for (const r of model.get("snapshot") || []) upsert(r);
  }
  function onMsg(msg) {
    if (msg && msg.type === "rows") {
      for (const r of msg.rows) upsert(r);
      if (msg.progress) line.textContent = progressText(msg.progress);
    }
  }
  model.on("change:snapshot", fromModel);
  model.on("change:progress", fromModel);
  model.on("msg:custom", onMsg);
  fromModel();
  model.send({ type: "sync" });
  return () => {
    model.off("change:snapshot", fromModel);
    model.off("change:progress", fromModel);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
