"""``pi-jupyter export`` and ``%pi export``: one self-contained HTML page of a session, or a branch as Markdown."""

from __future__ import annotations

import re
from html import unescape

import pytest

from pi_jupyter.cli.main import main
from pi_jupyter.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from pi_jupyter.session import Session
from pi_jupyter.views import sample_session
from pi_jupyter.views.export.page import branch_markdown, export_html


def _two_branches(tmp_path) -> Session:
    s = Session.open(tmp_path / "study.jsonl", create=True)
    s.append_message(UserMessage.text("First question about the loss."))
    root_answer = s.append_message(AssistantMessage(content=[TextContent(text="It diverges.")]))
    s.append_message(UserMessage.text("Try the smaller rate <please>."))
    call = ToolCall(id="t1", name="python", arguments={"code": "print(0.25 * 4)"})
    s.append_message(AssistantMessage(content=[call], stop_reason="toolUse"))
    s.append_message(ToolResultMessage(tool_call_id="t1", tool_name="python", content=[TextContent(text="1.0\n")]))
    left = s.append_message(AssistantMessage(content=[TextContent(text="The left branch converges.")]))
    s.label(left, "baseline")
    s.checkout(root_answer)
    s.append_message(UserMessage.text("Try the larger rate instead."))
    s.append_message(AssistantMessage(content=[TextContent(text="The right branch explodes.")]))
    s.append_compaction("## Goal\nFind a stable rate.", root_answer, 12_345)
    return s


def test_html_holds_the_tree_every_branch_labels_and_summaries_with_no_network(tmp_path):
    s = _two_branches(tmp_path)
    page = export_html(s)
    for text in ("The left branch converges.", "The right branch explodes.", "baseline", "Find a stable rate.", "12,345 tokens before"):
        assert text in page
    assert 'python(code="print(0.25 * 4)")' in unescape(page) and "1.0" in page  # the tool call with its result
    assert "&lt;please&gt;" in page and "<please>" not in page
    assert "<svg" in page and 'id="search"' in page
    # nothing is fetched: no external script, stylesheet, image or font
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)="(https?:)?//', page)
    assert "@import" not in page and "url(http" not in page


def test_markdown_is_one_branch(tmp_path):
    s = _two_branches(tmp_path)
    md = branch_markdown(s)  # the current branch: the right one
    assert "The right branch explodes." in md and "The left branch converges." not in md
    left = s.resolve("baseline")
    md = branch_markdown(s, left)
    assert "The left branch converges." in md and "*ℹ label: baseline*" in md
    assert "The right branch explodes." not in md


def test_cli_writes_html_and_markdown_and_names_bad_branches(tmp_path, capsys):
    s = _two_branches(tmp_path)
    assert main(["export", s.path]) == 0
    assert "The left branch converges." in (tmp_path / "study.html").read_text()
    out = tmp_path / "left.md"
    assert main(["export", s.path, "--branch", "baseline", "--format", "markdown", "-o", str(out)]) == 0
    assert "The left branch converges." in out.read_text()
    capsys.readouterr()
    assert main(["export", s.path, "--branch", "nosuchlabel"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--branch 'nosuchlabel'" in err[0]
    assert main(["export", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["export", s.path, "-o", str(tmp_path / "no" / "dir.html")]) == 2


def test_a_big_branchy_session_exports(tmp_path):
    s = sample_session(600, seed=3, path=tmp_path / "big.jsonl")
    page = export_html(s)
    assert page.count('<section class="entry"') > 200
    assert page.count("data-leaf=") >= 2  # several branches to pick from


@pytest.mark.parametrize("bad", ['{"type":"message","id":"x1","parentId":null,"message":{"role":"assistant","content":7}}'])
def test_odd_entries_do_not_break_the_page(tmp_path, bad):
    s = _two_branches(tmp_path)
    with open(s.path, "a") as fh:
        fh.write(bad + "\n")
    page = export_html(Session.open(s.path, readonly=True))
    assert "The left branch converges." in page


def test_pi_export_magic_writes_the_current_session(tmp_path, monkeypatch, capsys):
    from test_notebook_magics import shell_instance, usage_error

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "no-user-config.toml"))
    shell = shell_instance()
    shell.run_line_magic("load_ext", "pi_jupyter")
    try:
        shell.run_line_magic("config", f"PiMagics.session_dir = {str(tmp_path / 'sessions')!r}")
        shell.run_line_magic("config", "PiMagics.widget = False")
        shell.run_line_magic("config", "PiMagics.model = 'offline/echo'")
        shell.run_cell_magic("pi", "", "Export me, please.")
        shell.run_line_magic("pi", "export out.html")
        assert "wrote out.html" in capsys.readouterr().out
        assert "Export me, please." in (tmp_path / "out.html").read_text()
        shell.run_line_magic("pi", "export --format markdown")
        written = capsys.readouterr().out.split("wrote ")[1].split(" (")[0]
        assert written.endswith(".md") and "Export me, please." in open(written).read()
        assert "nosuch" in usage_error(shell, "export --branch nosuch")
        assert "--format: invalid choice: 'pdf'" in usage_error(shell, "export --format pdf")  # names the option
    finally:
        shell.run_line_magic("unload_ext", "pi_jupyter")
        shell._pi_magics = None
