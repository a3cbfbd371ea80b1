"""``%%pi`` and ``%pi`` in an in-process IPython: option parsing, ``{expr}`` filling, errors, the result, settings.

The kernel tests (``test_notebook_kernel.py``) run the same magics in a real ipykernel; these
run in IPython's own shell, which is quicker and shows exactly what a user reads.
"""

from __future__ import annotations

import os

import pytest
from IPython.core.error import UsageError
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.testing.globalipapp import start_ipython

from pi_jupyter import Session
from pi_jupyter.notebook.config import file_settings
from pi_jupyter.notebook.prompt_text import PromptFormatError, fill_prompt, fill_prompt_parts, filled_note
from pi_jupyter.notebook.result import CellResult


def shell_instance() -> TerminalInteractiveShell:
    """IPython's test shell (one per process; ``start_ipython`` makes it the first time)."""
    start_ipython()
    return TerminalInteractiveShell.instance()


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "no-user-config.toml"))
    shell = shell_instance()
    shell._pi_cell_id = None  # a cell id another test set on the shared shell would make this test's cells re-runs
    # a fresh kernel has run no cells yet: the shared shell's history (earlier tests' cells) is not this test's notebook
    shell._pi_cell_log = None
    monkeypatch.setitem(shell.user_ns, "In", [""])
    if "pi_jupyter" in shell.extension_manager.loaded:  # left loaded by a test elsewhere: this test's magics are new
        shell.run_line_magic("unload_ext", "pi_jupyter")
    shell.run_line_magic("load_ext", "pi_jupyter")
    shell.run_line_magic("config", f"PiMagics.session_dir = {str(tmp_path / 'sessions')!r}")
    shell.run_line_magic("config", "PiMagics.widget = False")
    shell.run_line_magic("config", "PiMagics.model = 'offline/echo'")
    yield shell
    shell.run_line_magic("unload_ext", "pi_jupyter")
    shell._pi_magics = None
    # %config writes into the shared shell's config: the next test's magics must not inherit it
    for section in ("PiMagics", "PiConfig"):
        shell.config.pop(section, None)


def usage_error(shell, line: str, cell: str | None = None) -> str:
    with pytest.raises(UsageError) as info:
        if cell is None:
            shell.run_line_magic("pi", line)
        else:
            shell.run_cell_magic("pi", line, cell)
    return str(info.value)


# ------------------------------------------------------------------ {expr}


def test_fields_are_python_expressions_in_the_namespace():
    ns = {"df_rows": 120, "xs": [1, 2, 3], "x": 3.14159, "name": "Ada"}
    assert fill_prompt("{name} has {df_rows} rows, {len(xs)} items, pi is {x:.2f}", ns) == "Ada has 120 rows, 3 items, pi is 3.14"
    assert fill_prompt("{name!r} {x:{df_rows // 20}.1f} {xs[-1]}", ns) == "'Ada'    3.1 3"
    assert fill_prompt("a dict: {{'a': 1}} and {{}}", ns) == "a dict: {'a': 1} and {}"
    assert fill_prompt("no braces at all", {}) == "no braces at all"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("What is {missing}?", "{missing} in the prompt: name 'missing' is not defined"),
        ("empty {} braces", "'{}' with no expression"),
        ("a dict {'a': 1}", "{'a': 1} in the prompt cannot be formatted"),
        ("{1 +}", "{1 +} in the prompt is not a Python expression"),
        ("{3!z}", "unknown conversion !z"),
        ("fails {1/0}", "ZeroDivisionError"),
        ("unpaired { brace", "braces do not pair up"),
    ],
)
def test_bad_fields_are_refused_with_the_reason(text, says):
    with pytest.raises(PromptFormatError) as info:
        fill_prompt(text, {})
    assert says in str(info.value)


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ('Count {n}:\n```python\nprint(f"branch {n}\\n", {{1: 2}})\n```', 'Count 3:\n```python\nprint(f"branch {n}\\n", {{1: 2}})\n```'),
        ("Count {n}:\n~~~~\n{n}\n~~~\n~~~~\nthen {n}", "Count 3:\n~~~~\n{n}\n~~~\n~~~~\nthen 3"),  # a fence closes on a run as long
        ("  1. step:\n     ```\n     x = {n}\n     ```\n{n}", "  1. step:\n     ```\n     x = {n}\n     ```\n3"),  # in a list
        ("Run `f'{n}'` or ``{n} ` {n}`` on {n}", "Run `f'{n}'` or ``{n} ` {n}`` on 3"),  # inline code, a longer run
        ("An unclosed ` tick and {n}", "An unclosed ` tick and 3"),
        ("Fenced to the end:\n```\n{n} {", "Fenced to the end:\n```\n{n} {"),  # an unclosed fence is code to the end
        ("{{literal}} {n}", "{literal} 3"),
    ],
)
def test_code_blocks_and_inline_code_are_sent_as_written(text, sent):
    filled = fill_prompt_parts(text, {"n": 3})
    assert filled.text == sent
    assert filled.fields == [("{n}", "3")] * sent.count("3")


def test_the_note_says_what_was_filled_in_and_never_shows_a_secret(monkeypatch):
    monkeypatch.setenv("NOTE_API_KEY", "QZ7XW9FG3HJ5LM8PU2WQZ")
    ns = {"counter": 100, "shape": (3, 4), "key": "QZ7XW9FG3HJ5LM8PU2WQZ", "long": "x" * 200}
    filled = fill_prompt_parts("{counter} rows, shape {shape}, key {key}, {long}\n```\n{counter}\n```", ns)
    note = filled_note(filled.fields, code_kept=filled.code_kept)
    assert note.startswith("Filled in {counter} = 100, {shape} = (3, 4), {key} = [REDACTED:NOTE_API_KEY], {long} = xxx")
    assert note.endswith("…; braces in code sent as written") and "QZ7X" not in note
    assert filled_note([]) == ""
    grid = fill_prompt_parts("In a {tone} way, {counter}", {"tone": "warm", "counter": 1})
    assert filled_note(grid.fields, per_branch={"tone": ["terse", "warm"]}) == "Filled in {tone} per branch (terse, warm), {counter} = 1"


# ------------------------------------------------------------------ %%pi


def test_a_cell_returns_a_result_and_fills_the_prompt(ip, capsys):
    ip.user_ns["rows"] = 42
    result = ip.run_cell_magic("pi", "--name answer", "The table has {rows} rows.")
    assert isinstance(result, CellResult)
    assert ip.user_ns["answer"] is result
    assert result.prompt == "The table has 42 rows."
    assert result.ok and result.stop_reason == "stop"
    assert "The table has 42 rows." in result.text  # the offline model repeats the prompt
    assert len(result.entry_ids) == 3 and result.usage.input > 0  # the recorded system prompt, the prompt, the answer
    assert result.session.raw_entry(result.entry_ids[0])["message"]["role"] == "system"
    assert str(result) == result.text
    assert result.summary().startswith("pi: stop · 3 new entries")
    assert result._repr_mimebundle_() == {"text/plain": result.summary()}
    assert result.text in capsys.readouterr().out  # widget off: the answer is printed
    stored = Session.open(result.session.path, readonly=True)
    assert [m.role for m in stored.context().messages] == ["system", "user", "assistant"]


def test_options_change_model_thinking_and_tools(ip):
    result = ip.run_cell_magic("pi", "-m offline/typewriter -t low --tools ''", "use python\n```python\n1 + 1\n```")
    assert result.model == "offline/typewriter"
    agent = ip._pi_magics.state.agent_for()
    assert agent.model.ref == "offline/typewriter" and agent.thinking_level == "low"
    assert not any(m.role == "toolResult" for m in result.session.context().messages)  # no tools for this cell
    assert [t.name for t in agent.tools] == ["read", "ls", "grep", "find", "python", "notebook"]  # --tools was for one cell only


@pytest.mark.parametrize(
    ("line", "cell", "says"),
    [
        ("--nope", "hi", "%%pi: unknown option --nope"),
        ("", "   ", "the cell is empty"),
        ("", "What is {undefined_thing}?", "undefined_thing"),
        ("--model anthropic/claude-sonnet-4-5", "hi", "no API key for anthropic: set ANTHROPIC_API_KEY"),
        ("--model nosuch/thing", "hi", "no model 'nosuch/thing'"),
        ("--thinking weird", "hi", "unknown thinking level 'weird'"),
        ("--tools read,nosuchtool", "hi", "unknown tool 'nosuchtool'"),
        ("--session /nonexistent/dir/x.jsonl", "hi", "no folder /nonexistent/dir"),
        ("--session 'unclosed", "hi", "No closing quotation"),
    ],
)
def test_cell_errors_are_one_line(ip, line, cell, says):
    message = usage_error(ip, line, cell)
    assert says in message and "\n" not in message
    assert not os.path.exists("/nonexistent/dir")


def test_quoted_options_lose_their_quotes(ip, tmp_path):
    result = ip.run_cell_magic("pi", f"--session '{tmp_path / 'my study.jsonl'}' --tools \"read, ls\"", "hi")
    assert result.session.path == str(tmp_path / "my study.jsonl")


def test_a_failed_cell_does_not_change_the_sessions_model(ip):
    ip.run_cell_magic("pi", "", "first")
    usage_error(ip, "--model anthropic/claude-sonnet-4-5", "hi")
    assert ip._pi_magics.state.agent_for().model.ref == "offline/echo"


def test_help_shows_the_cell_magic_usage_and_the_commands(ip, capsys):
    cell_doc = ip.find_cell_magic("pi").__doc__
    assert cell_doc.lstrip(": \n").startswith("%%pi [--session SESSION]")
    assert "{{" in cell_doc and "--background" in cell_doc
    line_doc = ip.find_line_magic("pi").__doc__
    assert "\nCommands:\n  model [PROVIDER/MODEL]" in line_doc
    ip.run_line_magic("pi", "help")
    assert "compare A B" in capsys.readouterr().out


# ------------------------------------------------------------------ %pi


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("bogus", "unknown command 'bogus'"),
        ("checkout deadbeef", "%pi checkout: entry 'deadbeef' not found"),
        ("open /nonexistent/x.jsonl", "%pi open: no session file at /nonexistent/x.jsonl"),
        ("model anthropic/claude-sonnet-4-5", "%pi model: no API key for anthropic"),
        ("model nosuch/thing", "%pi model: no model 'nosuch/thing'"),
        ("label", "%pi label: give an entry id"),
        ("compare onlyone", "%pi compare: give two or more branches"),
        ("log x", "%pi log: N must be a number"),
        ('label "unclosed', "%pi: No closing quotation"),
    ],
)
def test_line_errors_are_one_line(ip, line, says):
    ip.run_cell_magic("pi", "", "hello")
    message = usage_error(ip, line)
    assert says in message and "\n" not in message


def test_line_commands_act_on_the_current_session(ip, capsys):
    first = ip.run_cell_magic("pi", "", "first question")
    answer = first.entry_ids[-1]
    ip.run_line_magic("pi", f"label {answer} baseline")
    ip.run_line_magic("pi", "name my study")
    ip.run_line_magic("pi", "checkout baseline")
    session = Session.open(first.session.path, readonly=True)
    assert session.name == "my study" and session.labels[answer] == "baseline"
    assert session.leaf_id == answer
    ip.run_line_magic("pi", "log 3")
    out = capsys.readouterr().out
    assert out.count("\n") >= 3 and '"type": "agent_end"' in out
    forked = ip.run_line_magic("pi", "fork baseline")
    assert forked.path != first.session.path and forked.header.parent_session == first.session.path
    assert ip._pi_magics.state.agent_for().session is forked


def test_forget_and_edit_change_what_the_model_sees_not_the_file(ip, capsys):
    first = ip.run_cell_magic("pi", "", "my token is sk-notebook-123")
    system_id, user_id, answer_id = first.entry_ids  # the first cell records the system prompt first
    ip.run_line_magic("pi", f"forget {user_id}")
    ip.run_line_magic("pi", f"edit {answer_id} I saw a token.")
    out = capsys.readouterr().out
    assert f"forgot {user_id}" in out and f"edited {answer_id}" in out
    second = ip.run_cell_magic("pi", "", "what did I say?")
    sent = str([m.to_dict() for m in second.session.context().llm()])
    assert "sk-notebook-123" not in sent and "I saw a token." in sent
    assert "sk-notebook-123" in open(second.session.path).read()  # the file keeps the original
    says = usage_error(ip, "forget root-of-nothing")
    assert says.startswith("%pi forget:") and "\n" not in says
    label = ip.run_line_magic("pi", f"label {user_id} first")
    assert label is None
    ip.run_line_magic("pi", "checkout root")
    assert "is not on the active branch" in usage_error(ip, f"forget {answer_id}")


# ------------------------------------------------------------------ settings files


def test_pyproject_and_user_config_set_defaults_with_precedence(tmp_path, monkeypatch):
    user = tmp_path / "user.toml"
    user.write_text('model = "offline/typewriter"\nthinking = "low"\n')
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.pi-jupyter]\nthinking = "high"\ntools = ["read"]\n')
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(user))
    settings, files = file_settings(str(project / "sub"))
    assert settings == {"model": "offline/typewriter", "thinking": "high", "tools": ["read"]}
    assert files == [str(user), str(project / "pyproject.toml")]


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("[tool.pi-jupyter]\nbogus = 1\n", "unknown pi-jupyter setting 'bogus'"),
        ("[tool.pi-jupyter]\nconfirm = 'sometimes'\n", "bad value for 'confirm'"),
        ("[tool.pi-jupyter\n", "cannot read pi-jupyter settings"),
    ],
)
def test_a_bad_settings_file_is_named_when_the_extension_loads(tmp_path, monkeypatch, toml, says):
    (tmp_path / "pyproject.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "none.toml"))
    shell = shell_instance()
    with pytest.raises(UsageError) as info:
        from pi_jupyter.notebook import load_ipython_extension

        load_ipython_extension(shell)
    assert says in str(info.value) and str(tmp_path / "pyproject.toml") in str(info.value)


def test_pyproject_settings_reach_the_magics_and_config_overrides_them(tmp_path, monkeypatch):
    from traitlets.config import Config

    from pi_jupyter.notebook.magics import PiMagics

    (tmp_path / "pyproject.toml").write_text('[tool.pi-jupyter]\nmodel = "offline/typewriter"\nconfirm = "mutating"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "none.toml"))
    shell = shell_instance()
    monkeypatch.setattr(shell, "config", Config())
    magics = PiMagics(shell)
    assert magics.model == "offline/typewriter" and magics.confirm == "mutating"
    assert magics.tools == ["read", "ls", "grep", "find", "python", "notebook"]  # untouched defaults stay
    ipython_config = Config()
    ipython_config.PiMagics.model = "offline/echo"  # c.PiMagics.model in ipython_config.py
    monkeypatch.setattr(shell, "config", ipython_config)
    magics = PiMagics(shell)
    assert magics.model == "offline/echo" and magics.confirm == "mutating"


def test_ext_load_says_when_an_extensions_setup_failed(ip, tmp_path, monkeypatch, capsys):
    (tmp_path / "brokenext.py").write_text(
        "def setup(ctx):\n    raise RuntimeError('no database here')\n\ndef on_event(event, ctx):\n    pass\n"
    )
    (tmp_path / "goodext.py").write_text("def on_event(event, ctx):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ip.run_line_magic("pi", "ext load brokenext")
    captured = capsys.readouterr()
    assert "loaded extension brokenext, but its setup: RuntimeError: no database here" in captured.err
    ip.run_line_magic("pi", "ext load goodext")
    assert capsys.readouterr().out.strip() == "loaded extension goodext"
    assert "cannot import 'nosuchext'" in usage_error(ip, "ext load nosuchext")


# ------------------------------------------------------------------ settings between cells


def test_settings_changed_after_a_cell_apply_to_the_next_cell(ip, capsys):
    ip.run_cell_magic("pi", "", "hello")
    ip.run_line_magic("config", "PiMagics.tools = ['read', 'bash']")
    ip.run_line_magic("config", "PiMagics.model = 'offline/typewriter'")
    ip.run_line_magic("config", "PiMagics.thinking = 'low'")
    ip.run_line_magic("config", "PiMagics.tool_timeout = 0")
    capsys.readouterr()
    ip.run_line_magic("pi", "status")
    status = capsys.readouterr().out
    assert "tools    read, bash\n" in status and "model    offline/typewriter" in status
    agent = ip._pi_magics.state.agent_for()
    assert agent.policy.confirm == "none"
    ip.run_line_magic("config", "PiMagics.confirm = 'mutating'")
    ip.run_line_magic("config", "PiMagics.tools = ['python']")
    agent = ip._pi_magics.state.agent_for()
    assert agent.policy.confirm == "mutating" and [t.name for t in agent.tools] == ["python"]
    assert agent.tools[0].timeout is None  # 0: no limit
    # a model chosen for the session stays until the setting itself changes again
    ip.run_line_magic("pi", "model offline/echo")
    ip.run_cell_magic("pi", "", "again")
    assert ip._pi_magics.state.agent_for().model.ref == "offline/echo"


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('tools = "read,python"', "not one string"),
        ("tool_timeout = -5", "tool_timeout must be a number of seconds"),
        ("stream_rate = 0", "stream_rate must be"),
    ],
)
def test_bad_setting_values_in_a_file_are_named(tmp_path, monkeypatch, toml, says):
    monkeypatch.setenv("PI_JUPYTER_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "pyproject.toml").write_text(f"[tool.pi-jupyter]\n{toml}\n")
    with pytest.raises(ValueError) as info:
        file_settings(str(tmp_path))
    assert says in str(info.value) and str(tmp_path / "pyproject.toml") in str(info.value)


def test_a_key_pasted_into_a_prompt_is_redacted_before_sending_and_the_user_is_told(ip, capsys, monkeypatch, tmp_path):
    key = "QZ7XW9FG3HJ5LM8PU2WQZ"
    monkeypatch.setenv("PASTED_API_KEY", key)
    result = ip.run_cell_magic("pi", "", f"Use my key {key} to call the API.")
    err = capsys.readouterr().err
    assert "the prompt contains a secret (PASTED_API_KEY)" in err and key not in err
    assert "still in this cell's text" in err and "os.environ['PASTED_API_KEY']" in err
    assert key not in result.text and "[REDACTED:PASTED_API_KEY]" in result.text  # what the model got
    for path in (tmp_path / "sessions").glob("*.jsonl"):
        assert key not in path.read_text()
    # filled in from {expr}: the cell's text is clean, so it does not say so
    ip.user_ns["k"] = key
    ip.run_cell_magic("pi", "", "And {k} again.")
    err = capsys.readouterr().err
    assert "(PASTED_API_KEY)" in err and "still in this cell" not in err
    ip.run_cell_magic("pi", "", "No secret here.")
    assert "secret" not in capsys.readouterr().err


def test_cell_magic_without_a_shell_says_how_to_load_it():
    # PiMagics built by hand (not by %load_ext) has no shell, so no namespace to fill the prompt from
    from pi_jupyter.notebook.magics import PiMagics

    with pytest.raises(UsageError) as info:
        PiMagics(shell=None).pi("", "hello {x}")
    assert "no IPython shell" in str(info.value) and "%load_ext pi_jupyter" in str(info.value)
