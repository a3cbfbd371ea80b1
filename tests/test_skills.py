"""Skills: front matter, validation, discovery order, collisions, the prompt block and /skill:name."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from pi_jupyter.resources import (
    FrontmatterError,
    Skill,
    expand_skill_command,
    format_skills_for_prompt,
    load_resources,
    load_skill_file,
    load_skills,
    parse_frontmatter,
    strip_frontmatter,
)


def write_skill(directory, front: str, body: str = "Body.\n", name: str = "SKILL.md"):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"---\n{front}\n---\n{body}")
    return path


@pytest.fixture
def t(tmp_path):
    home, agent, repo = tmp_path / "home", tmp_path / "agent", tmp_path / "repo"
    cwd = repo / "pkg"
    for d in (home, agent, cwd):
        d.mkdir(parents=True)
    (repo / ".git").mkdir()
    return SimpleNamespace(tmp=tmp_path, home=home, agent=agent, repo=repo, cwd=cwd)


def load(t, **kw):
    return load_skills(t.cwd, agent_dir=t.agent, home=t.home, **kw)


# -- front matter ----------------------------------------------------------------------


def test_front_matter_split_as_pi_does():
    assert parse_frontmatter("---\r\nname: a\r\n---\r\n\n body \n") == ({"name": "a"}, "body")
    assert parse_frontmatter("no front matter\n") == ({}, "no front matter\n")
    assert parse_frontmatter("---\nname: a\nno end") == ({}, "---\nname: a\nno end")
    assert strip_frontmatter("---\nx: [\n---\nbody") == "body"


def test_yaml_12_scalars_yes_is_a_string_and_dates_stay_strings():
    front, _ = parse_frontmatter("---\ndisable-model-invocation: yes\nwhen: 2024-01-02\nflag: true\n---\n")
    assert front == {"disable-model-invocation": "yes", "when": "2024-01-02", "flag": True}


def test_invalid_or_non_mapping_front_matter_is_an_error():
    with pytest.raises(FrontmatterError, match="invalid YAML"):
        parse_frontmatter("---\ndescription: [unclosed\n---\n")
    with pytest.raises(FrontmatterError, match="must be a YAML mapping"):
        parse_frontmatter("---\n- a\n- b\n---\n")


# -- validation ------------------------------------------------------------------------


def test_rule_breaks_are_warnings_and_the_skill_still_loads(tmp_path):
    path = write_skill(tmp_path / "my-skill", f"name: Bad--Name-\ndescription: {'d' * 1100}")
    skill, diags = load_skill_file(str(path))
    assert skill is not None and skill.name == "Bad--Name-"
    messages = [d.message for d in diags]
    assert messages == [
        "description exceeds 1024 characters (1100)",
        'name "Bad--Name-" does not match parent directory "my-skill"',
        "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
        "name must not start or end with a hyphen",
        "name must not contain consecutive hyphens",
    ]
    long_name = "a" * 70
    skill, diags = load_skill_file(str(write_skill(tmp_path / long_name, "description: d")))
    assert skill is not None and any("exceeds 64 characters (70)" in d.message for d in diags)


def test_missing_description_or_bad_yaml_skips_the_skill_with_the_reason(tmp_path):
    skill, diags = load_skill_file(str(write_skill(tmp_path / "a", "name: a\ndescription: '   '")))
    assert skill is None and [d.message for d in diags] == ["description is required"]
    skill, diags = load_skill_file(str(write_skill(tmp_path / "b", "description: [oops")))
    assert skill is None and diags[0].type == "warning" and "invalid YAML" in diags[0].message
    skill, diags = load_skill_file(str(write_skill(tmp_path / "c", "description: 42")))
    assert skill is None and "description must be a string" in diags[0].message


def test_name_defaults_to_the_directory_and_disable_needs_boolean_true(tmp_path):
    skill, diags = load_skill_file(str(write_skill(tmp_path / "csv-tools", "name: ''\ndescription: d\ndisable-model-invocation: yes")))
    assert skill.name == "csv-tools" and diags == [] and skill.disable_model_invocation is False
    skill, _ = load_skill_file(str(write_skill(tmp_path / "x", "description: d\ndisable-model-invocation: true")))
    assert skill.disable_model_invocation is True and skill.base_dir == str(tmp_path / "x")


# -- discovery -------------------------------------------------------------------------


def test_discovery_order_and_first_name_wins(t):
    proj_pi = write_skill(t.cwd / ".pi" / "skills" / "alpha", "description: project pi alpha")
    write_skill(t.cwd / ".agents" / "skills" / "alpha", "description: cwd agents alpha")
    repo_agents = write_skill(t.repo / ".agents" / "skills" / "beta", "description: repo beta")
    write_skill(t.tmp / ".agents" / "skills" / "above-git-root", "description: not searched")
    user_pi = write_skill(t.agent / "skills" / "gamma", "description: user gamma")
    write_skill(t.agent / "skills" / "beta", "description: user beta")
    user_agents = write_skill(t.home / ".agents" / "skills" / "delta", "description: user agents delta")
    result = load(t)
    assert [(s.name, s.file_path, s.source) for s in result.skills] == [
        ("alpha", str(proj_pi), "project"),
        ("beta", str(repo_agents), "project"),
        ("gamma", str(user_pi), "user"),
        ("delta", str(user_agents), "user"),
    ]
    collisions = [d for d in result.diagnostics if d.type == "collision"]
    assert [(d.message, d.winner_path) for d in collisions] == [
        ('name "alpha" collision', str(proj_pi)),
        ('name "beta" collision', str(repo_agents)),
    ]
    assert result.diagnostics[-len(collisions) :] == collisions  # collisions come last


def test_without_a_git_repo_agents_dirs_are_searched_up_to_the_filesystem_root(tmp_path):
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    top = write_skill(tmp_path / ".agents" / "skills" / "top", "description: from an ancestor")
    result = load_skills(cwd, agent_dir=tmp_path / "agent", home=tmp_path / "home")
    assert str(top) in [s.file_path for s in result.skills]


def test_root_md_files_count_in_pi_dirs_only_and_a_skill_dir_is_not_searched_further(t):
    pi_root = t.cwd / ".pi" / "skills"
    loose = write_skill(pi_root, "name: loose\ndescription: loose file", name="loose.md")
    outer = write_skill(pi_root / "outer", "description: outer")
    write_skill(pi_root / "outer" / "inner", "description: inner is not loaded")
    deep = write_skill(pi_root / "group" / "deep", "description: found below a plain folder")
    write_skill(t.cwd / ".agents" / "skills", "name: agents-loose\ndescription: not a skill here", name="notes.md")
    names = {s.name: s.file_path for s in load(t).skills}
    assert names == {"loose": str(loose), "outer": str(outer), "deep": str(deep)}


def test_dot_entries_node_modules_and_ignore_files_are_skipped(t):
    root = t.agent / "skills"
    write_skill(root / ".hidden", "description: hidden")
    write_skill(root / "node_modules" / "pkg", "description: dependency")
    write_skill(root / "drafts" / "wip", "description: ignored by .gitignore")
    write_skill(root / "tmp-x", "description: ignored by .ignore")
    keep = write_skill(root / "keep", "description: kept")
    (root / ".gitignore").write_text("# comment\ndrafts/\n")
    (root / ".ignore").write_text("tmp-*\n")
    assert [s.file_path for s in load(t).skills] == [str(keep)]


def test_symlinks_are_followed_and_the_same_file_loads_once(t):
    real = write_skill(t.tmp / "shared" / "plot", "description: plotting")
    (t.agent / "skills").mkdir()
    os.symlink(t.tmp / "shared" / "plot", t.agent / "skills" / "plot")
    os.symlink(t.tmp / "shared" / "plot", t.agent / "skills" / "plot-again")
    (t.agent / "skills" / "broken").symlink_to(t.tmp / "missing")
    result = load(t, skill_paths=[str(real)])
    assert [s.name for s in result.skills] == ["plot"] and result.skills[0].file_path == str(t.agent / "skills" / "plot" / "SKILL.md")
    assert [d for d in result.diagnostics if d.type == "collision"] == []


def test_explicit_paths_load_last_and_bad_ones_are_reported(t):
    write_skill(t.agent / "skills" / "same", "description: discovered")
    extra = write_skill(t.tmp / "extra" / "same", "description: explicit, collides")
    single = write_skill(t.tmp / "one", "name: one\ndescription: one file", name="one.md")
    (t.tmp / "notes.txt").write_text("x")
    result = load(t, skill_paths=[str(t.tmp / "extra"), str(single), "~/nope", str(t.tmp / "notes.txt")])
    assert [s.name for s in result.skills] == ["same", "one"]
    by_type = {(d.type, d.message, d.path) for d in result.diagnostics}
    assert ("error", "skill path does not exist", str(t.home / "nope")) in by_type
    assert ("warning", "skill path is not a markdown file", str(t.tmp / "notes.txt")) in by_type
    assert ("collision", 'name "same" collision', str(extra)) in by_type


def test_no_skills_turns_discovery_off_but_explicit_paths_still_load(t):
    write_skill(t.agent / "skills" / "found", "description: discovered")
    explicit = write_skill(t.tmp / "mine", "description: explicit")
    res = load_resources(t.cwd, agent_dir=t.agent, home=t.home, no_skills=True, skill_paths=[str(explicit.parent)])
    assert [s.name for s in res.skills] == ["mine"]
    assert load_resources(t.cwd, agent_dir=t.agent, home=t.home, no_skills=True).skills == []


# -- prompt block and explicit invocation ----------------------------------------------


def test_prompt_block_exact_text_escaping_and_hidden_skills():
    skills = [
        Skill(name="a&b", description="Use <this> for \"x\" & 'y'", file_path="/s/a/SKILL.md", base_dir="/s/a"),
        Skill(name="hidden", description="d", file_path="/s/h/SKILL.md", base_dir="/s/h", disable_model_invocation=True),
    ]
    assert format_skills_for_prompt(skills) == (
        "\n\nThe following skills provide specialized instructions for specific tasks.\n"
        "Use the read tool to load a skill's file when the task matches its description.\n"
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname"
        " of the path) and use that absolute path in tool commands.\n"
        "\n"
        "<available_skills>\n"
        "  <skill>\n"
        "    <name>a&amp;b</name>\n"
        "    <description>Use &lt;this&gt; for &quot;x&quot; &amp; &apos;y&apos;</description>\n"
        "    <location>/s/a/SKILL.md</location>\n"
        "  </skill>\n"
        "</available_skills>"
    )
    assert format_skills_for_prompt(skills[1:]) == ""


def test_prompt_lists_name_description_and_path_only_not_the_body(t):
    write_skill(t.agent / "skills" / "plot", "description: Plot a dataframe", body="SECRET BODY TEXT\n")
    res = load_resources(t.cwd, agent_dir=t.agent, home=t.home)
    prompt = res.build_system_prompt(["read"])
    assert "<name>plot</name>" in prompt and "Plot a dataframe" in prompt and str(t.agent / "skills" / "plot" / "SKILL.md") in prompt
    assert "SECRET BODY TEXT" not in prompt


def test_skill_command_expansion_is_pis_exact_string(t):
    path = write_skill(t.agent / "skills" / "plot", "description: d", body="\n  Step 1.\n  Step 2.\n\n")
    res = load_resources(t.cwd, agent_dir=t.agent, home=t.home)
    base = str(path.parent)
    block = f'<skill name="plot" location="{path}">\nReferences are relative to {base}.\n\nStep 1.\n  Step 2.\n</skill>'
    assert res.expand_skill_command("/skill:plot") == block
    assert res.expand_skill_command("/skill:plot   sales by month  ") == f"{block}\n\nsales by month"
    assert res.expand_skill_command("/skill:unknown args") == "/skill:unknown args"
    assert res.expand_skill_command("please /skill:plot") == "please /skill:plot"
    path.write_text("---\ndescription: d\n---\nEdited since loading.")
    assert "Edited since loading." in expand_skill_command("/skill:plot", res.skills)
    path.unlink()
    assert expand_skill_command("/skill:plot x", res.skills) == "/skill:plot x"
