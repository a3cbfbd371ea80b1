"""The registry of builtin tools: names, sets, schemas the model sees, and redaction of every result."""

from __future__ import annotations

import asyncio
import json

import pytest

from pi_jupyter.agent.policy import Policy
from pi_jupyter.agent.toolbox import DEFAULT_TOOLS, KNOWN_TOOLS, TOOL_SETS, builtin_tools, resolve_tool_names
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal

KEY = "sk-ant-api03-" + "Z" * 40


def test_names_sets_and_one_liners():
    assert list(KNOWN_TOOLS) == ["read", "ls", "grep", "find", "write", "edit", "bash", "python", "notebook"]
    assert all(KNOWN_TOOLS.values())
    assert DEFAULT_TOOLS == ("read", "ls", "grep", "find", "python", "notebook")
    assert TOOL_SETS["coding"] == ("read", "bash", "edit", "write")  # pi's default set
    assert resolve_tool_names(None) == list(DEFAULT_TOOLS)
    assert resolve_tool_names("read, bash") == ["read", "bash"]
    assert resolve_tool_names(["readonly", "python", "read"]) == ["read", "ls", "grep", "find", "notebook", "python"]
    assert resolve_tool_names("none") == []
    with pytest.raises(ValueError, match="unknown tool 'rm'.*builtin tools are read, ls"):
        resolve_tool_names("read,rm")


def test_instances_share_cwd_and_policy_and_mark_mutating_tools(tmp_path):
    policy = Policy(root=str(tmp_path))
    tools = builtin_tools("all", cwd=tmp_path, policy=policy, namespace={})
    assert [t.name for t in tools] == list(KNOWN_TOOLS)
    assert all(t.policy is policy and t.cwd == str(tmp_path) for t in tools)
    assert {t.name for t in tools if t.mutating} == {"write", "edit", "bash", "python"}
    assert all(t.prompt_snippet for t in tools)


def test_schemas_use_pis_argument_names_and_no_refs():
    specs = {t.name: t.spec() for t in builtin_tools("all", namespace={})}
    props = {name: set(spec.parameters["properties"]) for name, spec in specs.items()}
    assert props == {
        "read": {"path", "offset", "limit"},
        "ls": {"path", "limit"},
        "grep": {"pattern", "path", "glob", "ignoreCase", "literal", "context", "limit"},
        "find": {"pattern", "path", "limit"},
        "write": {"path", "content"},
        "edit": {"path", "edits"},
        "bash": {"command", "timeout"},
        "python": {"code", "timeout"},
        "notebook": {"action", "cell", "name", "limit"},
    }
    assert specs["edit"].parameters["properties"]["edits"]["items"]["required"] == ["oldText", "newText"]
    assert "$ref" not in json.dumps([s.parameters for s in specs.values()])
    assert specs["read"].parameters["required"] == ["path"]


def test_every_builtin_tool_result_is_redacted(tmp_path):
    (tmp_path / f"{KEY}.txt").write_text(f"token {KEY}\n")
    (tmp_path / "e.txt").write_text("placeholder\n")
    tools = {t.name: t for t in builtin_tools("all", cwd=tmp_path, namespace={"k": KEY})}
    calls = {
        "read": {"path": f"{KEY}.txt"},
        "ls": {},
        "grep": {"pattern": "token"},
        "find": {"pattern": "sk-*"},
        "write": {"path": f"{KEY}.out", "content": "x"},
        "edit": {"path": "e.txt", "edits": [{"oldText": "placeholder", "newText": KEY}]},
        "bash": {"command": f"echo {KEY}; exit 1"},
        "python": {"code": "print(k)\nk"},
    }
    ctx = ToolContext(tool_call_id="x", signal=AbortSignal(), cwd=str(tmp_path))
    for name, args in calls.items():
        result = asyncio.run(run_tool(tools[name], args, ctx))
        dumped = result.model_dump_json()
        assert KEY not in dumped, name
        assert "[REDACTED:anthropic-key]" in dumped, name


def test_partial_updates_are_redacted_too(tmp_path):
    updates = []
    ctx = ToolContext(tool_call_id="x", signal=AbortSignal(), cwd=str(tmp_path), update=updates.append)
    bash = builtin_tools(["bash"], cwd=tmp_path)[0]
    asyncio.run(run_tool(bash, {"command": f"echo {KEY}; sleep 0.2"}, ctx))
    assert updates and all(KEY not in u.model_dump_json() for u in updates)
    assert any("[REDACTED:anthropic-key]" in u.text_content for u in updates)
