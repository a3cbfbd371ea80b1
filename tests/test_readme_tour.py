"""The README's tour is what a user sees: its cells, run in a real kernel as JupyterLab runs them, print its output.

The tour (README, "A tour") alternates cells (fenced with four backticks) and what they show
(fenced ```text); an output right after another output is the cell before, edited as the prose
between them says and run again (the same cell id: Shift+Enter in JupyterLab). Every line the
README shows must be a line of the kernel's output, up to what changes from run to run (entry
and experiment ids, seconds, token counts, which depend on the folder's name in the system
prompt).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kernel_client import Kernel

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[1]
EDIT = {"--name a": "--name b", 'plan = "A"': 'plan = "B"'}
"""The edit the tour's prose asks for before the re-run."""


def tour() -> tuple[str, list[tuple[str, str]]]:
    """The tour's prose and its blocks, in order: ("cell", source) or ("output", text)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## A tour\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    blocks = [
        ("cell" if len(fence) == 4 else "output", body)
        for fence, body in re.findall(r"^(`{3,4})text\n(.*?)^\1$", section, flags=re.M | re.S)
    ]
    return section, blocks


def normalise(text: str) -> list[str]:
    text = re.sub(r"\b[0-9a-f]{8,12}\b", "ID", text)
    text = re.sub(r"\b\d+\.\ds\b", "Ns", text)
    text = re.sub(r"[\d,]+ tokens", "N tokens", text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def test_the_readme_tour_shows_what_the_kernel_prints(tmp_path):
    prose, blocks = tour()
    assert [kind for kind, _ in blocks].count("cell") >= 5 and "output" in [kind for kind, _ in blocks]
    for new in EDIT.values():
        assert f"`{new}`" in prose, new  # the prose asks for the edit the test makes
    kernel = Kernel(str(tmp_path))
    try:
        last: tuple[str, str] | None = None  # (source, cell id) of the cell run last
        shown: list[str] = []
        previous = "cell"
        for index, (kind, body) in enumerate(blocks):
            if kind == "output" and previous == "output":  # the cell before, edited and run again
                assert last is not None
                source = last[0]
                for old, new in EDIT.items():
                    assert old in source, old
                    source = source.replace(old, new)
                last = (source, last[1])
                shown = _run(kernel, *last)
            if kind == "cell":
                last = (body, f"tour-{index}")
                shown = _run(kernel, *last)
            else:
                missing = [line for line in normalise(body) if line not in shown]
                assert not missing, f"the README shows lines the kernel did not print: {missing}\nkernel:\n" + "\n".join(shown)
            previous = kind
    finally:
        kernel.close()


def _run(kernel: Kernel, source: str, cell_id: str) -> list[str]:
    done = kernel.run(source, cell_id=cell_id)
    assert done.status == "ok", (source, done.error)
    texts = [done.stdout, *[str(value) for value in done.data("text/plain")]]
    if "plan = " in source:  # the prose says the tool card ends with what the call changed
        assert any("changed: set plan" in text for text in texts), texts
    return normalise("\n".join(texts))
