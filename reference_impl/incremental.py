"""``SessionAssembler``: the next turn of a session costs only its new messages.

``assemble()`` is stateless: every call validates, segments and (lazily) counts the whole session.
An agent calls the model once per turn on a session that only grows, so a ``SessionAssembler``
keeps what it learnt about the session between calls::

    assembler = SessionAssembler(config, shape="openai-chat", counter=counter)
    for turn in agent_loop():
        assembly = assembler.assemble(session)   # same result as assemble(session, config, ...)
        ...

What is kept: the messages seen (compared by **identity**, a C-speed tuple comparison of the
previous messages against the head of the new session), the units (rings, turns, summaries) with
their facts and token costs, the positions of rings, user turns, system text, summaries and
attachments with their ids beside them, and running sums. When the new session extends the
previous one, only the new messages are validated (together with the last old unit, and their
call ids against every earlier id: the same verdict as validating the whole session) and
segmented; the decisions (prefix, suffix, the middle fill in tier order) are then recomputed from
those indexes: ``_fast`` walks ``steps.PIPELINE`` and takes each step from the index
(``_FAST_STEPS``, sharing the steps' rules: ``range_start``, ``KEEP_ORDER``, ``DROP_STEPS``,
``short_error``, ``normalize_with_groups``).

What a turn costs: the new messages (validated, segmented, counted) plus C-speed work on what is
kept, never a Python loop over the session. The protected range is summed from the list of unit
costs; each tier of the fill is a slice of its position list walked newest first in chunks that
double (``_take_newest``: ``map``, ``accumulate``, ``bisect``), counting a unit only when the walk
reaches it, as the unit-by-unit fill did; the view is the kept units' message tuples chained. The
dropped ids, as long as the old end of the session, are one ``IdSlice`` of a tuple of ids kept
between turns (no copy) when the units skipped are at its head, the usual case (the pinned goal).
What stays proportional to the session: the identity check (about 15 ns a message) and a turn
whose kept window reaches older units than before, which counts them once.

The fast path covers the common turn: a valid session that fits, or that fits after degrading
middle attachments (oldest first) and deleting middle units in tier order. Anything else (a
pairing error or repair, ``clear_tool_result`` under pressure, a summary to write, an anchor for a session without a pinned
user goal, escalation, a final recount over budget, changed config/tools/ledger/memory/budget)
runs the full stateless pipeline, ``assemble()``, with the shared counter's memo. Either way the
result equals ``assemble()`` on the same input (``tests/reference_impl/test_incremental.py`` checks
that), except ``tokens_before.middle``: a lower bound in both (``tokens_before_is_lower_bound``),
here including units counted on earlier turns.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import logging
import operator
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, filterfalse, pairwise, repeat, takewhile
from typing import Any, ClassVar, Final, TypeVar, cast

from reference_impl.assembler import (
    Assembly,
    AssemblyReport,
    IdSlice,
    _injections,
    _observe,
    assemble_pipeline,
    check_arguments,
    check_collaborators,
    session_digest_of,
)
from reference_impl.budget import BucketTokens, BudgetPlan, BudgetSnapshot, plan_budget
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError
from reference_impl.ledger import Ledger
from reference_impl.memory import INJECTION_ID_PREFIX, MemoryItem
from reference_impl.metrics import AssemblyMetrics, default_metrics
from reference_impl.rings import pairing, validate
from reference_impl.shapes import carries_raw_blocks
from reference_impl.steps import (
    PIPELINE,
    Step,
    anchor_first_user,
    check_buckets,
    classify_middle,
    clear_tool_results,
    degrade_attachments,
    drop_leading_non_user,
    drop_middle_by_tier,
    escalate,
    final_recount,
    narrow_ledger_pin,
    normalize_for_shape,
    protect_prefix,
    protect_suffix,
    summarize_middle,
)
from reference_impl.steps.normalize import normalize_with_groups
from reference_impl.steps.protect import range_start
from reference_impl.steps.state import Tier
from reference_impl.steps.trim import (
    DROP_STEPS,
    KEEP_ORDER,
    degrade_message,
    short_error,
    unit_chars,
)
from reference_impl.summary import DeterministicSummarizer, Summarizer
from reference_impl.tokens import TokenCounter, counter_for
from reference_impl.tokens.counters import _MemoizedCounter
from reference_impl.transcript import (
    SHAPE_NAMES,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    ShapeName,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)
from reference_impl.transcript.model import (
    INSTRUCTION_ROLES,
    KIND_DEVELOPER,
    KIND_OTHER,
    KIND_SYSTEM,
    KIND_USER,
    index_or_end,
    kind_codes,
    kind_positions,
    starts_with,
    trusted_transcript,
)

__all__ = ["SessionAssembler"]

log = logging.getLogger("reference_impl")

_ID = operator.attrgetter("id")
_NEXT_INJECTION: Final = "\n" + INJECTION_ID_PREFIX
_PARTS = operator.attrgetter("parts")
_FIRST = operator.itemgetter(0)
_TEXT = operator.attrgetter("text")
_FRAME_ESTIMATE = 8
"""Tokens of a message's frame (role, separators), from above, for ``_Index.estimates``."""
_ATTACHMENT_ESTIMATE = 3_000
"""Tokens of an image or a file (a PDF page), from above, for ``_Index.estimates``."""
_FIRST_BATCH = 16
"""Units a walk counts by their estimates before it counts ahead by their mean cost."""
_NEAR_END_ESTIMATE = 2_048
_NEAR_END_UNITS = 8
"""Past the unit a walk surely reaches, up to this many more units, whose estimates add up to
at most ``_NEAR_END_ESTIMATE``, are counted along (``_count_run``)."""
_SMALL_BATCH = 4
"""Up to this many units are counted one by one (``_count_units``)."""
_AHEAD_MARGIN = 4
"""Counting ahead by the mean cost fills at most this fraction (1/n) of the room left."""
_BLOCK_TIERS: Final = frozenset({"summary", "plain_turn", "verbose_ring"})
"""The tiers whose positions are lists of the index (which only grow), so that a fill may
resume from the block the last one took (``_take_resumed``); the error tier is chosen anew
each turn."""
_RING_TIERS: Final = frozenset({"error_ring", "verbose_ring"})
"""The tiers whose units are rings (the others: plain turns and summaries)."""
_BATCH_RESUMES = True
"""Whether ``SessionAssembler._degrade`` resumes the fill once per run of attachments degraded
in its window (False: after each, as the step does; the tests compare the two)."""
_SETTLE_WHEN_IT_MAY_FIT = True
"""Whether such a run is cut short where the middle may fit (``SessionAssembler._may_fit``):
only when it cannot are the later degrades of a run counted for nothing (the tests compare
both ways)."""


_NATURALS: list[int] = list(range(1 << 12))
"""``_NATURALS[i] == i``: the int objects of unit and message positions, made once for the
process. A session's index holds a position per message (``_Index.starts``, ``_Index.turns``):
slices of this list give them without making (and, when the index goes, freeing) an int object
each, which cost as much as the rest of indexing a long session's plain turns."""
_NATURALS_MAX: Final = 1 << 20
"""Positions beyond this are made as they are needed (``range``): the list stays under ~40 MB."""


def _positions(lo: int, hi: int) -> Sequence[int]:
    """``range(lo, hi)``, as a slice of ``_NATURALS`` where it reaches (grown, by replacing the
    list with a longer one, never in place, so a thread reading the old one reads it whole)."""
    global _NATURALS  # noqa: PLW0603 - a process-wide cache of ints, replaced whole when grown
    found = _NATURALS
    if hi > len(found) and hi <= _NATURALS_MAX:
        found = _NATURALS = list(range(min(_NATURALS_MAX, max(hi, 2 * len(found)))))
    if hi <= len(found):
        return found[lo:hi]
    return range(lo, hi)


_CALL: Final = 1
_SUMMARY: Final = 2
_ATTACHED: Final = 4
_FACTS: dict[type, int] = {
    TextPart: 0,
    ToolResultPart: 0,
    ReasoningPart: 0,
    ToolCallPart: _CALL,
    SummaryPart: _SUMMARY,
    ImagePart: _ATTACHED,
    FilePart: _ATTACHED,
}
"""What a part of each type tells the index (``_part_facts``), looked up by the part's exact
type: a dict hit costs less than the ``isinstance`` tests it stands for (a third of the time
of indexing the messages that are not of one text part). Another type (a subclass of a part)
is decided by ``isinstance`` once and added."""


def _fact(kind: type) -> int:
    """``_FACTS`` of a type it does not hold yet (a subclass of a part), by ``isinstance``."""
    found = 0
    for base, fact in list(_FACTS.items()):
        if issubclass(kind, base):
            found |= fact
    _FACTS[kind] = found
    return found


def _part_facts(parts: Sequence[Part]) -> int:
    """The facts of ``parts`` (``_CALL``, ``_SUMMARY``, ``_ATTACHED``), or-ed together."""
    facts = _FACTS
    found = 0
    for part in parts:
        fact = facts.get(type(part))
        found |= _fact(type(part)) if fact is None else fact
    return found


def _ring_facts(results: Message) -> tuple[bool, bool]:
    """Whether the tool message of a ring holds an error result, and an image or a file (in a
    result or beside the results)."""
    facts = _FACTS
    error = attached = False
    for part in results.parts:
        if type(part) is ToolResultPart or isinstance(part, ToolResultPart):
            error = error or part.is_error
            attached = attached or bool(_part_facts(part.content) & _ATTACHED)
        else:
            fact = facts.get(type(part))
            attached = attached or bool((_fact(type(part)) if fact is None else fact) & _ATTACHED)
    return error, attached


def _estimate(messages: Sequence[Message]) -> int:
    """An estimate from above of the tokens of messages that are not all of one text part:
    every character of text, arguments, results and reasoning, frames and attachments."""
    tokens = _FRAME_ESTIMATE * len(messages)
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                tokens += _FRAME_ESTIMATE + sum(
                    len(c.text) if isinstance(c, TextPart) else _ATTACHMENT_ESTIMATE
                    for c in part.content
                )
            elif isinstance(part, TextPart | SummaryPart):
                tokens += len(part.text)
            elif isinstance(part, ToolCallPart):
                tokens += _FRAME_ESTIMATE + len(part.name) + len(part.arguments)
            elif isinstance(part, ReasoningPart):
                tokens += len(part.data)
            else:
                tokens += _ATTACHMENT_ESTIMATE
    return tokens


@dataclass(slots=True)
class _Index:
    """What is known about the session so far: where its units start, their costs, and the
    positions of rings, turns, summaries, system text and attachments, with ids beside them.

    Built at C speed: ``kind_codes`` marks the messages of one text part, which are plain turns
    (the great majority of a long session); only the others (rings, attachments, summaries...)
    are read one by one. Unit positions are what the policy works on: a ring is one unit of two
    messages (a valid session answers every call in the message right after it), every other
    message one unit.
    """

    messages: tuple[Message, ...] = ()
    codes: bytearray = field(default_factory=bytearray)
    """``kind_codes`` of the messages."""
    message_ids: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """Message index where each unit starts."""
    costs: list[int | None] = field(default_factory=list)
    """Token cost of each unit (None until counted)."""
    leading_system: int = 0
    """How many units at the start are system/developer turns (the security prompt)."""
    rings: list[int] = field(default_factory=list)
    ring_heads: list[int] = field(default_factory=list)
    """Message index of each ring's assistant message (beside ``rings``)."""
    error_rings: list[int] = field(default_factory=list)
    ring_ids: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    """Plain turns after the leading system text (candidates for the plain-turn tier)."""
    turn_ids: list[str] = field(default_factory=list)
    user_others: list[int] = field(default_factory=list)
    """Message indices of the user turns that are not one text part (a text with an image...);
    the others are found in ``codes``."""
    systems: list[int] = field(default_factory=list)
    """System/developer turns after the leading ones (pinned by ``security_system_prompt``)."""
    summaries: list[int] = field(default_factory=list)
    summary_ids: list[str] = field(default_factory=list)
    """Ids beside positions (``ring_ids`` beside ``rings`` ...): a report's dropped ids are
    slices of these."""
    attachments: list[int] = field(default_factory=list)
    short: dict[int, bool] = field(default_factory=dict)
    """Error rings decided short (``short_error``) or not: a fixed property of a ring."""
    chars: dict[int, int] = field(default_factory=dict)
    """Characters of the error rings measured by the short-error test."""
    reached: bytearray = field(default_factory=bytearray)
    """1 for each unit a step has needed the cost of (what ``AssemblyState.cost`` would have
    counted); a unit may be counted before a walk reaches it (``_count_run``), and is
    reported in ``tokens_before`` only once reached."""
    counted_cost: int = 0
    counted_units: int = 0
    """Sum and number of the units reached so far (for ``tokens_before``)."""
    estimated: list[int] = field(default_factory=list)
    """Each unit's ``estimates`` (0 until needed)."""
    unusual: bool = False
    """A system-role summary: rare enough to leave to the full pipeline."""
    injection_ids: bool = False
    """A message with an injection's id (``inject-``...): a session that holds an injected
    note (a stored view with its injections, not ``session_after()``); the full pipeline names
    the id the injection would repeat."""
    call_ids: set[str] = field(default_factory=set)
    result_ids: set[str] = field(default_factory=set)
    degraded: dict[int, tuple[Message, ...]] = field(default_factory=dict)
    """Units with their attachments replaced by placeholders, made once when first needed."""
    degraded_costs: dict[int, int] = field(default_factory=dict)
    """The tokens of those, counted once when first needed: a turn that degrades them again
    (every turn degrades the same old attachments) knows their cost, so its fill meets them
    as counted units."""
    ids_digest: _RunningDigest | None = None
    """The running hash of ``message_ids`` (``digest_of``), made when a report is first made."""
    frozen: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``turn_ids``, ``ring_ids`` ... as tuples, remade only when a slice reaches past their end:
    a report's dropped ids are one tuple slice (amortized O(1) a turn to keep, not O(dropped))."""
    blocks: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Per tier (its positions a list of the index, which only grows), the last fill's block:
    ``(lo, hi, tokens)``, the positions ``lo..hi`` of the tier all counted, ``tokens`` their
    costs summed, skipped ones included (``_take_resumed``)."""

    def digest_of(self, count: int) -> _IndexDigest:
        """What gives the digest of the session's first ``count`` ids, for a report: it holds
        the ids (and the running hash), never the messages."""
        running = self.ids_digest
        if running is None:
            running = self.ids_digest = _RunningDigest(self.message_ids)
        return _IndexDigest(running, count)

    def frozen_ids(self, name: str, ids: list[str], stop: int) -> tuple[str, ...]:
        """``ids`` (one of the lists of ids above, ``name``) as a tuple at least ``stop`` long."""
        found = self.frozen.get(name, ())
        if len(found) < stop:
            found = self.frozen[name] = tuple(ids)
        return found

    def keep_block(
        self,
        tier: str,
        positions: Sequence[int],
        *,
        lo: int,
        hi: int,
        used: int,
        skip: Collection[int],
    ) -> None:
        """Note what a fill took of a tier (``_take_resumed``): ``positions[lo:hi]`` less
        ``skip``, whose costs summed to ``used``; the block's sum holds the skipped ones too
        (the pinned units, and in the ring tier the error rings: all counted by then), or no
        block is kept when one of them is not counted."""
        if lo >= hi:
            self.blocks.pop(tier, None)
            return
        costs = self.costs
        for k in _skipped(positions, hi, skip, lo):
            cost = costs[positions[k]]
            if cost is None:
                self.blocks.pop(tier, None)
                return
            used += cost
        self.blocks[tier] = (lo, hi, used)

    def start(self, session: Transcript) -> bool:
        """Index a whole session; False when it is not valid."""
        messages = session.messages
        codes = kind_codes(messages)
        others = kind_positions(codes, KIND_OTHER)
        checked = pairing(messages, others)
        if checked.violations:
            return False
        self.call_ids = set(checked.calls)
        self.result_ids = set(checked.results)
        if not self._add(messages, codes, others):
            return False
        # Built at their exact lengths, the lists as long as the session would be copied whole
        # by the next turn's first extension: they get their room to grow now.
        for values in (self.message_ids, self.starts, self.costs, self.estimated):
            _reserve(values)
        _reserve(self.codes)
        _reserve(self.reached)
        return True

    def extend(self, messages: tuple[Message, ...]) -> bool:
        """Add the messages after ``self.messages``; False when the session is not valid.

        Validating the last old unit with the new messages, plus new call ids against every
        earlier id, gives the verdict of validating the whole session: old units are closed (the
        old session was valid), so a new message can only break pairing with the last old unit
        or by reusing an id (C3/A5/R6) or answering an old call again.
        """
        old = len(self.messages)
        new = messages[old:]
        window_start = self.starts[-1] if self.starts else 0
        if validate(Transcript(messages[window_start:])):
            return False
        new_calls = {c.id for m in new for c in m.tool_calls}
        new_results = {r.call_id for m in new for r in m.tool_results}
        if not (
            new_calls.isdisjoint(self.call_ids)
            and new_calls.isdisjoint(self.result_ids)
            and new_results.isdisjoint(self.result_ids)
        ):
            return False
        self.call_ids |= new_calls
        self.result_ids |= new_results
        codes = kind_codes(new)
        return self._add(messages, codes, kind_positions(codes, KIND_OTHER))

    # -- units -----------------------------------------------------------------------------

    def unit_count(self) -> int:
        """How many units the session has."""
        return len(self.starts)

    def unit_messages(self, position: int) -> tuple[Message, ...]:
        """The messages of the unit at ``position`` (units tile the session)."""
        starts = self.starts
        stop = starts[position + 1] if position + 1 < len(starts) else len(self.messages)
        return self.messages[starts[position] : stop]

    def head(self, position: int) -> Message:
        """The first message of the unit at ``position``."""
        return self.messages[self.starts[position]]

    def unit_id(self, position: int) -> str:
        """The id of the unit at ``position`` (its first message's)."""
        return self.message_ids[self.starts[position]]

    def ids_of(self, positions: Sequence[int]) -> tuple[str, ...]:
        """The ids of the units at ``positions``, in that order (C speed)."""
        return _pick(self.message_ids, _pick(self.starts, positions))

    def is_ring(self, position: int) -> bool:
        """Whether the unit at ``position`` is a ring."""
        k = bisect.bisect_left(self.rings, position)
        return k < len(self.rings) and self.rings[k] == position

    def is_summary(self, position: int) -> bool:
        """Whether the unit at ``position`` is a summary."""
        k = bisect.bisect_left(self.summaries, position)
        return k < len(self.summaries) and self.summaries[k] == position

    def unit_of(self, message_index: int) -> int:
        """The position of the unit that starts at ``message_index``: each ring before it holds
        one message more than its unit."""
        return message_index - bisect.bisect_left(self.ring_heads, message_index)

    def first_user(self) -> int | None:
        """The position of the first plain user turn (None without one)."""
        plain = self.codes.find(KIND_USER)
        other = self.user_others[0] if self.user_others else -1
        found = [i for i in (plain, other) if i >= 0]
        return self.unit_of(min(found)) if found else None

    def latest_users(self, count: int) -> list[int]:
        """The positions of the latest ``count`` plain user turns, oldest first."""
        codes, others = self.codes, self.user_others
        found: list[int] = []
        hi = len(codes)
        k = len(others)
        while len(found) < count:
            plain = codes.rfind(KIND_USER, 0, hi)
            k = bisect.bisect_left(others, hi, 0, k)
            other = others[k - 1] if k else -1
            at = max(plain, other)
            if at < 0:
                break
            found.append(at)
            hi = at
        return [self.unit_of(i) for i in reversed(found)]

    def estimates(self, positions: list[int]) -> list[int]:
        """An estimate from above of each unit's tokens, from its characters (``_count_run``):
        at C speed for the units of one text part, one by one for the others; kept, as a walk
        often looks at the same units again."""
        cache = self.estimated
        found = list(_pick(cache, positions))
        if 0 in found:  # 0: not estimated yet (an estimate is at least a frame)
            missing = list(compress(positions, map(operator.not_, found)))
            for p, estimate in zip(missing, self._estimates(missing), strict=True):
                cache[p] = estimate
            found = list(_pick(cache, positions))
        return found

    def _estimates(self, positions: list[int]) -> list[int]:
        heads = _pick(self.starts, positions)
        kinds = bytes(_pick(self.codes, heads))
        plain = compress(heads, map(operator.ne, kinds, repeat(KIND_OTHER)))
        texts = map(_TEXT, map(_FIRST, map(_PARTS, map(self.messages.__getitem__, plain))))
        found = list(map(operator.add, map(len, texts), repeat(_FRAME_ESTIMATE)))
        for k in kind_positions(kinds, KIND_OTHER):
            found.insert(k, _estimate(self.unit_messages(positions[k])))
        return found

    def reach(self, positions: Sequence[int]) -> None:
        """Note units (counted) as needed by a step: ``tokens_before`` sums them. At C speed
        when they all were already (a walk over what the previous turn kept)."""
        reached, costs = self.reached, self.costs
        flags = _pick(reached, positions)
        if 0 not in flags:
            return
        # a position given twice is noted once (``dict.fromkeys``: in order, at C speed)
        new = list(dict.fromkeys(compress(positions, map(operator.not_, flags))))
        for p in new:
            reached[p] = 1
        self.counted_cost += sum(_pick(costs, new))  # type: ignore[arg-type]  # counted first
        self.counted_units += len(new)

    def reach_range(self, lo: int, hi: int) -> None:
        """``reach`` every unit of ``lo..hi`` (all counted), at C speed."""
        flags = self.reached[lo:hi]
        new = flags.count(0)
        if new:
            fresh = compress(self.costs[lo:hi], map(operator.not_, flags))
            self.counted_cost += sum(fresh)  # type: ignore[arg-type]  # counted first
            self.counted_units += new
            self.reached[lo:hi] = b"\x01" * (hi - lo)

    # -- indexing --------------------------------------------------------------------------

    def _add(self, messages: tuple[Message, ...], new_codes: bytes, others: list[int]) -> bool:
        """Index ``messages`` from where the index ends (``new_codes``: the ``kind_codes`` of
        the new messages, ``others`` the positions in them of ``KIND_OTHER``); False for a
        ring that does not span two messages (never in a valid session: the caller then takes
        the full pipeline)."""
        lo, n = len(self.messages), len(messages)
        ids = list(map(_ID, messages[lo:]))
        first_unit = len(self.starts)
        found = self._others(messages, lo, ids, others)
        if found is None:
            return False
        heads, cuts, system_others = found
        self.messages = messages
        self.codes += new_codes
        self.message_ids += ids
        if ids:
            joined = "\n".join(ids)
            if joined.startswith(INJECTION_ID_PREFIX) or _NEXT_INJECTION in joined:
                self.injection_ids = True
        prev = lo
        for h in heads:
            self.starts.extend(_positions(prev, h + 1))
            prev = h + 2
        self.starts.extend(_positions(prev, n))
        units = len(self.starts)
        self.costs.extend([None] * (units - first_unit))
        self.reached.extend(bytes(units - first_unit))
        self.estimated.extend([0] * (units - first_unit))
        if self.leading_system == first_unit:
            self._leading(first_unit, set(cuts))
        self._systems(lo, system_others)
        self._turns(max(first_unit, self.leading_system), units, cuts)
        return True

    def _others(
        self, messages: tuple[Message, ...], lo: int, ids: list[str], others: list[int]
    ) -> tuple[list[int], list[int], list[int]] | None:
        """Index the new messages that are not of one text part (``others``, from ``lo``):
        rings, summaries, attachments. Returns the ring heads (message indices), the positions
        of the new units that are not turns, and the system turns among them (message indices);
        None for a ring that does not span two messages."""
        absorbed = lo - len(self.starts)
        heads: list[int] = []
        cuts: list[int] = []
        system_others: list[int] = []
        skip = -1
        for k in others:
            i = lo + k
            if i == skip:  # the tool message of the ring just indexed
                continue
            message = messages[i]
            role = message.role
            position = i - absorbed
            facts = _part_facts(message.parts)
            if facts & _CALL and role == "assistant":
                if not self._ring(messages, i, position, ids[i - lo], facts):
                    return None
                heads.append(i)
                cuts.append(position)
                absorbed += 1
                skip = i + 1
                continue
            if role == "tool":
                return None  # a tool message outside a ring: never in a valid session
            if facts & _SUMMARY:
                self.summaries.append(position)
                self.summary_ids.append(ids[i - lo])
                self.unusual = self.unusual or role in INSTRUCTION_ROLES
                cuts.append(position)
            elif role == "user":
                self.user_others.append(i)
            elif role in INSTRUCTION_ROLES:
                system_others.append(i)
            if facts & _ATTACHED:  # a message outside a ring holds attachments as parts of its own
                self.attachments.append(position)
        return heads, cuts, system_others

    def _ring(
        self, messages: tuple[Message, ...], head: int, position: int, ring_id: str, facts: int
    ) -> bool:
        """Index the ring whose assistant message is at ``head`` (``facts``: its parts'): in a
        valid session its results are all in the message right after it."""
        if head + 1 >= len(messages) or messages[head + 1].role != "tool":
            return False
        error, attached = _ring_facts(messages[head + 1])
        self.rings.append(position)
        self.ring_heads.append(head)
        self.ring_ids.append(ring_id)
        if error:
            self.error_rings.append(position)
        if attached or facts & _ATTACHED:
            self.attachments.append(position)
        return True

    def _leading(self, first_unit: int, cuts: set[int]) -> None:
        """Extend the leading system text over the new units that are system/developer turns."""
        position = first_unit
        codes, starts = self.codes, self.starts
        while position < len(starts) and position not in cuts:
            code = codes[starts[position]]
            if code not in (KIND_SYSTEM, KIND_DEVELOPER) and not (
                code == KIND_OTHER and self.head(position).role in INSTRUCTION_ROLES
            ):
                break
            position += 1
        self.leading_system = position

    def _systems(self, lo: int, others: list[int]) -> None:
        """System/developer turns among the messages from ``lo`` (``others``: those that are not
        one text part), after the leading ones."""
        codes = self.codes
        found = [
            *kind_positions(codes, KIND_SYSTEM, lo),
            *kind_positions(codes, KIND_DEVELOPER, lo),
            *others,
        ]
        positions = sorted(self.unit_of(i) for i in found)
        self.systems += (p for p in positions if p >= self.leading_system)

    def _turns(self, first: int, units: int, cuts: list[int]) -> None:
        """Plain turns among the new units: runs of positions between rings and summaries, with
        their ids beside them (a run's messages are consecutive)."""
        prev = first
        for cut in [*cuts, units]:
            if cut > prev:
                self.turns.extend(_positions(prev, cut))
                start = self.starts[prev]
                self.turn_ids.extend(self.message_ids[start : start + cut - prev])
            prev = max(prev, cut + 1)


class _RunningDigest:
    """sha256 over the first ``digested`` of ``ids`` (an index's ``message_ids``, a list that
    only grows), taken on from where the last read stopped."""

    __slots__ = ("digested", "hash", "ids", "lock")

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.hash = hashlib.sha256()
        self.digested = 0
        self.lock = threading.Lock()  # a report may be read in another thread

    def of(self, count: int) -> str:
        """``assembler.session_digest_of`` the first ``count`` ids: hashed afresh for a report
        read after a later one hashed past it."""
        with self.lock:
            if count < self.digested:
                return session_digest_of(self.ids[:count])
            if count > self.digested:
                joined = "\n".join(self.ids[self.digested : count])
                self.hash.update((joined + "\n").encode("utf-8"))
                self.digested = count
            return self.hash.hexdigest()


class _IndexDigest:
    """A report's ``session_digest_of``: the digest of the session's first ``count`` ids
    (``_RunningDigest``), hashed when the report's digest is first read. It holds the ids, not
    the index or its messages: a report keeps no message content alive."""

    __slots__ = ("count", "running")

    def __init__(self, running: _RunningDigest, count: int) -> None:
        self.running = running
        self.count = count

    def __call__(self) -> str:
        return self.running.of(self.count)

    def __deepcopy__(self, memo: dict[int, object]) -> str:
        """The digest: what a deep copy of the report's field holds (``dataclasses.asdict``,
        ``astuple``), not a copy of the running hash (whose state and lock cannot be copied)."""
        return self()


class _Digest:
    """A report's session digest for a log line: read (and computed) only if it is emitted."""

    __slots__ = ("report",)

    def __init__(self, report: AssemblyReport) -> None:
        self.report = report

    def __str__(self) -> str:
        return self.report.session_digest


@dataclass(frozen=True, slots=True)
class _Settings:
    """What must be unchanged for the previous turn's knowledge to apply."""

    plan: BudgetPlan
    tools: tuple[object, ...]
    model: str | None
    params: tuple[tuple[str, str], ...]
    injections: tuple[Message, ...]


class SessionAssembler:
    """A stateful assembler for one session: call ``assemble(session)`` once per turn.

    The arguments are those of ``assemble()`` and stay fixed for the session, except ``ledger``,
    ``memory`` and ``budget``, which may be passed per turn (a change makes that turn take the full
    pipeline). Not thread-safe: one instance per session.

    With a ``compaction_headroom``, the assembler keeps the view it sent: a session that appends
    to the one of the last turn (the same tools, model and settings, and its messages first: the
    same objects, or equal ones under the same ids, as a caller that parses its wire body anew
    every turn hands over) is assembled as that turn's ``session_after()`` followed by the
    appended messages, with the session's own tools (what a cut dropped stays out, so the turns
    between two cuts only append; the report describes that session). Any other session
    (edited, shortened, renamed, after a refusal, or bringing the real result of a call the
    kept view answers with a synthesized one) is assembled as it is.
    """

    def __init__(
        self,
        config: AssemblyConfig | None = None,
        *,
        shape: ShapeName = "openai-chat",
        counter: TokenCounter | None = None,
        summarizer: Summarizer | None = None,
        metrics: AssemblyMetrics | None = None,
    ) -> None:
        if shape not in SHAPE_NAMES:
            raise ConfigError(
                f"unknown shape {shape!r}; known shapes: {', '.join(SHAPE_NAMES)}", where="shape"
            )
        check_arguments(Transcript(()), config, None, ())
        check_collaborators(counter, summarizer, metrics)
        self.config = config if config is not None else AssemblyConfig()
        self.shape: ShapeName = shape
        self.counter = counter
        self.summarizer = summarizer if summarizer is not None else DeterministicSummarizer()
        self.metrics = metrics if metrics is not None else default_metrics()
        self._index: _Index | None = None
        self._settings: _Settings | None = None
        self._fixed: tuple[_Settings, tuple[int, int, int]] | None = None
        self._indexed_now = False
        """Whether this turn indexed the session from scratch (it then logs as ``assemble``)."""
        self.fast_turns = 0
        """Turns answered by the incremental path (the rest ran the full pipeline)."""
        self.last_path = ""
        """``incremental``, or ``full:<why>`` (``full:new_session``, ``full:summary`` ...)."""
        self._last: tuple[Transcript, Transcript, frozenset[str]] | None = None
        """With a ``compaction_headroom``: the session of the last turn, its ``session_after()``
        and the calls that view answers with a synthesized result (None after a refusal)."""

    # ------------------------------------------------------------------------- entry point

    def assemble(
        self,
        session: Transcript,
        *,
        ledger: Ledger | None = None,
        memory: Sequence[MemoryItem] = (),
        budget: BudgetSnapshot | int | None = None,
    ) -> Assembly:
        """The assembly of ``session``, equal to ``assemble(session, ...)`` with the same knobs
        (with a ``compaction_headroom``, of the view kept from the last turn and what the session
        appends to that turn's: the class's docstring)."""
        check_arguments(session, None, ledger, memory)
        if not self.config.compaction_headroom:
            return self._assemble(session, ledger, memory, budget)
        passed, last = session, self._last
        self._last = None
        made: frozenset[str] = frozenset()
        if last is not None and _appends(session, last[0]):
            head, kept = last[0].messages, last[1].messages
            appended = session.messages[len(head) :]
            # The real result of a call the kept view answers with a synthesized one: the two
            # are not sent together, the session is assembled as it is handed over.
            answers = {r.call_id for m in appended for r in m.tool_results}
            if not _same(kept, head) and answers.isdisjoint(last[2]):
                joined = (*kept, *appended)
                # Messages of two valid transcripts: valid together unless an id is in both (an
                # appended message given the id of a kept one, or of a summary): then as passed.
                # The tools are the session's: schemas a turn's bucket check left out are offered
                # again when they fit.
                if len(set(map(_ID, joined))) == len(joined):
                    session = trusted_transcript(session, joined)
                    made = last[2]
        assembly = self._assemble(session, ledger, memory, budget)
        self._last = (passed, assembly.session_after(), made | frozenset(assembly.report.repairs))
        return assembly

    def _assemble(
        self,
        session: Transcript,
        ledger: Ledger | None,
        memory: Sequence[MemoryItem],
        budget: BudgetSnapshot | int | None,
    ) -> Assembly:
        started = time.perf_counter()
        if self.counter is None:
            self.counter = counter_for(self.shape, session.model)
        ledger = ledger if ledger is not None else Ledger()
        plan = plan_budget(self.config, budget)
        settings = _Settings(
            plan,
            session.tools,
            session.model,
            session.params,
            tuple(_injections(self.config, ledger, memory)),
        )
        self.last_path = "full:invalid_or_new_session"
        self._indexed_now = False
        index = self._follow(session, settings)
        # The narrowed ledger note depends on what is kept: left to the full pipeline. So are
        # raw wire blocks (``RawCosting``): they are part of their messages' costs, which the
        # index's counts leave out.
        narrowing = self.config.ledger_pin_mode != "always" and bool(ledger.side_effects)
        if index is not None and carries_raw_blocks(self.shape, session):
            self.last_path = "full:raw_blocks"
        elif index is not None and not narrowing:
            fast = self._fast(index, session, settings, started)
            if fast is not None:
                self.fast_turns += 1
                self.last_path = "incremental"
                return fast
        return assemble_pipeline(
            session,
            self.config,
            shape=self.shape,
            counter=self.counter,
            summarizer=self.summarizer,
            ledger=ledger,
            memory=memory,
            budget=budget,
            metrics=self.metrics,
        )

    def _follow(self, session: Transcript, settings: _Settings) -> _Index | None:
        """The index extended to ``session``, or None when the session is not valid."""
        messages = session.messages
        index = self._index
        if index is not None and settings == self._settings:
            seen = index.messages
            # The head of the new session must hold the very same objects (Message equality
            # ignores ids, so equal-but-new objects start afresh), compared at C speed.
            if starts_with(messages, seen):
                if len(messages) == len(seen):
                    return index
                if index.extend(messages):
                    return index
                self._index = None
                return None
        self._settings = settings
        index = _Index()
        if not messages or not index.start(session):
            self._index = None
            return None
        self._index = index
        self._indexed_now = True
        return index

    # ----------------------------------------------------------------------------- fast path

    def _fixed_costs(self, session: Transcript, settings: _Settings) -> tuple[int, int, int]:
        """Injections, tool schemas and the request overhead: fixed while the settings are."""
        cached = self._fixed
        if cached is not None and cached[0] == settings:
            return cached[1]
        counter = self.counter
        assert counter is not None
        empty = Transcript((), tools=session.tools, model=session.model, params=session.params)
        costs = (
            sum(counter.count_message(m) for m in settings.injections),
            counter.count_tools(session.tools),
            counter.count(empty).overhead,
        )
        self._fixed = (settings, costs)
        return costs

    def _fallback(self, why: str) -> Assembly | None:
        """Leave this turn to the full pipeline, saying why (``last_path``)."""
        self.last_path = f"full:{why}"
        return None

    def _cost(self, index: _Index, position: int) -> int:
        """The unit's tokens, counted the first time they are needed (``AssemblyState.cost``)."""
        cost = index.costs[position]
        if cost is None:
            assert self.counter is not None
            count = self.counter.count_message
            cost = index.costs[position] = sum(map(count, index.unit_messages(position)))
        if not index.reached[position]:
            index.reach((position,))
        return cost

    def _count_units(self, index: _Index, positions: list[int]) -> None:
        """Count the units at ``positions`` (ascending, none counted yet) in one go: with one of
        our counters, one memo round trip for all their messages (``count_messages``)."""
        counter = self.counter
        assert counter is not None
        costs, messages, starts = index.costs, index.messages, index.starts
        if not isinstance(counter, _MemoizedCounter) or len(positions) <= _SMALL_BATCH:
            count = counter.count_message  # a few: one by one costs less than a batch
            for p in positions:
                costs[p] = sum(map(count, index.unit_messages(p)))
            return
        heads = _pick(starts, positions)
        found = counter.count_messages(_pick(messages, heads))
        rings = index.rings
        low = bisect.bisect_left(rings, positions[0]) if positions else 0
        high = bisect.bisect_right(rings, positions[-1]) if positions else 0
        tails = [(k, starts[r] + 1) for r in rings[low:high] if (k := _find(positions, r)) >= 0]
        if tails:  # a ring's unit is its two messages
            more = counter.count_messages([messages[m] for _, m in tails])
            for (k, _), cost in zip(tails, more, strict=True):
                found[k] += cost
        for p, cost in zip(positions, found, strict=True):
            costs[p] = cost

    def _count_run(self, index: _Index, run: list[int], room: int, walk: _Walk) -> list[int]:
        """The costs of a prefix of ``run`` (uncounted positions, newest first, as a walk meets
        them with ``room`` tokens left), at least its first, counted in one go: as many as the
        walk will reach, as far as that can be told.

        Far from the end of the room, by the units met so far on this ``walk``: as many as would
        fill a quarter of the room at their mean cost. Near it, by the units' characters (plus a
        frame, and a page for an attachment), taken as an estimate of their tokens from above:
        the units whose estimates fit the room all fit and the walk reaches one more. A guess
        that falls short counts a few units early: they are reported in ``tokens_before`` only
        when a walk reaches them (``_Index.reach``)."""
        ahead = room // (_AHEAD_MARGIN * walk.mean()) if walk.units >= _FIRST_BATCH else 0
        if ahead >= _FIRST_BATCH:
            costs = self._count_prefix(index, run, min(ahead, len(run)))
            walk.met(costs)
            return costs
        take, total, size = 0, 0, _FIRST_BATCH
        while take < len(run):  # estimates in chunks that double: what is taken, not the run
            part = run[take : take + size]
            sums = list(accumulate(index.estimates(part), initial=total))
            fits = bisect.bisect_right(sums, room, 1) - 1
            if fits < len(part):
                # those fit, and the walk reaches the next one; a few small ones past it are
                # counted along (near the end of the room the walk meets units one at a time)
                extra = bisect.bisect_right(sums, sums[fits + 1] + _NEAR_END_ESTIMATE, fits + 2)
                take += min(extra - 1, fits + 1 + _NEAR_END_UNITS)
                break
            take += len(part)
            total = sums[-1]
            size *= 2
        costs = self._count_prefix(index, run, min(take, len(run)))
        walk.met(costs)
        return costs

    def _count_prefix(self, index: _Index, run: list[int], take: int) -> list[int]:
        """Count ``run[:take]`` in one go; their costs, in ``run``'s order."""
        self._count_units(index, sorted(run[:take]))
        costs = index.costs
        return [costs[p] for p in run[:take]]  # type: ignore[misc]  # all counted now

    def _degraded_cost(self, index: _Index, position: int) -> int:
        found = index.degraded_costs.get(position)
        if found is not None:
            return found
        counter = self.counter
        assert counter is not None
        messages = self._degraded_messages(index, position)
        if isinstance(counter, _MemoizedCounter) and len(messages) > _SMALL_BATCH:
            found = sum(counter.count_messages(messages))
        else:
            found = sum(map(counter.count_message, messages))
        index.degraded_costs[position] = found
        return found

    @staticmethod
    def _degraded_messages(index: _Index, position: int) -> tuple[Message, ...]:
        """The unit's messages with attachments replaced (``steps.trim.degrade_attachments``)."""
        found = index.degraded.get(position)
        if found is None:
            found = tuple(degrade_message(m) for m in index.unit_messages(position))
            index.degraded[position] = found
        return found

    def _degrade(self, t: _Turn, degradable: list[int]) -> None:
        """Which middle attachments ``steps.trim.degrade_attachments`` degrades: oldest first
        until the middle fits, ``t`` filled (``_fill``) with the ones degraded so far. The step's
        window is the fill's: what it keeps and the unit it stopped at. An attachment outside
        the window is degraded without changing the verdict (its cost is counted only if a fill
        reaches it); one inside lowers the room used by what it won, and the fill resumes where
        it stopped (``_resume``), as the step's window grows while it fits.

        A run of attachments inside the window whose placeholders cost no more than they did is
        degraded before the fill resumes, once for the run (``_settle``): the window only grows
        while costs only fall, so each of them is in the window it would have met one by one,
        and the fill, a prefix of the keep order, ends where the resumes one by one would have.
        The run ends before an attachment outside the window (the resumes may have brought it
        in: whether it is counted depends on that), before a dearer placeholder, and where the
        middle may fit (``_may_fit``).
        """
        index = t.index
        window = set(t.kept_middle)
        pending: list[tuple[int, int]] = []  # degraded in the window, the fill not resumed yet
        i = 0
        while i < len(degradable) and not t.everything:  # until the middle fits
            a = degradable[i]
            inside = a == t.over or a in window
            if pending and (not inside or not _BATCH_RESUMES):
                if self._settle(t, pending, window):
                    break
                inside = a == t.over or a in window
            if not inside:  # this one and those after it up to the window: nothing changes
                end = _next_inside(degradable, i, window, t.over) if _BATCH_RESUMES else i + 1
                outside = degradable[i:end]
                t.degraded_order += outside
                known = map(index.degraded_costs.get, outside)
                t.degraded.update(zip(outside, known, strict=True))
                i = end
                continue
            i += 1
            before = self._cost(index, a)  # in the window: counted as it was
            after = self._degraded_cost(index, a)
            if after > before and pending and self._settle(t, pending, window):
                break
            t.degraded_order.append(a)
            t.degraded[a] = after
            if after <= before:
                if a != t.over:  # the unit the fill stopped at is not in the room used
                    t.used -= before - after
                pending.append((a, before - after))
                if (
                    _SETTLE_WHEN_IT_MAY_FIT
                    and self._may_fit(t)
                    and self._settle(t, pending, window)
                ):
                    break
            elif a == t.over:
                window.update(self._resume(t))
            else:  # a placeholder dearer than the attachment: what fits is decided afresh
                self._fill(t)
                window = set(t.kept_middle)
        if pending:
            self._settle(t, pending, window)

    def _may_fit(self, t: _Turn) -> bool:
        """Whether the middle may fit after the degrades so far (the fill not resumed): the room
        it used and the unit it stopped at, with the units left after that one at the mean cost
        of those it kept. An estimate, which only decides where a run of degrades is cut (the
        result is the same wherever it is, ``_settle``): a run that cannot make the middle fit
        goes on, and near the fit (the middle mostly in the window) the fill resumes after each,
        so no degrade is counted for nothing there."""
        over = t.over
        if over is None:
            return True
        left = sum(t.drop_stop.values()) - 1  # the units after ``over`` in keep order, about
        mean = t.used // max(1, len(t.kept_middle))
        return t.used + self._cost_of(t, over) + left * mean <= t.room

    def _settle(self, t: _Turn, pending: list[tuple[int, int]], window: set[int]) -> bool:
        """The fill resumed once after the ``pending`` attachments (position, tokens won) were
        degraded (``_degrade``), ``window`` grown by what it keeps now; whether the middle fits.
        When it fits after them, the step would have stopped at the first after which it fit:
        the middle's total then is the total now plus what the later ones won, so those later
        ones are taken back."""
        window.update(self._resume(t))
        if t.everything:
            back, first = 0, len(pending)
            while first > 1 and t.used + back + pending[first - 1][1] <= t.room:
                first -= 1
                back += pending[first][1]
            for a, _ in pending[first:]:
                del t.degraded[a]
            del t.degraded_order[len(t.degraded_order) - (len(pending) - first) :]
            t.used += back
        pending.clear()
        return t.everything

    def _short_error(self, index: _Index, position: int) -> bool:
        """``steps.trim.short_error``, with the unit's characters kept in the index."""

        def chars() -> int:
            found = index.chars.get(position)
            if found is None:
                found = index.chars[position] = unit_chars(index.unit_messages(position))
            return found

        return short_error(
            chars, lambda: self._cost(index, position), self.config.short_error_max_tokens
        )

    def _fast(
        self, index: _Index, session: Transcript, settings: _Settings, started: float
    ) -> Assembly | None:
        """``steps.PIPELINE`` walked from the index: each step's counterpart (``_FAST_STEPS``)
        decides from positions, in time proportional to what is kept, or names why this turn
        needs the full pipeline."""
        if index.unusual:
            return self._fallback("unusual_summary")
        if index.injection_ids and settings.injections:
            return self._fallback("injection_id_in_session")
        turn = _Turn(index, session, settings, settings.plan.input_budget)
        for step in PIPELINE:
            why = self._FAST_STEPS[step](self, turn)
            if why is not None:
                return self._fallback(why)
        return self._assembly(turn, started)

    # -- the steps, fed from the index (in PIPELINE order) ------------------------------------

    def _protect_prefix(self, t: _Turn) -> str | None:
        """Leading system text, the pinned goal, pinned later system text (injections are
        counted as fixed costs)."""
        config, index = self.config, t.index
        t.prefix = list(range(index.leading_system))
        first_user = index.first_user()
        if first_user is not None and config.pinned("first_user_message"):
            t.prefix.append(first_user)
        if config.pinned("security_system_prompt"):
            t.prefix.extend(index.systems)
        t.prefix_set = set(t.prefix)
        t.steps.append("protect_prefix")
        return None

    def _protect_suffix(self, t: _Turn) -> str | None:
        """The range (``steps.protect.range_start``; every ring of a valid session is complete)
        and the latest user messages one by one. What is protected is the range ``start..``
        plus ``pinned``: the prefix and the single user messages older than the range (a few
        units), so no set as long as the range is built."""
        config, index = self.config, t.index
        n = index.unit_count()
        t.start = range_start(
            index.rings, index.rings, lambda: index.latest_users(1), n, config.recent_tool_rings
        )
        t.singles = [
            i
            for i in index.latest_users(max(1, config.recent_user_turns))
            if i not in t.prefix_set and i < t.start
        ]
        t.pinned = {i for i in t.prefix if i < t.start}.union(t.singles)
        t.steps.append("protect_suffix")
        return None

    def _anchor_first_user(self, t: _Turn) -> str | None:
        """A protected unit that would open the conversation without a user message: the full
        pipeline protects an anchor."""
        head = t.index.head
        first = min((i for i in t.pinned if head(i).role not in INSTRUCTION_ROLES), default=None)
        if first is None:
            first = next(
                (
                    i
                    for i in range(t.start, t.index.unit_count())
                    if head(i).role not in INSTRUCTION_ROLES
                ),
                None,
            )
        if first is not None and head(first).role != "user":
            return "anchor"
        return None

    def _check_buckets(self, t: _Turn) -> str | None:
        """Prefix, suffix, tools and overhead over the budget: the full pipeline names the
        bucket (or drops tool schemas). The range is summed at C speed from the unit costs
        (only its units never counted before, the new ones, are counted here)."""
        index, start = t.index, t.start
        t.injection_cost, t.tools_cost, t.overhead = self._fixed_costs(t.session, t.settings)
        costs = index.costs
        needed = sorted({*t.prefix, *t.singles})
        missing = [p for p in needed if costs[p] is None]
        at = start
        while (at := _index_of_none(costs, at)) >= 0:  # the range: usually only the new units
            missing.append(at)
            at += 1
        if missing:
            self._count_units(index, sorted(missing))
        index.reach(needed)
        index.reach_range(start, index.unit_count())
        t.prefix_cost = sum(self._cost(index, i) for i in t.prefix) + t.injection_cost
        in_range = sum(costs[start:])  # type: ignore[arg-type]  # no None left from start on
        t.suffix_cost = (
            in_range
            - sum(self._cost(index, i) for i in t.prefix_set if i >= start)
            + sum(self._cost(index, i) for i in t.singles)
        )
        t.fixed = t.prefix_cost + t.suffix_cost + t.tools_cost + t.overhead
        if t.fixed > t.budget:
            return "bucket_over_budget"
        t.room = t.budget - t.fixed
        return None

    def _classify_middle(self, t: _Turn) -> str | None:
        """The error tier: the newest ``keep_middle_error_results`` short error rings of the
        middle, found as ``steps.trim.classify_middle`` finds them (newest first, deciding each
        error ring on the way until enough are found, so the same rings are counted). Whether a
        ring is short is a fixed property of it, decided once (``index.short``)."""
        index, left = t.index, self.config.keep_middle_error_results
        if left > 0:
            rings = index.error_rings
            for i in reversed(rings[: bisect.bisect_left(rings, t.start)]):
                short = index.short.get(i)
                if short is None:
                    short = index.short[i] = self._short_error(index, i)
                if short:
                    t.errors.append(i)
                    left -= 1
                    if left == 0:
                        break
            t.errors.reverse()
        t.error_set = set(t.errors)
        return None

    def _degrade_attachments(self, t: _Turn) -> str | None:
        """The fill in tier order (``_fill``); when the middle does not fit and holds
        attachments, they are degraded oldest first as ``steps.trim.degrade_attachments``
        degrades them, over the fill's window (``_degrade``), the fill resuming as it grows. The
        step sums the middle in the fill's order, so the units counted are the same on the
        first turn (the pipeline's report to the letter). With a ``compaction_headroom``, a
        middle that does not fit is filled again into the room less the headroom (the second
        fill counts nothing the first did not)."""
        index = t.index
        early = bisect.bisect_left(index.attachments, t.start)
        degradable = list(_without(index.attachments, index.attachments, early, t.pinned))
        self._fill(t)
        if self.config.headroom_tokens(t.budget) and not t.everything:  # a cut: it aims lower
            t.room = self.config.cut_target(t.budget, t.fixed) - t.fixed
            self._fill(t)
        if t.everything or not degradable:
            return None
        self._degrade(t, degradable)
        t.steps.append("degrade_attachments")
        return None

    def _clear_tool_results(self, t: _Turn) -> str | None:
        """``clear_tool_result`` with a middle that does not fit: results would be cleared."""
        if self.config.middle_delete_unit == "clear_tool_result" and not t.everything:
            return "clear_tool_results"
        return None

    def _drop_middle_by_tier(self, t: _Turn) -> str | None:
        """What the fill left out, named by tier (``steps.trim.DROP_STEPS``)."""
        t.steps.extend(step for tier, step in DROP_STEPS if tier in t.dropped_tiers)
        return None

    def _drop_leading_non_user(self, t: _Turn) -> str | None:
        """Kept middle units in front of the first user message go."""
        head = t.index.head
        t.kept = sorted([*t.pinned, *t.kept_middle])
        t.kept.extend(range(t.start, t.index.unit_count()))
        pinned, start = t.pinned, t.start
        for i in t.kept:
            role = head(i).role
            if role in INSTRUCTION_ROLES:
                continue
            if role == "user" or i in pinned or i >= start:  # not a middle unit
                break
            t.leading.append(i)
        if t.leading:
            for i in t.leading:
                t.used -= self._cost_of(t, i)
            leading = set(t.leading)
            t.kept = [i for i in t.kept if i not in leading]
            t.kept_middle = [i for i in t.kept_middle if i not in leading]
            t.kept_rings = [i for i in t.kept_rings if i not in leading]
            t.steps.append("drop_leading_non_user")
        return None

    def _summarize_middle(self, t: _Turn) -> str | None:
        """Above the trigger ratio with something to summarize: a summary would be written."""
        is_summary = t.index.is_summary
        summarizable = not all(map(is_summary, t.kept_middle))
        if summarizable and t.used > t.budget * self.config.summarize_trigger_ratio - t.fixed:
            return "summary"
        return None

    def _escalate(self, _t: _Turn) -> str | None:
        """Nothing to do: the buckets fit and the fill stayed within the room."""
        return None

    def _narrow_ledger_pin(self, _t: _Turn) -> str | None:
        """Nothing to do: a note to narrow never takes this path (``assemble``)."""
        return None

    def _normalize_for_shape(self, t: _Turn) -> str | None:
        """The view of the kept units, injections after the leading system text, normalized for
        the shape (``steps.normalize.normalize_with_groups``). Built at C speed: the kept units'
        message tuples chained, the few degraded units in the kept window swapped in."""
        index, kept = t.index, t.kept
        degraded = {}
        if t.degraded and t.kept_middle:
            middle = set(t.kept_middle)
            order = t.degraded_order
            for d in order[bisect.bisect_left(order, min(middle)) :]:
                if d in middle:
                    degraded[d] = self._degraded_messages(index, d)
        rings = index.rings
        older = bisect.bisect_left(rings, t.start)  # rings from the range on are all kept
        kept_rings = [*sorted(t.kept_rings), *rings[older:]]
        messages = _view_messages(index, kept, kept_rings, degraded, t.settings.injections)
        t.base = trusted_transcript(t.session, messages)
        t.view, t.merged, t.merged_groups = normalize_with_groups(
            t.base, self.shape, functools.partial(trusted_transcript, t.session)
        )
        if t.merged:
            t.steps.append("normalize")
        return None

    def _final_recount(self, t: _Turn) -> str | None:
        """The final recount. Skipped when it cannot exceed the budget: with one of our
        counters, whose request overhead never grows with the messages and whose request is the
        sum of its messages' memoized counts, the running total is a bound from above of the
        view's count, once the merged messages' counts replace those of what they hold."""
        counter = self.counter
        assert counter is not None
        assert t.view is not None
        assert t.base is not None
        if isinstance(counter, _MemoizedCounter):
            bound = t.fixed + t.used
            if t.merged_groups:
                base, view = t.base.messages, t.view.messages
                absorbed = 0
                for group in t.merged_groups:
                    bound += counter.count_message(view[group[0] - absorbed])
                    bound -= sum(counter.count_messages([base[i] for i in group]))
                    absorbed += len(group) - 1
            if bound <= t.budget:
                return None
        if counter.count(t.view).total > t.budget:
            return "final_recount"
        return None

    # -- the fill of the middle ----------------------------------------------------------------

    def _cost_of(self, t: _Turn, i: int) -> int:
        if i in t.degraded:
            found = t.degraded[i]
            if found is None:
                found = t.degraded[i] = self._degraded_cost(t.index, i)
            return found
        cost = t.index.costs[i]
        return cost if cost is not None else self._cost(t.index, i)

    def _fill_run(self, t: _Turn, run: list[int], room: int, *, walk: _Walk) -> list[int]:
        """``_count_run`` for the fill, up to the first degraded unit (at its degraded cost)."""
        degraded = t.degraded
        if degraded:
            if run[0] in degraded:
                return [self._cost_of(t, run[0])]
            run = list(takewhile(lambda p: p not in degraded, run))
        return self._count_run(t.index, run, room, walk)

    def _known_costs(self, t: _Turn, chunk: list[int]) -> list[int | None]:
        """The costs of ``chunk`` (ascending positions) as the fill sees them: degraded units at
        their degraded cost; None where not counted yet."""
        found = list(_pick(t.index.costs, chunk))
        if t.degraded and chunk:
            order = t.degraded_order
            low = bisect.bisect_left(order, chunk[0])
            for d in order[low : bisect.bisect_right(order, chunk[-1])]:
                k = bisect.bisect_left(chunk, d)
                if k < len(chunk) and chunk[k] == d:
                    found[k] = t.degraded[d]
        return found

    def _fill(self, t: _Turn) -> None:
        """The middle, newest first, in tier order (``steps.trim.KEEP_ORDER``), as
        ``drop_middle_by_tier`` fills it: kept while it fits, the rest of a tier and every later
        tier dropped once a unit does not. Each tier is a slice of a position list walked at C
        speed (``_take_newest``); ``t.drop_stop[tier]`` records how much of it was dropped and
        ``t.over`` the unit the fill stopped at."""
        t.kept_middle = []
        t.kept_rings = []
        t.used = 0
        t.degraded_order = list(t.degraded)
        self._fill_from(t, 0, None)

    def _resume(self, t: _Turn) -> list[int]:
        """The fill of ``t`` resumed at the unit it stopped at, after the room it had used
        shrank (an attachment degraded); the positions it keeps now."""
        if t.over is None:
            return []
        kept = len(t.kept_middle)
        tier = t.over_tier
        self._fill_from(t, KEEP_ORDER.index(tier), t.drop_stop[tier])
        return t.kept_middle[kept:]

    def _fill_from(self, t: _Turn, first: int, stop: int | None) -> None:
        """The fill from tier ``KEEP_ORDER[first]``, whose positions before ``stop`` are left
        (all of them before the range when None), on top of ``t.kept_middle`` and ``t.used``."""
        index = t.index
        for tier in KEEP_ORDER[first:]:
            t.dropped_tiers.discard(tier)
            t.drop_stop.pop(tier, None)
        t.everything = not t.dropped_tiers
        t.over = None
        exhausted = False
        members: dict[Tier, tuple[Sequence[int], set[int]]] = {
            "summary": (index.summaries, t.pinned),
            "error_ring": (t.errors, t.pinned),
            "plain_turn": (index.turns, t.pinned),
            "verbose_ring": (index.rings, t.pinned | t.error_set),
        }
        for tier in KEEP_ORDER[first:]:
            positions, skip = members[tier]
            end = bisect.bisect_left(positions, t.start)
            if exhausted:
                if end > len(_skipped(positions, end, skip)):
                    t.everything = False
                    t.dropped_tiers.add(tier)
                    t.drop_stop[tier] = end
                continue
            # A fill over the index's own costs (no attachment degraded yet) walks a tier whose
            # positions only grow: it may resume from the block the last such fill kept.
            plain = stop is None and not t.degraded and tier in _BLOCK_TIERS
            if stop is not None:
                end, stop = stop, None
            block = index.blocks.get(tier) if plain else None
            if block is not None and block[1] > end:  # the range moved back: walked afresh
                block = None
            room = t.room - t.used
            known = functools.partial(self._known_costs, t)
            count = functools.partial(self._fill_run, t, walk=_Walk())
            if block is not None:
                taken, over, used, _ = _take_resumed(
                    positions, end, skip=skip, room=room, known=known, count=count, block=block
                )
            else:
                taken, over, used, _ = _take_newest(
                    positions, end, skip=skip, room=room, known=known, count=count
                )
            if plain:
                lo = 0 if over is None else over + 1
                index.keep_block(tier, positions, lo=lo, hi=end, used=used, skip=skip)
            reached = taken if over is None else [*taken, positions[over]]
            if block is not None:  # the block's units were reached by the fill that kept it
                reached = _outside(reached, positions[block[0]], positions[block[1] - 1])
            if t.degraded:  # a degraded unit's own cost is not what it cost before
                reached = list(filterfalse(t.degraded.__contains__, reached))
            index.reach(reached)
            t.kept_middle.extend(taken)
            if tier in _RING_TIERS:
                t.kept_rings.extend(taken)
            t.used += used
            if over is not None:
                exhausted = True
                t.everything = False
                t.dropped_tiers.add(tier)
                t.drop_stop[tier] = over + 1
                t.over, t.over_tier = positions[over], tier

    # -- the result ----------------------------------------------------------------------------

    @staticmethod
    def _dropped(t: _Turn, tier: Tier) -> tuple[Sequence[int], Sequence[str], int, Collection[int]]:
        """What the fill dropped of one tier: the first ``stop`` of the tier's positions and ids
        (``drop_stop``: everything older than the unit that did not fit), less those skipped."""
        index = t.index
        stop = t.drop_stop.get(tier, 0)
        if tier == "error_ring":
            return t.errors, index.ids_of(t.errors[:stop]), stop, frozenset()
        if tier == "verbose_ring":
            ids = index.frozen_ids("rings", index.ring_ids, stop)
            return index.rings, ids, stop, t.error_set
        if tier == "plain_turn":
            return index.turns, index.frozen_ids("turns", index.turn_ids, stop), stop, t.pinned
        ids = index.frozen_ids("summaries", index.summary_ids, stop)
        return index.summaries, ids, stop, t.pinned

    @classmethod
    def _dropped_in_order(cls, t: _Turn, rare: Tier, common: Tier) -> Sequence[str]:
        """The ids two tiers dropped, in session order: a slice of the common tier's ids when
        the rare tier dropped nothing (the usual case; an ``IdSlice``, no copy, when the skipped
        positions are all at the head), else merged by position."""
        if not t.drop_stop.get(rare):
            positions, ids, stop, skip = cls._dropped(t, common)
            head = _skipped_head(positions, stop, skip)
            if head is not None and isinstance(ids, tuple):
                return IdSlice(ids, head, stop)
            return _without(positions, ids, stop, skip)
        merged: list[int] = []
        for tier in (rare, common):
            positions, _, stop, skip = cls._dropped(t, tier)
            merged.extend(_without(positions, positions, stop, skip))
        return t.index.ids_of(sorted(merged))

    def _assembly(self, t: _Turn, started: float) -> Assembly:
        config, index = self.config, t.index
        counter = self.counter
        assert counter is not None
        assert t.view is not None
        assert t.base is not None
        start = t.start
        # Dropped ids by tier, each a slice of a list of ids kept beside the positions (C speed):
        # the one part of the report as long as the old end of the session.
        ring_ids = self._dropped_in_order(t, "error_ring", "verbose_ring")
        turn_ids = self._dropped_in_order(t, "summary", "plain_turn")
        leading_rings = [i for i in t.leading if index.is_ring(i)]
        leading_turns = [i for i in t.leading if not index.is_ring(i)]
        # drop_leading_non_user's ids come after the tiers' (as the pipeline records them)
        dropped_rings = _joined(ring_ids, index.ids_of(leading_rings))
        dropped_turns = _joined(turn_ids, index.ids_of(leading_turns))
        after = BucketTokens(t.prefix_cost, t.tools_cost, t.used, t.suffix_cost, t.overhead)
        # tokens before: every unit counted so far, on any turn (a lower bound when some of the
        # middle was never counted); protected: the range and the pinned units older than it
        protected = index.unit_count() - start + len(t.pinned)
        before_middle = index.counted_cost - (t.prefix_cost - t.injection_cost) - t.suffix_cost
        lower = index.counted_units - protected < start - len(t.pinned)
        report = AssemblyReport(
            decision="ok",
            code=None,
            shape=self.shape,
            strategy=config.middle_delete_unit,
            counter=counter.name,
            budget=t.settings.plan,
            tokens_before=BucketTokens(
                t.prefix_cost, t.tools_cost, before_middle, t.suffix_cost, t.overhead
            ),
            tokens_before_is_lower_bound=lower,
            tokens_after=after,
            total_after=after.total,
            steps=tuple(t.steps),
            dropped_ring_ids=dropped_rings,
            dropped_turn_ids=dropped_turns,
            degraded_attachment_ids=index.ids_of(t.degraded_order),
            merged_ids=tuple(t.merged),
            seconds=time.perf_counter() - started,
            session_digest_of=index.digest_of(len(index.messages)),
        )
        _observe(self.metrics, report, self.shape, config.middle_delete_unit, None)
        log.info(
            "assembled%s: session=%.16s messages=%d->%d tokens=%s/%d steps=%s dropped_rings=%d",
            "" if self._indexed_now else " (incremental)",
            _Digest(report),
            len(index.messages),
            len(t.base.messages),
            report.total_after,
            t.budget,
            ",".join(t.steps),
            len(dropped_rings),
        )
        injections = t.settings.injections
        prefix_ids = index.ids_of(sorted(t.prefix_set))
        return Assembly(
            view=t.view,
            report=report,
            config=config,
            injected_ids=tuple(m.id for m in injections),
            prefix_ids=(
                *index.ids_of(range(index.leading_system)),
                *(m.id for m in injections),
                *prefix_ids[index.leading_system :],
            ),
            base_view=t.base,
            session_tools=t.session.tools,
        )

    _FAST_STEPS: ClassVar[Mapping[Step, Callable[[SessionAssembler, _Turn], str | None]]] = {
        protect_prefix: _protect_prefix,
        protect_suffix: _protect_suffix,
        anchor_first_user: _anchor_first_user,
        check_buckets: _check_buckets,
        classify_middle: _classify_middle,
        degrade_attachments: _degrade_attachments,
        clear_tool_results: _clear_tool_results,
        drop_middle_by_tier: _drop_middle_by_tier,
        drop_leading_non_user: _drop_leading_non_user,
        summarize_middle: _summarize_middle,
        escalate: _escalate,
        narrow_ledger_pin: _narrow_ledger_pin,
        normalize_for_shape: _normalize_for_shape,
        final_recount: _final_recount,
    }
    """Each step of ``steps.PIPELINE`` as the incremental path takes it: from the index, returning
    why the full pipeline is needed (``last_path``) or None."""


@dataclass(slots=True)
class _Walk:
    """The units one walk has counted ahead so far (``_count_run``): their number and cost."""

    units: int = 0
    cost: int = 0

    def mean(self) -> int:
        """Their mean cost (at least 1)."""
        return max(1, self.cost // max(1, self.units))

    def met(self, costs: list[int]) -> None:
        """Note more units counted."""
        self.units += len(costs)
        self.cost += sum(costs)


@dataclass(slots=True)
class _Turn:
    """One turn on the incremental path: the decisions so far, by unit position."""

    index: _Index
    session: Transcript
    settings: _Settings
    budget: int
    steps: list[str] = field(default_factory=lambda: ["load", "validate_pairing"])
    prefix: list[int] = field(default_factory=list)
    prefix_set: set[int] = field(default_factory=set)
    start: int = 0
    """Where the suffix range starts."""
    singles: list[int] = field(default_factory=list)
    """The latest user messages older than the range (protected one by one)."""
    pinned: set[int] = field(default_factory=set)
    """Protected units older than the range: the prefix there and ``singles`` (a few)."""
    injection_cost: int = 0
    tools_cost: int = 0
    overhead: int = 0
    prefix_cost: int = 0
    suffix_cost: int = 0
    fixed: int = 0
    room: int = 0
    errors: list[int] = field(default_factory=list)
    error_set: set[int] = field(default_factory=set)
    kept_middle: list[int] = field(default_factory=list)
    kept_rings: list[int] = field(default_factory=list)
    """The rings among ``kept_middle`` (what the ring tiers kept)."""
    dropped_tiers: set[str] = field(default_factory=set)
    drop_stop: dict[Tier, int] = field(default_factory=dict)
    """Per tier: the fill dropped its positions before this index (less the skipped ones)."""
    used: int = 0
    everything: bool = True
    """Whether the whole middle fits (nothing dropped by the fill)."""
    over: int | None = None
    """The unit the fill stopped at (the first that did not fit), or None."""
    over_tier: Tier = "summary"
    """The tier of ``over``."""
    degraded: dict[int, int | None] = field(default_factory=dict)
    """Middle units whose attachments are replaced by placeholders: position -> cost."""
    degraded_order: list[int] = field(default_factory=list)
    """The positions of ``degraded``, ascending."""
    kept: list[int] = field(default_factory=list)
    leading: list[int] = field(default_factory=list)
    base: Transcript | None = None
    view: Transcript | None = None
    merged: list[str] = field(default_factory=list)
    merged_groups: list[tuple[int, ...]] = field(default_factory=list)
    """The indices in ``base`` of what each merged message of ``view`` holds."""


def _appends(session: Transcript, last: Transcript) -> bool:
    """Whether ``session`` appends to ``last``: the same tools, model and settings, and its
    messages begin with ``last``'s, the very objects (at C speed) or equal ones under the same
    ids (a caller that parses its wire body anew every turn gives each message the id of its
    position and content)."""
    if (session.tools, session.model, session.params) != (last.tools, last.model, last.params):
        return False
    messages, head = session.messages, last.messages
    if starts_with(messages, head):
        return True
    n = len(head)
    return (
        len(messages) >= n
        and list(map(_ID, messages[:n])) == list(map(_ID, head))
        and (messages[:n] == head)
    )


def _same(messages: tuple[Message, ...], head: tuple[Message, ...]) -> bool:
    """Whether ``messages`` are the very objects of ``head``."""
    return len(messages) == len(head) and starts_with(messages, head)


def _take_newest(
    positions: Sequence[int],
    stop: int,
    *,
    skip: Collection[int],
    room: int,
    known: Callable[[list[int]], list[int | None]],
    count: Callable[[list[int], int], list[int]],
    low: int = 0,
) -> tuple[list[int], int | None, int, int]:
    """``positions[low:stop]`` newest first, less ``skip``, taken while their running sum stays
    within ``room``: (taken, newest first; the index in ``positions`` of the first that did not
    fit, or None; the sum taken; that one's cost). Walked at C speed (slices, ``map``,
    ``accumulate``, ``bisect``) in chunks that double, so it costs what is taken, not the
    length of ``positions``. ``known(chunk)`` gives the costs of ascending positions (None: not
    counted yet); ``count(run, room)`` is asked when the walk reaches a run of positions not
    counted yet (newest first, ``room`` left) and gives the costs of a prefix of it, at least
    the first: a unit-by-unit walk counts just that one, a caller that can count several in one
    go gives more (the walk takes them as it would have met them).
    """
    taken: list[int] = []
    used = 0
    hi, size = stop, 32
    while hi > low:
        lo = max(low, hi - size)
        size *= 2
        chunk = _less(positions, lo, hi, skip)
        values = known(chunk)
        if None not in values:  # all counted (a walk over what an earlier turn kept)
            whole = sum(cast("list[int]", values))
            if whole <= room - used:  # and all fit: taken whole, one pass at C speed
                taken.extend(reversed(chunk))
                used += whole
                hi = lo
                continue
        chunk.reverse()
        values.reverse()
        missing = list(map(operator.is_, values, repeat(None)))
        i = 0
        while i < len(chunk):
            gap = index_or_end(missing, True, i)
            if gap > i:
                sums = list(accumulate(cast("list[int]", values[i:gap])))
                fits = bisect.bisect_right(sums, room - used)
                if fits < gap - i:
                    taken.extend(chunk[i : i + fits])
                    used += sums[fits - 1] if fits else 0
                    over = bisect.bisect_left(positions, chunk[i + fits])
                    return taken, over, used, cast("int", values[i + fits])
                taken.extend(chunk[i:gap])
                used += sums[-1]
            if gap == len(chunk):
                break
            got = count(chunk[gap : index_or_end(missing, False, gap)], room - used)
            values[gap : gap + len(got)] = got
            missing[gap : gap + len(got)] = repeat(False, len(got))
            i = gap
        hi = lo
    return taken, None, used, 0


def _take_resumed(
    positions: Sequence[int],
    stop: int,
    *,
    skip: Collection[int],
    room: int,
    known: Callable[[list[int]], list[int | None]],
    count: Callable[[list[int], int], list[int]],
    block: tuple[int, int, int],
) -> tuple[list[int], int | None, int, int]:
    """``_take_newest`` over ``positions[:stop]`` (the same answer) knowing a ``block`` of the
    positions walked on an earlier turn: ``(lo, hi, tokens)``, ``positions[lo:hi]`` all
    counted, their costs summed to ``tokens`` (skipped ones included; ``lo < hi <= stop``). The
    positions after the block are walked as ``_take_newest`` walks them; then the block is taken
    whole if it fits (its sum less the skipped ones' costs, no walk over it), the walk going on
    before it; else the units that do not fit are found from its old end (what the newest-first
    walk drops is its oldest units): a cost proportional to what changed since that turn, not to
    what is kept.
    """
    lo, hi, tokens = block
    if room < 0:  # nothing fits, not even an empty block: the first unit met stops the walk
        return _take_newest(positions, stop, skip=skip, room=room, known=known, count=count)
    taken, over, used, over_cost = _take_newest(
        positions, stop, skip=skip, room=room, known=known, count=count, low=hi
    )
    if over is not None:
        return taken, over, used, over_cost
    skipped = [positions[k] for k in _skipped(positions, hi, skip, lo)]
    if skipped:
        tokens -= sum(cast("list[int]", known(sorted(skipped))))
    if used + tokens <= room:  # the block fits whole: the walk goes on before it
        taken += reversed(_less(positions, lo, hi, skipped))
        older, over, more, over_cost = _take_newest(
            positions, lo, skip=skip, room=room - used - tokens, known=known, count=count
        )
        taken.extend(older)
        return taken, over, used + tokens + more, over_cost
    excess = used + tokens - room  # what its oldest units must give up, found in chunks
    at, size, dropped = lo, 32, 0
    while at < hi:
        chunk = list(positions[at : min(hi, at + size)])
        values = cast("list[int]", known(chunk))
        for k, p in enumerate(chunk):
            if p in skip:
                values[k] = 0
        sums = list(accumulate(values, initial=dropped))
        k = bisect.bisect_left(sums, excess, 1)
        if k < len(sums):  # chunk[k - 1] is the one whose cost makes up the excess
            over = at + k - 1
            taken += reversed(_less(positions, over + 1, hi, skipped))
            return taken, over, used + tokens - sums[k], values[k - 1]
        dropped = sums[-1]
        at += len(chunk)
        size *= 2
    raise AssertionError("a block that does not fit gives up less than its own sum")


def _outside(newest_first: list[int], low: int, high: int) -> list[int]:
    """``newest_first`` (descending) less its positions from ``low`` to ``high``: two slices."""
    before = bisect.bisect_left(newest_first, -high, key=operator.neg)
    after = bisect.bisect_right(newest_first, -low, key=operator.neg)
    return newest_first[:before] + newest_first[after:]


def _less(positions: Sequence[int], lo: int, hi: int, skip: Collection[int]) -> list[int]:
    """``positions[lo:hi]`` (ascending) less those in ``skip`` (a few; others may be outside the
    slice): a slice, and a deletion for each skipped one in it."""
    part = list(positions[lo:hi])
    for p in skip:
        k = bisect.bisect_left(part, p)
        if k < len(part) and part[k] == p:
            del part[k]
    return part


_T = TypeVar("_T")


def _without(
    positions: Sequence[int], values: Sequence[_T], stop: int, skip: Collection[int]
) -> tuple[_T, ...]:
    """``values[:stop]`` (beside ``positions``) less the entries whose position is in ``skip``
    (a few): one slice when those are at the head (the pinned goal, the usual case), else
    slices joined; C speed either way."""
    cuts = _skipped(positions, stop, skip)
    out: list[_T] = list(values[: cuts[0] if cuts else stop])
    for k, following in pairwise([*cuts, stop]):
        out += values[k + 1 : following]
    return tuple(out)


def _skipped(
    positions: Sequence[int], stop: int, skip: Collection[int], start: int = 0
) -> list[int]:
    """The indexes in ``positions[start:stop]`` of the positions in ``skip``, ascending."""
    return sorted(
        k
        for p in skip
        if (k := bisect.bisect_left(positions, p, start, stop)) < stop and positions[k] == p
    )


def _skipped_head(positions: Sequence[int], stop: int, skip: Collection[int]) -> int | None:
    """How many of ``positions[:stop]`` are skipped when those are all at its head, else None."""
    cuts = _skipped(positions, stop, skip)
    return len(cuts) if cuts == list(range(len(cuts))) else None


def _reserve(values: list[Any] | bytearray) -> None:
    """Over-allocate ``values`` as a growing list is (by an eighth), so that the next
    extensions append in place instead of copying it: one element added and taken back."""
    if values:
        values.append(values[-1])
        values.pop()


def _next_inside(positions: list[int], start: int, window: set[int], over: int | None) -> int:
    """The index of the first of ``positions[start:]`` (ascending) in ``window`` or equal to
    ``over``, or ``len(positions)``; at C speed."""
    end = len(positions)
    if over is not None:
        k = bisect.bisect_left(positions, over, start)
        if k < end and positions[k] == over:
            end = k
    found = bytes(map(window.__contains__, positions[start:end])).find(1)
    return end if found < 0 else start + found


def _index_of_none(values: list[int | None], start: int) -> int:
    try:
        return values.index(None, start)
    except ValueError:
        return -1


def _joined(ids: Sequence[str], more: tuple[str, ...]) -> Sequence[str]:
    return (*ids, *more) if more else ids


def _view_messages(
    index: _Index,
    kept: list[int],
    kept_rings: list[int],
    degraded: Mapping[int, tuple[Message, ...]],
    injections: tuple[Message, ...],
) -> tuple[Message, ...]:
    """The messages of the ``kept`` units (ascending positions; ``kept_rings`` the rings among
    them), ``degraded`` ones replaced, the injections after the leading system text. At C
    speed: a message index per kept unit, one more for each kept ring."""
    starts = index.starts
    at = list(_pick(starts, kept))
    tails = [starts[r] + 1 for r in kept_rings]
    if tails:
        at = sorted(at + tails)
    messages: list[Message] = list(_pick(index.messages, at))
    for position, replacement in degraded.items():
        k = bisect.bisect_left(at, starts[position])
        messages[k : k + len(replacement)] = replacement
    messages[index.leading_system : index.leading_system] = injections
    return tuple(messages)


def _find(ordered: Sequence[int], value: int) -> int:
    """The index of ``value`` in ``ordered`` (ascending), or -1."""
    k = bisect.bisect_left(ordered, value)
    return k if k < len(ordered) and ordered[k] == value else -1


def _pick(values: Sequence[_T], positions: Sequence[int]) -> tuple[_T, ...]:
    """``values`` at ``positions``, as a tuple, at C speed (``itemgetter``: about twice as fast
    as ``map`` over ``__getitem__``, five times as ``bytes(map(...))``)."""
    if not positions:
        return ()
    if len(positions) == 1:
        return (values[positions[0]],)
    found: tuple[_T, ...] = operator.itemgetter(*positions)(values)
    return found
