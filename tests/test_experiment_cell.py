"""``%%pi --vary`` in IPython's own shell: branches get the notebook's tools, model settings and --background."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from test_notebook_magics import ip  # noqa: F401 - the in-process shell fixture
from wire.server import openai_reply

from pi_jupyter import Session
from pi_jupyter.experiment import ExperimentResult, load_experiment
from pi_jupyter.notebook.runner import BackgroundRun


@pytest.fixture(autouse=True)
def forget_settings(ip):  # noqa: F811
    """IPython's test shell is one per process: the settings a test (here or in another module) makes
    must not reach the next test, so they are cleared before and after each one."""
    names = ("tools", "base_url", "confirm", "tool_timeout", "executor")
    for name in names:
        ip.config.PiMagics.pop(name, None)
    ip.run_line_magic("config", "PiMagics.confirm = 'none'")
    ip.run_line_magic("config", "PiMagics.executor = 'local'")
    yield
    for name in names:
        ip.config.PiMagics.pop(name, None)


# {n} is filled in the prose only (code is sent as written): the call's JSON carries it
PYTHON_GRID = "call python with {{\"code\": \"print('total', sales['amount'].sum() * {n})\"}}"


def session_of(tmp_path) -> Session:
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    return Session.open(files[0], readonly=True)


def tool_outputs(s: Session, result: ExperimentResult) -> list[str]:
    out = []
    for row in result.rows:
        texts = [
            "".join(c.get("text", "") for c in e["message"]["content"] if isinstance(c, dict))
            for e in s.raw_branch(row.leaf)
            if e.get("type") == "message" and e["message"]["role"] == "toolResult"
        ]
        out.append(" | ".join(texts))
    return out


def test_grid_branches_run_python_in_the_notebook_namespace(ip, tmp_path):  # noqa: F811
    import pandas as pd

    ip.user_ns["sales"] = pd.DataFrame({"amount": [1, 2, 3]})
    result = ip.run_cell_magic("pi", "--vary n=1,2", PYTHON_GRID)
    assert [r.state for r in result.rows] == ["done", "done"]
    outputs = tool_outputs(session_of(tmp_path), result)
    assert "total 6" in outputs[0] and "total 12" in outputs[1], outputs
    assert not any("NameError" in o for o in outputs)


def test_grid_branches_follow_the_confirm_policy(ip, tmp_path):  # noqa: F811
    ip.run_line_magic("config", "PiMagics.confirm = 'all'")
    ip.user_ns["sales"] = {"amount": _Summable()}
    result = ip.run_cell_magic("pi", "--vary n=1,2", PYTHON_GRID)
    outputs = tool_outputs(session_of(tmp_path), result)
    # nobody can answer the question here (no stdin), so the tool is refused in every branch, as in a plain cell
    assert all("total" not in o for o in outputs) and all(o for o in outputs), outputs
    assert _Summable.calls == 0


def test_grid_branches_follow_the_tool_timeout(ip, tmp_path):  # noqa: F811
    ip.run_line_magic("config", "PiMagics.tool_timeout = 1")
    code = 'call python with {{"code": "import time\\nfor _ in range(50): time.sleep(0.1)\\nprint(\'slept\', {n})"}}'
    result = ip.run_cell_magic("pi", "--vary n=1,2", code)
    outputs = tool_outputs(session_of(tmp_path), result)
    assert all("Timed out after 1 second" in o and "slept" not in o for o in outputs), outputs


def test_grid_branches_keep_the_notebook_agents_extensions(ip, tmp_path):  # noqa: F811
    from pi_jupyter.agent import ToolDecision

    class NoPython:
        def before_tool_call(self, call, ctx):
            return ToolDecision(block=True, reason="python is off limits here") if call.tool.name == "python" else None

    ip.run_cell_magic("pi", "", "Hello.")
    ip._pi_magics.state.agent_for().extensions.add(NoPython())
    ip.user_ns["sales"] = {"amount": _Summable()}
    result = ip.run_cell_magic("pi", "--vary n=1,2", PYTHON_GRID)
    outputs = tool_outputs(session_of(tmp_path), result)
    assert all("python is off limits here" in o for o in outputs), outputs
    assert _Summable.calls == 0


class _Summable:
    calls = 0

    def sum(self) -> int:
        _Summable.calls += 1
        return 1


def test_grid_branches_use_the_notebook_base_url(ip, tmp_path, wire):  # noqa: F811
    """``PiMagics.base_url`` and a model the server names: every branch talks to that server, as a plain cell does."""
    wire.respond_with("openai", lambda r: openai_reply(text=f"{r.body['model']} answers {str(r.body['messages'][-1]['content'])[:40]}"))
    ip.run_line_magic("config", f"PiMagics.base_url = {wire.openai_url!r}")
    ip.run_line_magic("config", "PiMagics.model = 'lab/qwen-7b'")
    ip.run_line_magic("config", "PiMagics.tools = []")
    plain = ip.run_cell_magic("pi", "", "Say hi.")
    assert "qwen-7b answers" in plain.text
    result = ip.run_cell_magic("pi", "--vary q=one,two", "Answer {q}.")
    assert [r.state for r in result.rows] == ["done", "done"], [r.error for r in result.rows]
    bodies = [r.body for r in wire.requests_to("openai")]
    assert len(bodies) == 3 and {b["model"] for b in bodies} == {"qwen-7b"}
    answers = [r.answer for r in result.rows]
    assert answers[0].startswith("qwen-7b answers") and "Answer one." in answers[0] and "Answer two." in answers[1], answers
    # a varied model list names models of that server too
    varied = ip.run_cell_magic("pi", "--vary model=lab/qwen-7b,lab/llama-3", "Hello.")
    assert {b["model"] for b in [r.body for r in wire.requests_to("openai")][3:]} == {"qwen-7b", "llama-3"}
    assert [r.state for r in varied.rows] == ["done", "done"]


def test_background_grid_returns_a_handle(ip, tmp_path):  # noqa: F811
    handle = ip.run_cell_magic("pi", "--background --name g --vary tone=terse,warm --model offline/typewriter", "Say it in a {tone} way.")
    assert isinstance(handle, BackgroundRun) and ip.user_ns["g"] is handle
    assert "(running)" in repr(handle)  # showing the handle does not wait for the grid
    with pytest.raises(UsageError, match="busy with a background run"):
        ip.run_cell_magic("pi", "", "Meanwhile?")
    result = handle.result(timeout=120)
    assert isinstance(result, ExperimentResult)
    assert [r.state for r in load_experiment(session_of(tmp_path)).rows] == ["done", "done"]
    assert "(done)" in repr(handle)
    after = ip.run_cell_magic("pi", "", "And now?")  # the session is free again
    assert after.text


def test_continue_is_refused_for_a_grid(ip):  # noqa: F811
    with pytest.raises(UsageError, match="--continue does not apply to a grid"):
        ip.run_cell_magic("pi", "--continue --vary n=1,2", "Say {n}.")


def test_pi_abort_stops_a_background_grid(ip, tmp_path):  # noqa: F811
    values = ",".join(str(i) for i in range(6))
    handle = ip.run_cell_magic(
        "pi", f"--background --vary n={values} --concurrency 1 --model offline/typewriter", "Count slowly to {n} hundred."
    )
    ip.run_line_magic("pi", "abort")
    handle.result(timeout=120)
    assert "(stopped)" in repr(handle)
    rows = load_experiment(session_of(tmp_path)).rows
    assert "skipped" in {r.state for r in rows} and all(r.error == "stopped" for r in rows if r.state == "skipped")


def test_the_executor_setting_is_checked_and_used(ip, tmp_path):  # noqa: F811
    from traitlets import TraitError

    from pi_jupyter.notebook.config import PiConfig

    with pytest.raises(TraitError, match=r"executor must be local, dask or a scheduler address like tcp://host:8786, not 'nowhere'"):
        PiConfig().executor = "nowhere"
    ip.run_line_magic("config", "PiMagics.executor = 'tcp://127.0.0.1:1'")
    ip.run_cell_magic("pi", "", "Hello.")  # a plain cell is not a grid: it runs here
    s = session_of(tmp_path)
    before = open(s.path, "rb").read()
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("pi", "--vary style=a,b", "Say {style}.")
    assert str(info.value) == "%%pi: --executor tcp://127.0.0.1:1: no Dask scheduler answered there within 10 s"
    assert open(s.path, "rb").read() == before
