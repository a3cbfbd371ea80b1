"""``grep`` under a symlink that keeps changing what it points at (issue 29): no descriptor is left open, no search fails.

A link inside the project flips between a file and a folder (both inside, both allowed) while
``grep`` walks the project: the walk sees a link to a file, and by the time it is opened it
leads to a folder. The descriptor opened on that folder must be closed, and the search must
go on with the other files. The process's open descriptors are counted before and after.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import time

import pytest

from pi_jupyter.agent.policy import Policy
from pi_jupyter.agent.toolbox import builtin_tools
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd") or sys.platform == "win32", reason="counts descriptors in /proc")


def open_fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def test_a_link_flipping_between_a_file_and_a_folder_leaks_no_descriptor(tmp_path):
    project = tmp_path / "proj"
    (project / "folder").mkdir(parents=True)
    (project / "file.txt").write_text("needle in the file\n")
    (project / "other.txt").write_text("needle elsewhere\n")
    links = [project / f"flip{n}.txt" for n in range(16)]  # many links: many chances per walk
    for link in links:
        os.symlink("file.txt", link)
    (grep,) = builtin_tools(["grep"], cwd=str(project), policy=Policy(root=str(project)))
    stop = threading.Event()
    flips = [0]

    def flipper() -> None:
        tmp = project / ".flip-tmp"
        while not stop.is_set():
            for target in ("folder", "file.txt"):
                for link in links:
                    os.symlink(target, tmp)
                    os.replace(tmp, link)  # atomic: the link always exists
            flips[0] += 1
            time.sleep(0)  # lets the searching thread run: the race is between the two

    async def hammer() -> list[tuple[str, str]]:
        out = []
        for i in range(6000):
            if i >= 600 and flips[0] >= 100:
                break
            path = "flip0.txt" if i % 2 else "."  # the link itself: checked as a file, opened a moment later
            ctx = ToolContext(tool_call_id="g", signal=AbortSignal(), cwd=str(project))
            result = await run_tool(grep, {"pattern": "needle", "path": path}, ctx)
            out.append((path, result.text_content))
        return out

    asyncio.run(hammer())  # warm up: imports and caches open what they keep open
    before = open_fds()
    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    try:
        seen = asyncio.run(hammer())
    finally:
        stop.set()
        thread.join()
    assert flips[0] >= 100  # the race really ran
    assert open_fds() == before
    whole = [text for path, text in seen if path == "."]
    assert all("other.txt:1: needle elsewhere" in text for text in whole), [t for t in whole if "other.txt" not in t][:3]
    alone = {text for path, text in seen if path == "flip0.txt"}
    assert alone <= {"file.txt:1: needle in the file", "No matches found"}, alone  # a file, or an empty folder: never an error
