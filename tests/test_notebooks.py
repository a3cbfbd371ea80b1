"""Every shipped notebook runs fresh, top to bottom, with no key, and shows no error.

The notebooks are run the way ``tools/run_notebooks.py`` regenerates them (nbclient, a fresh
kernel, no ``*_API_KEY`` in its environment, widget state not saved as in JupyterLab's
defaults), in a scratch copy of the repository's layout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import nbformat
import pytest

from pi_jupyter import Session

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(_spec)
sys.modules["run_notebooks"] = run_notebooks
_spec.loader.exec_module(run_notebooks)

NOTEBOOKS = run_notebooks.notebook_paths()
FAKE_KEY = "sk-proj-NOTEBOOKSECRET0123456789abcdef"

pytestmark = pytest.mark.kernel


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def test_the_notebooks_are_shipped():
    names = {p.stem for p in NOTEBOOKS}
    assert {"quickstart", "teaching-agent-memory", "exploring-a-session-tree", "bring-your-own-model", "experiment"} <= names, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs_fresh_without_a_key_and_shows_no_error(path, tmp_path):
    # a key in the environment must not reach the notebook: the runner removes it
    nb = run_notebooks.execute(path, workdir=tmp_path, env={**run_notebooks.keyless_env(), "OPENAI_API_KEY": FAKE_KEY})
    assert run_notebooks.problems(nb) == []
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "a cell did not run"
    assert FAKE_KEY not in json.dumps(nb)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_committed_notebook_has_its_outputs_and_says_what_it_shows(path):
    """GitHub and nbviewer show the saved outputs: every code cell was run when it was saved."""
    nb = nbformat.read(path, as_version=4)
    head = nb.cells[0]
    assert head.cell_type == "markdown" and head.source.startswith("# ")
    text = head.source.lower()
    assert "takes about" in text, "the first cell says how long the notebook takes"
    assert "real model" in text or "real one" in text, "the first cell says what changes with a real model"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{path.name} was saved without running every cell"
    assert "widgets" not in nb.metadata, "widget state is not saved (JupyterLab's default)"
    assert run_notebooks.problems(nb) == []
    assert FAKE_KEY not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_committed_notebook_opens_unmodified(path):
    """JupyterLab rewrites a kernelspec that is not the running kernel's, which marks a notebook modified on open."""
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec") == run_notebooks.kernelspec("python3")
    assert nb.metadata.get("language_info", {}).get("name") == "python"


def test_problems_finds_an_error_output_and_a_printed_traceback():
    nb = nbformat.v4.new_notebook()
    ok = nbformat.v4.new_code_cell("print(1)")
    ok.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    raised = nbformat.v4.new_code_cell("1/0")
    raised.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]
    printed = nbformat.v4.new_code_cell("%pi compare a b")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="UsageError: %pi compare: entry 'a' not found\n")]
    shown = nbformat.v4.new_code_cell("x")
    shown.outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": "Traceback (most recent call last):\n  File ..."}),
    ]
    warned = nbformat.v4.new_code_cell("run_students()")
    warned.outputs = [nbformat.v4.new_output("stream", name="stderr", text="[IPKernelApp] WARNING | Kernel is running over TCP\n")]
    nb.cells = [ok, raised, printed, shown, warned]
    found = run_notebooks.problems(nb)
    assert [line.split(":")[0] for line in found] == [f"cell {i} ({c.id})" for i, c in ((1, raised), (2, printed), (3, shown), (4, warned))]
    assert found[-1].endswith("on stderr: [IPKernelApp] WARNING | Kernel is running over TCP")


def test_quickstart_rerun_forks_into_two_sibling_answers(tmp_path):
    """The quickstart re-runs a cell (as nbclient and papermill do: no cell ids) and compares the two answers."""
    nb = run_notebooks.execute(ROOT / "notebooks" / "quickstart.ipynb", workdir=tmp_path)
    assert run_notebooks.problems(nb) == []
    files = list((tmp_path / "notebooks" / "pi-sessions").glob("*.jsonl"))
    assert len(files) == 1
    s = Session.open(files[0], readonly=True)
    assert s.name == "quickstart"
    labels = {label: entry_id for entry_id, label in s.labels.items()}
    north, east = s.entry(labels["north"]), s.entry(labels["east"])
    # the two answers start from the same node and neither overwrote the other
    north_path, east_path = s.branch_ids(north.id), s.branch_ids(east.id)
    assert north.id not in east_path and east.id not in north_path
    common = [a for a, b in zip(north_path, east_path, strict=False) if a == b]
    assert north_path[len(common)] != east_path[len(common)]  # two children of one node
    assert "120.5" in north.message.text and "143.2" in east.message.text
    by_id = {c.id: c for c in nb.cells}
    assert "forked" in json.dumps(by_id["rerun"].outputs)
    compared = json.dumps(by_id["cmp"].outputs)
    assert "north" in compared and "east" in compared
    # the context shown at the end is the current branch only: east, not north
    context = json.dumps(by_id["ctx"].outputs)
    assert "'east'" in context and "'north'" not in context


def test_teaching_notebook_leaves_every_entry_type_and_keeps_compacted_originals(tmp_path):
    nb = run_notebooks.execute(ROOT / "notebooks" / "teaching-agent-memory.ipynb", workdir=tmp_path)
    assert run_notebooks.problems(nb) == []
    files = list((tmp_path / "notebooks" / "memory-demo" / "sessions").glob("*.jsonl"))
    assert len(files) == 1
    s = Session.open(files[0], readonly=True)
    raw = s.raw_entries()
    types = {e["type"] for e in raw}
    pi_types = {"message", "model_change", "thinking_level_change", "compaction", "branch_summary", "custom", "custom_message", "label"}
    assert pi_types | {"session_info"} <= types
    # compaction replaced the first turn in the context, and the file still holds it
    first_user = next(e for e in raw if e["type"] == "message" and e["message"]["role"] == "user")
    assert "PINEAPPLE-42" in json.dumps(first_user)
    # the extension's private state never reaches the model; its custom_message does
    context = json.dumps(s.context().raw_messages)
    assert "tally.state" not in context
    by_id = {c.id: c for c in nb.cells}
    shown = json.dumps(by_id["extension"].outputs)
    assert "custom_message in the context: True" in shown and "tally.state in the context:    False" in shown
    resources = json.dumps(by_id["resources"].outputs)
    assert resources.count("True") == 2 and "skill body in the system prompt:      False" in resources
    assert "skill body in the context after /skill: True" in json.dumps(by_id["skill-check"].outputs)
    # the class sees the product: %%pi cells with their widget's transcript, and the tree
    magic = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%pi")]
    assert len(magic) >= 3 and all("text/html" in o.get("data", {}) for c in magic for o in c.outputs if o.output_type == "display_data")
    assert "image/png" in json.dumps(by_id["tree"].outputs) and "Drawn at " in json.dumps(by_id["tree"].outputs)
    assert "sent to the model as itself: False" in json.dumps(by_id["still-there"].outputs)


def test_tree_notebook_runs_from_its_folder_alone_and_forks_a_copy_of_the_recorded_session(tmp_path):
    data = ROOT / "notebooks" / "data"
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    nb = run_notebooks.execute(ROOT / "notebooks" / "exploring-a-session-tree.ipynb", workdir=tmp_path)
    assert not (tmp_path / "tests").exists(), "the scratch copy is the notebooks folder alone"
    assert run_notebooks.problems(nb) == []
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before  # the shipped data is left alone
    assert "../" not in "".join(c.source for c in nb.cells if c.cell_type == "code")  # nothing read from outside the folder
    s = Session.open(tmp_path / "notebooks" / "explore-demo" / "large-session.jsonl", readonly=True)
    new_leaf = s.resolve("new branch")
    new_path = s.branch_ids(new_leaf)
    recorded_prompt = next(e for e in s.raw_entries() if e["type"] == "message" and "does it capture the theme" in json.dumps(e))
    # the new answer hangs from the node before the recorded prompt: a sibling, nothing overwritten
    assert recorded_prompt["id"] not in new_path and recorded_prompt["parentId"] in new_path
    assert len(s.raw_entries()) > 1018
    by_id = {c.id: c for c in nb.cells}
    assert "[offline model]" in json.dumps(by_id["continue"].outputs)
    assert "compactionSummary" in json.dumps(by_id["ctx-now"].outputs)
    # the interactive tree is in the notebook itself: the TreeView, with its picture for readers
    tree = by_id["treeview"]
    assert tree.source.rstrip().endswith("%pi tree --max-nodes 40")
    kinds = {k for o in tree.outputs for k in o.get("data", {})}
    assert {"application/vnd.jupyter.widget-view+json", "image/png"} <= kinds, kinds


def _local_server_answers() -> bool:
    import urllib.request

    for port in (8080, 11434, 8000, 1234):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=0.5):
                return True
        except (OSError, ValueError):
            continue
    return False


def test_bring_your_own_model_says_in_one_line_that_nothing_is_reachable_and_skips(tmp_path):
    nb = run_notebooks.execute(ROOT / "notebooks" / "bring-your-own-model.ipynb", workdir=tmp_path)
    assert run_notebooks.problems(nb) == []
    by_id = {c.id: c for c in nb.cells}
    found = "".join(o.get("text", "") for o in by_id["find"].outputs)
    live = "".join(o.get("text", "") for o in by_id["live"].outputs)
    if _local_server_answers():
        assert found.startswith("using ")
        return
    assert found.startswith("No model reachable") and found.count("\n") == 1
    assert live.strip() == "skipped: no model reachable"
    # what would be sent is still shown: the request body for an OpenAI-compatible server
    sent = "".join(o.get("text", "") for o in by_id["sent"].outputs)
    assert '"role": "system"' in sent and '"stream": true' in sent and "read: path" in sent


def test_bring_your_own_model_finds_a_local_server_and_its_pi_cell_runs_on_it(wire, tmp_path, monkeypatch):
    """A local OpenAI-compatible server (the tests' wire server) found by the probe, used from Python and by ``%%pi --model``."""
    import papermill
    from wire.server import openai_reply

    for name in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    wire.models = ["wire-model"]
    wire.queue_default("openai", openai_reply("A session tree keeps every turn as a node, so nothing is ever overwritten."))
    copy = run_notebooks.scratch_copy(ROOT / "notebooks" / "bring-your-own-model.ipynb", tmp_path)
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(copy), str(out), parameters={"BASE_URL": wire.openai_url}, kernel_name="python3", cwd=str(copy.parent), progress_bar=False
    )
    nb = nbformat.read(out, as_version=4)
    assert run_notebooks.problems(nb) == []
    by_id = {c.get("id"): c for c in nb.cells}
    assert f"using yours at {wire.openai_url} -> wire-model" in json.dumps(by_id["find"].outputs)
    assert by_id["magic"].source.startswith("%%pi --model {CELL_MODEL}")
    shown = json.dumps(by_id["magic"].outputs)
    assert "nothing is ever overwritten" in shown and "[offline model]" not in shown
    asked = [r.body for r in wire.requests_to("openai")]
    assert len(asked) == 2 and all(b["model"] == "wire-model" for b in asked)  # the Python cell, then the %%pi cell
    assert "what is a session tree?" in json.dumps(asked[-1]["messages"])


def test_experiment_runs_under_papermill_with_a_parameter_and_replays_the_recorded_table(tmp_path, monkeypatch):
    import papermill

    for name in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    copy = run_notebooks.scratch_copy(ROOT / "notebooks" / "experiment.ipynb", tmp_path)
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(copy), str(out), parameters={"THINKING": "off", "REPEATS": 1}, kernel_name="python3", cwd=str(copy.parent), progress_bar=False
    )
    nb = nbformat.read(out, as_version=4)
    assert run_notebooks.problems(nb) == []
    by_id = {c.get("id"): c for c in nb.cells}
    assert "2 branches" in json.dumps(by_id["variants"].outputs)  # 1 thinking level x 2 prompts x 1 repeat
    check = json.dumps(by_id["check"].outputs)
    # each branch is served the answer recorded at its own thinking level: the tokens match too
    assert "2 of this run's 2 branches are in the recording; same scores: True; same tokens: True" in check
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stderr"]  # no replay fallback notice
    # the table came from the session file: its score entries hang on the answers they score
    files = list((copy.parent / "experiment-demo").glob("*.jsonl"))
    s = Session.open(files[0], readonly=True)
    scores = [e for e in s.raw_entries() if e.get("customType") == "experiment.score"]
    assert len(scores) == 2 and all(e["parentId"] == e["data"]["answerId"] for e in scores)
    assert {e["data"]["scores"]["correct"] for e in scores} == {0.0, 1.0}  # the python variant names only the right region
    # the same grid through %%pi --vary: 2 thinking levels x 2 variants x 2 repeats, scored by the registered scorer
    magic = json.dumps(by_id["magic-table"].outputs)
    assert "python" in magic and "words" in magic
    table = by_id["magic-table"].outputs[0]["data"]["text/plain"].splitlines()[2:]
    assert len(table) == 8 and all(row.split()[5] == ("1.0" if "python" in row else "0.0") for row in table)
