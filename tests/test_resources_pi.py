"""Differential check against pi itself: the same tree gives the same skills, diagnostics, context files and prompt text.

Runs only when node and pi 0.73.1 are installed (tests/interop installs pi into
``~/.cache/pi-jupyter``); it never installs anything itself.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pi_jupyter.resources import build_system_prompt, format_skills_for_prompt, load_resources

pytestmark = pytest.mark.interop


def _pi_core(node_modules: Path) -> Path:
    return node_modules / "@mariozechner/pi-coding-agent/dist/core"


SCRIPT = """
import fs from "fs";
const core = process.argv[2];
const { DefaultResourceLoader } = await import(core + "/resource-loader.js");
const { formatSkillsForPrompt } = await import(core + "/skills.js");
const { buildSystemPrompt } = await import(core + "/system-prompt.js");
const { cwd, agentDir, home } = JSON.parse(fs.readFileSync(0, "utf-8"));
process.env.HOME = home;
const loader = new DefaultResourceLoader({ cwd, agentDir });
await loader.reload();
const { skills, diagnostics } = loader.getSkills();
const contextFiles = loader.getAgentsFiles().agentsFiles;
console.log(JSON.stringify({
  skills: skills.map(s => [s.name, s.description, s.filePath, s.baseDir, s.disableModelInvocation]),
  diagnostics: diagnostics.map(d => [d.type, d.path, d.collision ? d.collision.winnerPath : null]),
  context: contextFiles.map(f => [f.path, f.content]),
  append: loader.getAppendSystemPrompt(),
  system: loader.getSystemPrompt() ?? null,
  block: formatSkillsForPrompt(skills),
  custom: buildSystemPrompt({ cwd, customPrompt: "CUSTOM", appendSystemPrompt: "APP", contextFiles, skills }),
}));
"""


def _skill(d: Path, front: str, name: str = "SKILL.md") -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(f"---\n{front}\n---\nbody\n")


def test_same_resources_as_pi(tmp_path, pi_node_modules):
    core = _pi_core(pi_node_modules)
    home, agent, proj = tmp_path / "home", tmp_path / "agent", tmp_path / "proj"
    cwd = proj / "sub"
    (proj / ".git").mkdir(parents=True)
    cwd.mkdir()
    home.mkdir()
    _skill(agent / "skills" / "alpha", 'name: alpha\ndescription: "user <alpha> & it\'s"')
    _skill(cwd / ".agents" / "skills" / "alpha", "description: project alpha")
    _skill(cwd / ".pi" / "skills" / "beta", "description: beta\ndisable-model-invocation: true")
    _skill(cwd / ".pi" / "skills" / "beta" / "nested", "description: not loaded")
    _skill(cwd / ".pi" / "skills" / "ignored", "description: ignored")
    (cwd / ".pi" / "skills" / ".gitignore").write_text("ignored/\n")
    _skill(cwd / ".pi" / "skills", "name: Bad_Name\ndescription: loose", name="loose.md")
    _skill(proj / ".agents" / "skills" / "gamma", "name: gamma")
    _skill(home / ".agents" / "skills" / "zeta", "description: [unclosed")
    _skill(home / ".agents" / "skills" / "Mixed-Dir", "description: " + "d" * 1030)
    (agent / "AGENTS.md").write_text("global\n")
    (proj / "CLAUDE.md").write_text("proj claude\n")
    (cwd / "AGENTS.md").write_text("sub agents\n")
    (cwd / "CLAUDE.md").write_text("shadowed\n")
    (cwd / ".pi" / "APPEND_SYSTEM.md").write_text("APPENDED\n")
    script = tmp_path / "resources.mjs"
    script.write_text(SCRIPT)
    payload = json.dumps({"cwd": str(cwd), "agentDir": str(agent), "home": str(home)})
    out = subprocess.run(["node", str(script), str(core)], input=payload, capture_output=True, text=True, check=True, timeout=120)
    pi = json.loads(out.stdout)

    res = load_resources(cwd, agent_dir=agent, home=home)
    assert [[s.name, s.description, s.file_path, s.base_dir, s.disable_model_invocation] for s in res.skills] == pi["skills"]
    assert [[d.type, d.path, d.winner_path] for d in res.skill_diagnostics] == pi["diagnostics"]
    assert [[f.path, f.content] for f in res.context_files] == pi["context"]
    assert res.append_system_prompt == pi["append"] and res.custom_prompt == pi["system"]
    assert format_skills_for_prompt(res.skills) == pi["block"]
    ours = build_system_prompt(
        cwd=res.cwd, custom_prompt="CUSTOM", append_system_prompt="APP", context_files=res.context_files, skills=res.skills
    )
    assert ours == pi["custom"]
