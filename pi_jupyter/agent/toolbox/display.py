"""Turn a Python value into text for the model and a MIME bundle for people (no IPython needed).

The model gets text: pandas objects via ``to_string`` (first and last rows, with the
shape), ``_repr_markdown_`` as is, ``_repr_html_`` stripped to text (else ``_repr_latex_``,
else ``_repr_json_``) when the object's ``repr`` says nothing (none of its own, or just
``<pkg.Class object ...>`` as IPython's ``HTML`` gives), else ``repr``. The bundle keeps the rich forms (``text/html``,
``text/markdown``, ``text/latex``, ``image/png``, ``image/jpeg``, ``image/svg+xml``) for
the widget; whether images reach the model is the caller's decision.
"""

from __future__ import annotations

import base64
import html
import json
import re
from html.parser import HTMLParser
from typing import Any

__all__ = ["MAX_TABLE_ROWS", "bundle_text", "bundle_to_text", "html_to_text", "value_to_display"]

MAX_TABLE_ROWS = 60
MAX_TABLE_COLS = 30
_MAX_RICH_CHARS = 200_000  # rich forms larger than this stay out of details (they are persisted)

_BLOCK_TAGS = {"p", "div", "br", "li", "ul", "ol", "table", "thead", "tbody", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "hr"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._tables = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self._tables += 1
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in _BLOCK_TAGS:
            self._newline()

    def _newline(self) -> None:
        # One line break between blocks, however many tags open and close there.
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._tables = max(0, self._tables - 1)
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in ("td", "th") and self._cell is not None:
            if self._row is not None:
                self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._newline()
            self.parts.append(" | ".join(self._row) + "\n")
            self._row = None
        elif tag in _BLOCK_TAGS:
            self._newline()

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._tables and not data.strip():
            return  # indentation between rows and cells of a table is layout, not text
        else:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Readable text from HTML: tags dropped, table rows as ``a | b | c``, blank runs collapsed."""
    parser = _TextExtractor()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed HTML: fall back to crude tag stripping
        return html.unescape(re.sub(r"<[^>]+>", " ", markup)).strip()
    text = "".join(parser.parts)
    lines = [" ".join(line.split()) for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _call(obj: Any, method: str) -> Any:
    fn = getattr(obj, method, None)
    if fn is None or not callable(fn):
        return None
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a broken rich repr must not hide the value
        return None


def _pandas_text(value: Any) -> str | None:
    module = type(value).__module__ or ""
    if not module.startswith("pandas"):
        return None
    kind = type(value).__name__
    try:
        if kind == "DataFrame":
            return value.to_string(max_rows=MAX_TABLE_ROWS, min_rows=20, max_cols=MAX_TABLE_COLS, show_dimensions=True)
        if kind == "Series":
            return value.to_string(max_rows=MAX_TABLE_ROWS, min_rows=20, length=True, dtype=True, name=True)
    except Exception:  # noqa: BLE001 - fall back to repr
        return None
    return None


_BARE_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>$")


def _has_own_repr(value: Any, plain: str) -> bool:
    """True when ``repr`` says more than the class name (``<pkg.Class object at 0x...>`` says nothing)."""
    return type(value).__repr__ is not object.__repr__ and not _BARE_REPR.match(plain.strip())


def _is_figure(value: Any) -> bool:
    """A matplotlib figure (IPython draws it with a formatter of its own; here it is drawn to PNG)."""
    return (type(value).__module__ or "").startswith("matplotlib") and type(value).__name__ == "Figure" and hasattr(value, "savefig")


def _figure_png(figure: Any) -> bytes | None:
    import io

    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format="png", bbox_inches="tight")
    except Exception:  # noqa: BLE001 - a figure that cannot draw itself is shown by its repr
        return None
    return buffer.getvalue()


def value_to_display(value: Any) -> tuple[str, dict[str, Any]]:
    """``(text for the model, MIME bundle)`` for a value; the bundle always has ``text/plain``."""
    bundle: dict[str, Any] = {}
    mime = _call(value, "_repr_mimebundle_")
    if isinstance(mime, tuple):
        mime = mime[0]
    if isinstance(mime, dict):
        bundle.update({k: v for k, v in mime.items() if isinstance(k, str)})
    for method, key in (
        ("_repr_markdown_", "text/markdown"),
        ("_repr_html_", "text/html"),
        ("_repr_latex_", "text/latex"),
        ("_repr_svg_", "image/svg+xml"),
        ("_repr_png_", "image/png"),
        ("_repr_jpeg_", "image/jpeg"),
        ("_repr_json_", "application/json"),
    ):
        if key in bundle:
            continue
        out = _call(value, method)
        if isinstance(out, tuple):
            out = out[0]
        if out is not None:
            bundle[key] = out
    if "image/png" not in bundle and _is_figure(value) and (png := _figure_png(value)) is not None:
        bundle["image/png"] = png
    for key in ("image/png", "image/jpeg"):
        data = bundle.get(key)
        if isinstance(data, (bytes, bytearray)):
            bundle[key] = base64.b64encode(bytes(data)).decode("ascii")
    try:
        given = bundle.get("text/plain")
        plain = given if isinstance(given, str) else repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ is still information
        plain = f"<{type(value).__name__} object (repr failed: {type(exc).__name__}: {exc})>"
    bundle["text/plain"] = plain

    own_repr = _has_own_repr(value, plain)
    text = _pandas_text(value)
    if text is None and isinstance(bundle.get("text/markdown"), str):
        text = bundle["text/markdown"]
    if text is None and isinstance(bundle.get("text/html"), str) and not own_repr:
        text = html_to_text(bundle["text/html"])
    if text is None and isinstance(bundle.get("text/latex"), str) and not own_repr:
        text = bundle["text/latex"]
    if text is None and "application/json" in bundle and not own_repr:
        try:
            text = json.dumps(bundle["application/json"], ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = None
    if text is None:
        text = plain
    # Keep the bundle JSON-friendly and bounded: it lands in the session file.
    for key in list(bundle):
        v = bundle[key]
        if key == "application/json" and not isinstance(v, str):
            try:
                bundle[key] = json.dumps(v, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                bundle[key] = str(v)
        elif not isinstance(v, str):
            bundle[key] = str(v)
        if key != "text/plain" and not key.startswith("image/") and len(bundle[key]) > _MAX_RICH_CHARS:
            del bundle[key]
    return text, bundle


_MAX_DISPLAY_TEXT = 4000


def bundle_text(bundle: dict[str, Any]) -> str | None:
    """The text of a MIME bundle as a reader would take it: the Markdown, else a ``text/plain`` that says
    more than a class name, else the HTML as text, else LaTeX or JSON; ``None`` when it has none."""
    plain = bundle.get("text/plain")
    if isinstance(bundle.get("text/markdown"), str):
        return str(bundle["text/markdown"])
    if isinstance(plain, str) and plain.strip() and not _BARE_REPR.match(plain.strip()):
        return plain
    if isinstance(bundle.get("text/html"), str):
        return html_to_text(bundle["text/html"])
    if isinstance(bundle.get("text/latex"), str):
        return str(bundle["text/latex"])
    if "application/json" in bundle:
        try:
            return json.dumps(bundle["application/json"], ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return None
    return None


def bundle_to_text(bundle: dict[str, Any], *, attached: bool = False) -> str:
    """What the model reads of a ``display()`` made by tool code: ``[display text/html, text/plain]`` and its text.

    The text is the Markdown, else a ``text/plain`` that says more than a class name, else the
    HTML as text, else LaTeX or JSON (cut at 4,000 characters); images are named, as attached
    (``attached``: the caller sends them with the result) or as shown to the user only.
    """
    kinds = [k for k in bundle if isinstance(k, str)]
    text = bundle_text(bundle)
    images = [k for k in kinds if k.startswith("image/")]
    fate = "attached" if attached else "shown to the user, not sent to the model"
    head = f"[display {', '.join(kinds)}" + (f"; {', '.join(images)} {fate}]" if images else "]")
    if not text or not text.strip():
        return head + "\n"
    if len(text) > _MAX_DISPLAY_TEXT:
        text = text[:_MAX_DISPLAY_TEXT] + f"\n[display text cut at {_MAX_DISPLAY_TEXT} characters]"
    return f"{head}\n{text.rstrip()}\n"
