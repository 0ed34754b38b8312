"""What a problem case's report marks: each message's fate and bucket, and tokens per bucket.

The HTML report shows a failing case as the session's message list with what the plug-in did to
each message, so this is computed where the facts are (the engine, with the scenario's config,
ledger and memory and the reference counter) and kept in the case record as ``markup``:

* ``session``: one entry per session message (the last turn's, as the plug-in received it):
  its ``status`` from the identity mapping (:mod:`conformance.identity`), with ``modified``
  told apart as ``cleared`` (a tool result whose content was replaced, ids kept) or ``changed``
  (anything else: a degraded attachment, a reordered result); its ``bucket`` (``prefix``,
  ``middle``, ``suffix``) as the reference policy's ``protect_prefix``/``protect_suffix`` define
  them for the scenario's config; its ``tokens``; and ``view``, where it ended up;
* ``view``: one entry per message the plug-in returned: ``status`` (``kept``, ``merged``,
  ``cleared``, ``changed``, ``summary``, ``injected``, ``synthesized``, ``invented``),
  ``sources`` (session indices), ``bucket`` (its first source's; a summary counts as middle,
  an injection as prefix, anything else new as ``added``) and ``tokens``;
* ``tokens``: per-bucket totals of the session and of the view (``prefix``, ``middle``,
  ``suffix``, ``added``, ``tools``, ``overhead``, ``total``), counted by the case's reference
  counter, and the ``budget``.

Buckets are the reference policy's reading of the session, not the plug-in's (a plug-in's own
buckets are not observable); the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from conformance.identity import IdentityMap, Link
from conformance.scenarios import Scenario
from reference_impl.budget import plan_budget
from reference_impl.config import AssemblyConfig
from reference_impl.errors import CtxconfError
from reference_impl.ledger import Ledger
from reference_impl.steps import protect
from reference_impl.steps.state import AssemblyState
from reference_impl.tokens import TokenCounter
from reference_impl.transcript import Message, Transcript

__all__ = ["BUCKETS", "MARKUP_VERSION", "case_markup", "session_buckets"]

MARKUP_VERSION: Final = 1
BUCKETS: Final = ("prefix", "middle", "suffix", "added", "tools", "overhead")
_NEW_BUCKET: Final[Mapping[str, str]] = {"summary": "middle", "injected": "prefix"}


def session_buckets(
    session: Transcript, config: Mapping[str, Any], budget: int, counter: TokenCounter
) -> list[str] | None:
    """The bucket of each session message under the reference policy, or None when the session
    cannot be read that way (a config the reference refuses, a structure it cannot segment)."""
    try:
        settings = AssemblyConfig.from_mapping(config)
        state = AssemblyState(
            config=settings,
            counter=counter,
            ledger=Ledger.from_list(()),
            plan=plan_budget(settings, budget),
            units=protect.load_units(session, ()),
            tools=session.tools,
            session=session,
        )
        protect.protect_prefix(state)
        protect.protect_suffix(state)
    except CtxconfError:
        return None
    buckets: list[str] = [unit.bucket for unit in state.units for _ in unit.messages]
    return buckets if len(buckets) == len(session.messages) else None


def _cleared(before: Message, after: Message | None) -> bool:
    """A tool message whose results kept their ids but not their content."""
    if after is None or not before.tool_results:
        return False
    now = {r.call_id: r for r in after.tool_results}
    return any(
        r.call_id in now and now[r.call_id].content != r.content for r in before.tool_results
    )


def _link_status(link: Link, session: Transcript, view: Transcript) -> str:
    if link.status != "modified":
        return link.status
    after = view.messages[link.index]
    sources = [session.messages[i] for i in link.sources]
    return "cleared" if any(_cleared(m, after) for m in sources) else "changed"


def _totals(entries: Sequence[Mapping[str, Any]], tools: int, overhead: int) -> dict[str, int]:
    totals = dict.fromkeys(BUCKETS, 0)
    for entry in entries:
        totals[str(entry.get("bucket") or "added")] += int(entry["tokens"])
    totals["tools"], totals["overhead"] = tools, overhead
    totals["total"] = sum(totals[b] for b in BUCKETS)
    return totals


def case_markup(
    scenario: Scenario,
    budget: int,
    *,
    session: Transcript,
    view: Transcript | None,
    identity: IdentityMap | None,
    counter: TokenCounter,
) -> dict[str, Any]:
    """The ``markup`` of a case record (see the module docstring)."""
    buckets = session_buckets(session, scenario.config, budget, counter)
    counted = counter.count(session)
    entries: list[dict[str, Any]] = [
        {
            "status": None,  # nothing assembled: no fate to mark
            "bucket": buckets[i] if buckets else None,
            "tokens": counted.messages[i],
            "view": None,
        }
        for i in range(len(session.messages))
    ]
    out: dict[str, Any] = {"version": MARKUP_VERSION, "budget": budget, "session": entries}
    out["buckets_known"] = buckets is not None
    tokens: dict[str, Any] = {"session": _totals(entries, counted.tools, counted.overhead)}
    if view is None or identity is None:
        out["view"] = None
        out["tokens"] = tokens
        return out
    shown = counter.count(view)
    view_entries: list[dict[str, Any]] = []
    for link in identity.links:
        status = _link_status(link, session, view)
        sources = list(link.sources)
        bucket = entries[sources[0]]["bucket"] if sources else _NEW_BUCKET.get(status, "added")
        view_entries.append(
            {
                "status": status,
                "sources": sources,
                "bucket": bucket or "added",
                "tokens": shown.messages[link.index],
            }
        )
        for i in sources:
            entries[i]["view"] = link.index
    for i, fate in enumerate(identity.sources):
        held = entries[i]["view"]
        if fate == "modified":
            after = view.messages[held] if held is not None else None
            entries[i]["status"] = "cleared" if _cleared(session.messages[i], after) else "changed"
        else:
            entries[i]["status"] = fate
    out["view"] = view_entries
    tokens["view"] = _totals(view_entries, shown.tools, shown.overhead)
    out["tokens"] = tokens
    return out
