"""What the TreeView's browser half sends, dispatched to the view's public methods.

Messages: ``{type: "select", key}``, ``{type: "search", query}``, ``{type: "refresh"}`` and
``{type: "action", action, key, ...}``. Every failure is shown in the view's status line in
the user's words (:func:`.tree_compact.user_message`), never raised into the kernel.
"""

from __future__ import annotations

from typing import Any

from .actions import CONTEXT_ACTIONS
from .compact import user_message


class BrowserMessages:
    """The TreeView's message dispatch (a mixin: the view supplies the actions)."""

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        view: Any = self  # a TreeView
        kind = content.get("type")
        try:
            if kind == "select":
                view.select(str(content.get("key") or ""))
            elif kind == "search":
                view.search(str(content.get("query") or ""))
            elif kind == "action":
                self._action(content)
            elif kind == "refresh":
                view.redraw()
        except Exception as exc:  # noqa: BLE001 - every failure is shown in the view, never raised
            self._set_status(user_message(exc), "error")  # type: ignore[attr-defined]

    def _action(self, content: dict[str, Any]) -> None:
        view: Any = self  # a TreeView
        action = content.get("action")
        key = content.get("key") or None
        if action == "checkout":
            rewind = str(content.get("rewind") or "both")
            force = bool(content.get("force"))
            view.checkout(
                key, summarize=bool(content.get("summarize")), instructions=content.get("instructions") or None, rewind=rewind, force=force
            )
        elif action == "fork":
            view.fork(key)
        elif action == "label":
            view.label(key, content.get("text"))
        elif action == "compact":
            view.compact(key, instructions=content.get("instructions") or None)
        elif action == "compare":
            view.compare(str(key), str(content.get("other") or ""))
        elif action == "compare_many":
            keys = content.get("keys")
            view.compare_many([str(k) for k in keys] if isinstance(keys, list) else [])
        elif action in CONTEXT_ACTIONS:
            view.context_action(content)
        elif action == "lens":
            view.show_lens(key)
        elif action == "lens_off":
            view.show_lens(None, off=True)
        elif action == "expand":
            view.expand(str(key))
        elif action == "collapse":
            view.collapse()
        elif action == "mode":
            view.set_mode(str(content.get("mode")))
        else:
            raise ValueError(f"unknown TreeView action {action!r}")
