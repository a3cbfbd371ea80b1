"""pi 1.6's other RPC commands, as a mixin of :class:`~pi_jupyter.cli.rpc_server.RpcServer`.

Shapes follow pi 1.6's ``rpc-mode.js`` (checked against pi's own RPC mode through node in
tests/test_rpc_pi16.py): ``clear_queue`` -> ``{steering, followUp}``, ``cycle_model`` ->
``{model, thinkingLevel, isScoped}`` or ``null``, ``cycle_thinking_level`` -> ``{level}`` or
``null``, ``get_available_models`` -> ``{models}``, ``get_available_thinking_levels`` ->
``{levels}``, ``get_entries`` -> ``{entries, leafId}``, ``bash`` -> ``{output, exitCode,
cancelled, truncated, fullOutputPath?}``, ``export_html`` -> ``{path}``, ``clone`` ->
``{cancelled}``, ``get_commands`` -> ``{commands: [{name, description, source, sourceInfo}]}``;
the setters and aborts answer without data.

As in pi, ``bash`` during a run is recorded when the run ends (never between a tool call and
its result), its output streams as ``bash_execution_update{id, delta}`` lines, and
``abort_bash`` is handled the moment it is read. ``export_html`` writes the page of
``pi-jupyter export`` (the tree and every branch, self-contained), not pi's themed one, and
never over a session file: another existing file that is not an export needs ``force: true``
(pi-jupyter's own field).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import signal
import tempfile
from typing import Any

from ..agent.redact import redact
from ..agent.toolbox.bash import shell_command
from ..agent.toolbox.truncate import truncate_tail
from ..messages import THINKING_LEVELS, now_ms
from ..providers import Model, api_key_for, list_models
from ..views.export.files import write_export
from ..views.export.page import export_html
from ..world.rewind import rewind
from . import rpc_views as views
from .rpc_protocol import (
    BashCommand,
    CheckoutCommand,
    CommandError,
    EnabledCommand,
    ExportHtmlCommand,
    GetEntriesCommand,
    SetMaxTurnsCommand,
    success,
)

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def _clean(text: str) -> str:
    """pi's bash output cleaning: terminal escape sequences and carriage returns removed."""
    return _ANSI.sub("", text).replace("\r", "")


def available_models(*extra: Model | None) -> list[Model]:
    """Models a request could be sent to now (a key is set, or none is needed): pi's available snapshot.

    ``extra`` models (the one in use, the one the server started with) are listed first when
    the catalog does not hold them (a ``--model`` at a ``--base-url``, which pi would have in
    its ``models.json``), so cycling comes back to them.
    """
    models = [m for m in list_models() if api_key_for(m) is not None]
    known = {(m.provider, m.id) for m in models}
    added: list[Model] = []
    for model in extra:
        if model is not None and (model.provider, model.id) not in known:
            known.add((model.provider, model.id))
            added.append(model)
    return added + models


def thinking_levels(model: Model) -> list[str]:
    """pi's ``getSupportedThinkingLevels``: ``off`` alone for a model without reasoning."""
    if not model.reasoning:
        return ["off"]
    return [level for level in THINKING_LEVELS if level != "xhigh" or model.supports_xhigh]


class MoreCommands:
    """The commands pi 1.6 added over the ones :class:`RpcServer` answers itself (state shared with it)."""

    agent: Any
    factory: Any
    out: Any
    _pending: dict[str, list[str]]
    _bash: asyncio.subprocess.Process | None = None
    _bash_cancelled: bool = False
    _bash_abort_seq: int = 0
    """The line number of the last ``abort_bash``: a ``bash`` read before it does not run."""
    _seq: int
    _pending_bash: list[dict[str, Any]]

    async def _checkout(self, command: CheckoutCommand) -> str:
        """``checkout``: the conversation and its world, or one of them (``rewind``); the line that says what moved."""
        if self._running():  # type: ignore[attr-defined]
            raise CommandError("cannot checkout while the agent is running: send abort first")
        options: dict[str, Any] = {}
        if command.rewind != "world":
            options = {
                "summarize": command.summarize, "instructions": command.custom_instructions,
                "replace_instructions": command.replace_instructions, "label": command.label,
            }  # fmt: skip
        target = self.agent.session.resolve(command.entry_id) if command.entry_id is not None else None
        return await rewind(self.factory.world_of(self.agent), self.agent, target, command.rewind, force=command.force, sep="; ", **options)

    async def _handle_more(self, command: Any, seq: int) -> dict[str, Any] | None:
        cid, kind, agent = command.id, command.type, self.agent
        if kind == "clear_queue":
            return success(cid, kind, self._clear_queue())
        if kind == "get_available_models":
            models = available_models(self.factory.start_model, agent.model)
            return success(cid, kind, {"models": [views.model_to_pi(m) for m in models]})
        if kind == "cycle_model":
            with self.level_watch():  # type: ignore[attr-defined]
                cycled = self._cycle_model()
            return success(cid, kind, cycled, with_data=True)
        if kind == "get_available_thinking_levels":
            return success(cid, kind, {"levels": thinking_levels(agent.model)})
        if kind == "cycle_thinking_level":
            levels = thinking_levels(agent.model)
            if not agent.model.reasoning:
                return success(cid, kind, None, with_data=True)
            current = levels.index(agent.thinking_level) if agent.thinking_level in levels else -1
            with self.level_watch():  # type: ignore[attr-defined]
                agent.set_thinking_level(levels[(current + 1) % len(levels)])
            return success(cid, kind, {"level": agent.thinking_level})
        if isinstance(command, EnabledCommand):
            if kind == "set_auto_retry":
                agent.settings.retry.enabled = command.enabled
            else:
                from ..compaction import CompactionSettings

                compaction = agent.settings.compaction or CompactionSettings()
                agent.settings.compaction = compaction.model_copy(update={"enabled": command.enabled})
            return success(cid, kind)
        if isinstance(command, SetMaxTurnsCommand):
            agent.settings.max_turns = command.max_turns  # from the next run; kept across sessions like the other settings
            return success(cid, kind)
        if kind == "abort_retry":
            agent.abort_retry()
            return success(cid, kind)
        if kind == "abort_bash":
            self._abort_bash()
            return success(cid, kind)
        if isinstance(command, BashCommand):
            return success(cid, kind, await self._run_bash(command, seq))
        if isinstance(command, GetEntriesCommand):
            return success(cid, kind, self._entries(command.since))
        if isinstance(command, ExportHtmlCommand):
            return success(cid, kind, {"path": self._export_html(command.output_path, command.force)})
        if kind == "clone":
            return success(cid, kind, await self._clone())
        if kind == "get_commands":
            return success(cid, kind, {"commands": self._commands()})
        return None

    def _clear_queue(self) -> dict[str, list[str]]:
        cleared = {"steering": list(self._pending["steering"]), "followUp": list(self._pending["followUp"])}
        self.agent.clear_queues()
        self._pending = {"steering": [], "followUp": []}
        self._queue_update()  # type: ignore[attr-defined]
        return cleared

    def _cycle_model(self) -> dict[str, Any] | None:
        models = available_models(self.factory.start_model, self.agent.model)
        if len(models) < 2:
            return None
        current = next((i for i, m in enumerate(models) if (m.provider, m.id) == (self.agent.model.provider, self.agent.model.id)), -1)
        chosen = models[(current + 1) % len(models)]
        self.agent.set_model(chosen)
        return {"model": views.model_to_pi(self.agent.model), "thinkingLevel": self.agent.thinking_level, "isScoped": False}

    def _entries(self, since: str | None) -> dict[str, Any]:
        session = self.agent.session
        entries = session.raw_entries()
        if since is not None:
            at = next((i for i, e in enumerate(entries) if e.get("id") == since), None)
            if at is None:
                raise CommandError(f"Entry not found: {since}")
            entries = entries[at + 1 :]
        return {"entries": entries, "leafId": session.leaf_id}

    def _abort_bash(self) -> None:
        # every bash read before this line is aborted: the running one now, a queued one when its turn comes
        self._bash_abort_seq = self._seq
        self._kill_bash()

    def _kill_bash(self) -> None:
        proc = self._bash
        if proc is not None and proc.returncode is None:
            self._bash_cancelled = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the shell and what it started (pi kills the tree too)
            except (ProcessLookupError, PermissionError):
                proc.kill()

    async def _run_bash(self, command: BashCommand, seq: int) -> dict[str, Any]:
        cwd = self.agent.session.cwd or self.factory.cwd
        self._bash_cancelled = seq < self._bash_abort_seq
        if self._bash_cancelled:  # aborted while it waited in the queue: never started
            return self._bash_done(command, "", None)
        proc = await asyncio.create_subprocess_exec(
            *shell_command(),
            command.command,
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        self._bash = proc
        if seq < self._bash_abort_seq:  # the abort came while the process was being started
            self._kill_bash()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pieces: list[str] = []
        held = ""  # the unfinished last line: a key cut between two reads must still be redacted whole
        try:
            assert proc.stdout is not None
            while True:
                chunk = await proc.stdout.read(1 << 16)
                text = held + _clean(decoder.decode(chunk, final=not chunk))
                at = text.rfind("\n") + 1 if chunk else len(text)
                delta, held = text[:at], text[at:]
                if delta:
                    pieces.append(delta)
                    self._bash_update(command.id, delta)
                if not chunk:
                    break
            await proc.wait()
        finally:
            self._bash = None
        return self._bash_done(command, "".join(pieces), proc.returncode)

    def _bash_done(self, command: BashCommand, output: str, exit_code: int | None) -> dict[str, Any]:
        """The answer to ``bash``, and its ``bashExecution`` message recorded (now, or when the run ends)."""
        text = redact(output)  # as pi: the whole output, its last newline included
        cut = truncate_tail(text)
        result: dict[str, Any] = {"output": cut.content}
        if not self._bash_cancelled:
            result["exitCode"] = exit_code  # pi leaves it out (undefined) for a cancelled command
        result.update(cancelled=self._bash_cancelled, truncated=cut.truncated)
        if cut.truncated:
            fd, full = tempfile.mkstemp(prefix="pi-bash-", suffix=".log")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            result["fullOutputPath"] = full
        message = {"role": "bashExecution", "command": command.command, **result, "timestamp": now_ms()}
        if command.exclude_from_context:
            message["excludeFromContext"] = True
        self._pending_bash.append(message)
        if not self._running():  # type: ignore[attr-defined]
            self.flush_bash()
        # else, as pi: recorded when the run ends, so it never lands between a tool call and its result
        return result

    def flush_bash(self) -> None:
        """Record the ``bashExecution`` messages of commands run during a run (pi's ``_flushPendingBashMessages``)."""
        pending, self._pending_bash = self._pending_bash, []
        for message in pending:
            self.agent.session.append_message(message)
        if pending:
            self.agent.reload()

    def _bash_update(self, cid: Any, delta: str) -> None:
        """pi 1.6's ``bash_execution_update``: output as it comes, tagged with the command's id."""
        update: dict[str, Any] = {"type": "bash_execution_update"}
        if cid is not None:
            update["id"] = cid
        update["delta"] = redact(delta)
        self.out.write(update)

    def _export_html(self, output_path: str | None, force: bool) -> str:
        session = self.agent.session
        if not self.agent.messages:
            raise CommandError("Nothing to export yet - start a conversation first")
        base = os.path.splitext(os.path.basename(session.path))[0] if session.path else session.id
        path = os.path.abspath(output_path or f"pi-session-{base}.html")
        # the page `pi-jupyter export` writes: the tree and every branch, no network needed
        page = redact(export_html(session, clean=redact))  # each text before Graphviz and the page's data, then the page
        # never over a session file; over another file only when it is an export or "force" says so
        write_export(path, page, force=force, force_hint='"force": true')
        return path

    async def _clone(self) -> dict[str, Any]:
        session = self.agent.session
        if session.leaf_id is None:
            raise CommandError("Cannot clone session: no current entry selected")
        await self._stop_run()  # type: ignore[attr-defined]
        clone = session.fork(session.leaf_id)
        self._replace(clone, self.factory.model_for(clone, self.agent.model), self.agent.thinking_level)  # type: ignore[attr-defined]
        return {"cancelled": False}

    def _commands(self) -> list[dict[str, Any]]:
        out = []
        for skill in self.agent.resources.skills:
            # pi 1.6's SourceInfo: found by discovery ("auto") in the user's or the project's folder, or given by path
            discovered = skill.source in ("user", "project")
            info = {
                "path": skill.file_path,
                "source": "auto" if discovered else "local",
                "scope": skill.source if discovered else "temporary",
                "origin": "top-level",
                "baseDir": skill.base_dir,
            }
            out.append({"name": f"skill:{skill.name}", "description": skill.description, "source": "skill", "sourceInfo": info})
        return out
