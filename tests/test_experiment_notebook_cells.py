"""The experiment notebook's statistics, judging, Dask and from-the-file sections, run in a real kernel as the notebook
runs them (the cells are read from ``notebooks/experiment.ipynb``): a grid whose summary says which variant is better
with an interval, a blind judging round, the same table on Dask, and the same summary from the file alone."""

from __future__ import annotations

import pytest
from kernel_client import Kernel
from shipped_notebooks import sources

pytestmark = pytest.mark.kernel

NOTEBOOK = "experiment"
# what the notebook defines before these sections: the data, the question, the two ways of asking, the scorer, the grid
BEFORE = ["params", "data", "variants", "magic-setup", "magic"]


@pytest.fixture(scope="module")
def cells() -> dict[str, str]:
    return {**sources(NOTEBOOK, "params", "variants"), **sources(NOTEBOOK, "magic-setup")}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, cells):
    k = Kernel(str(tmp_path_factory.mktemp("experiment-notebook")))
    try:
        for cell_id in BEFORE:
            run = k.run(cells[cell_id], cell_id)
            assert run.status == "ok", run.error
        yield k
    finally:
        k.close()


def test_the_sections_are_the_notebook_s(cells):
    assert list(cells)[len(BEFORE) - 2 :] == [
        "magic-setup", "magic", "magic-table", "decided", "judge", "judge-model", "judged-summary", "on-dask", "dask-table",
        "from-file",
    ]  # fmt: skip


def test_the_summary_says_which_variant_is_better_and_what_stopping_early_saved(kernel, cells):
    run = kernel.run(cells["decided"], cell_id="decided")
    assert run.status == "ok", run.error
    text = kernel.run("print(decided.summary())").stdout
    assert "how=python scores higher than how=words on correct: +1.00 [" in text, text
    assert "p = 0.008 (n = 8 pairs; decided at look 2 of 2)" in text, text
    assert "until decided: stopped after 4 of 10 repeats (2 looks); 24 of 40 branches not needed" in text, text
    # the output of the cell is the summary with its intervals and verdict, the table, and the figure of the intervals
    value = run.outputs[-1]["content"]["data"]["text/html"]
    assert "how=python scores higher than how=words on correct" in value and "95% interval" in value
    assert "until decided: stopped after 4 of 10 repeats" in value and "<svg" in value


def test_a_blind_judging_round_and_a_model_judge(kernel, cells):
    shown = kernel.run(cells["judge"])
    assert shown.status == "ok", shown.error
    assert shown.data("application/vnd.jupyter.widget-view+json")  # the widget
    static = shown.data("text/html")[0]
    assert "blind judging of how by you: 0 of 8 pairs judged" in static
    assert "how=python" not in static and "how=words" not in static  # nothing tells which variant gave which answer
    judged = kernel.run(cells["judge-model"])
    assert judged.status == "ok", judged.error
    assert kernel.run(cells["judged-summary"]).status == "ok"
    text = kernel.run("print(decided.summary())").stdout
    assert "judged: 16 blind pairwise judgements by model offline/echo" in text, text
    assert "how=python won" in text and "position: model offline/echo picked the answer shown first in" in text


def test_the_same_table_on_a_dask_local_cluster_and_the_same_summary_from_the_file(kernel, cells):
    pytest.importorskip("distributed", reason="the Dask executor is the optional 'dask' extra")
    run = kernel.run(cells["on-dask"], cell_id="on-dask")
    assert run.status == "ok", run.error
    same = kernel.run(cells["dask-table"])
    assert same.stdout.strip() == "the same table as in the kernel: True", same.stdout + str(same.error)
    # the branches ran as tasks on the LocalCluster's worker processes, not in the kernel
    tasks = kernel.run(
        "from pi_jupyter.experiment.dask_executor import local_cluster\n"
        "client = local_cluster()\n"
        "print(len(client.scheduler_info()['workers']), "
        "client.run_on_scheduler(lambda dask_scheduler: sum(dask_scheduler.task_prefixes['run_on_worker'].state_counts.values())))"
    )
    workers, ran = map(int, tasks.stdout.split())
    assert workers >= 1 and ran >= 8, tasks.stdout + str(tasks.error)  # every task passed through several states
    again = kernel.run(cells["from-file"])
    assert again.stdout.strip() == "same summary: True", again.stdout + str(again.error)
