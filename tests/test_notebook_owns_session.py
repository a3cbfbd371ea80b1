"""A notebook owns its conversation (DESIGN decision 14), checked on what the model is sent.

Each test writes notebooks into a folder, runs them in real kernels the ways users do
(:mod:`notebook_runs`: as Jupyter Server and JupyterLab run them, with the notebook's path and cell
ids, or as ``jupyter execute`` and papermill do, with neither), saves them, renames or copies
the files, and reads the request bodies a local OpenAI-compatible server received. Session files
go where a user's go by default (``pi-sessions`` beside the notebook).
"""

from __future__ import annotations

import json
import shutil
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
    return [Session.open(p, readonly=True) for p in sorted((folder / "pi-sessions").glob("*.jsonl"))]


def short(session: Session) -> str:
    return session.id.replace("-", "")[-8:]


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

    first, second = sorted(sessions(tmp_path), key=lambda s: s.header.timestamp)
    assert "ZEBRA-ALPHA-71" not in "".join(json.dumps(e) for e in second.raw_entries())
    header = output_text(nb, 1)
    assert f"Untitled · {short(second)}" in header, header  # the header names the session, told apart by its id
    assert short(first) not in header


def test_a_renamed_notebook_keeps_its_conversation_across_restarts(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    nb = run(nb_path, env=KEY)
    sent_since(answers)
    checkout_hint = output_text(nb, 1)

    moved = tmp_path / "analysis.ipynb"
    nb_path.rename(moved)
    index = add_cell(moved, "%%pi\nWhat is the code word?")
    nb = run(moved, [0, index], env=KEY)  # a fresh kernel, as after a server restart
    assert "ZEBRA-ALPHA-71" in sent_since(answers)  # the conversation went on
    (only,) = sessions(tmp_path)  # the same session, not a new one
    assert f"analysis · {short(only)}" in output_text(nb, index)  # the name it took from the notebook followed it
    assert "·" in checkout_hint and short(only) in checkout_hint
    # the entry the first output offers to check out is in the session the notebook continues
    first_answer = next(e["id"] for e in only.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "assistant")
    assert first_answer in checkout_hint


def test_a_duplicated_notebook_forks_the_conversation_once(answers, tmp_path):
    original = new_notebook(tmp_path / "study.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(original, env=KEY)
    sent_since(answers)
    copy = tmp_path / "study-Copy1.ipynb"
    shutil.copy(original, copy)  # what JupyterLab's Duplicate does (the server copies the file)

    index = add_cell(copy, "%%pi\nIn the copy: the fruit is MANGO-42.")
    nb = run(copy, [0, index], env=KEY)
    assert "ZEBRA-ALPHA-71" in sent_since(answers)  # the copy carries the conversation on...
    said = output_text(nb, index)
    assert said.count("copy of study.ipynb") == 1, said  # ...in a fork, and says so once
    parent, fork = sorted(sessions(tmp_path), key=lambda s: s.header.timestamp)
    assert f"forked from study · {short(parent)}" in said
    assert f"· {short(fork)}" in said

    index = add_cell(original, "%%pi\nWhat is the fruit?")
    nb = run(original, [0, index], env=KEY)
    body = sent_since(answers)
    assert "ZEBRA-ALPHA-71" in body and "MANGO" not in body  # the original never sees the copy's turns
    assert "copy of" not in output_text(nb, index) and short(fork) not in output_text(nb, index)

    # the copy restarted before it was saved again: the same fork, not a second one
    index = add_cell(copy, "%%pi\nWhat is the fruit?")
    nb = run(copy, [0, index], env=KEY)
    assert "MANGO-42" in sent_since(answers)
    assert len(sessions(tmp_path)) == 2
    assert "copy of" not in output_text(nb, index)  # said once


def test_a_restarted_kernel_continues_before_the_notebook_was_saved(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71.", "%%pi\nAnd?"])
    run(nb_path, [0, 1], env=KEY, save=False)  # "Restart Kernel and Run All" before any save
    sent_since(answers)
    run(nb_path, [0, 2], env=KEY, save=False)
    assert "ZEBRA-ALPHA-71" in sent_since(answers)
    assert len(sessions(tmp_path)) == 1


def test_headless_runs_without_a_notebook_path_start_their_own_conversation(answers, tmp_path):
    # an old session named "notebook", as every headless run used to continue
    old = Session.create(tmp_path / "pi-sessions")
    old.set_name("notebook")
    old.append_message({"role": "user", "content": "The code word is ZEBRA-ALPHA-71.", "timestamp": 1})
    nb_path = new_notebook(tmp_path / "report.ipynb", [setup_cell(answers), "%%pi\nWhat is the code word?"])
    run(nb_path, frontend="nbclient", env=KEY)
    run(nb_path, frontend="nbclient", env=KEY)
    body = sent_since(answers)
    assert body.count("What is the code word?") == 2
    assert "ZEBRA" not in body
    assert len(sessions(tmp_path)) == 3  # the old one and one per run


def test_papermill_runs_a_bound_notebook_in_a_new_conversation(answers, tmp_path):
    papermill = pytest.importorskip("papermill")
    nb_path = new_notebook(tmp_path / "study.ipynb", [setup_cell(answers), "%%pi\nThe code word is ZEBRA-ALPHA-71."])
    run(nb_path, env=KEY)
    sent_since(answers)
    index = add_cell(nb_path, "%%pi\nWhat is the code word?")
    before_run = nb_path.read_bytes()
    out = tmp_path / "out" / "study-run.ipynb"
    out.parent.mkdir()
    import os

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
    first_request = answers.requests[0].body["messages"]
    body = sent_since(answers)
    assert "What is the code word?" in body
    # the run's first cell starts a conversation: no turn of the one the notebook was bound to
    assert [m["role"] for m in first_request if m["role"] != "system"] == ["user"], first_request
    import nbformat

    result = nbformat.read(out, as_version=4)
    assert "ZEBRA" not in json.dumps([c.get("outputs") for c in result.cells[index:]])
    assert nb_path.read_bytes() == before_run  # the input is only read
    assert len(sessions(tmp_path)) == 2


def test_sessions_with_one_name_are_told_apart(answers, tmp_path):
    nb_path = new_notebook(tmp_path / "Untitled.ipynb", [setup_cell(answers), "%pi new twin\n%pi new twin\n%pi sessions", "%pi open twin"])
    nb = run(nb_path, env=KEY, allow_errors=True)
    listing = output_text(nb, 1)
    twins = [s for s in sessions(tmp_path) if s.name == "twin"]
    assert len(twins) == 2
    for s in twins:
        assert f"twin · {short(s)}" in listing, listing
    error = output_text(nb, 2)
    assert "2 sessions are named 'twin'" in error and all(short(s) in error for s in twins), error
    assert "Traceback" not in error
