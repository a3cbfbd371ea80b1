"""``JudgeView``: blind pairwise judging in the notebook, as an ipywidget.

Two answers side by side as **A** and **B** (which variant each came from is never shown;
the order was drawn at random and is recorded), a note field and four buttons: *A is better*,
*Tie*, *B is better*, *Skip*. Each choice is written at once as a score entry on both branches
(see :mod:`pi_jupyter.experiment.judging`), so closing the notebook midway loses nothing. When
the last pair is judged the view shows the win rates, agreement and position bias, and its
output becomes that static rendering (readable without the kernel).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ...experiment.judging import JudgingRound
from ...views.highlight import markdown_html

_PANEL = "border:1px solid #d0d7de;border-radius:6px;padding:8px;max-height:28em;overflow:auto"


class JudgeView(widgets.VBox):
    """The judging widget of one :class:`~pi_jupyter.experiment.judging.JudgingRound`."""

    def __init__(self, round: JudgingRound, **kwargs: Any) -> None:
        self.round = round
        self._header = widgets.HTML()
        self._question = widgets.HTML()
        self._left = widgets.HTML(layout=widgets.Layout(width="50%"))
        self._right = widgets.HTML(layout=widgets.Layout(width="50%"))
        self._note = widgets.Text(placeholder="a note (optional)", layout=widgets.Layout(width="60%"))
        self.buttons = {
            "A": widgets.Button(description="A is better", button_style="info"),
            "tie": widgets.Button(description="Tie"),
            "B": widgets.Button(description="B is better", button_style="info"),
            "skip": widgets.Button(description="Skip"),
        }
        for choice, button in self.buttons.items():
            button.on_click(self._clicked(choice))
        self._controls = widgets.HBox([self._note, *self.buttons.values()])
        self._on_done: list[Callable[[JudgeView], Any]] = []
        super().__init__(**kwargs)
        self._show()

    def on_done(self, callback: Callable[[JudgeView], Any]) -> None:
        """Call ``callback(view)`` when the last pair is judged."""
        self._on_done.append(callback)

    def choose(self, choice: str, note: str | None = None) -> None:
        """What a button does: record ``A``, ``B`` or ``tie`` for the pair shown (``skip`` leaves it) and show the next."""
        if choice == "skip":
            self.round.skip()
        else:
            self.round.choose(choice, self._note.value.strip() if note is None else note)
        self._note.value = ""
        self._show()
        if self.round.done:
            for callback in list(self._on_done):
                callback(self)

    def _clicked(self, choice: str) -> Callable[[Any], None]:
        return lambda _button: self.choose(choice)

    def _show(self) -> None:
        r = self.round
        pair = r.current
        if pair is None:
            self._header.value = f"<b>Blind judging of {html.escape(r.key)} by {html.escape(r.judge)}: done.</b>"
            self.children = [self._header, widgets.HTML(self.results_html())]
            return
        self._header.value = (
            f"<b>Blind judging of {html.escape(r.key)}</b> · pair {r.position + 1} of {len(r.pairs)} · judging as "
            f"{html.escape(r.judge)} · which answer is better? (which variant gave each is hidden; the order is random)"
        )
        question = pair.question or "The two answers were asked in different words (that difference is what you judge)."
        self._question.value = f'<div style="color:#57606a;margin:4px 0">{html.escape(question)}</div>'
        self._left.value = f'<div style="{_PANEL}"><b>A</b>{markdown_html(pair.answer_a)}</div>'
        self._right.value = f'<div style="{_PANEL}"><b>B</b>{markdown_html(pair.answer_b)}</div>'
        self.children = [self._header, self._question, widgets.HBox([self._left, self._right]), self._controls]

    def results_html(self) -> str:
        """Win rates, agreement and position bias so far (HTML, no JavaScript)."""
        return self.round.preferences().html() or "<p>no judgements yet</p>"

    def static_bundle(self) -> dict[str, Any]:
        """What reads without the kernel: where the round is and what the judgements say."""
        r = self.round
        head = f"blind judging of {r.key} by {r.judge}: {len(r.recorded)} of {len(r.pairs)} pairs judged"
        head += " (each choice is a score entry in the session)"
        prefs = r.preferences()
        return {
            "text/html": f"<p><b>{html.escape(head)}</b></p>{prefs.html()}",
            "text/plain": "\n".join([head, *prefs.lines()]),
        }

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        result = super()._repr_mimebundle_(**kwargs)
        if result is None:
            return None
        data, metadata = result if isinstance(result, tuple) else (result, {})
        data = {**data, **self.static_bundle()}
        # the types a saved notebook keeps when the widget state is not saved (see save_hook)
        return data, {**metadata, "pi_jupyter": {"durable": ["text/html", "text/plain"]}}
