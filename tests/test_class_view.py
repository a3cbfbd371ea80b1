"""The class view over a folder of students' sessions: what each cell of the table says, and what the folder may hold.

The sessions are written by real agents (the offline model) with real cell records
(``tests/classroom.py``), by pi itself (the fixtures), or damaged on purpose.
"""

from __future__ import annotations

import os
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from classroom import COURSE, student

from pi_jupyter.cli.main import main
from pi_jupyter.views.class_view.view import class_view

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pi"


@pytest.fixture
def folder(tmp_path):
    out = tmp_path / "submissions"
    out.mkdir()
    student(out, "ada")
    student(out, "bob", values={"file": "missing.csv"}, rerun="c-read")  # the read fails twice, and he tried again
    student(out, "cy", cells=["c-intro", "c-read"])  # never ran the last cell
    student(out, "dee", values={"guess": "north, because it is the first row"})
    return out


def _cell(view, name, key):
    course = view.courses[0]
    row = next(r for r in course.rows if r.student == name)
    return row.cells.get(key)


def test_one_row_per_student_and_the_course_cells_as_columns(folder):
    view = class_view(folder)
    assert len(view.courses) == 1
    course = view.courses[0]
    assert course.title == "course"
    assert [r.student for r in course.rows] == ["ada", "bob", "cy", "dee"]
    assert [c.key for c in course.columns] == list(COURSE)  # the notebook's order
    ada = _cell(view, "ada", "c-read")
    assert (ada.runs, ada.turns, ada.tool_calls, ada.tool_errors) == (1, 2, 1, 0)
    assert ada.tokens > 0 and ada.prompt == "use read on `sales.csv`" and "north,120" in ada.answer
    bob = _cell(view, "bob", "c-read")
    assert (bob.runs, bob.turns, bob.tool_calls, bob.tool_errors) == (2, 4, 2, 2)
    assert "missing.csv" in bob.error_texts[0]
    assert _cell(view, "cy", "c-guess") is None
    table = view.table()
    assert len(table) == 4 * 3 and table[table.student == "cy"].ran.tolist() == [True, True, False]


def test_distance_from_the_class_common_answer(folder):
    view = class_view(folder)
    column = view.courses[0].columns[2]
    assert column.measured_from == "common" and "east" in column.measure
    assert _cell(view, "ada", "c-guess").distance == 0.0 == _cell(view, "bob", "c-guess").distance
    # another guess, with reasons: further, though the offline model's long boilerplate is shared by every answer
    assert 0 < _cell(view, "dee", "c-guess").distance < 1


def test_distance_from_a_reference_answer(folder, tmp_path):
    teacher = tmp_path / "teacher"
    teacher.mkdir()
    ref = student(teacher, "teacher", values={"guess": "north, because it is the first row"})
    view = class_view(folder, reference=ref)
    assert view.courses[0].columns[2].measured_from == "reference"
    assert _cell(view, "dee", "c-guess").distance == 0.0 and _cell(view, "ada", "c-guess").distance > 0
    # the teacher's file inside the folder is the reference, not a student
    shutil.copy(ref, folder / "teacher.jsonl")
    assert "teacher" not in [r.student for r in class_view(folder, reference=folder / "teacher.jsonl").courses[0].rows]


def test_totals_never_ran_branched_most_and_prompts_with_tool_errors(folder):
    course = class_view(folder).courses[0]
    assert course.never_ran() == {"c-intro": [], "c-read": [], "c-guess": ["cy"]}
    assert [(r.student, r.branches) for r in course.branched_most()] == [("bob", 2)]
    (column, row, work), *rest = course.error_prompts()
    assert (column.key, row.student, work.tool_errors, work.prompt) == ("c-read", "bob", 2, "use read on `missing.csv`") and not rest
    costs = course.cost_per_cell()
    assert set(costs) == set(COURSE)
    page = class_view(folder).page()
    for text in ("Who never ran a cell", "Who branched most", "Prompts that led to tool errors", "cost per cell", "1 never ran it"):
        assert text in page


def test_damaged_foreign_empty_and_other_files_are_listed_and_never_stop_the_view(folder, capsys):
    (folder / "broken.jsonl").write_text("{not json\n")
    (folder / "foreign.jsonl").write_text('{"event": "click", "x": 1}\n{"event": "scroll"}\n')
    (folder / "empty.jsonl").write_text("")
    (folder / "notes.ipynb").write_text("{}")
    (folder / "grades.csv").write_text("a,b\n")
    os.mkfifo(folder / "pipe.jsonl")
    text = (folder / "dee.jsonl").read_text().splitlines()
    text.insert(3, "{garbage")
    (folder / "dee.jsonl").write_text("\n".join(text) + "\n")
    view = class_view(folder)
    why = {n.name: n.why for n in view.folder.unreadable}
    assert why["broken.jsonl"] == "no JSON object in it: not a session file"
    assert why["foreign.jsonl"] == "not a session file: line 1 is a JSON object without a 'type', not a session header"
    assert why["empty.jsonl"] == "an empty file (no session header)"
    assert "named pipe" in why["pipe.jsonl"]
    assert {n.name for n in view.folder.ignored} == {"notes.ipynb", "grades.csv"}
    assert [r.student for r in view.courses[0].rows] == ["ada", "bob", "cy", "dee"]
    dee = next(s for s in view.folder.sessions if s.student == "dee")
    assert dee.problems[0].startswith("1 unreadable line skipped (first: line 4: not JSON:") and "'{garbage'" in dee.problems[0]
    out = folder.parent / "class.html"
    assert main(["class", str(folder), "-o", str(out)]) == 1  # problems were listed
    err = capsys.readouterr().err
    assert "broken.jsonl: no JSON object in it" in err and "dee.jsonl: 1 unreadable line skipped" in err and "Traceback" not in err
    page = out.read_text()
    assert "Files with problems" in page and "foreign.jsonl" in page and "2 other files in the folder, not read" in page


def test_a_file_still_being_written_is_read_as_far_as_it_goes(folder):
    whole = (folder / "ada.jsonl").read_bytes()
    lines = whole.split(b"\n")
    cut = b"\n".join(lines[:-3]) + b"\n" + lines[-3][: len(lines[-3]) // 2]  # the kernel is mid-line
    (folder / "ada.jsonl").write_bytes(cut)
    view = class_view(folder)
    ada = next(r for r in view.courses[0].rows if r.student == "ada")
    assert ada.still_writing and "still being written" in ada.problems[0]
    assert ada.cells["c-intro"].runs == 1 and ada.cells["c-read"].runs == 1  # what was complete
    assert (folder / "ada.jsonl").read_bytes() == cut  # read only


def test_sessions_of_different_course_notebooks_are_grouped(folder):
    other = {"x-one": "What is a tensor?", "x-two": "use read on `{file}`"}
    student(folder, "eve", prompts=other, course="linear algebra")
    student(folder, "fay", prompts=other, course="linear algebra", cells=["x-one"])
    view = class_view(folder)
    assert [(c.title, [r.student for r in c.rows]) for c in view.courses] == [
        ("course", ["ada", "bob", "cy", "dee"]),
        ("linear algebra", ["eve", "fay"]),
    ]
    assert [c.key for c in view.courses[1].columns] == ["x-one", "x-two"]


def test_pi_sessions_line_up_by_prompt(tmp_path):
    folder = tmp_path / "pi"
    folder.mkdir()
    shutil.copy(FIXTURES / "large-session.jsonl", folder / "mario.jsonl")
    shutil.copy(FIXTURES / "large-session.jsonl", folder / "luigi.jsonl")
    shutil.copy(FIXTURES / "before-compaction.jsonl", folder / "peach.jsonl")
    view = class_view(folder)
    assert [[r.student for r in c.rows] for c in view.courses] == [["luigi", "mario"], ["peach"]]
    course = view.courses[0]
    assert len(course.columns) > 50 and course.columns[1].prompt.startswith("read packages/coding-agent/docs/theme.md")
    luigi, mario = course.rows
    assert luigi.cells.keys() == mario.cells.keys() and luigi.cost == pytest.approx(mario.cost) and luigi.cost > 1
    assert {w.distance for w in luigi.cells.values() if w.distance is not None} == {0.0}
    assert sum(w.tool_errors for w in mario.cells.values()) > 3 and luigi.branches == 1


def test_hostile_text_in_names_prompts_and_answers_is_escaped(folder, tmp_path):
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script></pre></style>"
    student(folder, "x" + evil.replace("/", "_"), values={"guess": evil, "name": evil})
    page = class_view(folder).page()
    body = page.split("<body>", 1)[1]
    assert "<img src=x" not in body and "<script>alert" not in body and "</pre></style>" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
    scripts = re.findall(r"<script>", body)
    assert len(scripts) == 1  # the view's own
    assert unescape(body).count("alert(2)") >= 2  # shown, as text


def test_the_cli_writes_one_self_contained_page_and_replaces_no_stranger(folder, tmp_path, capsys):
    out = tmp_path / "view.html"
    assert main(["class", str(folder), "-o", str(out)]) == 0
    page = out.read_text()
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)="(https?:)?//', page) and "@import" not in page
    assert "wrote" in capsys.readouterr().err
    assert main(["class", str(folder), "-o", str(out)]) == 0  # its own page: replaced
    mine = tmp_path / "mine.html"
    mine.write_text("<p>my notes</p>")
    assert main(["class", str(folder), "-o", str(mine)]) == 2
    assert "exists and is not a page pi-jupyter wrote; use --force" in capsys.readouterr().err
    assert mine.read_text() == "<p>my notes</p>"
    assert main(["class", str(folder), "-o", str(mine), "--force"]) == 0
    session = folder / "ada.jsonl"
    before = session.read_bytes()
    assert main(["class", str(folder), "-o", str(session), "--force"]) == 2
    assert "is a session file; a page never replaces one" in capsys.readouterr().err
    assert session.read_bytes() == before
    assert main(["class", str(tmp_path / "nowhere")]) == 2
    assert "no folder" in capsys.readouterr().err


def test_worker_processes_read_the_same_rows_in_the_same_order(folder):
    from pi_jupyter.views.class_view.load import read_rows

    paths = sorted(str(p) for p in folder.glob("*.jsonl"))
    alone = read_rows(paths, workers=1)
    shared = read_rows(paths, workers=2)
    assert [f.path for f, _ in shared] == paths
    assert [(r.student, r.cells, r.branches) for _, r in shared] == [(r.student, r.cells, r.branches) for _, r in alone]


def test_the_quick_reading_of_tool_results_reads_what_a_whole_parse_reads(folder):
    import orjson

    from pi_jupyter.session.report import LoadReport
    from pi_jupyter.views.class_view.lines import parse_session_lines

    for path in [*folder.glob("*.jsonl"), FIXTURES / "large-session.jsonl"]:
        data = path.read_bytes()
        quick, _, torn = parse_session_lines(data, LoadReport())
        whole = [orjson.loads(line) for line in data.splitlines() if line.strip()]
        assert not torn and len(quick) == len(whole)
        stubs = sum(1 for q in quick if q.get("message") == {"role": "toolResult"})
        ok = sum(1 for w in whole if (w.get("message") or {}).get("role") == "toolResult" and w["message"].get("isError") is not True)
        assert stubs == (ok if path.parent == folder else 0)  # ours are read quickly; pi's v1 lines have no ids
        for q, w in zip(quick, whole, strict=True):
            assert (q.get("id"), q.get("parentId"), q["type"]) == (w.get("id"), w.get("parentId"), w["type"])
            role = (w.get("message") or {}).get("role")
            assert (q.get("message") or {}).get("role") == role
            if role == "toolResult":
                assert (q["message"].get("isError") is True) == (w["message"].get("isError") is True)


def test_a_failed_answer_is_never_coloured_as_a_close_one(folder):
    """bob's read failed ("File not found"): his answer quotes the failure in words much like the others'
    (a small distance), yet his cell is marked failed, not coloured as close to the common answer."""
    view = class_view(folder)
    bob, ada = _cell(view, "bob", "c-read"), _cell(view, "ada", "c-read")
    assert bob.failed and not ada.failed
    page = view.html()
    row = re.search(r'<th class="pic-student"><a [^>]*>bob</a>.*?</tr>', page, re.S).group(0)
    cell = re.findall(r'<td class="pic-cell([^"]*)"><a href="#pic-c0-1"[^>]*>(.*?)</a></td>', row)[0]
    assert cell[0].strip() == "pic-failed" and "✖ failed" in cell[1]
    card = re.search(r'<div class="pic-card([^"]*)" id="pic-a0-1-1">', page).group(1)
    assert card.strip() == "pic-failed"
    assert view.table().query("student == 'bob' and cell == 2").failed.tolist() == [True]
    data, metadata = view._repr_mimebundle_()
    assert "✖ failed" in data["text/markdown"] and metadata == {"pi_jupyter": {"view": "class"}}


def test_a_cell_shows_the_run_on_the_students_current_branch_not_the_latest(tmp_path):
    """eve ran the intro cell twice (two answers, two branches), then went back to the first answer: the class view
    shows the run she is on, whichever ran last."""
    from classroom import run_cell

    from pi_jupyter import Agent, Session

    folder = tmp_path / "submissions"
    folder.mkdir()
    session = Session.create(path=folder / "eve.jsonl", cwd=str(tmp_path))
    session.set_name("course")
    agent = Agent(session, model="offline/echo", tools=[], cwd=str(tmp_path))
    run_cell(agent, "c-intro", "Hello! My name is Eve, first try.", 1)
    first_end = session.leaf_id
    run_cell(agent, "c-intro", "Hello! My name is Eve, second try.", 2)
    session.checkout(first_end)  # back to the first answer, persisted as a student's kernel does
    session.close()
    view = class_view(folder)
    cell = _cell(view, "eve", "c-intro")
    assert cell.runs == 2
    assert cell.prompt == "Hello! My name is Eve, first try." and "first try" in cell.answer
