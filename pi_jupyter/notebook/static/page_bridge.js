// The page bridge (pi_jupyter.notebook.durable.page_bridge.PageBridge): an invisible widget model per
// session and kernel. anywidget runs initialize() when the model is created (no view needed);
// it registers window.__piJupyter.bridges[sessionId] so the static output of a finished %%pi
// cell can act on its session (continue from an answer, forget a message) while the kernel lives.

function registry() {
  const g = (window.__piJupyter = window.__piJupyter || {});
  g.bridges = g.bridges || {};
  return g.bridges;
}

function initialize({ model }) {
  const sessionId = model.get("session_id");
  const token = model.get("token");
  const pending = new Map(); // rid -> resolve
  let alive = true;
  let count = 0;
  const onMsg = (msg) => {
    if (!msg || msg.type !== "acted") return;
    const resolve = pending.get(msg.rid);
    if (resolve) {
      pending.delete(msg.rid);
      resolve({ ok: !!msg.ok, text: String(msg.text || "") });
    }
  };
  model.on("msg:custom", onMsg);
  const bridge = {
    sessionId,
    token,
    alive: () => alive,
    /** Ask the kernel to do `action` on `target`; resolves to {ok, text} (a one-line answer). */
    act(action, target) {
      return new Promise((resolve) => {
        if (!alive) return resolve({ ok: false, text: "the kernel is gone" });
        const rid = token + ":" + ++count;
        pending.set(rid, resolve);
        try {
          model.send({ type: "act", rid, action, target, token });
        } catch (err) {
          pending.delete(rid);
          alive = false;
          resolve({ ok: false, text: "the kernel cannot be reached" });
        }
      });
    },
    /** Put `source` in a new code cell below the cell holding `node`; false where the front end cannot. */
    insertCell(node, source) {
      return insertCodeCell(model, node, source);
    },
  };
  const bridges = registry();
  (bridges[sessionId] = bridges[sessionId] || []).push(bridge);
  // On a kernel restart JupyterLab's widget manager does not destroy the models, it marks their
  // comm dead ("comm_live_update"; only ever set live when the model is created): unregister then.
  const onCommLive = () => dispose();
  model.on("comm_live_update", onCommLive);
  const dispose = () => {
    if (!alive) return;
    // the model is closed (kernel restart or shutdown): outputs fall back to copying the command
    alive = false;
    model.off("msg:custom", onMsg);
    model.off("comm_live_update", onCommLive);
    const list = bridges[sessionId] || [];
    const i = list.indexOf(bridge);
    if (i >= 0) list.splice(i, 1);
    for (const resolve of pending.values()) resolve({ ok: false, text: "the kernel is gone" });
    pending.clear();
  };
  return dispose; // anywidget calls it when the model is destroyed
}

function render() {
  // never displayed; nothing to draw
}

export default { initialize, render };
