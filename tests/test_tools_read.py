"""The read tool: pi's offsets, limits and notices; images; big files streamed; binary files refused."""

from __future__ import annotations

import asyncio
import base64
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_jupyter.agent.toolbox import ReadTool
from pi_jupyter.agent.toolbox.read import read_lines
from pi_jupyter.agent.tools import ImageContent, ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal

PNG_1PX = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def read(cwd, **args):
    ctx = ToolContext(tool_call_id="r", signal=AbortSignal(), cwd=str(cwd))
    return asyncio.run(run_tool(ReadTool(), args, ctx))


def test_reads_a_small_file_whole(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    r = read(tmp_path, path="a.txt")
    assert not r.is_error and r.text_content == "one\ntwo\n" and r.details is None


def test_offset_and_limit_with_pis_continuation_notice(tmp_path):
    (tmp_path / "a.txt").write_text("\n".join(f"line {i}" for i in range(1, 11)))
    r = read(tmp_path, path="a.txt", offset=3, limit=2)
    assert r.text_content == "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    assert read(tmp_path, path="a.txt", offset=9).text_content == "line 9\nline 10"
    beyond = read(tmp_path, path="a.txt", offset=11)
    assert beyond.is_error and beyond.text_content == "Offset 11 is beyond end of file (10 lines total)"


def test_line_limit_truncation_notice(tmp_path):
    (tmp_path / "big.txt").write_text("\n".join(str(i) for i in range(1, 2501)))
    r = read(tmp_path, path="big.txt")
    body, notice = r.text_content.rsplit("\n\n", 1)
    assert body.splitlines() == [str(i) for i in range(1, 2001)]
    assert notice == "[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
    t = r.details["truncation"]
    assert (t["truncatedBy"], t["totalLines"], t["outputLines"]) == ("lines", 2500, 2000)


def test_byte_limit_truncation_notice(tmp_path):
    (tmp_path / "wide.txt").write_text("\n".join("x" * 1000 for _ in range(100)))
    r = read(tmp_path, path="wide.txt", offset=11)
    assert r.text_content.endswith("\n\n[Showing lines 11-61 of 100 (50.0KB limit). Use offset=62 to continue.]")
    assert r.details["truncation"]["truncatedBy"] == "bytes"


def test_a_first_line_over_the_limit_points_at_a_fallback(tmp_path):
    (tmp_path / "one.json").write_text("x" * 60000 + "\nsecond")
    r = read(tmp_path, path="one.json")
    assert r.text_content == "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.json | head -c 51200]"
    assert r.details["truncation"]["firstLineExceedsLimit"] is True


def test_images_become_image_content(tmp_path):
    (tmp_path / "dot.png").write_bytes(PNG_1PX)
    r = read(tmp_path, path="dot.png")
    assert r.content[0].text == "Read image file [image/png]"
    assert isinstance(r.content[1], ImageContent) and base64.b64decode(r.content[1].data) == PNG_1PX


def test_binary_files_missing_files_and_directories_are_clear_errors(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "d").mkdir()
    assert "is a binary file (300B)" in read(tmp_path, path="blob.bin").text_content
    assert read(tmp_path, path="nope.txt").text_content == f"File not found: {tmp_path / 'nope.txt'}"
    assert "Is a directory" in read(tmp_path, path="d").text_content
    assert read(tmp_path, path="@d").is_error  # pi's @-prefix is stripped


def test_secrets_in_a_file_are_redacted(tmp_path):
    key = "sk-ant-api03-" + "k" * 40
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={key}\n")
    r = read(tmp_path, path=".env")
    assert key not in r.text_content and "[REDACTED:anthropic-key]" in r.text_content


def _pi_select(text: str, start: int, limit: int | None):
    lines = text.split("\n")
    end = len(lines) if limit is None else min(start + limit, len(lines))
    return lines[start:end], len(lines)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab\n\r é", max_size=120),
    st.integers(0, 30),
    st.one_of(st.none(), st.integers(0, 30)),
    st.integers(1, 6),
    st.integers(1, 20),
)
def test_streaming_selection_agrees_with_splitting_the_whole_file(tmp_path_factory, text, start, limit, cap_lines, cap_bytes):
    path = tmp_path_factory.mktemp("r") / "f.txt"
    path.write_bytes(text.encode("utf-8"))
    expected, total = _pi_select(text, start, limit)
    sel = read_lines(str(path), start, limit, cap_lines=cap_lines, cap_bytes=cap_bytes)
    assert sel.total_file_lines == total
    if start < total:
        assert sel.selection_lines == len(expected)
        assert sel.selection_bytes == len("\n".join(expected).encode("utf-8"))
    if sel.complete:
        assert sel.lines == expected
    else:
        assert sel.lines == expected[: len(sel.lines)]
        assert len(sel.lines) > cap_lines or len("\n".join(sel.lines).encode()) > cap_bytes


def test_reading_the_head_of_a_large_file_decodes_only_what_is_shown(tmp_path):
    path = tmp_path / "large.csv"
    with open(path, "w") as fh:
        for i in range(300_000):
            fh.write(f"{i},{i * 2},some text\n")
    sel = read_lines(str(path), 0, None)
    assert not sel.complete and len(sel.lines) <= 2001 and sel.total_file_lines == 300_001
    assert sel.selection_bytes == os.path.getsize(path)
    r = read(tmp_path, path="large.csv")
    assert r.text_content.endswith("[Showing lines 1-2000 of 300001. Use offset=2001 to continue.]")


def test_an_image_over_the_inline_limit_is_omitted_with_a_note(tmp_path):
    (tmp_path / "huge.png").write_bytes(PNG_1PX + b"\0" * (4 * 1024 * 1024))
    r = read(tmp_path, path="huge.png")
    assert len(r.content) == 1
    assert r.text_content.startswith("Read image file [image/png]\n[Image omitted: 5.3MB of base64 is over the 4.5MB inline image")
