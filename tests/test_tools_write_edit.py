"""write and edit: pi's behaviour and messages, line endings and BOM kept, fuzzy matching, diffs in details."""

from __future__ import annotations

import asyncio

from pi_jupyter.agent.toolbox import EditTool, WriteTool
from pi_jupyter.agent.toolbox.edit import generate_diff
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal


def call(tool_cls, cwd, **args):
    ctx = ToolContext(tool_call_id="w", signal=AbortSignal(), cwd=str(cwd))
    return asyncio.run(run_tool(tool_cls(), args, ctx))


def edit(cwd, path, *pairs, **extra):
    return call(EditTool, cwd, path=path, edits=[{"oldText": o, "newText": n} for o, n in pairs], **extra)


def test_write_creates_parents_and_overwrites(tmp_path):
    r = call(WriteTool, tmp_path, path="deep/dir/a.txt", content="héllo")
    assert r.text_content == "Successfully wrote 6 bytes to deep/dir/a.txt"
    assert (tmp_path / "deep/dir/a.txt").read_text() == "héllo"
    call(WriteTool, tmp_path, path="deep/dir/a.txt", content="new")
    assert (tmp_path / "deep/dir/a.txt").read_text() == "new"
    (tmp_path / "d").mkdir()
    assert "it is a directory" in call(WriteTool, tmp_path, path="d", content="x").text_content


def test_edit_replaces_several_disjoint_blocks_against_the_original(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("a = 1\nb = 2\nc = 3\n")
    r = edit(tmp_path, "m.py", ("a = 1", "a = 10"), ("c = 3", "c = 30"))
    assert r.text_content == "Successfully replaced 2 block(s) in m.py."
    assert f.read_text() == "a = 10\nb = 2\nc = 30\n"
    assert r.details["firstChangedLine"] == 1 and "-1 a = 1" in r.details["diff"] and "+1 a = 10" in r.details["diff"]


def test_edit_errors_are_pis_messages_and_leave_the_file_alone(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("x\nx\ny\n")
    must_match = "must match exactly including all whitespace and newlines."
    cases = [
        (edit(tmp_path, "m.txt", ("zzz", "q")), f"Could not find the exact text in m.txt. The old text {must_match}"),
        (
            edit(tmp_path, "m.txt", ("x", "q")),
            "Found 2 occurrences of the text in m.txt. The text must be unique. Please provide more context to make it unique.",
        ),
        (edit(tmp_path, "m.txt", ("", "q")), "oldText must not be empty in m.txt."),
        (
            edit(tmp_path, "m.txt", ("y", "y")),
            "No changes made to m.txt. The replacement produced identical content. This might indicate an issue with special"
            " characters or the text not existing as expected.",
        ),
        (
            edit(tmp_path, "m.txt", ("x\ny", "a"), ("y\n", "b")),
            "edits[0] and edits[1] overlap in m.txt. Merge them into one edit or target disjoint regions.",
        ),
        (edit(tmp_path, "m.txt", ("y", "a"), ("nope", "b")), f"Could not find edits[1] in m.txt. The oldText {must_match}"),
        (call(EditTool, tmp_path, path="m.txt", edits=[]), "Edit tool input is invalid. edits must contain at least one replacement."),
        (edit(tmp_path, "missing.txt", ("a", "b")), "Could not edit file: missing.txt. Error code: ENOENT."),
    ]
    for result, message in cases:
        assert result.is_error and result.text_content == message
    assert f.read_text() == "x\nx\ny\n"


def test_crlf_and_bom_are_kept(tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes("\ufeffone\r\ntwo\r\n".encode())
    assert not edit(tmp_path, "w.txt", ("one\ntwo", "uno\ndos")).is_error
    assert f.read_bytes() == "\ufeffuno\r\ndos\r\n".encode()


def test_fuzzy_match_of_quotes_dashes_and_trailing_spaces(tmp_path):
    f = tmp_path / "q.md"
    f.write_text("He said \u201chello\u201d \u2014 twice   \nend\n")
    r = edit(tmp_path, "q.md", ('He said "hello" - twice\nend', "replaced"))
    assert not r.is_error and f.read_text() == "replaced\n"


def test_legacy_arguments_and_edits_as_a_json_string_are_accepted(tmp_path):
    f = tmp_path / "l.txt"
    f.write_text("alpha beta")
    assert not call(EditTool, tmp_path, path="l.txt", oldText="alpha", newText="ALPHA").is_error
    assert not call(EditTool, tmp_path, path="l.txt", edits='[{"oldText": "beta", "newText": "BETA"}]').is_error
    assert f.read_text() == "ALPHA BETA"
    bad = call(EditTool, tmp_path, path="l.txt", edits=[{"oldText": "A", "newText": "b", "extra": 1}])
    assert bad.is_error and "Validation failed" in bad.text_content


def test_diff_shows_context_and_skips_far_lines():
    old = "\n".join(f"l{i}" for i in range(1, 21))
    new = old.replace("l10", "TEN")
    diff, first = generate_diff(old, new)
    assert first == 10
    assert diff.splitlines() == [
        "    ...",
        "  6 l6",
        "  7 l7",
        "  8 l8",
        "  9 l9",
        "-10 l10",
        "+10 TEN",
        " 11 l11",
        " 12 l12",
        " 13 l13",
        " 14 l14",
        "    ...",
    ]
