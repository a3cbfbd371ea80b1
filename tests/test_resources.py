"""Context files, SYSTEM.md / APPEND_SYSTEM.md and the system prompt, as pi finds and lays them out."""

from __future__ import annotations

import datetime as dt
import os
from types import SimpleNamespace

import pytest

from pi_jupyter.agent.toolbox import builtin_tools
from pi_jupyter.resources import (
    ContextFile,
    build_system_prompt,
    load_project_context_files,
    load_resources,
)


@pytest.fixture
def tree(tmp_path):
    """agent/ (global), home/, and a project proj/sub with context files at several levels."""
    agent = tmp_path / "agent"
    home = tmp_path / "home"
    sub = tmp_path / "proj" / "sub"
    for d in (agent, home, sub):
        d.mkdir(parents=True)
    return SimpleNamespace(root=tmp_path, agent=agent, home=home, proj=tmp_path / "proj", sub=sub)


def load(t, **kw):
    return load_resources(t.sub, agent_dir=t.agent, home=t.home, **kw)


def test_global_file_first_then_ancestors_outermost_first_one_per_directory(tree):
    (tree.agent / "AGENTS.md").write_text("global")
    (tree.root / "CLAUDE.md").write_text("top claude")
    (tree.proj / "AGENTS.md").write_text("proj agents")
    (tree.proj / "CLAUDE.md").write_text("proj claude, shadowed by AGENTS.md")
    (tree.sub / "CLAUDE.md").write_text("sub claude")
    files = load(tree).context_files
    assert [(f.path, f.content) for f in files] == [
        (str(tree.agent / "AGENTS.md"), "global"),
        (str(tree.root / "CLAUDE.md"), "top claude"),
        (str(tree.proj / "AGENTS.md"), "proj agents"),
        (str(tree.sub / "CLAUDE.md"), "sub claude"),
    ]


def test_an_unreadable_candidate_warns_and_the_next_one_is_used(tree):
    (tree.sub / "AGENTS.md").mkdir()  # exists, cannot be read as a file
    (tree.sub / "CLAUDE.md").write_text("fallback")
    warnings: list[str] = []
    files = load_project_context_files(tree.sub, tree.agent, warnings)
    assert [f.content for f in files] == ["fallback"]
    assert len(warnings) == 1 and "AGENTS.md" in warnings[0]


def test_no_context_files_option_and_invalid_utf8_is_replaced(tree):
    (tree.sub / "AGENTS.md").write_bytes(b"caf\xe9")
    assert load(tree).context_files[0].content == "caf\ufffd"
    assert load(tree, no_context_files=True).context_files == []


def test_system_md_replaces_and_append_system_md_appends_project_first(tree):
    (tree.agent / "SYSTEM.md").write_text("GLOBAL SYSTEM")
    (tree.agent / "APPEND_SYSTEM.md").write_text("GLOBAL APPEND")
    res = load(tree)
    assert res.custom_prompt == "GLOBAL SYSTEM" and res.append_system_prompt == ["GLOBAL APPEND"]
    (tree.sub / ".pi").mkdir()
    (tree.sub / ".pi" / "SYSTEM.md").write_text("PROJECT SYSTEM")
    (tree.sub / ".pi" / "APPEND_SYSTEM.md").write_text("PROJECT APPEND")
    res = res.reload()
    assert res.custom_prompt == "PROJECT SYSTEM" and res.system_prompt_path == str(tree.sub / ".pi" / "SYSTEM.md")
    assert res.append_system_prompt == ["PROJECT APPEND"]
    prompt = res.build_system_prompt(date="2026-05-01")
    assert prompt.startswith("PROJECT SYSTEM\n\nPROJECT APPEND\nCurrent date: 2026-05-01")
    assert "Available tools:" not in prompt


def test_explicit_prompts_are_files_if_they_exist_else_literal_text(tree):
    f = tree.root / "extra.md"
    f.write_text("FROM FILE")
    res = load(tree, system_prompt="Literal system", append_system_prompt=[str(f), "literal append"])
    assert res.custom_prompt == "Literal system" and res.system_prompt_path is None
    assert res.append_system_prompt == ["FROM FILE", "literal append"] and res.append_system_prompt_paths == [str(f)]
    assert "Literal system\n\nFROM FILE\n\nliteral append\n" in res.build_system_prompt()


def test_default_prompt_layout_with_pi_headings(tree):
    (tree.sub / "AGENTS.md").write_text("Use tabs.")
    res = load(tree, append_system_prompt="Extra rule.")
    tools = builtin_tools(["read", "bash", "grep", "python"], cwd=tree.sub, namespace={})
    prompt = res.build_system_prompt(tools, date=dt.date(2026, 3, 4))
    intro, rest = prompt.split("\n\nAvailable tools:\n", 1)
    assert "Jupyter notebook via pi-jupyter" in intro and "pi, a coding agent harness" not in intro
    note = "In addition to the tools above, you may have access to other custom tools depending on the project."
    tools_part, rest = rest.split(f"\n\n{note}\n\n", 1)
    assert tools_part.splitlines() == [
        "- read: Read file contents",
        "- bash: Execute bash commands (ls, grep, find, etc.)",
        "- grep: Search file contents for patterns (respects .gitignore)",
        "- python: " + tools[3].prompt_snippet,
    ]
    guidelines, rest = rest.split("\n\nExtra rule.", 1)
    lines = guidelines.splitlines()
    assert lines[0] == "Guidelines:"
    assert lines[1] == "- Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)"
    assert "- Use read to examine files instead of cat or sed." in lines
    assert lines[-2:] == ["- Be concise in your responses", "- Show file paths clearly when working with files"]
    assert rest == (
        "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n"
        f"## {tree.sub / 'AGENTS.md'}\n\nUse tabs.\n\n"
        "\nCurrent date: 2026-03-04"
        f"\nCurrent working directory: {tree.sub}"
    )


def test_guidelines_follow_the_active_tools_and_deduplicate():
    bash_only = build_system_prompt(cwd="/p", tools=["bash"], date="2026-01-01")
    assert "- Use bash for file operations like ls, rg, find" in bash_only and "(none)" in bash_only
    tool = SimpleNamespace(name="t", prompt_snippet="multi\n  line   snippet", prompt_guidelines=[" same ", "same", ""])
    prompt = build_system_prompt(cwd="C:\\work\\p", tools=[tool], date="2026-01-01")
    assert "- t: multi line snippet" in prompt
    assert prompt.count("- same\n") == 1
    assert prompt.endswith("Current working directory: C:/work/p")
    assert "Prefer grep/find/ls" not in prompt and "Use bash" not in prompt


def test_skills_block_only_with_read_and_custom_prompt_rules():
    from pi_jupyter.resources import Skill

    skill = Skill(name="s", description="d", file_path="/x/s/SKILL.md", base_dir="/x/s")
    assert "<available_skills>" in build_system_prompt(cwd="/p", tools=["read"], skills=[skill])
    assert "<available_skills>" not in build_system_prompt(cwd="/p", tools=["bash"], skills=[skill])
    assert "<available_skills>" in build_system_prompt(cwd="/p", custom_prompt="C", skills=[skill])  # no tool list
    assert "<available_skills>" not in build_system_prompt(cwd="/p", custom_prompt="C", tools=["bash"], skills=[skill])
    ctx_files = [ContextFile(path="/p/AGENTS.md", content="x")]
    custom = build_system_prompt(cwd="/p", custom_prompt="C", context_files=ctx_files, date="2026-01-01")
    assert custom == (
        "C\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n## /p/AGENTS.md\n\nx\n\n"
        "\nCurrent date: 2026-01-01\nCurrent working directory: /p"
    )


def test_today_is_the_default_date():
    prompt = build_system_prompt(cwd="/p", tools=[])
    assert f"Current date: {dt.date.today().isoformat()}" in prompt


def test_read_paths_cover_skills_and_context_files_outside_the_project(tree):
    skill_dir = tree.agent / "skills" / "plot"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\ndescription: Plot things\n---\nbody\n")
    (tree.agent / "AGENTS.md").write_text("global")
    res = load(tree)
    assert res.read_paths == [str(skill_dir), str(tree.agent / "AGENTS.md")]
    assert os.path.isabs(res.skills[0].file_path)


def test_the_loaded_system_prompt_uses_the_given_tools_and_survives_reload(tree):
    (tree.sub / "AGENTS.md").write_text("Rule one.")
    tools = builtin_tools(["read", "python"], cwd=tree.sub, namespace={})
    res = load(tree, tools=tools)
    assert "- read: Read file contents" in res.system_prompt and "Rule one." in res.system_prompt
    (tree.sub / "AGENTS.md").write_text("Rule two.")
    again = res.reload()
    assert "Rule two." in again.system_prompt and "- python: " in again.system_prompt
    assert res.system_prompt == res.build_system_prompt(tools)
