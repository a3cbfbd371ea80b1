"""A notebook owns its conversation (DESIGN decision 14), checked on what the model is sent.

Each test writes notebooks into a folder, runs them in real kernels the ways users do
(:mod:`notebook_runs`: as Jupyter Server and JupyterLab run them, with the notebook's path and cell
ids; as VS Code does, with its own cell URIs; or as ``jupyter execute``, nbclient and papermill do,
with neither), saves them, renames or copies the files, and reads the request bodies a local
OpenAI-compatible server received. After a restart the first cells run are **new** ones (typed at
the bottom, not in the saved file), as users go on. Session files go where a user's go by default
(``pi-sessions`` beside the notebook).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from notebook_runs import add_cell, new_notebook, output_text, run
from wire.helpers import sent_since

from pi_jupyter import Session

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

KEY = {"OPENAI_API_KEY": "sk-test-wire-0000000000000000000000"}


def setup_cell(wire) -> str:
    return (
        "%load_ext pi_jupyter\n"
        '%config PiMagics.model = "openai/gpt-test"\n'
        f"%config PiMagics.base_url = {wire.openai_url!r}\n"
        '%config PiMagics.thinking = "off"'
    )


@pytest.fixture
def answers(wire):
    from wire.server import openai_reply

    wire.queue_default("openai", openai_reply("noted"))
    return wire


def sessions(folder: Path) -> list[Session]:
    return sorted((Session.open(p, readonly=True) for p in (folder / "pi-sessions").glob("*.jsonl")), key=lambda s: s.header.timestamp)


def short(session: Session) -> str:
    return session.id.replace("-", "")[-8:]


def user_turns(request) -> list[str]:
    """The text of each user message a request sent."""
    out = []
    for m in request.body["messages"]:
        if m["role"] == "user":
            content = m["content"]
            out.append(content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if isinstance(b, dict)))
    return out


@pytest.mark.parametrize("old_one", ["renamed", "deleted"])
def test_a_new_notebook_named_like_an_old_one_never_sees_its_conversation(answers, tmp_path, old_one):
    old = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(old, env=KEY)
    assert "ZEBRA-ALPHA-71" in sent_since(answers)
    if old_one == "renamed":
        old.rename(tmp_path / "zebra.ipynb")
    else:
        old.unlink()

    new = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%%pi\nWhat is the code word?"])
    nb = run(new, env=KEY)
    body = sent_since(answers)
    assert "What is the code word?" in body
    assert "ZEBRA" not in body  # another notebook's conversation never reaches the model

    first, second = sessions(tmp_path)
    assert "ZEBRA-ALPHA-71" not in "".join(json.dumps(e) for e in second.raw_entries())
    out = output_text(nb, 1)
    assert f"Untitled · {short(second)}" in out, out  # the header names the session, told apart by its id
    assert short(first) not in out and "copy of" not in out and "not in" not in out  # nothing said about the other one


def test_after_a_restart_and_a_rename_the_first_new_cell_continues_the_conversation(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(nb_path, env=KEY)
    sent_since(answers)
    (only,) = sessions(tmp_path)
    answer = next(e["id"] for e in only.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "assistant")

    moved = tmp_path / "analysis.ipynb"
    nb_path.rename(moved)  # renamed, then a fresh kernel (a restart, a server restart): only new cells run
    nb = run(moved, [], env=KEY, new=[setup_cell(answers), "%pi status", f"%pi checkout {answer}", "%%pi\nWhat is the code word?"])
    status, checkout, asked = output_text(nb, 3), output_text(nb, 4), output_text(nb, 5)
    assert f"analysis · {short(only)}" in status, status  # %pi first: the same session, its name following the notebook
    assert status.count("this notebook was Untitled.ipynb") == 1, status  # said once, in the first cell that binds
    assert "was Untitled" not in asked and "Error" not in checkout and answer in checkout  # its own entries are there
    assert "ZEBRA-ALPHA-71" in sent_since(answers)  # the conversation went on
    assert [s.id for s in sessions(tmp_path)] == [only.id]  # no new session
    assert f"analysis · {short(only)}" in asked

    # its session file deleted: the first cell says so in one line and what it does instead
    Path(only.path).unlink()
    nb = run(moved, [], env=KEY, new=[setup_cell(answers), "%%pi\nWhat is the code word?"])
    said = [line for line in output_text(nb, len(nb.cells) - 1).splitlines() if short(only) in line]
    assert len(said) == 1 and said[0].startswith("pi: ") and "is not in" in said[0] and "a new one starts" in said[0], said
    assert "ZEBRA" not in sent_since(answers)


def test_a_duplicated_notebook_forks_the_conversation_once_whatever_cell_runs_first(answers, tmp_path):
    original = new_notebook(tmp_path / "study.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(original, env=KEY)
    sent_since(answers)
    copy = tmp_path / "study-Copy1.ipynb"
    shutil.copy(original, copy)  # what JupyterLab's Duplicate does (the server copies the file)

    nb = run(copy, [], env=KEY, new=[setup_cell(answers), "%pi status", "%%pi\nIn the copy: the fruit is MANGO-42."])
    status, asked = output_text(nb, 3), output_text(nb, 4)
    assert "ZEBRA-ALPHA-71" in sent_since(answers)  # the copy carries the conversation on...
    assert status.count("copy of study.ipynb") == 1 and "copy of" not in asked, (status, asked)  # ...in a fork, said once
    parent, fork = sessions(tmp_path)
    assert f"forked from study · {short(parent)}" in status and f"study-Copy1 · {short(fork)}" in status

    nb = run(original, [], env=KEY, new=[setup_cell(answers), "%%pi\nWhat is the fruit?"])
    body = sent_since(answers)
    assert "ZEBRA-ALPHA-71" in body and "MANGO" not in body  # the original never sees the copy's turns
    assert "copy of" not in output_text(nb, 3) and short(fork) not in output_text(nb, 3)

    # the copy restarted again: the same fork, not a second one, and nothing said
    nb = run(copy, [], env=KEY, new=[setup_cell(answers), "%%pi\nWhat is the fruit?"])
    assert "MANGO-42" in sent_since(answers)
    assert len(sessions(tmp_path)) == 2
    assert "copy of" not in output_text(nb, len(nb.cells) - 1)


def test_a_restarted_kernel_continues_before_the_notebook_was_saved(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(nb_path, env=KEY, save=False)  # run before any save of its outputs
    sent_since(answers)
    run(nb_path, [], env=KEY, save=False, new=[setup_cell(answers), "%%pi\nAnd?"])  # restarted: only new cells
    assert "ZEBRA-ALPHA-71" in sent_since(answers)
    assert len(sessions(tmp_path)) == 1


def test_vs_code_continues_by_its_path_and_a_re_run_cell_forks_where_it_started(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "study.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(nb_path, frontend="vscode", env=KEY)
    sent_since(answers)
    run(nb_path, [0, 1], frontend="vscode", env=KEY, new=["%%pi\nWhat is the code word?"])  # a restart: Run All, then a new cell
    rerun, asked = answers.requests[-2:]
    assert user_turns(rerun) == ["The code word is ZEBRA-ALPHA-71."]  # the re-run is a sibling, not a repeat
    assert "ZEBRA-ALPHA-71" in " ".join(user_turns(asked))
    assert len(sessions(tmp_path)) == 1


def test_headless_runs_continue_the_notebooks_conversation_in_a_fork(answers, tmp_path):
    # an old session named "report", as headless runs used to continue one by its name
    old = Session.create(tmp_path / "pi-sessions")
    old.set_name("report")
    old.append_message({"role": "user", "content": "The code word is ZEBRA-ALPHA-71.", "timestamp": 1})
    nb_path = new_notebook(tmp_path / "report.ipynb", [setup_cell(answers), "%%pi\nRemember MANGO-42.", "%%pi\nWhat was it?"])
    env = {**os.environ, **KEY, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    env.pop("JPY_SESSION_NAME", None)
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "execute", "--inplace", str(nb_path)], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    body = sent_since(answers)
    assert "MANGO-42" in body and "ZEBRA" not in body  # never an old session found by its name
    first = next(s for s in sessions(tmp_path) if s.id != old.id)
    assert first.name == "report"  # named after the notebook it found by its cells
    before = Path(first.path).read_bytes()

    nb = run(nb_path, frontend="nbclient", env=KEY)  # nbclient, papermill's engine: no path, no cell ids
    first_request, second_request = answers.requests[-2:]
    assert user_turns(first_request) == ["Remember MANGO-42."]  # a re-run cell forks where it started
    assert "MANGO-42" in " ".join(user_turns(second_request))  # and the next one continues the conversation
    said = output_text(nb, 1)
    assert said.count("continues its conversation in a fork") == 1 and "JPY_SESSION_NAME=report.ipynb" in said, said
    assert "in a fork" not in output_text(nb, 2)
    assert Path(first.path).read_bytes() == before  # the notebook's own conversation is left as it was
    assert len(sessions(tmp_path)) == 3


def test_papermill_continues_the_input_notebooks_conversation_in_a_fork(answers, tmp_path):
    papermill = pytest.importorskip("papermill")
    nb_path = new_notebook(tmp_path / "study.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(nb_path, env=KEY)
    sent_since(answers)
    (bound,) = sessions(tmp_path)
    before = Path(bound.path).read_bytes()
    index = add_cell(nb_path, "%%pi\nWhat is the code word?")
    before_run = nb_path.read_bytes()
    out = tmp_path / "out" / "study-run.ipynb"
    out.parent.mkdir()

    saved = {k: os.environ.get(k) for k in KEY}
    os.environ.update(KEY)
    try:
        papermill.execute_notebook(str(nb_path), str(out), cwd=str(tmp_path), kernel_name="python3", progress_bar=False)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    rerun, asked = answers.requests[-2:]
    assert user_turns(rerun) == ["The code word is ZEBRA-ALPHA-71."]  # the old cell, re-run as a sibling
    assert "ZEBRA-ALPHA-71" in " ".join(user_turns(asked))  # the new cell continues the conversation
    import nbformat

    result = nbformat.read(out, as_version=4)
    said = output_text(result, 1)
    assert said.count("continues its conversation in a fork") == 1, said
    assert nb_path.read_bytes() == before_run  # the input is only read
    assert Path(bound.path).read_bytes() == before  # and its conversation is left as it was
    assert len(sessions(tmp_path)) == 2
    assert "What is the code word?" in output_text(result, index) or index == len(result.cells) - 1


def test_sessions_with_one_name_are_told_apart(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%pi new twin\n%pi new twin\n%pi sessions", "%pi open twin"])
    nb = run(nb_path, env=KEY, allow_errors=True)
    listing = output_text(nb, 1)
    twins = [s for s in sessions(tmp_path) if s.name == "twin"]
    assert len(twins) == 2
    for s in twins:
        row = next(line for line in listing.splitlines() if f"twin · {short(s)}" in line)
        assert "Untitled.ipynb" in row and "msgs" in row, listing  # which notebook, how long, when
    error = output_text(nb, 2)
    assert "2 sessions are named 'twin', so none was picked" in error and all(short(s) in error for s in twins), error
    assert "Untitled.ipynb" in error and "Traceback" not in error
