"""The safety policy: which tools may run, where file tools may reach, and what needs the user's yes.

A :class:`Policy` is checked in two places:

* before a tool call, by the agent loop: ``reason = await policy.check(tool, args, ctx)``;
  a non-``None`` reason blocks the call and becomes the error result the model sees
  (pi's ``beforeToolCall`` returning ``{block: true, reason}``). It refuses tools outside
  ``allowed_tools``, paths outside the root, commands matching a ``deny_commands`` rule,
  and, for tools that need confirmation, asks the user through the confirm callback;
* inside every builtin file tool: paths are resolved (``~``, ``..``, symlinks) and must lie
  inside the root, an ``allow_paths`` entry, or (for reading) a ``read_paths`` entry, the
  folder of a discovered skill, or the folder where tools save full outputs. So a file tool stays confined even when the loop
  does not call :meth:`Policy.check`.

``bash`` and ``python`` run arbitrary code with the user's rights, so no path rule can
confine them; they are gated by ``allowed_tools``, ``deny_commands`` (a tripwire for obvious
attacks such as piping a download into a shell, not a sandbox) and confirmation.
"""

from __future__ import annotations

import inspect
import os
import re
import stat
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "DEFAULT_DENY_COMMANDS",
    "CommandRule",
    "ConfirmCallback",
    "PathNotAllowed",
    "Policy",
    "expand_path",
    "tool_output_dir",
]

ConfirmCallback = Callable[[str, dict[str, Any]], "bool | Awaitable[bool]"]
"""``confirm(tool_name, args) -> bool`` (sync or async): ``True`` lets the call run."""

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


def expand_path(path: str) -> str:
    """pi's ``expandPath``: drop a leading ``@``, turn Unicode spaces into spaces, expand ``~``."""
    text = _UNICODE_SPACES.sub(" ", path[1:] if path.startswith("@") else path)
    if text == "~":
        return os.path.expanduser("~")
    if text.startswith("~/"):
        return os.path.expanduser("~") + text[1:]
    return text


_PRIVATE_FALLBACK: str | None = None


def tool_output_dir() -> str:
    """The folder where tools save full outputs they had to truncate (created on demand, mode 0700).

    File tools may always read inside it, so the model can open the file a notice names. The
    temp folder is shared with other users: if the expected name is taken by a link, a folder
    someone else owns, or is not a folder, a fresh private folder is used instead (one per
    process); a folder of ours that others may open is closed to them first.
    """
    global _PRIVATE_FALLBACK
    path = os.path.join(tempfile.gettempdir(), f"pi-jupyter-{os.getuid() if hasattr(os, 'getuid') else 'user'}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        pass
    if _is_private_dir(path):
        return path
    if _PRIVATE_FALLBACK is None or not _is_private_dir(_PRIVATE_FALLBACK):
        _PRIVATE_FALLBACK = tempfile.mkdtemp(prefix="pi-jupyter-")
    return _PRIVATE_FALLBACK


def _is_private_dir(path: str) -> bool:
    """True for a real folder (not a link) owned by this user and closed to others (closing it if it is ours)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if not hasattr(os, "getuid"):
        return True  # Windows: the user's own temp folder
    if st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError:
            return False
    return True


class PathNotAllowed(PermissionError):
    """A file tool was asked for a path the policy does not allow. The message names the path and the rule."""


class CommandRule(BaseModel):
    """A command the policy refuses: ``pattern`` is a regex searched in bash commands and python code."""

    pattern: str
    reason: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"deny_commands pattern {v!r} is not a valid regex: {exc}") from None
        return v


DEFAULT_DENY_COMMANDS: tuple[CommandRule, ...] = (
    CommandRule(
        pattern=r"\b(?:curl|wget|fetch)\b[^\n|;&]*\|\s*(?:sudo\s+)?(?:env\s+)?(?:ba|z|da|k|fi)?sh\b",
        reason="it downloads a script and pipes it into a shell",
    ),
    CommandRule(
        pattern=r"\b(?:ba|z|da|k)?sh\b[^\n]*(?:<\(|\$\(|`)\s*(?:curl|wget)\b",
        reason="it runs a downloaded script in a shell",
    ),
)
"""Refused by default: running a script fetched from the network (a classic injected instruction)."""

MUTATING_FALLBACK = frozenset({"write", "edit", "bash", "python"})


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Policy(BaseModel):
    """What tools may do.

    * ``allowed_tools``: tool names that may run (``None``: every tool the session was given).
    * ``root``: the project root file tools are confined to (``None``: the tool's working directory).
    * ``allow_paths``: more files or folders file tools may read and write (relative to the root).
    * ``read_paths``: files or folders that may be read but not written (e.g. skills given by
      explicit path: ``Resources.read_paths``).
    * ``read_skills``: the folders of the skills discovered for the working directory (pi's
      places: ``.pi/skills``, ``.agents/skills`` up to the git root, ``~/.pi/agent/skills``,
      ``~/.agents/skills``) may be read, not written; a project skill whose folder links out
      of the project's skills folder does not count (add it to ``read_paths`` if it is trusted). The system prompt lists them and tells
      the model to read a skill's file when a task matches; user skills live outside the project.
    * ``confirm``: which calls need the user's yes: ``"none"``, ``"mutating"`` (tools marked
      ``mutating``: write, edit, bash, python), ``"all"``, or a set of tool names.
    * ``deny_commands``: rules refusing bash commands / python code that match.
    * ``confirm_callback``: ``confirm(tool_name, args) -> bool`` (sync or async), supplied by the
      notebook layer; a ``ctx.extra["confirm"]`` callback is used when this is unset. With no
      callback, a call that needs confirmation is refused (nobody can be asked).

    The default allows every tool given, confines file tools to the working directory, asks
    for nothing, and refuses piping downloads into a shell.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    allowed_tools: list[str] | None = None
    root: str | None = None
    allow_paths: list[str] = []
    read_paths: list[str] = []
    read_skills: bool = True
    confirm: Literal["none", "mutating", "all"] | frozenset[str] = "none"
    deny_commands: list[CommandRule] = Field(default_factory=lambda: list(DEFAULT_DENY_COMMANDS))
    confirm_callback: ConfirmCallback | None = Field(default=None, exclude=True, repr=False)

    @field_validator("confirm", mode="before")
    @classmethod
    def _confirm_set(cls, v: Any) -> Any:
        if isinstance(v, (set, list, tuple)):
            return frozenset(v)
        return v

    # -- tools -----------------------------------------------------------------------

    def is_tool_allowed(self, name: str) -> bool:
        """May a tool called ``name`` run at all?"""
        return self.allowed_tools is None or name in self.allowed_tools

    def filter_tools(self, tools: Iterable[Any]) -> list[Any]:
        """The tools (objects with ``.name``) this policy allows, in order: give only these to the model."""
        return [t for t in tools if self.is_tool_allowed(t.name)]

    def needs_confirmation(self, tool: Any) -> bool:
        """Does a call of ``tool`` (a Tool or a name) need the user's yes?"""
        name = tool if isinstance(tool, str) else tool.name
        if self.confirm == "none":
            return False
        if self.confirm == "all":
            return True
        if self.confirm == "mutating":
            return bool(getattr(tool, "mutating", False)) if not isinstance(tool, str) else name in MUTATING_FALLBACK
        return name in self.confirm

    def with_read_paths(self, *paths: str | os.PathLike[str]) -> Policy:
        """A copy that may also read ``paths`` (e.g. ``policy.with_read_paths(*resources.read_paths)``)."""
        extra = [os.fspath(p) for p in paths if os.fspath(p) not in self.read_paths]
        return self.model_copy(update={"read_paths": [*self.read_paths, *extra]})

    # -- paths -----------------------------------------------------------------------

    def root_dir(self, cwd: str | os.PathLike[str] | None = None) -> str:
        """The resolved project root: ``root`` (relative to ``cwd``), else ``cwd``, else the process's directory."""
        base = os.fspath(cwd) if cwd is not None else os.getcwd()
        root = os.path.join(base, os.path.expanduser(self.root)) if self.root else base
        return os.path.realpath(root)

    def _resolved(self, entries: Sequence[str], root: str) -> list[str]:
        return [os.path.realpath(os.path.join(root, os.path.expanduser(p))) for p in entries]

    def path_violation(
        self, path: str, *, cwd: str | os.PathLike[str] | None = None, access: Literal["read", "write"] = "read"
    ) -> str | None:
        """Why ``path`` may not be used for ``access``, or ``None`` if it may (see :meth:`check_path`)."""
        try:
            self.check_path(path, cwd=cwd, access=access)
        except PathNotAllowed as exc:
            return str(exc)
        return None

    def check_path(self, path: str, *, cwd: str | os.PathLike[str] | None = None, access: Literal["read", "write"] = "read") -> str:
        """Resolve ``path`` (``@``/``~`` expanded, relative to ``cwd``, ``..`` and symlinks resolved)
        and return it if the policy allows ``access`` there; else raise :class:`PathNotAllowed`."""
        base = os.fspath(cwd) if cwd is not None else os.getcwd()
        expanded = expand_path(path)
        absolute = os.path.normpath(os.path.join(base, expanded))
        try:
            real = os.path.realpath(absolute)
        except OSError as exc:  # a component vanished while it was being resolved
            raise PathNotAllowed(f"Path not allowed: {path!r} could not be resolved ({exc.strerror}); it is changing. Try again.") from None
        root = self.root_dir(base)
        if _within(real, root):
            return real
        for allowed in self._resolved(self.allow_paths, root):
            if _within(real, allowed):
                return real
        if access == "read":
            for allowed in [*self._resolved(self.read_paths, root), os.path.realpath(tool_output_dir())]:
                if _within(real, allowed):
                    return real
            if self.read_skills and any(_within(real, d) for d in _skill_dirs(os.path.abspath(base))):
                return real
        via = f" (through a symlink: {absolute})" if real != absolute else ""
        extra = ""
        if self.allow_paths or (access == "read" and self.read_paths):
            names = [*self.allow_paths, *(self.read_paths if access == "read" else [])]
            extra = f" or the allowed paths ({', '.join(names)})"
        raise PathNotAllowed(
            f"Path not allowed: {path!r} resolves to {real}{via}, which is outside the project root {root}{extra}. "
            f"The policy confines file tools ({access}) to the project root; ask the user to allow this path if it is needed."
        )

    # -- the hook ----------------------------------------------------------------------

    def command_violation(self, text: str) -> str | None:
        """The reason a command or code text is refused by ``deny_commands``, or ``None``."""
        for rule in self.deny_commands:
            if re.search(rule.pattern, text):
                return rule.reason
        return None

    async def check(self, tool: Any, args: dict[str, Any], ctx: Any = None) -> str | None:
        """The before-tool-call hook: ``None`` lets the call run, a string is the reason it is blocked.

        ``tool`` is a Tool (or a name), ``args`` the raw arguments, ``ctx`` the
        :class:`~pi_jupyter.agent.tools.ToolContext` (its ``cwd`` and ``extra["confirm"]`` are used).
        Checks, in order: the tool is allowed; path arguments stay inside the root; a command
        or code argument matches no ``deny_commands`` rule; and, if the tool needs
        confirmation, the user says yes. A tool declares its path arguments in ``path_args``
        (``{"path": "read" | "write"}``) and its command argument in ``command_arg``, as the
        builtin tools do; other tools get the allow-list and confirmation checks only.
        """
        name = tool if isinstance(tool, str) else tool.name
        if not self.is_tool_allowed(name):
            allowed = ", ".join(self.allowed_tools or []) or "none"
            return f'Tool "{name}" is not allowed by the policy (allowed tools: {allowed}). The call was not run.'
        cwd = getattr(ctx, "cwd", None) or getattr(tool, "cwd", None)
        for arg, access in (getattr(tool, "path_args", None) or {}).items():
            value = args.get(arg) if isinstance(args, dict) else None
            if isinstance(value, str) and value:
                problem = self.path_violation(value, cwd=cwd, access=access)
                if problem:
                    return f"{problem} The {name} call was not run."
        command_arg = getattr(tool, "command_arg", None)
        if command_arg and isinstance(args, dict) and isinstance(args.get(command_arg), str):
            reason = self.command_violation(args[command_arg])
            if reason:
                return f"The policy refuses this {name} call: {reason}. The call was not run; do not try to work around this rule."
        if self.needs_confirmation(tool):
            callback = self.confirm_callback
            if callback is None and ctx is not None:
                callback = (getattr(ctx, "extra", None) or {}).get("confirm")
            if callback is None:
                return f'Tool "{name}" needs the user\'s confirmation, and there is no way to ask the user here. The call was not run.'
            try:
                answer = callback(name, dict(args) if isinstance(args, dict) else {})
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:  # noqa: BLE001 - a broken prompt must refuse, not crash the run
                return f"Asking the user to confirm the {name} call failed ({type(exc).__name__}: {exc}). The call was not run."
            if answer is not True:
                return f"The user refused the {name} call. It was not run; do not retry it, ask the user how to proceed instead."
        return None

    def hook(self, *, cwd: str | os.PathLike[str] | None = None, extra: dict[str, Any] | None = None) -> Callable[[Any], Awaitable[Any]]:
        """This policy as the agent loop's ``before_tool_call`` hook.

        The hook takes the loop's ``BeforeToolCall`` (``.tool``, ``.args``) and returns a
        blocking ``ToolDecision`` with the reason, or ``None``. ``cwd`` and ``extra`` stand in
        for the tool context the hook does not receive (``extra["confirm"]``: a callback).
        """
        ctx = _HookContext(os.fspath(cwd) if cwd is not None else None, dict(extra or {}))

        async def before_tool_call(call: Any) -> Any:
            reason = await self.check(call.tool, call.args if isinstance(call.args, dict) else {}, ctx)
            if reason is None:
                return None
            from .loop import ToolDecision  # the loop imports tools; imported late to keep this module light

            return ToolDecision(block=True, reason=reason)

        return before_tool_call


def _skill_dirs(cwd: str) -> list[str]:
    """The resolved folders of the skills discovered for ``cwd`` (what the system prompt lists)
    that may widen the read set.

    A skill in a project's skills folder (``.pi/skills``, ``.agents/skills``) counts only if
    its real folder lies inside that skills folder's real path: a project cannot plant
    ``.pi/skills/evil -> /outside/dir`` to open an outside folder. Skills in the user's own
    folders (``~/.pi/agent/skills``, ``~/.agents/skills``) may link elsewhere (a skill being
    developed in a checkout): only the user writes there.
    """
    from ..resources import load_skills, skill_roots  # resources sits above agent; imported late to keep this module light
    from ..session.paths import agent_dir

    try:
        found = load_skills(cwd, agent_dir=agent_dir())
        roots = skill_roots(cwd, os.path.abspath(agent_dir()), os.path.expanduser("~"))
    except Exception:  # noqa: BLE001 - an unreadable skills folder allows nothing more
        return []
    project_roots = [os.path.realpath(root) for root, source, _md in roots if source == "project"]
    dirs: list[str] = []
    for skill in found.skills:
        real = os.path.realpath(skill.base_dir)
        if skill.source == "project" and not any(_within(real, root) for root in project_roots):
            continue  # a link out of the project's skills folder
        dirs.append(real)
    return list(dict.fromkeys(dirs))


class _HookContext:
    def __init__(self, cwd: str | None, extra: dict[str, Any]) -> None:
        self.cwd = cwd
        self.extra = extra
