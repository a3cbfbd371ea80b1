"""The one-line errors a notebook user reads: the magic's name, a guess at a typo, sessions by their names."""

from __future__ import annotations

import pytest
from test_notebook_magics import ip  # noqa: F401 - the fixture
from test_notebook_magics import usage_error as error


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--modle offline/echo", "%%pi: unknown option --modle (did you mean --model?)"),
        ("--sesion notes", "%%pi: unknown option --sesion (did you mean --session?)"),
        ("--thinkng high", "%%pi: unknown option --thinkng (did you mean --thinking?)"),
        ("-z", "%%pi: unknown option -z;"),
        ("--model", "%%pi: argument --model/-m: expected one argument"),
    ],
)
def test_a_mistyped_option_gets_the_magics_name_and_a_guess(ip, line, says):  # noqa: F811
    message = error(ip, line, "hi")
    assert message.startswith("%%pi: ") and says in message and "\n" not in message


@pytest.mark.parametrize(("line", "says"), [("modle", "did you mean model?"), ("chekout x", "did you mean checkout?"), ("zzz", "%pi help")])
def test_a_mistyped_command_gets_a_guess(ip, line, says):  # noqa: F811
    message = error(ip, line)
    assert message.startswith("%pi: unknown command") and says in message


def test_errors_name_the_session_not_its_absolute_path(ip, tmp_path):  # noqa: F811
    path = tmp_path / "deep" / "folder" / "study.jsonl"
    path.parent.mkdir(parents=True)
    ip.run_cell_magic("pi", f"--session {path}", "hello")
    ip.run_line_magic("pi", "name my study")
    message = error(ip, "checkout nosuchentry")
    assert "nosuchentry" in message and "my study" in message and str(tmp_path) not in message
