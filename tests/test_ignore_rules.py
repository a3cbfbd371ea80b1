"""Odd .gitignore files, read the way git reads them (through pathspec): odd lines never break the rest."""

from __future__ import annotations

from pi_jupyter.agent.toolbox.walk import walk
from pi_jupyter.resources.ignore import IgnoreMatcher


def test_a_line_git_cannot_use_is_skipped_and_the_other_rules_still_apply():
    m = IgnoreMatcher().with_rules(["!", "\\", "*.log", "build/"])  # "!" and a lone "\" are not patterns
    assert m.ignored("a.log") and m.ignored("build", True)
    assert not m.ignored("a.py")


def test_escaped_hash_bang_and_trailing_space_are_literal_names():
    m = IgnoreMatcher().with_rules(["\\#notes", "\\!draft", "spaced\\ ", "# a comment", "   "])
    assert m.ignored("#notes") and m.ignored("!draft") and m.ignored("spaced ")
    assert not m.ignored("# a comment") and not m.ignored("notes")


def test_a_deeper_ignore_file_re_includes_what_a_parent_excludes_only_below_itself():
    m = IgnoreMatcher().with_rules(["*.log"]).with_rules(["!keep.log"], rel_dir="sub")
    assert not m.ignored("sub/keep.log") and not m.ignored("sub/deep/keep.log")
    assert m.ignored("keep.log") and m.ignored("sub/other.log")


def test_a_walk_honours_nested_ignore_files_and_prunes_ignored_folders(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.log\nout/\n!important.log\n")
    (tmp_path / "out" / "deep").mkdir(parents=True)
    (tmp_path / "out" / "deep" / "important.log").write_text("x")  # below an ignored folder: stays ignored, as in git
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ".gitignore").write_text("generated_*\n!generated_keep.py\n\\\n")
    for name in ("a.py", "a.log", "important.log", "generated_x.py", "generated_keep.py"):
        (tmp_path / "src" / name).write_text("x")
    seen = {e.rel for e in walk(str(tmp_path)) if not e.is_dir}
    assert seen >= {"src/a.py", "src/important.log", "src/generated_keep.py"}
    assert not seen & {"src/a.log", "src/generated_x.py", "out/deep/important.log"}
