"""An anywidget ES module in a bare page: the widget's own JavaScript on a minimal model, no Jupyter.

For browser tests and benchmarks that drive a widget's view directly. The model has the
anywidget interface (``get``, ``on``, ``off``, ``send``) and ``update(values)``, which sets
every value and then fires one ``change:NAME`` event per value that changed, as Backbone does.
``mount`` resolves once ``render`` has returned; ``window.__model`` is the model.
"""

from __future__ import annotations

PAGE = "<!doctype html><html><body style='margin:0'><div id='host' style='width:1200px'></div></body></html>"

MODEL = """
  const handlers = {};
  const model = {
    state, sent: [],
    get(k) { return this.state[k]; },
    on(name, fn) { (handlers[name] = handlers[name] || []).push(fn); },
    off(name, fn) { handlers[name] = (handlers[name] || []).filter((f) => f !== fn); },
    send(msg) { this.sent.push(msg); },
    update(values) {
      const changed = Object.keys(values).filter((k) => JSON.stringify(this.state[k]) !== JSON.stringify(values[k]));
      Object.assign(this.state, values);
      for (const k of changed) for (const fn of handlers["change:" + k] || []) fn();
    },
  };
  window.__model = model;
"""


def mount_script(after: str = "") -> str:
    """``async ([code, state]) => ...``: import the base64 ES module ``code``, render it on a model of ``state``, then run ``after``."""
    return (
        'async ([code, state]) => {\n  const mod = await import("data:text/javascript;base64," + code);\n'
        + MODEL
        + '  const t0 = performance.now();\n  mod.default.render({ model, el: document.getElementById("host") });\n'
        + after
        + "\n}"
    )
