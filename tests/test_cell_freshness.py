"""Between two ``%%pi`` cells, other programs may write the session file: the next cell sees what they did.

Another kernel, a Dask worker or pi itself appends to the same file; a damaged line may come with
it; a program may replace or truncate the file. The cell that follows reads what was appended
(and says which line it could not read), and reopens a file that was replaced instead of failing.
Run in IPython's own shell, as ``test_notebook_magics.py`` does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from test_notebook_magics import ip  # noqa: F401 - the fixture

from pi_jupyter import Session
from pi_jupyter.notebook.cells import CellRun, record_run, start_for

pytestmark = pytest.mark.usefixtures("ip")


def run_cell(shell, path: Path, text: str, cell_id: str):
    shell._pi_cell_id = cell_id
    return shell.run_cell_magic("pi", f"--session {path}", text)


def test_a_cell_sees_what_another_writer_appended_since_the_last_cell(ip, tmp_path):  # noqa: F811
    path = tmp_path / "shared.jsonl"
    first = run_cell(ip, path, "hello", "cell-a")
    other = Session.open(path)  # another kernel on the same file
    mine = first.session
    other.checkout(first.entry_ids[0])
    theirs = other.append_message({"role": "user", "content": "from the other kernel", "timestamp": 1})
    record_run(other, CellRun(cell_id="cell-b", started_from=first.entry_ids[0], produced=[theirs], end=theirs))
    other.close()
    assert theirs not in mine  # nothing has read the file since

    run_cell(ip, path, "and again", "cell-c")
    assert theirs in mine
    # the other kernel's run of cell-b is known: a re-run of cell-b here forks from where it started there
    mine.checkout(theirs, persist=False)
    assert start_for(mine, "cell-b") == (first.entry_ids[0], True)


def test_a_damaged_line_appended_by_another_program_is_reported_by_the_next_cell(ip, tmp_path, capsys):  # noqa: F811
    path = tmp_path / "shared.jsonl"
    run_cell(ip, path, "hello", "cell-a")
    lines = path.read_bytes().count(b"\n")
    with open(path, "ab") as fh:
        fh.write(b'{"type":"message","id":"dead01",BROKEN\n')
    capsys.readouterr()
    run_cell(ip, path, "next", "cell-b")
    err = capsys.readouterr().err
    assert f"shared.jsonl:{lines + 1}" in err and "not JSON" in err
    assert b"BROKEN" in path.read_bytes()  # left where it was


def test_a_file_replaced_underneath_is_reopened_by_the_next_cell(ip, tmp_path, capsys):  # noqa: F811
    path = tmp_path / "shared.jsonl"
    first = run_cell(ip, path, "hello", "cell-a")
    blob = path.read_bytes()
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(blob + blob.split(b"\n", 1)[1])  # bigger, and another inode: only a reopen reads it right
    os.replace(replacement, path)
    capsys.readouterr()
    second = run_cell(ip, path, "after the replacement", "cell-b")
    err = capsys.readouterr().err
    assert "shared.jsonl" in err and "replaced" in err and "reopened" in err
    assert second.session is not first.session
    assert second.entry_ids[0] in Session.open(path, readonly=True)


def test_a_truncated_file_is_reopened_by_the_next_cell(ip, tmp_path, capsys):  # noqa: F811
    path = tmp_path / "shared.jsonl"
    run_cell(ip, path, "hello", "cell-a")
    run_cell(ip, path, "more", "cell-b")
    header = path.read_bytes().split(b"\n", 1)[0] + b"\n"
    with open(path, "r+b") as fh:  # truncated in place: same inode, fewer bytes
        fh.truncate(len(header))
    capsys.readouterr()
    third = run_cell(ip, path, "after the truncation", "cell-c")
    assert "shrank" in capsys.readouterr().err
    reread = Session.open(path, readonly=True)
    assert third.entry_ids[-1] in reread and reread.load_report.ok


def test_a_file_deleted_underneath_is_a_clear_error(ip, tmp_path):  # noqa: F811
    path = tmp_path / "shared.jsonl"
    run_cell(ip, path, "hello", "cell-a")
    path.unlink()
    with pytest.raises(UsageError, match="shared.jsonl") as info:
        run_cell(ip, path, "next", "cell-b")
    assert "Traceback" not in str(info.value)
