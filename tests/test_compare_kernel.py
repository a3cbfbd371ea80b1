"""``%pi compare`` and the smaller commands, in a real kernel, as a user meets them.

A cell changes a frame the user made and writes a file; after a pause it is run again with other
tools, so its second run records a new system prompt. Then:

* the same turn takes the same time in the turn table and cell by cell (one definition: from the
  first message its run wrote to its last; the pause before a run is in neither);
* the world part describes the user's frame from the record, even where the value cannot be read,
  and counts "1 line";
* after a kernel restart a new cell runs as ``In [2]`` again: the earlier kernel's ``In [2]`` is
  labelled as such, and ``%pi checkout In[2]`` moves to this kernel's run;
* ``--repeat 0`` and ``--tool`` are refused in one line naming the option; ``%pi open`` shows the
  session as a line, not an object's repr; a grid without ``--vary`` names its branch by repeat; the tree starts
  at "Session start".
"""

from __future__ import annotations

import glob
import json
import re
import shutil
from pathlib import Path

import pytest
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.views.compare.world import compare_worlds

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
%config PiMagics.thinking = "off"
"""
FIRST = '%%pi\nuse python\n```python\ndf["b"] = df["a"] * 2\nopen("notes.txt", "w").write("one line\\n")\n```'
SECOND = '%%pi --tools python,read\nuse python\n```python\nopen("notes.txt", "w").write("two\\nlines\\n")\n```'


def _seconds(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"([\d.]+) s\b", text)]


def test_compare_restart_labels_and_the_smaller_commands(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    env = {"PI_JUPYTER_CONFIG": str(tmp_path / "none")}
    kernel = Kernel(str(tmp_path), env=env)
    try:
        assert kernel.run(SETUP.format(dir=str(sessions)) + "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})").status == "ok"
        assert kernel.run(FIRST, cell_id="x").status == "ok"  # In [2]
        assert kernel.run("import time\ntime.sleep(2)").status == "ok"  # the user reads, then runs it again
        again = kernel.run(SECOND, cell_id="x")
        assert again.status == "ok", again.error
        shown = kernel.run("%pi compare x@1 x@2")
        markdown = "\n".join(shown.data("text/markdown"))
        html = "".join(shown.data("text/html"))
        # the turn table and the cell-by-cell totals give each branch the same time, and none holds the pause
        table = re.search(r"\| duration \| (.*?) \|\n", markdown).group(1)
        totals = re.findall(r"\| x@\d \| 1 cell \| [\d,]+ \| \$0 \| ([\d.]+ s) \|", markdown)
        assert _seconds(table) == _seconds(" ".join(totals)), markdown
        assert all(t < 2 for t in _seconds(table)), table
        assert "1 line: one line" in markdown and "2 lines: two" in markdown and "1 lines" not in markdown + html
        assert all(o["content"]["metadata"].get("pi_jupyter") for o in shown.outputs if o["msg_type"] != "stream")

        refused = kernel.run("%%pi --repeat 0\nhello")
        assert "--repeat 0: give 1 or more" in refused.error["evalue"]
        typo = kernel.run("%%pi --tool read\nhello")
        assert "unknown option --tool (did you mean --tools?)" in typo.error["evalue"]
        grid = kernel.run("%%pi --repeat 2\nhello", cell_id="g")
        assert grid.status == "ok", grid.error
        final = "\n".join(grid.data("text/plain"))
        assert "continue from branch #0 (repeat 0)" in final and "()" not in final
        tree = kernel.run("%pi tree --text").data("text/plain")[-1]
        assert tree.splitlines()[1].startswith("* Session start") and "↻ continued (session named)" not in tree
    finally:
        kernel.close()

    (path,) = glob.glob(str(sessions / "*.jsonl"))
    # a reader without the values (a colleague's copy of the file alone) describes the user's frame from the record
    alone = tmp_path / "copy"
    alone.mkdir()
    shutil.copy(path, alone / "s.jsonl")
    copy = Session.open(alone / "s.jsonl", readonly=True)
    runs = [e["data"] for e in copy.raw_entries() if e.get("customType") == "pi_jupyter.cell" and e["data"]["cellId"] == "x"]
    world = compare_worlds(copy, [("x@1", runs[0]["end"]), ("x@2", runs[1]["end"])])
    df = next(r for r in world.rows if r.key == "df")
    assert df.cells == ["DataFrame 3×2", "DataFrame 3×1"], df.cells  # the second branch holds the frame the user made

    kernel = Kernel(str(tmp_path), env=env)  # a restart: execution counts begin at 1 again
    try:
        opened = kernel.run(SETUP.format(dir=str(sessions)) + f"%pi open {path}")  # In [1]
        assert opened.status == "ok", opened.error
        shown = opened.data("text/plain")[-1]  # the session, as a line a person reads (s = %pi open ... keeps it)
        assert "<Session" not in json.dumps(opened.outputs) and re.match(r"session · \w{8}: \d+ entries, leaf \w{8}", shown), shown
        new = kernel.run("%%pi\nA question in the new kernel.", cell_id="y")  # In [2] again
        assert new.status == "ok", new.error
        s = Session.open(path, readonly=True)
        old_leaf, new_leaf = runs[0]["end"], s.leaf_id
        labels = "\n".join(kernel.run(f"%pi compare {old_leaf} {new_leaf}").data("text/markdown"))
        assert f"In \\[2\\] (earlier kernel) {old_leaf}" in labels and f"| In \\[2\\] {new_leaf} |" in labels, labels
        moved = kernel.run("%pi checkout In[2]\n%pi status")
        assert moved.status == "ok", moved.error
        assert f"leaf is now {new_leaf}" in moved.stdout  # this kernel's In [2], as compare takes it
        back = kernel.run("%pi checkout x@1")
        assert back.status == "ok" and f"leaf is now {old_leaf}" in back.stdout, back.error
    finally:
        kernel.close()
