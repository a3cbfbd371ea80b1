"""``%pi judge`` in IPython's own shell: the blind widget, its buttons, what the session records, bad input."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from test_notebook_magics import ip  # noqa: F401 - the in-process shell fixture

from pi_jupyter import Session
from pi_jupyter.experiment import load_experiment


def session_of(tmp_path) -> Session:
    (path,) = sorted((tmp_path / "sessions").glob("*.jsonl"))
    return Session.open(path, readonly=True)


def widget_text(view) -> str:
    """Every HTML value the widget shows, nested boxes included."""
    out, todo = [], [view]
    while todo:
        w = todo.pop()
        out.append(getattr(w, "value", "") if isinstance(getattr(w, "value", None), str) else "")
        out.append(getattr(w, "description", "") or "")
        todo.extend(getattr(w, "children", ()))
    return " ".join(out)


def test_judge_widget_is_blind_and_its_buttons_record_on_both_branches(ip, tmp_path):  # noqa: F811
    ip.run_cell_magic("pi", "--vary style=terse,chatty --repeat 2 --name grid", "Describe the sea in a {style} voice.")
    ip.run_line_magic("pi", "judge --as alice --seed 7 --name j")
    view = ip.user_ns["j"]
    shown = widget_text(view)
    assert "pair 1 of 2" in shown and "judging as alice" in shown
    # which variant gave which answer is nowhere in the widget: no key=value label, no branch number
    assert "style=terse" not in shown and "style=chatty" not in shown and "#0" not in shown and "#1" not in shown
    first = view.round.current
    view.buttons["A"].click()
    view.buttons["tie"].click()
    assert view.round.done and "done" in widget_text(view) and "won" in widget_text(view)
    s = session_of(tmp_path)
    entries = [e for e in s.raw_entries() if e.get("customType") == "pi_jupyter.score"]
    assert len(entries) == 4 and {e["data"]["judge"] for e in entries} == {"alice"}
    won = next(e for e in entries if e["data"]["value"] == 1.0)
    assert won["parentId"] == first.a.leaf and won["data"]["shown"] == "A"
    prefs = load_experiment(s).preferences()
    assert len(prefs.judgements) == 2 and prefs.judgements[1].choice == "tie"


def test_judge_with_a_model_records_both_orders(ip, tmp_path):  # noqa: F811
    ip.run_cell_magic("pi", "--vary style=terse,chatty", "Describe the sea in a {style} voice.")
    prefs = ip.run_line_magic("pi", "judge last --model offline/echo --rubric 'mentions the sea'")
    assert len(prefs.judgements) == 2 and prefs.judgements[0].a == prefs.judgements[1].b
    assert "model offline/echo" in str(prefs)


def test_judge_bad_input_is_one_line(ip, tmp_path):  # noqa: F811
    ip.run_cell_magic("pi", "--repeat 1", "Say hi.")
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("pi", "judge")
    message = str(info.value)
    assert message.startswith("%pi judge: judging needs two finished branches to compare; experiment ") and message.endswith(" has 1")
    ip.run_cell_magic("pi", "--vary style=a,b", "Say {style}.")
    with pytest.raises(UsageError, match=r"^%pi judge: judge --by tone: not a --vary key"):
        ip.run_line_magic("pi", "judge --by tone")
