"""What the command line prints stays readable whatever a session holds (issue 29): names and labels are cut as ``info`` cuts them.

A session name or a label is typed by a user (or an extension) and has no length limit in
the file. ``pi-jupyter tree`` printed it whole, on one line: a 100,000-character name made a
100,000-character line. It is cut with the same marker as ``info`` (the full text stays in
the file and in ``info --json``). The CLI runs as a subprocess, as a user runs it.
"""

from __future__ import annotations

from pathlib import Path

from test_adversarial_files import cli

from pi_jupyter.messages import UserMessage
from pi_jupyter.session import Session


def test_tree_cuts_an_unbounded_session_name_and_label_like_info(tmp_path: Path) -> None:
    s = Session.create(tmp_path, cwd="/w")
    first = s.append_message(UserMessage.text("hello"))
    s.set_name("n" * 100_000)
    s.label(first, "L" * 50_000)
    s.close()
    for width in ([], ["--width", "0"]):
        proc = cli("tree", str(s.path), *width)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines and max(len(line) for line in lines) < 600, [len(line) for line in lines]
        assert any("100000 characters" in line for line in lines)  # the name, cut with info's marker
        assert any("50000 characters" in line for line in lines)  # the label, on its entry and its label entry
    info = next(row for row in cli("info", str(s.path)).stdout.splitlines() if row.startswith("name:"))
    assert "… (100000 characters" in info and "… (100000 characters" in proc.stdout  # the same marker as info
