"""pi's output limits: head and tail truncation by lines and bytes, sizes, grep line cuts."""

from __future__ import annotations

import json
import random
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_jupyter.agent.toolbox.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_limits_are_pis():
    assert (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES) == (2000, 51200)
    assert [format_size(n) for n in (0, 1023, 1024, 1536, 51200, 3 * 1024 * 1024)] == ["0B", "1023B", "1.0KB", "1.5KB", "50.0KB", "3.0MB"]


def test_head_keeps_first_complete_lines():
    r = truncate_head("a\nbb\nccc\ndddd", max_lines=2, max_bytes=100)
    assert (r.content, r.truncated, r.truncated_by, r.total_lines, r.output_lines) == ("a\nbb", True, "lines", 4, 2)
    r = truncate_head("a\nbb\nccc", max_lines=10, max_bytes=5)
    assert (r.content, r.truncated_by, r.output_bytes) == ("a\nbb", "bytes", 4)
    r = truncate_head("x" * 10 + "\nshort", max_lines=10, max_bytes=5)
    assert (r.content, r.first_line_exceeds_limit) == ("", True)
    assert truncate_head("fits\n").truncated is False


def test_tail_keeps_last_lines_and_may_cut_a_long_last_line_on_a_character_boundary():
    r = truncate_tail("a\nbb\nccc\ndddd", max_lines=2, max_bytes=100)
    assert (r.content, r.truncated_by, r.output_lines) == ("ccc\ndddd", "lines", 2)
    r = truncate_tail("head\n" + "é" * 10, max_lines=10, max_bytes=5)  # é is 2 bytes
    assert r.last_line_partial and r.content == "éé" and r.output_bytes == 4


def test_details_are_pis_camel_case_truncation_object():
    d = truncate_tail("a\nb\nc", max_lines=1, max_bytes=10).details()
    assert d == {
        "content": "c",
        "truncated": True,
        "truncatedBy": "lines",
        "totalLines": 3,
        "totalBytes": 5,
        "outputLines": 1,
        "outputBytes": 1,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
        "maxLines": 1,
        "maxBytes": 10,
    }


def test_grep_line_cut():
    assert truncate_line("x" * 501) == ("x" * 500 + "... [truncated]", True)
    assert truncate_line("short") == ("short", False)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab\né€𝄞 ", max_size=80), st.integers(1, 8), st.integers(1, 40))
def test_results_stay_within_the_limits_and_are_slices_of_the_input(text, max_lines, max_bytes):
    for fn in (truncate_head, truncate_tail):
        r = fn(text, max_lines, max_bytes)
        assert r.output_lines <= max(max_lines, 1)
        assert r.output_bytes <= max_bytes or not r.truncated
        assert r.content in text
        assert r.truncated == (text.count("\n") + 1 > max_lines or len(text.encode()) > max_bytes)


@pytest.mark.interop
def test_same_results_as_pis_truncate_js(tmp_path, pi_node_modules):
    tools_dir = pi_node_modules / "@mariozechner/pi-coding-agent/dist/core/tools"
    rng = random.Random(7)
    cases = [
        ["".join(rng.choice("ab\né€𝄞 ") for _ in range(rng.randint(0, 60))), rng.randint(1, 8), rng.randint(1, 40)] for _ in range(1000)
    ]
    script = tmp_path / "t.mjs"
    script.write_text(
        'import fs from "fs";\n'
        f'const {{ truncateHead, truncateTail }} = await import("{tools_dir / "truncate.js"}");\n'
        'const cases = JSON.parse(fs.readFileSync(0, "utf-8"));\n'
        "console.log(JSON.stringify(cases.map(([s, l, b]) => [truncateHead(s, {maxLines: l, maxBytes: b}),"
        " truncateTail(s, {maxLines: l, maxBytes: b})])));\n"
    )
    out = subprocess.run(["node", str(script)], input=json.dumps(cases), capture_output=True, text=True, check=True, timeout=120)
    for (text, lines, nbytes), (head, tail) in zip(cases, json.loads(out.stdout), strict=True):
        assert truncate_head(text, lines, nbytes).details() == head
        assert truncate_tail(text, lines, nbytes).details() == tail
