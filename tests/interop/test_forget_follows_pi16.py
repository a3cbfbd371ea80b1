"""pi 1.6 reads a file where a forget followed its entry onto another branch: the same context, no secret.

The user forgets a message on one branch, checks out a node from before the edit and goes on
(``tests/test_forget_follows.py``); the record then carries a copy of the edit on the new branch.
pi 1.6, which applies only the edits on a path, resumes the file with the same context as ours,
and the request its own adapter builds from it does not hold the forgotten text either.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pi_jupyter import Agent, Session

from .test_pi16_interop import _model, pi16  # noqa: F401 - pi 1.6 through node
from .test_session_interop import assert_same, ours

pytestmark = pytest.mark.interop

SECRET = "the vault code is SWORDFISH-93"


def test_pi16_resumes_a_branch_that_took_a_forget_from_another(pi16, tmp_path):  # noqa: F811
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off")
    asyncio.run(agent.prompt("hello"))
    asyncio.run(agent.prompt(SECRET))
    before_edit = agent.session.leaf_id
    asyncio.run(agent.prompt("and then?"))
    secret_id = agent.session.branch_ids()[-4]  # the user message holding the secret (then its echo, then a turn)
    assert SECRET in json.dumps(agent.session.raw_entry(secret_id))
    agent.edit_context(secret_id, None)
    agent.edit_context(agent.session.child_ids(secret_id)[0], "(echo)")  # the echo repeats it
    asyncio.run(agent.checkout(before_edit))  # a node from before the edits
    asyncio.run(agent.prompt("go on from there"))
    path = Path(agent.session.path)
    [pi] = pi16("pi_session_oracle.mjs", [{"op": "context", "file": str(path)}])
    assert_same(ours(path, pi["leafId"]), pi, "a branch that took the edits of another")
    assert "SWORDFISH" not in json.dumps(pi["messages"])
    [request] = pi16("pi_request_oracle.mjs", [{"file": str(path), "api": "openai-completions", "model": _model("openai-completions")}])
    assert "SWORDFISH" not in json.dumps(request["body"])
