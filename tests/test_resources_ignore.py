"""Glob patterns and gitignore rules used by skill discovery and by grep/find."""

from __future__ import annotations

import pytest

from pi_jupyter.resources.ignore import IgnoreMatcher, compile_glob, find_git_root


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "dir/a.py", False),  # * never crosses /
        ("**/*.py", "dir/sub/a.py", True),
        ("**/*.py", "a.py", True),
        ("src/**", "src/a/b.txt", True),
        ("src/**", "src", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("*.{ts,tsx}", "x.tsx", True),
        ("*.{ts,tsx}", "x.js", False),
        ("file\\*.txt", "file*.txt", True),
        ("file\\*.txt", "fileX.txt", False),
        ("data.[", "data.[", True),
    ],
)
def test_glob_semantics(pattern, path, expected):
    assert (compile_glob(pattern).match(path) is not None) is expected


def test_unbalanced_brace_is_a_clear_error():
    with pytest.raises(ValueError, match="unbalanced"):
        compile_glob("*.{ts")


def test_gitignore_rules_negation_anchoring_and_directory_only():
    m = IgnoreMatcher().with_rules(["# c", "", "*.log", "!keep.log", "/build", "cache/", "docs/*.tmp", "trailing\\ "])
    assert m.ignored("x.log") and m.ignored("deep/x.log")
    assert not m.ignored("keep.log") and not m.ignored("deep/keep.log")
    assert m.ignored("build", True) and not m.ignored("src/build", True)  # leading / anchors
    assert m.ignored("cache", True) and m.ignored("a/cache", True) and not m.ignored("cache", False)
    assert m.ignored("docs/a.tmp") and not m.ignored("x/docs/a.tmp")  # a / in the middle anchors too
    assert m.ignored("trailing ")


def test_rules_of_a_subdirectory_apply_only_below_it_at_any_depth():
    m = IgnoreMatcher().with_rules(["out"], rel_dir="sub")
    assert m.ignored("sub/out") and m.ignored("sub/x/out")
    assert not m.ignored("out") and not m.ignored("other/out")


def test_ancestor_ignore_files_up_to_the_git_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "src").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.csv\npkg/src/gen/\n")
    (tmp_path / ".gitignore").write_text("*.py\n")  # above the repo: not read
    assert find_git_root(repo / "pkg" / "src") == str(repo)
    m = IgnoreMatcher.for_root(str(repo / "pkg" / "src"), from_git_root=True)
    assert m.ignored("data.csv") and m.ignored("gen", True)
    assert not m.ignored("main.py")
    local = IgnoreMatcher.for_root(str(repo / "pkg" / "src"))
    assert not local.ignored("data.csv")
