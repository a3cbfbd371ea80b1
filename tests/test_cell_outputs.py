"""What a ``%%pi`` cell leaves in the notebook: the live widget, then its static rendering in place.

Through IPython's real magics (the widget on, no kernel): the first display carries the widget
and the static rendering, the update at the end carries the static rendering alone; a
``--model`` that changes the session's model says so in the status line; ``PiMagics.scale``
enlarges the type of the widget and of the static output.
"""

from __future__ import annotations

import pytest
from cell_shell import own_shell
from IPython.utils.capture import capture_output

from pi_jupyter.messages import text_of

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "no-user-config.toml"))

    with own_shell() as shell:  # a shell of our own, whatever ran before in this process
        shell.run_line_magic("load_ext", "pi_jupyter")
        shell.run_line_magic("config", f"PiMagics.session_dir = {str(tmp_path / 'sessions')!r}")
        shell.run_line_magic("config", "PiMagics.model = 'offline/echo'")
        shell.run_line_magic("config", "PiMagics.widget = True")  # other tests in this process turn it off
        yield shell
        shell.run_line_magic("unload_ext", "pi_jupyter")


def test_the_widget_gives_way_to_its_static_rendering_and_says_the_model_changed(ip):
    ip.run_line_magic("config", "PiMagics.scale = 1.5")
    with capture_output() as cap:
        ip.run_cell_magic("pi", "--model offline/typewriter", "Hello there")
    live, final = cap.outputs
    assert WIDGET in live.data and "text/html" in live.data
    assert WIDGET not in final.data and set(final.data) == {"text/html", "text/markdown", "text/plain"}
    assert "Hello there" in final.data["text/html"] and "font-size:1.5em" in final.data["text/html"]
    assert "model is now offline/typewriter for the next cells" in final.data["text/plain"]
    with capture_output() as cap:
        ip.run_cell_magic("pi", "--model offline/typewriter", "Again")  # the same model: nothing to say
    assert "model is now" not in cap.outputs[-1].data["text/plain"]


def test_scale_is_checked(ip):
    with pytest.raises(Exception, match="scale"):
        ip._pi_magics.scale = 9


def test_a_rerun_cell_shows_its_other_answers_and_how_to_continue_from_them(ip):
    ip._pi_cell_id = "cell-A"  # what JupyterLab sends with each run of the same cell
    ends = []
    for word in ("first", "second", "third"):
        ip._pi_cell_id = "cell-A"
        with capture_output() as cap:
            result = ip.run_cell_magic("pi", "", f"Say {word}.")
        ends.append(result.session.leaf_id)
    html = cap.outputs[-1].data["text/html"]
    assert "answer 3 of 3" in html
    assert "Say first." in html and "Say second." in html  # the earlier answers, from the session
    for end in ends[:2]:
        assert f"%pi checkout {end}" in html
    md = cap.outputs[-1].data["text/markdown"]
    assert "*answer 3 of 3*" in md and f"`%pi checkout {ends[0]}`" in md
    # continuing from the first answer: the next cell's context holds it, not the third
    ip._pi_cell_id = None
    ip.run_line_magic("pi", f"checkout {ends[0]}")
    ip._pi_cell_id = "cell-B"
    with capture_output():
        nxt = ip.run_cell_magic("pi", "", "And then?")
    texts = [text_of(m.content, "") for m in nxt.session.context().messages if m.role == "user"]
    assert texts == ["Say first.", "And then?"]
