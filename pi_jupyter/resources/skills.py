"""Skills: ``SKILL.md`` files with YAML front matter, found, validated and listed as pi does (pi-design §8.3).

Progressive disclosure: the system prompt lists each skill by name, description and path
only; the model reads the file with the ``read`` tool when a task matches. ``/skill:name
args`` expands to the skill's body explicitly (:func:`expand_skill_command`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from .frontmatter import FrontmatterError, parse_frontmatter, strip_frontmatter
from .ignore import IGNORE_FILE_NAMES, IgnoreMatcher, find_git_root

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "Skill",
    "SkillDiagnostic",
    "SkillSource",
    "SkillsResult",
    "collect_skill_files",
    "escape_xml",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_skill_file",
    "load_skills",
    "skill_roots",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
_NAME_RE = re.compile(r"^[a-z0-9-]+$")

SkillSource = Literal["project", "user", "path"]


class Skill(BaseModel):
    """A loaded skill. ``file_path`` is absolute; ``base_dir`` is its directory."""

    name: str
    description: str
    file_path: str
    base_dir: str
    source: SkillSource = "path"
    disable_model_invocation: bool = False


class SkillDiagnostic(BaseModel):
    """A problem found while loading skills: ``warning`` (the skill may still load), ``error``, or ``collision``."""

    type: Literal["warning", "error", "collision"]
    message: str
    path: str
    winner_path: str | None = None
    """For a collision: the file that kept the name (``path`` is the one skipped)."""

    def __str__(self) -> str:
        extra = f" (kept {self.winner_path})" if self.winner_path else ""
        return f"{self.type}: {self.path}: {self.message}{extra}"


class SkillsResult(BaseModel):
    """Skills in discovery order (first of a name wins) and everything worth telling the user."""

    skills: list[Skill] = []
    diagnostics: list[SkillDiagnostic] = []


def _validate_name(name: str, parent_dir_name: str) -> list[str]:
    errors = []
    if name != parent_dir_name:
        errors.append(f'name "{name}" does not match parent directory "{parent_dir_name}"')
    if len(name) > MAX_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not _NAME_RE.match(name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def load_skill_file(path: str, source: SkillSource = "path") -> tuple[Skill | None, list[SkillDiagnostic]]:
    """Read one skill file: ``(skill or None, diagnostics)``.

    Name and description rule breaks are warnings and the skill still loads; a missing or
    blank description, unreadable file or invalid YAML means it is skipped, with the reason.
    """
    diagnostics: list[SkillDiagnostic] = []

    def warn(message: str) -> None:
        diagnostics.append(SkillDiagnostic(type="warning", message=message, path=path))

    try:
        with open(path, "rb") as fh:
            raw = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        warn(f"could not read skill file: {exc.strerror or exc}")
        return None, diagnostics
    try:
        front, _body = parse_frontmatter(raw)
    except FrontmatterError as exc:
        warn(str(exc))
        return None, diagnostics
    skill_dir = os.path.dirname(path)
    parent_dir_name = os.path.basename(skill_dir)

    description = front.get("description")
    if description is not None and not isinstance(description, str):
        warn(f"description must be a string, got {type(description).__name__}")
        return None, diagnostics
    if not description or not description.strip():
        warn("description is required")
    elif len(description) > MAX_DESCRIPTION_LENGTH:
        warn(f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len(description)})")

    raw_name = front.get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        warn(f"name must be a string, got {type(raw_name).__name__}; using the directory name")
        raw_name = None
    name = raw_name or parent_dir_name  # pi: a falsy name falls back too
    for message in _validate_name(name, parent_dir_name):
        warn(message)

    if not description or not description.strip():
        return None, diagnostics
    return (
        Skill(
            name=name,
            description=description,
            file_path=path,
            base_dir=skill_dir,
            source=source,
            disable_model_invocation=front.get("disable-model-invocation") is True,
        ),
        diagnostics,
    )


def _kind(path: str) -> tuple[bool, bool]:
    """(is_dir, is_file), following symlinks; a broken link is neither."""
    try:
        st = os.stat(path)
    except OSError:
        return False, False
    return stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)


def collect_skill_files(root: str, *, root_md_files: bool = True) -> list[str]:
    """Skill files below ``root`` as pi's ``collectSkillEntries`` finds them.

    A directory holding ``SKILL.md`` is a skill and is not searched further; with
    ``root_md_files`` (pi's ``.pi/skills`` and ``~/.pi/agent/skills``, not ``.agents/skills``)
    the root's own ``.md`` files are skills too. Dot-entries and ``node_modules`` are skipped,
    ``.gitignore``/``.ignore``/``.fdignore`` are honoured, symlinks are followed. Entries are
    visited in byte order of their names, as Node's ``readdirSync`` returns them.
    """
    out: list[str] = []
    if not os.path.isdir(root):
        return out
    visited: set[str] = set()

    def walk(directory: str, rel: str, matcher: IgnoreMatcher) -> None:
        real = os.path.realpath(directory)
        if real in visited:  # a symlink loop
            return
        visited.add(real)
        matcher = matcher.descend(directory, rel)
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        if "SKILL.md" in names:
            full = os.path.join(directory, "SKILL.md")
            child_rel = f"{rel}/SKILL.md" if rel else "SKILL.md"
            _is_dir, is_file = _kind(full)
            if is_file and not matcher.ignored(child_rel, False):
                out.append(full)
                return
        for name in names:
            if name.startswith(".") or name == "node_modules":
                continue
            full = os.path.join(directory, name)
            is_dir, is_file = _kind(full)
            child_rel = f"{rel}/{name}" if rel else name
            if root_md_files and not rel and is_file and name.endswith(".md"):
                if not matcher.ignored(child_rel, False):
                    out.append(full)
                continue
            if not is_dir or matcher.ignored(child_rel, True):
                continue
            walk(full, child_rel, matcher)

    walk(os.path.abspath(root), "", IgnoreMatcher((), "", IGNORE_FILE_NAMES))
    return out


def _ancestor_agents_dirs(cwd: str) -> list[str]:
    """``.agents/skills`` in ``cwd`` and each ancestor up to the git root (the filesystem root outside a repo)."""
    start = os.path.abspath(cwd)
    git_root = find_git_root(start)
    dirs = []
    d = start
    while True:
        dirs.append(os.path.join(d, ".agents", "skills"))
        if git_root and d == git_root:
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return dirs


def skill_roots(cwd: str, agent_dir: str, home: str) -> list[tuple[str, SkillSource, bool]]:
    """pi's auto-discovery roots in order: ``(directory, source, root .md files count)``.

    ``<cwd>/.pi/skills``; ``.agents/skills`` from ``cwd`` up to the git root; then
    ``<agent_dir>/skills``; then ``<home>/.agents/skills``.
    """
    user_agents = os.path.join(home, ".agents", "skills")
    roots: list[tuple[str, SkillSource, bool]] = [(os.path.join(cwd, ".pi", "skills"), "project", True)]
    for d in _ancestor_agents_dirs(cwd):
        if os.path.abspath(d) != os.path.abspath(user_agents):
            roots.append((d, "project", False))
    roots.append((os.path.join(agent_dir, "skills"), "user", True))
    roots.append((user_agents, "user", False))
    return roots


def _expand_user_path(p: str, home: str, cwd: str) -> str:
    text = p.strip()
    if text == "~":
        text = home
    elif text.startswith("~/"):
        text = os.path.join(home, text[2:])
    elif text.startswith("~"):
        text = os.path.join(home, text[1:])
    return os.path.abspath(os.path.join(cwd, text))


def load_skills(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
    skill_paths: Sequence[str | os.PathLike[str]] = (),
    include_defaults: bool = True,
) -> SkillsResult:
    """Discover and load skills: the auto-discovery roots (:func:`skill_roots`) unless
    ``include_defaults`` is false, then the explicit ``skill_paths`` (files or directories;
    ``~`` expands, relative paths are against ``cwd``).

    The first skill of a name wins; later ones give a ``collision`` diagnostic. A file reached
    twice (e.g. through a symlink) is loaded once, silently. Collisions are listed after all
    other diagnostics, as pi lists them.
    """
    cwd_s = os.path.abspath(os.fspath(cwd))
    agent_s = os.path.abspath(os.fspath(agent_dir))
    home_s = os.path.abspath(os.fspath(home)) if home is not None else os.path.expanduser("~")

    candidates: list[tuple[str, SkillSource]] = []
    diagnostics: list[SkillDiagnostic] = []
    if include_defaults:
        for root, source, root_md in skill_roots(cwd_s, agent_s, home_s):
            candidates.extend((f, source) for f in collect_skill_files(root, root_md_files=root_md))
    for raw in skill_paths:
        path = _expand_user_path(os.fspath(raw), home_s, cwd_s)
        is_dir, is_file = _kind(path)
        if not is_dir and not is_file:
            kind = "does not exist" if not os.path.lexists(path) else "is not a file or directory"
            diagnostics.append(SkillDiagnostic(type="error", message=f"skill path {kind}", path=path))
        elif is_dir:
            candidates.extend((f, "path") for f in collect_skill_files(path, root_md_files=True))
        elif path.endswith(".md"):
            candidates.append((path, "path"))
        else:
            diagnostics.append(SkillDiagnostic(type="warning", message="skill path is not a markdown file", path=path))

    by_name: dict[str, Skill] = {}
    seen_real: set[str] = set()
    collisions: list[SkillDiagnostic] = []
    for file_path, source in candidates:
        real = os.path.realpath(file_path)
        if real in seen_real:
            continue
        skill, diags = load_skill_file(file_path, source)
        diagnostics.extend(diags)
        if skill is None:
            seen_real.add(real)
            continue
        existing = by_name.get(skill.name)
        if existing is not None:
            collisions.append(
                SkillDiagnostic(
                    type="collision",
                    message=f'name "{skill.name}" collision',
                    path=skill.file_path,
                    winner_path=existing.file_path,
                )
            )
            continue
        by_name[skill.name] = skill
        seen_real.add(real)
    return SkillsResult(skills=list(by_name.values()), diagnostics=diagnostics + collisions)


def escape_xml(text: str) -> str:
    """Escape ``& < > " '`` as pi does for the skills block."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&apos;")


def format_skills_for_prompt(skills: Iterable[Skill]) -> str:
    """The skills block of the system prompt (pi's exact text and XML tags), or ``""``.

    Skills with ``disable-model-invocation: true`` are left out: they are only for ``/skill:name``.
    """
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory"
        " (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines.append("  <skill>")
        lines.append(f"    <name>{escape_xml(skill.name)}</name>")
        lines.append(f"    <description>{escape_xml(skill.description)}</description>")
        lines.append(f"    <location>{escape_xml(skill.file_path)}</location>")
        lines.append("  </skill>")
    lines.append("</available_skills>")
    return "\n".join(lines)


def expand_skill_command(text: str, skills: Iterable[Skill]) -> str:
    """pi's ``/skill:name args`` expansion; any other text (or an unknown skill) is returned unchanged.

    The skill file is read now, so an edit made since loading is used. The result is
    ``<skill name="NAME" location="FILE">\\nReferences are relative to BASEDIR.\\n\\nBODY\\n</skill>``
    followed by ``\\n\\nARGS`` when there are arguments; BODY is the file without front matter,
    trimmed. A file that cannot be read leaves the text unchanged, as in pi.
    """
    if not text.startswith("/skill:"):
        return text
    space = text.find(" ")
    name = text[7:] if space == -1 else text[7:space]
    args = "" if space == -1 else text[space + 1 :].strip()
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    try:
        with open(skill.file_path, "rb") as fh:
            content = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return text
    body = strip_frontmatter(content).strip()
    block = f'<skill name="{skill.name}" location="{skill.file_path}">\nReferences are relative to {skill.base_dir}.\n\n{body}\n</skill>'
    return f"{block}\n\n{args}" if args else block
