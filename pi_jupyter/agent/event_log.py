"""Every event as one JSON line (pi's JSON-mode shape), to a file or a stream, secrets redacted."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import IO, Any

from .events import Event
from .redact import redact_json


def log_events(
    subscribe: Callable[[Callable[[Event], Any]], Callable[[], None]],
    target: str | os.PathLike[str] | IO[str],
    *,
    delta_only: bool = False,
    secrets: Sequence[str] = (),
) -> Callable[[], None]:
    """Subscribe a writer of one JSON line per event to ``target``; returns a function that stops it.

    ``delta_only`` leaves the whole partial message out of ``message_update`` lines. A path is
    opened for appending and closed by the stop function; a stream is left open. ``secrets``
    are redacted from every line, on top of the keys :func:`~.redact.redact` finds by itself; each string
    is redacted on its own (:func:`~.redact.redact_json`), so every line stays valid JSON.
    """
    own = not hasattr(target, "write")
    fh: IO[str] = open(target, "a", encoding="utf-8") if own else target  # type: ignore[assignment,arg-type]
    extra = list(secrets)

    def write(event: Event) -> None:
        line = json.dumps(event.to_dict(delta_only=delta_only), ensure_ascii=False, separators=(",", ":"), default=str)
        try:
            fh.write(redact_json(line, extra_secrets=extra) + "\n")
            fh.flush()
        except (OSError, ValueError):
            # the reader went away (a closed pipe, a closed file): stop logging, keep running
            unsubscribe()

    unsubscribe = subscribe(write)

    def stop() -> None:
        unsubscribe()
        if own:
            fh.close()

    return stop
