"""Project context, skills and the system prompt, found and assembled as pi does (pi-design §8).

>>> from pi_jupyter.resources import load_resources
>>> res = load_resources(".")                # doctest: +SKIP
>>> res.context_files, res.skills, res.skill_diagnostics   # doctest: +SKIP
>>> print(res.build_system_prompt(tools))    # doctest: +SKIP
"""

from .context import (
    CONFIG_DIR_NAME,
    CONTEXT_FILE_NAMES,
    ContextFile,
    discover_append_system_prompt_file,
    discover_system_prompt_file,
    load_context_file_from_dir,
    load_project_context_files,
    resolve_prompt_input,
)
from .frontmatter import FrontmatterError, parse_frontmatter, strip_frontmatter
from .ignore import IgnoreMatcher, compile_glob, find_git_root
from .loader import LoadOptions, Resources, load_resources
from .skills import (
    Skill,
    SkillDiagnostic,
    SkillsResult,
    collect_skill_files,
    expand_skill_command,
    format_skills_for_prompt,
    load_skill_file,
    load_skills,
    skill_roots,
)
from .system_prompt import DEFAULT_INTRO, PromptTool, build_system_prompt

__all__ = [
    "CONFIG_DIR_NAME",
    "CONTEXT_FILE_NAMES",
    "DEFAULT_INTRO",
    "ContextFile",
    "FrontmatterError",
    "IgnoreMatcher",
    "LoadOptions",
    "PromptTool",
    "Resources",
    "Skill",
    "SkillDiagnostic",
    "SkillsResult",
    "build_system_prompt",
    "collect_skill_files",
    "compile_glob",
    "discover_append_system_prompt_file",
    "discover_system_prompt_file",
    "expand_skill_command",
    "find_git_root",
    "format_skills_for_prompt",
    "load_context_file_from_dir",
    "load_project_context_files",
    "load_resources",
    "load_skill_file",
    "load_skills",
    "parse_frontmatter",
    "resolve_prompt_input",
    "skill_roots",
    "strip_frontmatter",
]
