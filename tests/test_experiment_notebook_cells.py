"""The cells NOTEBOOK_CELLS.md asks for in notebooks/experiment.ipynb, run in a real kernel as the notebook runs them:
a grid whose summary says which variant is better with an interval, a blind judging round, the same table on Dask,
and the same summary from the file alone."""

from __future__ import annotations

import pytest
from kernel_client import Kernel

pytestmark = pytest.mark.kernel

# what the notebook defines before these cells (abridged: the data, the question, the two ways of asking, the scorer)
BEFORE = """
import pandas as pd
months = pd.period_range("2026-01", periods=6, freq="M").astype(str)
regions = ["north", "south", "east", "west"]
sales = pd.DataFrame([{"month": m, "region": r, "revenue": 100 + 7 * i + 13 * j + (29 if r == "east" else 0)}
                      for i, m in enumerate(months) for j, r in enumerate(regions)])
truth = sales.groupby("region").revenue.sum().idxmax()
QUESTION = "Which region had the highest total revenue over the six months?"
SCORERS = {"correct": lambda answer: float(truth in answer and not any(r in answer for r in regions if r != truth))}
from pi_jupyter.experiment import register_scorer
register_scorer(lambda branch: SCORERS["correct"](branch.answer), "correct")
sales.to_csv("sales.csv", index=False)
INSTRUCTIONS = {
    "words": "\\n\\n" + sales.to_csv(index=False),
    "python": " use python:\\n```python\\nimport pandas as pd\\npd.read_csv('sales.csv').groupby('region').revenue.sum().idxmax()\\n```",
}
%load_ext pi_jupyter
%config PiMagics.session_dir = "sessions"
%pi new experiment-magic
"""

GRID = """%%pi --vary thinking=off,medium --vary how=words,python --repeat 2 --score correct --name grid
{QUESTION}{INSTRUCTIONS[how]}"""

DECIDED = (
    "%%pi --vary thinking=off,medium --vary how=words,python --repeat 10 --score correct --until-decided --compare how --name decided\n"
    "{QUESTION}{INSTRUCTIONS[how]}"
)

ON_DASK = """%%pi --vary thinking=off,medium --vary how=words,python --repeat 2 --score correct --executor dask --name on_dask
{QUESTION}{INSTRUCTIONS[how]}"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = Kernel(str(tmp_path_factory.mktemp("experiment-notebook")))
    try:
        for code in (BEFORE, GRID):
            run = k.run(code)
            assert run.status == "ok", run.error
        yield k
    finally:
        k.close()


def test_the_summary_says_which_variant_is_better_and_what_stopping_early_saved(kernel):
    run = kernel.run(DECIDED, cell_id="decided")
    assert run.status == "ok", run.error
    summary = kernel.run("print(decided.summary())")
    text = summary.stdout
    assert "how=python scores higher than how=words on correct: +1.00 [" in text, text
    assert "p = 0.008 (n = 8 pairs; decided at look 2 of 2)" in text, text
    assert "until decided: stopped after 4 of 10 repeats (2 looks); 24 of 40 branches not needed" in text, text
    # the durable output of the cell carries the summary with its interval
    value = run.outputs[-1]["content"]["data"]["text/html"]
    assert "how=python scores higher than how=words on correct" in value and "95% interval" in value


def test_a_blind_judging_round_and_a_model_judge(kernel):
    shown = kernel.run("%pi judge last --by how --as you")
    assert shown.status == "ok", shown.error
    assert shown.data("application/vnd.jupyter.widget-view+json")  # the widget
    static = shown.data("text/html")[0]
    assert "blind judging of how by you: 0 of 8 pairs judged" in static
    assert "how=python" not in static and "how=words" not in static  # nothing tells which variant gave which answer
    judged = kernel.run('%pi judge last --by how --model offline/echo --rubric "names the region with the highest revenue"')
    assert judged.status == "ok", judged.error
    text = kernel.run("print(decided.summary())").stdout
    assert "judged: 16 blind pairwise judgements by model offline/echo" in text, text
    assert "how=python won" in text and "position: model offline/echo picked the answer shown first in" in text


def test_the_same_table_on_a_dask_local_cluster_and_the_same_summary_from_the_file(kernel):
    pytest.importorskip("distributed", reason="the Dask executor is the optional 'dask' extra")
    run = kernel.run(ON_DASK, cell_id="on-dask")
    assert run.status == "ok", run.error
    same = kernel.run(
        'columns = ["thinking", "how", "repeat", "state", "correct"]\n'
        "print(on_dask.table()[columns].equals(grid.table()[columns]), on_dask.table()['correct'].tolist())"
    )
    assert same.stdout.split()[0] == "True", same.stdout + str(same.error)
    # the branches ran as tasks on the LocalCluster's worker processes, not in the kernel
    tasks = kernel.run(
        "from pi_jupyter.experiment.dask_executor import local_cluster\n"
        "client = local_cluster()\n"
        "print(len(client.scheduler_info()['workers']), "
        "client.run_on_scheduler(lambda dask_scheduler: sum(dask_scheduler.task_prefixes['run_on_worker'].state_counts.values())))"
    )
    workers, ran = map(int, tasks.stdout.split())
    assert workers >= 1 and ran >= 8, tasks.stdout + str(tasks.error)  # every task passed through several states
    again = kernel.run(
        "from pi_jupyter import Session\nfrom pi_jupyter.experiment import load_experiment\n"
        "again = load_experiment(Session.open(decided.session.path, readonly=True), decided.id)\n"
        "print('same summary:', str(again.summary()) == str(decided.summary()))"
    )
    assert again.stdout.strip() == "same summary: True", again.stdout + str(again.error)
