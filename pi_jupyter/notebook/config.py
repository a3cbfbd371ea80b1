"""Notebook defaults in one place: a traitlets ``Configurable`` set by ``%config``, a config
file, or ``[tool.pi-jupyter]`` in the project's ``pyproject.toml``.

Precedence, lowest first: the defaults below; ``~/.config/pi-jupyter/config.toml`` (or
``$PI_JUPYTER_CONFIG``); ``[tool.pi-jupyter]`` in the nearest ``pyproject.toml`` above the
kernel's working directory; IPython config (``c.PiMagics.model = ...`` in
``ipython_config.py``); ``%config PiMagics.model = "anthropic/claude-sonnet-4-5"`` in the
notebook; and last the options of a single ``%%pi`` cell. Keys in the TOML files are the
trait names (``model``, ``thinking``, ``tools``, ``session_dir``, ...).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from traitlets import Bool, Enum, Float, Integer, List, TraitError, Unicode, observe, validate
from traitlets.config import Configurable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_TOOLS = ["read", "ls", "grep", "find", "python", "notebook"]
"""Tools a cell may use unless told otherwise: read-only file tools, ``python`` and the read-only ``notebook``.

``python`` runs in the notebook's own namespace, which is the point of an agent in a
notebook; it is a mutating tool and asks for confirmation when ``confirm`` says so. ``bash``,
``write`` and ``edit`` change files or run commands and must be asked for with ``--tools``.
"""


class PiConfig(Configurable):
    """Defaults for ``%%pi`` cells and ``%pi`` commands (see the module docstring for where to set them)."""

    model = Unicode("", help="Model as provider/model (empty: the built-in offline model, or the session's last model).").tag(config=True)
    thinking = Unicode("", help="Thinking level: off, minimal, low, medium, high, xhigh (empty: pi's default, medium).").tag(config=True)
    tools = List(Unicode(), default_value=DEFAULT_TOOLS, help="Tool names a cell may use.").tag(config=True)
    session_dir = Unicode("pi-sessions", help="Folder for session files, relative to the kernel's working directory.").tag(config=True)
    base_url = Unicode("", help="Base URL for an OpenAI-compatible server (llama.cpp, Ollama, vLLM, OpenRouter).").tag(config=True)
    durability = Enum(["entry", "turn", "never"], default_value="turn", help="When session appends are fsynced.").tag(config=True)
    confirm = Enum(["mutating", "all", "none"], default_value="none", help="Ask before running tools: mutating ones, all, or none.").tag(
        config=True
    )
    widget = Bool(True, help="Show the live AgentView widget (False: print the answer as text).").tag(config=True)
    stream_rate = Float(30.0, help="Most widget updates per second while streaming.").tag(config=True)
    scale = Float(
        1.0, min=0.5, max=4.0, help="Type size of the pi widgets and their static outputs (1.5 for teaching on a projector)."
    ).tag(config=True)
    tool_timeout = Integer(60, help="Seconds before the python tool gives up on a piece of code (0: no limit).").tag(config=True)
    max_turns = Integer(
        100, help="Most model calls in one cell's run (0: no limit); a model still calling tools then stops with 'Turn limit reached'."
    ).tag(config=True)
    notebook_context = Bool(
        True,
        help="Tell each %%pi turn what the notebook ran since the agent's last turn: code, results, errors, output, plots"
        " (False: nothing; one cell: %%pi --no-notebook).",
    ).tag(config=True)
    notebook_chars = Integer(
        24_000, help="Most characters of notebook context one turn is told (newest cells in full, older shorter)."
    ).tag(config=True)
    notebook_images = Integer(4, help="Most images (plots) from notebook cells attached to one turn, for models that take images.").tag(
        config=True
    )
    executor = Unicode(
        "local", help="Where grid branches run: local (this kernel), dask (a LocalCluster, started once) or a scheduler tcp://host:8786."
    ).tag(config=True)

    # Bad values are refused when set (``%config`` prints the message on one line), not at
    # the next cell, where they used to break every magic.

    @observe("scale")
    def _scale_pictures(self, change: Any) -> None:
        # the pictures that display themselves (Session.graph(), charts) follow the widgets' text
        from ..views.display_scale import set_display_scale

        set_display_scale(change["new"])

    @validate("tools")
    def _valid_tools(self, proposal: Any) -> Any:
        from ..agent.toolbox import resolve_tool_names

        value = proposal["value"]
        try:
            resolve_tool_names(list(value))
        except ValueError as exc:
            hint = " Give a list of names, e.g. ['read', 'python'], not one string." if any("," in str(v) for v in value) else ""
            raise TraitError(f"{type(self).__name__}.tools: {exc}.{hint}") from None
        return value

    @validate("tool_timeout")
    def _valid_timeout(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise TraitError(f"{type(self).__name__}.tool_timeout must be a number of seconds, or 0 for no limit, not {proposal['value']}")
        return proposal["value"]

    @validate("notebook_chars", "notebook_images")
    def _valid_notebook_budget(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise TraitError(f"{type(self).__name__}.{proposal['trait'].name} must be 0 or more, not {proposal['value']}")
        return proposal["value"]

    @validate("max_turns")
    def _valid_turns(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise TraitError(f"{type(self).__name__}.max_turns must be a number of turns, or 0 for no limit, not {proposal['value']}")
        return proposal["value"]

    @validate("stream_rate")
    def _valid_rate(self, proposal: Any) -> Any:
        if not proposal["value"] > 0:
            raise TraitError(f"{type(self).__name__}.stream_rate must be a number of updates per second above 0, not {proposal['value']}")
        return proposal["value"]

    @validate("executor")
    def _valid_executor(self, proposal: Any) -> Any:
        value = str(proposal["value"]).strip()
        if value not in ("local", "dask") and "://" not in value:
            raise TraitError(
                f"{type(self).__name__}.executor must be local, dask or a scheduler address like tcp://host:8786, not {value!r}"
            )
        return value

    @validate("thinking")
    def _valid_thinking(self, proposal: Any) -> Any:
        from ..messages import THINKING_LEVELS

        if proposal["value"] and proposal["value"] not in THINKING_LEVELS:
            levels = ", ".join(THINKING_LEVELS)
            raise TraitError(f"{type(self).__name__}.thinking must be one of {levels} (or '' for the default), not {proposal['value']!r}")
        return proposal["value"]

    @classmethod
    def validate_settings(cls, values: dict[str, Any], source: str) -> dict[str, Any]:
        """Check ``values`` against the traits (unknown keys and bad values name ``source``)."""
        names = set(cls.class_trait_names(config=True))
        probe = cls()
        out: dict[str, Any] = {}
        for key, value in values.items():
            name = key.replace("-", "_")
            if name not in names:
                raise ValueError(f"{source}: unknown pi-jupyter setting {key!r} (known: {', '.join(sorted(names))})")
            try:
                setattr(probe, name, value)
            except Exception as exc:  # noqa: BLE001 - traitlets raises TraitError and friends
                raise ValueError(f"{source}: bad value for {key!r}: {exc}") from None
            out[name] = value
        return out


def file_settings(cwd: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Settings from the user config file and the nearest ``pyproject.toml``, and the files read."""
    merged: dict[str, Any] = {}
    read: list[str] = []
    for path in _config_files(cwd):
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"{path}: cannot read pi-jupyter settings: {exc}") from None
        section = data.get("tool", {}).get("pi-jupyter") if path.name == "pyproject.toml" else data
        if not section:
            continue
        merged.update(PiConfig.validate_settings(section, str(path)))
        read.append(str(path))
    return merged, read


def _config_files(cwd: str | None) -> list[Path]:
    files: list[Path] = []
    user = os.environ.get("PI_JUPYTER_CONFIG")
    user_path = Path(user) if user else Path.home() / ".config" / "pi-jupyter" / "config.toml"
    if user_path.is_file():
        files.append(user_path)
    here = Path(cwd or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            files.append(candidate)
            break
    return files
