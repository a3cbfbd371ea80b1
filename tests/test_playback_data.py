"""The exported page's player data: each entry's recorded times, its kind, its tool results, and the branch points."""

from __future__ import annotations

import re

from pi_jupyter.views.export.page import script_json
from pi_jupyter.views.export.playback import playback_data, playback_tags


def _entries():
    return [
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-12-08T22:41:05.306Z",
         "message": {"role": "user", "content": "Read it.", "timestamp": 1765233665292}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2025-12-08T22:41:09.389Z",
         "message": {"role": "assistant", "timestamp": 1765233665294, "stopReason": "toolUse", "content": [
             {"type": "toolCall", "id": "t-1", "name": "read", "arguments": {}},
             {"type": "toolCall", "id": "t-2", "name": "read", "arguments": {}}]}},
        {"type": "message", "id": "r2", "parentId": "a1", "timestamp": "2025-12-08T22:41:09.394Z",
         "message": {"role": "toolResult", "toolCallId": "t-2", "content": []}},
        {"type": "message", "id": "b1", "parentId": "u1", "timestamp": "not a time",
         "message": {"role": "assistant", "timestamp": "soon", "content": []}},
        {"type": "label", "id": "l1", "parentId": "a1", "timestamp": "2025-12-08T22:41:10.000Z", "targetId": "a1", "label": "x"},
    ]  # fmt: skip


def test_times_kinds_results_and_branch_points_come_from_the_file():
    data = playback_data(_entries())
    t = data["times"]
    # an answer runs from its request (the message's own timestamp) to its entry's timestamp (when it was written)
    assert t["a1"][:4] == [1765233665294, 1765233669389, "a", "u1"]
    assert t["a1"][4] == [None, "r2"]  # the results of its two calls, in order (the first never came)
    assert t["u1"] == [1765233665306, 1765233665306, "u", None]
    assert t["r2"][2:] == ["r", "a1"]
    assert t["b1"] == [None, None, "a", "u1"]  # no usable times: the player uses its default pace
    assert t["l1"][2] == "o"
    # u1 has two answers: each sits at a branch point with one other; the label is no branch
    assert data["branchPoints"] == {"a1": 1, "b1": 1}


def test_ids_from_the_file_cannot_end_the_data_script():
    hostile = "</script><script>alert(1)</script><!--"
    tags = playback_tags([{"type": "message", "id": hostile, "parentId": None, "message": {"role": "user", "content": "hi"}}], script_json)
    data = re.search(r'<script type="application/json" id="pi-play">(.*?)</script>', tags, re.S).group(1)
    assert "<" not in data and ">" not in data and "\\u003c/script\\u003e" in data
