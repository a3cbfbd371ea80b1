"""ls, grep and find: pi's output formats and limits, .gitignore respected, .git and node_modules skipped."""

from __future__ import annotations

import asyncio

import pytest

from pi_jupyter.agent.toolbox import FindTool, GrepTool, LsTool
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal


def call(tool_cls, cwd, signal=None, **args):
    ctx = ToolContext(tool_call_id="s", signal=signal or AbortSignal(), cwd=str(cwd))
    return asyncio.run(run_tool(tool_cls(), args, ctx))


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    (p / ".git" / "config").write_text("needle in git\n")
    (p / "node_modules" / "dep").mkdir(parents=True)
    (p / "node_modules" / "dep" / "index.js").write_text("needle in deps\n")
    (p / "src" / "pkg").mkdir(parents=True)
    (p / "src" / "main.py").write_text("import os\n\ndef needle():\n    return 1\n")
    (p / "src" / "pkg" / "util.py").write_text("# needle helper\nNEEDLE = 2\n")
    (p / "src" / "pkg" / "data.csv").write_text("a,needle\n")
    (p / "build").mkdir()
    (p / "build" / "out.py").write_text("needle built\n")
    (p / ".gitignore").write_text("build/\n*.log\n")
    (p / "debug.log").write_text("needle logged\n")
    (p / ".hidden.cfg").write_text("needle hidden\n")
    (p / "blob.bin").write_bytes(b"needle\x00\x01")
    return p


# -- ls ---------------------------------------------------------------------------------


def test_ls_sorts_case_insensitively_marks_directories_and_shows_dotfiles(tmp_path):
    for name in ("b.txt", "A.txt", ".env"):
        (tmp_path / name).write_text("x")
    (tmp_path / "Dir").mkdir()
    (tmp_path / "broken").symlink_to(tmp_path / "missing")
    r = call(LsTool, tmp_path)
    assert r.text_content == ".env\nA.txt\nb.txt\nDir/"


def test_ls_limits_and_errors(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}").write_text("")
    r = call(LsTool, tmp_path, limit=3)
    assert r.text_content == "f0\nf1\nf2\n\n[3 entries limit reached. Use limit=6 for more]"
    assert r.details == {"entryLimitReached": 3}
    (tmp_path / "empty").mkdir()
    assert call(LsTool, tmp_path, path="empty").text_content == "(empty directory)"
    assert call(LsTool, tmp_path, path="f0").text_content == f"Not a directory: {tmp_path / 'f0'}"
    assert call(LsTool, tmp_path, path="nope").text_content == f"Path not found: {tmp_path / 'nope'}"


# -- grep -------------------------------------------------------------------------------


def test_grep_finds_matches_in_pis_format_respecting_ignores(project):
    r = call(GrepTool, project, pattern="needle")
    assert r.text_content.splitlines() == [
        ".hidden.cfg:1: needle hidden",
        "src/main.py:3: def needle():",
        "src/pkg/data.csv:1: a,needle",
        "src/pkg/util.py:1: # needle helper",
    ]


def test_grep_options_ignore_case_literal_glob_context(project):
    assert call(GrepTool, project, pattern="needle", ignoreCase=True, glob="*.py").text_content.splitlines() == [
        "src/main.py:3: def needle():",
        "src/pkg/util.py:1: # needle helper",
        "src/pkg/util.py:2: NEEDLE = 2",
    ]
    assert call(GrepTool, project, pattern="needle(", literal=True).text_content == "src/main.py:3: def needle():"
    assert call(GrepTool, project, pattern="needle.x", literal=True).text_content == "No matches found"
    assert call(GrepTool, project, pattern="def needle", context=1, path="src").text_content.splitlines() == [
        "main.py-2- ",
        "main.py:3: def needle():",
        "main.py-4-     return 1",
    ]
    assert call(GrepTool, project, pattern="needle", glob="!*.py").text_content.splitlines() == [
        ".hidden.cfg:1: needle hidden",
        "src/pkg/data.csv:1: a,needle",
    ]
    single = call(GrepTool, project, pattern="NEEDLE", path="src/pkg/util.py")
    assert single.text_content == "util.py:2: NEEDLE = 2"


def test_grep_limits_long_lines_and_bad_patterns(tmp_path):
    (tmp_path / "a.txt").write_text("\n".join(["hit"] * 5 + ["hit " + "y" * 600]))
    r = call(GrepTool, tmp_path, pattern="hit", limit=2)
    assert r.text_content == "a.txt:1: hit\na.txt:2: hit\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    assert r.details == {"matchLimitReached": 2}
    long = call(GrepTool, tmp_path, pattern="y{600}")
    assert long.text_content.endswith("... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]")
    assert long.details == {"linesTruncated": True}
    bad = call(GrepTool, tmp_path, pattern="(unclosed")
    assert bad.is_error and "Invalid regex '(unclosed'" in bad.text_content and "literal=true" in bad.text_content


def test_byte_truncated_listings_record_pis_line_limit(tmp_path):
    # pi passes Number.MAX_SAFE_INTEGER as the line limit of grep, find and ls; a session read by pi holds the same number
    for i in range(260):
        (tmp_path / f"{'f' * 200}{i:03d}.txt").write_text("hit " + "z" * 480 + "\n")
    for tool, args in ((GrepTool, {"pattern": "hit", "limit": 260}), (FindTool, {"pattern": "*.txt"}), (LsTool, {})):
        truncation = call(tool, tmp_path, **args).details["truncation"]
        assert truncation["truncated"] and truncation["maxLines"] == 9007199254740991


def test_grep_stops_when_aborted(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    signal = AbortSignal()
    signal.abort()
    r = call(GrepTool, tmp_path, signal=signal, pattern="x")
    assert r.is_error and r.text_content == "Operation aborted"


def test_grep_does_not_follow_links_out_of_the_root(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("needle outside\n")
    (root / "inside.txt").write_text("needle inside\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert call(GrepTool, root, pattern="needle").text_content == "inside.txt:1: needle inside"


# -- find -------------------------------------------------------------------------------


def test_find_by_name_and_by_path_pattern(project):
    assert call(FindTool, project, pattern="*.py").text_content.splitlines() == ["src/main.py", "src/pkg/util.py"]
    assert call(FindTool, project, pattern="src/**/*.py").text_content.splitlines() == ["src/main.py", "src/pkg/util.py"]
    assert call(FindTool, project, pattern="pkg/*.{py,csv}").text_content.splitlines() == ["src/pkg/data.csv", "src/pkg/util.py"]
    assert call(FindTool, project, pattern="pkg").text_content == "src/pkg/"
    assert call(FindTool, project, pattern="*.log").text_content == "No files found matching pattern"
    assert ".hidden.cfg" in call(FindTool, project, pattern=".*").text_content.splitlines()


def test_find_limit_and_errors(tmp_path):
    for i in range(4):
        (tmp_path / f"f{i}.txt").write_text("")
    r = call(FindTool, tmp_path, pattern="*.txt", limit=2)
    assert r.text_content == "f0.txt\nf1.txt\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    assert call(FindTool, tmp_path, pattern="*.txt", limit=4).details is None
    assert call(FindTool, tmp_path, pattern="*.{txt").is_error
    assert call(FindTool, tmp_path, pattern="*", path="f0.txt").text_content == f"Not a directory: {tmp_path / 'f0.txt'}"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("foo$", ["a.txt:1: foo"]),
        ("^bar", ["a.txt:2: bar"]),
        ("foo(?!x)", ["a.txt:1: foo"]),
        ("(?<=ba)r", ["a.txt:2: bar"]),
        (r"\Abar", ["a.txt:2: bar"]),
        (r"o\nb", []),  # matches are per line, as ripgrep's
    ],
)
def test_line_anchors_and_lookarounds_match_per_line(tmp_path, pattern, expected):
    (tmp_path / "a.txt").write_text("foo\nbar\n")
    text = call(GrepTool, tmp_path, pattern=pattern).text_content
    assert (text.splitlines() if expected else text) == (expected or "No matches found")
