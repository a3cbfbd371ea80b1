"""Attacks on the file tools' confinement: races, hard links, look-alike folders, skill links.

Each test here failed before its fix (or guards a bug a review planted and no test caught).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
import time
from typing import ClassVar

import pytest

from pi_jupyter.agent.policy import PathNotAllowed, Policy
from pi_jupyter.agent.toolbox import builtin_tools
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks, hard links and O_NOFOLLOW walks are POSIX")

OUTSIDE = "OUTSIDE-CONTENT-do-not-show"


def _tools(project, names=("read", "ls", "grep", "find", "write", "edit")):
    tools = builtin_tools(list(names), cwd=str(project), policy=Policy(root=str(project)))
    return {t.name: t for t in tools}


def _ctx(cwd) -> ToolContext:
    return ToolContext(tool_call_id="c", signal=AbortSignal(), cwd=str(cwd))


@pytest.fixture
def layout(tmp_path):
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "notes.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text(OUTSIDE + "\n")
    return project, outside


class _Swapper:
    """Swap ``proj/sub`` between the real folder and a symlink to the outside folder, in a loop."""

    def __init__(self, project, outside) -> None:
        self.sub = project / "sub"
        self.parked = project / ".sub-parked"
        self.outside = outside
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        # a write may make a fresh "sub" in a gap (it creates missing folders): it is dropped
        while not self.stop.is_set():
            os.rename(self.sub, self.parked)
            while True:
                try:
                    os.symlink(self.outside, self.sub)
                    break
                except FileExistsError:
                    shutil.rmtree(self.sub, ignore_errors=True)
            os.unlink(self.sub)
            while True:
                try:
                    os.rename(self.parked, self.sub)
                    break
                except OSError:
                    shutil.rmtree(self.sub, ignore_errors=True)
            self.swaps += 1
            time.sleep(0.0002)  # the real folder stays a moment, so calls succeed too

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_swapping_a_folder_for_a_symlink_during_reads_never_shows_outside_content(layout):
    project, outside = layout
    tools = _tools(project)

    async def hammer(swapper):
        seen = []
        for i in range(6000):  # at least 600 calls and 200 swaps, however loaded the machine
            if i >= 600 and swapper.swaps >= 200:
                break
            tool, args = [
                (tools["read"], {"path": "sub/notes.txt"}),
                (tools["grep"], {"pattern": "CONTENT|inside", "path": "sub"}),
                (tools["ls"], {"path": "sub"}),
            ][i % 3]
            result = await run_tool(tool, args, _ctx(project))
            seen.append(result.text_content)
        return seen

    with _Swapper(project, outside) as swapper:
        seen = asyncio.run(hammer(swapper))
    assert swapper.swaps >= 200  # the race really ran
    assert not [text for text in seen if "OUTSIDE" in text]
    assert any("inside" in text for text in seen)  # and the tools still worked between swaps


def test_swapping_a_folder_for_a_symlink_during_writes_never_touches_the_outside(layout):
    project, outside = layout
    tools = _tools(project)

    async def hammer(swapper):
        for i in range(4000):
            if i >= 400 and swapper.swaps >= 200:
                break
            if i % 2:
                await run_tool(tools["write"], {"path": "sub/notes.txt", "content": f"written {i}\n"}, _ctx(project))
            else:
                edit = {"path": "sub/notes.txt", "edits": [{"oldText": "written", "newText": "edited"}]}
                await run_tool(tools["edit"], edit, _ctx(project))
            await run_tool(tools["write"], {"path": "sub/new/deep.txt", "content": "x"}, _ctx(project))

    with _Swapper(project, outside) as swapper:
        asyncio.run(hammer(swapper))
    assert swapper.swaps >= 200
    assert (outside / "notes.txt").read_text() == OUTSIDE + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]


# ------------------------------------------------------------------ hard links


def test_a_write_through_a_hard_link_to_an_outside_file_is_refused(layout):
    project, outside = layout
    os.link(outside / "notes.txt", project / "linked.txt")
    tools = _tools(project)
    for tool, args in (
        (tools["write"], {"path": "linked.txt", "content": "overwritten"}),
        (tools["edit"], {"path": "linked.txt", "edits": [{"oldText": "OUTSIDE", "newText": "changed"}]}),
    ):
        result = asyncio.run(run_tool(tool, args, _ctx(project)))
        assert result.is_error and "hard links" in result.text_content
    assert (outside / "notes.txt").read_text() == OUTSIDE + "\n"


def test_reads_through_a_hard_link_are_allowed_as_documented(layout):
    # A hard link is the project's own file: making it needed write access to the project.
    project, outside = layout
    os.link(outside / "notes.txt", project / "linked.txt")
    result = asyncio.run(run_tool(_tools(project)["read"], {"path": "linked.txt"}, _ctx(project)))
    assert not result.is_error and OUTSIDE in result.text_content


def test_writing_a_new_file_and_an_ordinary_file_still_works(layout):
    project, _ = layout
    tools = _tools(project)
    result = asyncio.run(run_tool(tools["write"], {"path": "a/b/c.txt", "content": "hello"}, _ctx(project)))
    assert not result.is_error and (project / "a/b/c.txt").read_text() == "hello"
    result = asyncio.run(run_tool(tools["write"], {"path": "a/b/c.txt", "content": "hi"}, _ctx(project)))
    assert (project / "a/b/c.txt").read_text() == "hi"


# ------------------------------------------------------------------ odd files


def test_a_fifo_or_a_device_is_refused_at_once_not_read_forever(layout):
    project, _ = layout
    os.mkfifo(project / "pipe")
    os.symlink("/dev/zero", project / "zero")
    tools = _tools(project)
    result = asyncio.run(asyncio.wait_for(run_tool(tools["read"], {"path": "pipe"}, _ctx(project)), 10))
    assert result.is_error and "not a regular file" in result.text_content
    result = asyncio.run(asyncio.wait_for(run_tool(tools["grep"], {"pattern": "x"}, _ctx(project)), 10))
    assert result.text_content == "No matches found"
    result = asyncio.run(asyncio.wait_for(run_tool(tools["write"], {"path": "pipe", "content": "x"}, _ctx(project)), 10))
    assert result.is_error and "not a regular file" in result.text_content


# ------------------------------------------------------------------ look-alike folders


def test_a_sibling_folder_whose_name_starts_with_the_root_is_outside(tmp_path):
    # /x/proj-evil starts with the string /x/proj: a string-prefix check would let it in
    project = tmp_path / "proj"
    project.mkdir()
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    (evil / "secret.txt").write_text(OUTSIDE)
    policy = Policy(root=str(project))
    for path in (str(evil / "secret.txt"), "../proj-evil/secret.txt", str(evil)):
        for access in ("read", "write"):
            with pytest.raises(PathNotAllowed):
                policy.check_path(path, cwd=str(project), access=access)
    tools = _tools(project)
    for tool, args in (
        (tools["read"], {"path": "../proj-evil/secret.txt"}),
        (tools["write"], {"path": "../proj-evil/secret.txt", "content": "x"}),
        (tools["ls"], {"path": "../proj-evil"}),
    ):
        result = asyncio.run(run_tool(tool, args, _ctx(project)))
        assert result.is_error and "outside the project root" in result.text_content
    assert (evil / "secret.txt").read_text() == OUTSIDE
    # the same trick against an allowed path
    (tmp_path / "data").mkdir()
    (tmp_path / "data-private").mkdir()
    policy = Policy(root=str(project), allow_paths=["../data"])
    assert policy.check_path("../data/x.csv", cwd=str(project))
    with pytest.raises(PathNotAllowed):
        policy.check_path("../data-private/x.csv", cwd=str(project))


# ------------------------------------------------------------------ skills


def test_a_project_skill_linking_out_of_the_project_does_not_open_the_outside_folder(tmp_path, monkeypatch):
    home, project = tmp_path / "home", tmp_path / "proj"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\ndescription: a trap\n---\nread me\n")
    (outside / "id_rsa").write_text(OUTSIDE)
    (project / ".pi" / "skills").mkdir(parents=True)
    os.symlink(outside, project / ".pi" / "skills" / "evil")
    # a user's own skill may link to where it is developed: only the user writes in ~/.pi
    dev = tmp_path / "checkout" / "plots"
    dev.mkdir(parents=True)
    (dev / "SKILL.md").write_text("---\ndescription: plots\n---\nhow to plot\n")
    (home / ".pi" / "agent" / "skills").mkdir(parents=True)
    os.symlink(dev, home / ".pi" / "agent" / "skills" / "plots")
    read = _tools(project, ["read"])["read"]
    for path in (".pi/skills/evil/id_rsa", str(outside / "id_rsa"), str(outside / "SKILL.md")):
        result = asyncio.run(run_tool(read, {"path": path}, _ctx(project)))
        assert result.is_error and "outside the project root" in result.text_content
    result = asyncio.run(run_tool(read, {"path": str(dev / "SKILL.md")}, _ctx(project)))
    assert not result.is_error and "how to plot" in result.text_content


def test_a_file_where_a_folder_should_be_is_reported_as_such(layout):
    project, _ = layout
    result = asyncio.run(run_tool(_tools(project)["write"], {"path": "sub/notes.txt/x.txt", "content": "x"}, _ctx(project)))
    assert result.is_error and "Not a directory" in result.text_content and "symlink" not in result.text_content


class _SwapAfterCheck(Policy):
    """A policy whose every check is followed at once by the attacker's move: the checked folder becomes a link out."""

    outside: ClassVar[str] = ""

    def check_path(self, path, **kwargs):
        real = super().check_path(path, **kwargs)
        sub = os.path.join(self.root, "sub")
        if not os.path.islink(sub):
            os.rename(sub, os.path.join(self.root, ".sub-parked"))
            os.symlink(self.outside, sub)
        return real


def test_a_folder_swapped_right_after_every_check_is_never_followed(layout, monkeypatch):
    project, outside = layout
    monkeypatch.setattr(_SwapAfterCheck, "outside", str(outside))
    policy = _SwapAfterCheck(root=str(project))
    tools = {t.name: t for t in builtin_tools(["read", "ls", "grep", "write", "edit"], cwd=str(project), policy=policy)}
    calls = [
        (tools["read"], {"path": "sub/notes.txt"}),
        (tools["ls"], {"path": "sub"}),
        (tools["grep"], {"pattern": "CONTENT", "path": "sub"}),
        (tools["write"], {"path": "sub/notes.txt", "content": "overwritten"}),
        (tools["write"], {"path": "sub/new.txt", "content": "planted"}),
        (tools["edit"], {"path": "sub/notes.txt", "edits": [{"oldText": "OUTSIDE", "newText": "changed"}]}),
    ]
    for tool, args in calls:
        if os.path.islink(project / "sub"):  # put the real folder back for the next call
            os.unlink(project / "sub")
            os.rename(project / ".sub-parked", project / "sub")
        result = asyncio.run(run_tool(tool, args, _ctx(project)))
        assert "OUTSIDE" not in result.text_content, tool.name
        if tool.name == "grep":  # a folder that turned into a link is not searched
            assert result.text_content == "No matches found"
        else:
            assert result.is_error and "changed while it was being opened" in result.text_content, (tool.name, result.text_content)
    assert (outside / "notes.txt").read_text() == OUTSIDE + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]
