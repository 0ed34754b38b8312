"""What a validator detector is, and the registry that maps detector names to functions.

A detector reads the **wire body** directly (never the transcript: it must judge bodies that the
shape parsers would refuse) and yields :class:`Finding` objects. A finding names the detector that
fired and the values its rule's message template needs; which rule (and therefore which wording) a
detector stands for is decided by the profile, so DeepSeek's DS1 and OpenAI's C1 share one detector.
("Check" means a conformance check of :mod:`conformance.checks` only.)

Detectors run only after the shape's structure detector passed, so they may assume the top-level
types (``messages`` is a list of objects ...). They still read nested fields defensively. What
several detectors read of one body (its message objects, Anthropic's turns) is a
:func:`body_view`, built once per judgement; a view is never changed by its readers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

__all__ = [
    "DETECTORS",
    "INTERLEAVED_THINKING",
    "STRUCTURE",
    "ClaudeReasoning",
    "Context",
    "DetectorFn",
    "Finding",
    "StructureFn",
    "as_dict",
    "as_list",
    "body_view",
    "cap_within_thinking_budget",
    "detector",
    "empty_lists",
    "forget_views",
    "is_list_of_objects",
    "last_index",
    "leading",
    "messages_of",
    "names_interleaved_thinking",
    "objects",
    "structure",
]


@dataclass(frozen=True, slots=True)
class Context:
    """The profile's knobs a detector may read (``settings`` in rules.yaml) and who is judging."""

    shape: str
    profile: str
    dialect: str | None
    settings: Mapping[str, Any] = field(default_factory=dict)
    rules: frozenset[str] = frozenset()  # rule ids active in the profile
    betas: frozenset[str] | None = frozenset()
    """The betas the request names in its headers (Anthropic ``anthropic-beta``), where the
    caller has them (the emulator, the proxy, a recording): a beta changes what a provider
    accepts (interleaved thinking lets a thinking budget exceed the cap, A27). None: the
    request's headers are not known (a recording that does not hold them), so a rule that a
    header beta lifts is not judged."""

    def active(self, rule_id: str) -> bool:
        """Whether rule ``rule_id`` is enforced by the profile being judged."""
        return rule_id in self.rules


@dataclass(frozen=True, slots=True)
class Finding:
    """One violation: ``detector`` that fired, ``position`` to order findings, template ``values``.

    ``rule`` pins a specific rule id when the detector can tell two rules apart (C1 vs C1a); when
    that rule is not active in the profile, the profile's rule for ``detector`` is used instead.
    """

    detector: str
    position: tuple[int, ...]
    values: Mapping[str, Any] = field(default_factory=dict)
    rule: str | None = None
    variant: str | None = None


DetectorFn = Callable[[Mapping[str, Any], Context], Iterable[Finding]]
StructureFn = Callable[[Any, Context], "Finding | None"]

# shape -> detector name -> function
DETECTORS: dict[str, dict[str, DetectorFn]] = {}
# shape -> the body-shape detector (C0, R0, A12, G0, B0) that runs before every other detector
STRUCTURE: dict[str, StructureFn] = {}


def detector(shape: str, *names: str) -> Callable[[DetectorFn], DetectorFn]:
    """Register a detector under one or more names for one or more shapes (``"a,b"``: several)."""

    def register(fn: DetectorFn) -> DetectorFn:
        for one_shape in shape.split(","):
            for name in names:
                DETECTORS.setdefault(one_shape, {})[name] = fn
        return fn

    return register


def structure(shape: str) -> Callable[[StructureFn], StructureFn]:
    """Register the body-shape detector of ``shape`` (one per shape; it runs first)."""

    def register(fn: StructureFn) -> StructureFn:
        STRUCTURE[shape] = fn
        return fn

    return register


def is_list_of_objects(value: Any) -> bool:
    """Whether ``value`` is a JSON array whose items are all objects."""
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def as_list(value: Any) -> list[Any]:
    """``value`` when it is an array, else an empty one (detectors read nested fields carefully)."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def objects(value: Any) -> list[dict[str, Any]]:
    """The object items of an array (``messages``, ``content``, ``input``...); others skipped."""
    return [item for item in as_list(value) if isinstance(item, dict)]


_V = TypeVar("_V")
_VIEWS: dict[str, tuple[Mapping[str, Any], Any]] = {}
"""Per view name: the body it was built for and the view."""


def body_view(name: str, body: Mapping[str, Any], build: Callable[[Mapping[str, Any]], _V]) -> _V:
    """``build(body)``, built once for the body judged now and shared by the detectors that read
    it (an audit judges millions of bodies, each read by a dozen detectors)."""
    found = _VIEWS.get(name)
    if found is not None and found[0] is body:
        value: _V = found[1]
        return value
    value = build(body)
    _VIEWS[name] = (body, value)
    return value


def forget_views() -> None:
    """Drop every view: the validation calls it before each judgement, so a body changed since
    it was last judged is read afresh."""
    _VIEWS.clear()


def _message_objects(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return objects(body.get("messages"))


def messages_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The message objects of a body's ``messages`` (Chat, Anthropic, Converse, gateways)."""
    return body_view("messages", body, _message_objects)


def last_index(messages: Sequence[Mapping[str, Any]], role: str) -> int | None:
    """The index of the last message with ``role``, if any."""
    return max((i for i, m in enumerate(messages) if m.get("role") == role), default=None)


def empty_lists(
    items: Sequence[Mapping[str, Any]], key: str, detector_name: str
) -> Iterator[Finding]:
    """A finding of ``detector_name`` for every item whose ``key`` holds an empty list (a field
    the provider wants absent or not empty: C4, B8, G11)."""
    for i, item in enumerate(items):
        if item.get(key) == []:
            yield Finding(detector_name, (i,), {"index": i})


def leading(items: Sequence[Any], predicate: Callable[[Any], bool]) -> int:
    """How many items at the start satisfy ``predicate`` (A3: results must come first)."""
    count = 0
    while count < len(items) and predicate(items[count]):
        count += 1
    return count


INTERLEAVED_THINKING: Final = "interleaved-thinking"
"""The start of the name of Anthropic's interleaved-thinking beta (``...-2025-05-14``), which
lets a thinking budget exceed the output cap (A27, B15)."""


def names_interleaved_thinking(betas: Iterable[object]) -> bool:
    """Whether ``betas`` name Anthropic's interleaved-thinking beta."""
    return any(str(beta).startswith(INTERLEAVED_THINKING) for beta in betas)


def _json_int(value: object) -> int | None:
    """``value`` when it is a JSON integer (a bool is not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def cap_within_thinking_budget(cap: object, thinking: Mapping[str, Any]) -> bool:
    """Whether an output ``cap`` is at or under the budget of ``thinking`` enabled (both JSON
    integers): what Claude refuses, unless interleaved thinking is on (A27, B15)."""
    found, budget = _json_int(cap), _json_int(thinking.get("budget_tokens"))
    enabled = thinking.get("type") == "enabled"
    return enabled and found is not None and budget is not None and found <= budget


@dataclass(frozen=True, slots=True)
class ClaudeReasoning:
    """How a wire format carries Claude's reasoning (Anthropic's A13, relayed on Bedrock as B10):
    whether a body turns thinking on, a message's blocks, and which block is a tool call and which
    is reasoning."""

    enabled: Callable[[Mapping[str, Any]], bool]
    blocks: Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]]
    is_call: Callable[[Mapping[str, Any]], bool]
    is_reasoning: Callable[[Mapping[str, Any]], bool]

    def not_leading(self, body: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]] | None:
        """Claude's rule with thinking on: the last assistant message, when it carries a tool
        call, opens with a reasoning block. Where it does not: its index and its first block."""
        if not self.enabled(body):
            return None
        messages = messages_of(body)
        last = last_index(messages, "assistant")
        if last is None:
            return None
        found = self.blocks(messages[last])
        if any(self.is_call(b) for b in found) and not self.is_reasoning(found[0]):
            return last, found[0]
        return None
