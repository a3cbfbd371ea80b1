"""The system prompt and tool set recorded in the transcript, as pi 1.x records them.

Before each run the agent compares the prompt and tools it will use with the replay of the
branch's system messages (:func:`~pi_jupyter.messages.system.current_system_message`). On a
branch without any it appends a leading system message (the prompt as the ``preamble``
section, the tool declarations as ``toolsAdded``); afterwards only a delta when something
changed between runs (``AGENTS.md``, skills, the tool set): the changed sections, and the
tools added, redefined or removed. pi 1.6 resumes such a session with the same prompt and
tools; the request then takes its prompt and tools from the transcript alone.

Our prompt is one section (``preamble``): a change replaces it whole. pi's other section
names (``tools``, ``rules``, ``cwd``, ...) found on a branch pi wrote are removed by the first
delta, so the model is told our prompt only.
"""

from __future__ import annotations

from typing import Any

from ..messages import SystemMessage
from ..messages.system import current_system_message, is_system, tool_state_changes

PROMPT_SECTION = "preamble"


def _declaration(spec: Any) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def system_delta(history: list[Any], prompt: str, tool_specs: list[Any]) -> SystemMessage | None:
    """The system message to record before a run, or ``None`` when the transcript already says it all."""
    tools = [_declaration(t) for t in tool_specs]
    current = current_system_message(history)
    if current is None:
        if not prompt and not tools:
            return None
        return SystemMessage(content="", sections={PROMPT_SECTION: prompt} if prompt else None, tools_added=tools or None)
    sections: dict[str, str | None] = {}
    recorded = current.get("sections", {})  # text another writer put in ``content`` cannot be taken back
    for name in recorded:
        if name != PROMPT_SECTION:
            sections[name] = None
    if recorded.get(PROMPT_SECTION) != prompt:
        sections[PROMPT_SECTION] = prompt if prompt else None
    if not prompt and PROMPT_SECTION not in recorded:
        sections.pop(PROMPT_SECTION, None)
    added, removed = tool_state_changes(current.get("toolsAdded", []), tools)
    if not sections and not added and not removed:
        return None
    return SystemMessage(content="", sections=sections or None, tools_added=added or None, tools_removed=removed or None)


def _same_record(raw: Any, delta: SystemMessage) -> bool:
    message = raw.get("message") if raw.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") != "system":
        return False
    mine = {k: v for k, v in delta.to_dict().items() if k != "timestamp"}
    theirs = {k: v for k, v in message.items() if k != "timestamp"}
    return mine == theirs


def shared_system_entry(session: Any, delta: SystemMessage) -> str | None:
    """The id of a child of the session's leaf (a root when the leaf is ``None``) that already records ``delta``.

    A re-run forks from where its cell started: when that start already has the same system
    message below it (the first run wrote it), the new branch goes through that entry instead of
    writing a copy, so the prompt stays the session's preamble and the re-runs are siblings under
    it, as pi 1.x shows a re-edited first prompt. Only an exact match counts (the timestamp aside).
    """
    for child in session.child_ids(session.leaf_id):
        if _same_record(session.raw_entry(child), delta):
            return child
    return None


def reuse_recorded(session: Any, history: list[Any], delta: SystemMessage | None) -> SystemMessage | None:
    """``delta``, or ``None`` after moving onto an entry that already records it (see :func:`shared_system_entry`).

    The shared entry's message is appended to ``history`` (the agent's messages); the move is
    in memory only, the run's first append (the prompt) persists it.
    """
    if delta is None or session.readonly:
        return delta
    shared = shared_system_entry(session, delta)
    if shared is None:
        return delta
    from ..messages import as_message

    session.checkout(shared, persist=False)
    history.append(as_message(session.raw_entry(shared)["message"]))
    return None


def prepare_run(history: list[Any], config: Any, record: bool | None) -> SystemMessage | None:
    """The system message this run starts with (``None``: none needed); the request then takes the prompt from the transcript.

    The agent sends it as the run's first message, so it is announced (``message_start``/``message_end``,
    after ``turn_start``, as pi 1.6 does) and persisted like any message. ``record=None`` records only on
    a branch that already holds system messages (pi 1.x wrote it): without the delta, pi's prompt and tool
    declarations would be sent beside ours.
    """
    recorded = any(is_system(m) for m in history)
    delta = None
    if record or (record is None and recorded):
        delta = system_delta(history, config.system_prompt or "", [t.spec() for t in config.tools])
    if recorded or delta is not None:
        config.system_prompt = None  # the transcript's replay is the prompt (see providers.transcript)
    return delta


def preview_request(history: list[Any], prompt: str, tool_specs: list[Any], record: bool | None, model: Any) -> Any:
    """The prompt, messages and tools the next request would carry (``%pi context``), without writing anything.

    A delta the next run would record is applied to a copy; then the request is what
    :func:`~pi_jupyter.providers.wire_request` makes of it (the one account of what is sent:
    system messages folded, failed replies left out), so it is what the model receives.
    """
    from ..messages import convert_to_llm
    from ..providers.base import LlmRequest
    from ..providers.transcript import wire_request

    recorded = any(is_system(m) for m in history)
    messages = convert_to_llm(history)
    if record or (record is None and recorded):
        delta = system_delta(history, prompt, tool_specs)
        if delta is not None:
            messages.append(delta)
    has_system = any(is_system(m) for m in messages)
    request = LlmRequest(system_prompt=None if has_system else prompt, messages=messages, tools=list(tool_specs))
    return wire_request(request, model)
