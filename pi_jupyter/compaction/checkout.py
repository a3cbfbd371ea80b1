"""Moving the leaf with an optional branch summary (pi's ``navigateTree``, pi-design §7.4).

:func:`plan_checkout` works out, without writing anything, where the leaf goes and what is
left behind; :func:`apply_checkout` writes it; :func:`checkout_with_summary` does both with
a summary in between.

Where pi puts the leaf: checking out a **user message** (or a custom message) means "edit
and resend it", so the leaf becomes its *parent* and its text is returned as
``editor_text``; any other target becomes the leaf itself. A branch summary is attached to
that new leaf (a new root when it is ``None``), never to the branch that was left.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..session.report import EntryNotFoundError
from .branch import BranchSummaryResult, collect_branch_entries, generate_branch_summary, tree_access
from .entries import RawEntry, role_of, text_blocks
from .request import Summarize
from .settings import BranchSummarySettings


class CheckoutPlan(BaseModel):
    """Where a checkout moves the leaf and what it leaves behind.

    ``new_leaf_id`` is the leaf after the move (``None``: before the first entry);
    ``editor_text`` the text of a user (or custom) message target, for re-editing;
    ``entries_to_summarize`` the abandoned entries, oldest first; ``common_ancestor_id``
    where the old and new branches meet.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    target_id: str | None
    old_leaf_id: str | None
    new_leaf_id: str | None
    editor_text: str | None = None
    entries_to_summarize: list[RawEntry]
    common_ancestor_id: str | None = None

    @property
    def noop(self) -> bool:
        """True when the target is the current leaf: nothing moves and nothing is written."""
        return self.target_id == self.old_leaf_id


def plan_checkout(source: Any, old_leaf: str | None, target: str | None) -> CheckoutPlan:
    """Plan moving the leaf from ``old_leaf`` to ``target`` in a ``Session`` or ``EntryIndex``.

    A session resolves ``target`` as ``Session.resolve`` does (id, unique prefix or label);
    an unknown target raises ``EntryNotFoundError``.
    """
    path_of, entry_of = tree_access(source)
    if target is not None and hasattr(source, "resolve"):
        target = source.resolve(target)
    entry = entry_of(target) if target is not None else None
    if target is not None and entry is None:
        raise EntryNotFoundError(target, getattr(source, "path", None))
    if target == old_leaf:
        return CheckoutPlan.model_construct(
            target_id=target,
            old_leaf_id=old_leaf,
            new_leaf_id=old_leaf,
            editor_text=None,
            entries_to_summarize=[],
            common_ancestor_id=old_leaf,
        )
    collected = collect_branch_entries(source, old_leaf, target)
    new_leaf, editor = _new_leaf(entry) if entry is not None else (None, None)
    return CheckoutPlan.model_construct(
        target_id=target,
        old_leaf_id=old_leaf,
        new_leaf_id=new_leaf,
        editor_text=editor,
        entries_to_summarize=collected.entries,
        common_ancestor_id=collected.common_ancestor_id,
    )


def _new_leaf(entry: RawEntry) -> tuple[str | None, str | None]:
    if role_of(entry) == "user":
        return entry.get("parentId") or None, text_blocks(entry["message"].get("content"))
    if entry.get("type") == "custom_message":
        return entry.get("parentId") or None, text_blocks(entry.get("content"))
    return entry["id"], None


def apply_checkout(
    session: Any, plan: CheckoutPlan, summary: BranchSummaryResult | None = None, *, label: str | None = None, from_hook: bool = False
) -> str | None:
    """Write ``plan`` to ``session``; returns the entry id of the branch summary, if one was written.

    With a summary: a ``branch_summary`` entry is attached to the new leaf (``fromHook``:
    ``from_hook``, true when an extension wrote the summary), and ``label`` goes on it.
    Without: the leaf moves (persisted), and ``label`` goes on the target, as pi does (the
    label entry then becomes the leaf, which pi also does).
    """
    if plan.noop:
        return None
    if summary is not None:
        entry_id = session.branch_with_summary(plan.new_leaf_id, summary.summary, summary.details, from_hook=from_hook, usage=summary.usage)
        if label:
            session.label(entry_id, label)
        return entry_id
    if label and plan.target_id is not None:
        session.checkout(plan.new_leaf_id, persist=False)  # the label entry that follows persists the move
        session.label(plan.target_id, label)
    else:
        session.checkout(plan.new_leaf_id)
    return None


class CheckoutOutcome(BaseModel):
    """What :func:`checkout_with_summary` did."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    plan: CheckoutPlan
    new_leaf_id: str | None
    editor_text: str | None = None
    summary_entry_id: str | None = None
    summary: BranchSummaryResult | None = None


async def checkout_with_summary(
    session: Any,
    target: str | None,
    summarize: Summarize | None,
    *,
    context_window: int | None = None,
    settings: BranchSummarySettings | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    pi_compatible: bool = False,
) -> CheckoutOutcome:
    """Check ``session`` out at ``target``, summarizing the branch left behind when ``summarize`` is given.

    Nothing is written if the summary fails (the error propagates) or the target is the
    current leaf. Without anything to summarize the leaf simply moves.
    """
    plan = plan_checkout(session, session.leaf_id, target)
    result: BranchSummaryResult | None = None
    if summarize is not None and plan.entries_to_summarize and not plan.noop:
        result = await generate_branch_summary(
            plan.entries_to_summarize,
            summarize,
            context_window=context_window,
            settings=settings,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            pi_compatible=pi_compatible,
            cwd=getattr(session, "cwd", None) or None,
        )
    summary_id = apply_checkout(session, plan, result, label=label)
    return CheckoutOutcome(
        plan=plan, new_leaf_id=session.leaf_id, editor_text=plan.editor_text, summary_entry_id=summary_id, summary=result
    )
