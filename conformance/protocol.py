"""The plug-in contract: what a third-party context assembler implements.

This module *is* the contract, at protocol version :data:`PROTOCOL_VERSION` (1). Everything in
``__all__`` is covered by it; nothing else in ``conformance`` is.

**What a plug-in is.** An object with a ``shape`` (the wire shape it consumes and produces, one
of ``openai-chat``, ``openai-responses``, ``anthropic-messages``, ``gemini``,
``bedrock-converse``) and an ``assemble`` method that turns one :class:`AssemblyRequest` into the
request body it would send to the provider::

    class MyAssembler:
        shape: ClassVar[str] = "openai-chat"

        def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
            body = dict(request.body)
            body["messages"] = trim(body["messages"], request.budget, request.counter)
            return body

A plain function ``f(messages: list[dict], budget: int) -> list[dict]`` over one shape's message
list is accepted too (:class:`MessageListAssembler` wraps it; see there for the optional keyword
form ``f(messages, budget, *, tools=..., dialect=..., counter=...)``, for the budget it gets (what is left for
its messages) and for what a function that cannot see the tools or the dialect is and is not
judged on). ``ctxconf run --impl`` loads a
plug-in by ``module:attr`` or by name from the ``ctxconf.assemblers`` entry-point group (see
:mod:`conformance.loading` for every form a spec may take).

**What the plug-in must do, per call.**

* Return the request body, a JSON-serializable mapping in the plug-in's declared shape (same
  keys as ``request.body``: model, system, tools and the message list). The body it returns is
  what is judged: provider validity, budget (counted with ``request.counter``), pins, rings.
* Or refuse, by raising :class:`Refusal` (or ``reference_impl.errors.ContextAssemblyError``,
  which it extends) with a ``code``. Refusal is the right answer when the session is broken or
  cannot fit; scenarios say when it is expected.
* Anything else (another exception, a hang past the case timeout, a value that is not a body
  of the declared shape, ending the process) becomes an ``error`` result for that case; the run
  goes on.
* ``request.body`` is a deep copy (the harness judges its own), but mutating it is reported
  (``session_not_mutated``, should): in production it is the agent's stored session.
  ``ctxconf run`` and ``ctxconf fuzz`` call the plug-in in supervised worker processes forked
  from the harness (``--jobs N`` of them), one call at a time per process; a worker whose call
  hangs past the timeout or that dies is replaced, and what the plug-in prints is kept in the case
  record (``conformance.workers``). Used as a library (:func:`conformance.engine.run_case`, the
  pytest plug-in) the call runs in a worker thread that is abandoned at its timeout.

**Versioning.** Within one protocol version the harness only *adds*: new optional fields of
:class:`AssemblyRequest` with defaults, new shapes, new refusal codes. A plug-in must ignore what
it does not know (extra ``config`` keys included). Removing or renaming a field, changing a
field's meaning or type, or changing what a return value or an exception means bumps
:data:`PROTOCOL_VERSION`. Each request carries the version it was built for
(``request.protocol_version``), and every run report records it in its header, so a plug-in can
refuse a version it was not written for and a report says which contract it judged.

**Long runs (optional, added in protocol 1).** ``ctxconf soak`` drives one plug-in through
hundreds of turns of a simulated agent, and each turn's request is assembled from the session the
agent stored. Two optional methods let a plug-in run as it does in production:

* :class:`AssemblerFactory`: ``new_session()`` returns a fresh assembler for one session (one
  run); the harness calls it once per run and then only that object. Without it the plug-in
  object itself is used for every run.
* :class:`StatefulAssembler`: ``session_after()``, called right after a successful
  ``assemble``, returns the request body (same shape, or None to keep the stored session) whose
  message list the agent stores as its session: a summary written this turn is then part of the
  next turn's session, as the reference assembler's ``Assembly.session_after()`` intends. An
  optional integer attribute ``summary_failures`` (cumulative) is reported as summary failures.

Plug-ins without these are run the stateless way: the harness stores the whole history and hands
all of it over every turn.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from conformance.errors import Refusal
from reference_impl.shapes import ShapeFact
from reference_impl.tokens import TokenCounter

__all__ = [
    "FUNCTION_KEYWORDS",
    "LEDGER_CHECKS",
    "MEMORY_CHECKS",
    "MESSAGE_KEYS",
    "PROTOCOL_VERSION",
    "Assembler",
    "AssemblerFactory",
    "AssemblyRequest",
    "MalformedReturnError",
    "MessageFunction",
    "MessageListAssembler",
    "Refusal",
    "StatefulAssembler",
    "body_tools",
]

PROTOCOL_VERSION: Final = 1
"""The version of this contract; bumped by any change that can break an existing plug-in."""

MESSAGE_KEYS: Final[Mapping[str, str]] = ShapeFact(lambda adapter: adapter.messages_key)
"""Where each shape keeps its message list (``ShapeAdapter.messages_key``); the rest of a body (system, tools, model) is context
that a plain message function never sees and the wrapper puts back unchanged."""


class MalformedReturnError(TypeError):
    """What a plain message function returned is not of the form it must return (a list of
    messages): the harness reports the case as a ``malformed return``, not as the plug-in
    raising (it raised nothing)."""


@dataclass(frozen=True, slots=True)
class AssemblyRequest:
    """Everything one case gives a plug-in.

    ``body`` is the whole session as a request body in the plug-in's shape: system text and tool
    schemas included, exactly what the plug-in would send if nothing had to be cut. ``budget`` is
    the input-token budget of the request; ``counter`` is the reference token counter for the
    shape (the one the ``within_budget`` check uses). ``ledger`` holds the execution layer's
    side-effect records (``reference_impl.ledger.LedgerEntry.to_dict`` form); ``memory`` the
    memory items offered for injection (``{"source": ..., "text": ...}``); ``config`` the
    scenario's knobs in ``AssemblyConfig`` key names (plug-ins may ignore what they do not know).
    """

    scenario_id: str
    """The scenario this case comes from (for the plug-in's logs)."""
    shape: str
    """The wire shape of ``body`` and of the expected return value (the plug-in's own)."""
    body: Mapping[str, Any]
    """The whole session as a request body in ``shape``, as if nothing had to be cut."""
    budget: int
    """Input-token budget of the request, counted as ``counter`` counts."""
    counter: TokenCounter
    """The reference counter for ``shape``: ``counter.count(transcript).total`` is what the
    ``within_budget`` check compares with ``budget``."""
    ledger: tuple[Mapping[str, Any], ...] = ()
    """Side-effect records of the execution layer (``LedgerEntry.to_dict`` form)."""
    memory: tuple[Mapping[str, Any], ...] = ()
    """Memory items offered for injection, each ``{"source": ..., "text": ...}``."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """The scenario's knobs in ``AssemblyConfig`` key names; unknown keys are to be ignored."""
    dialect: str | None = None
    """The gateway dialect the body is judged against (``mistral``, ``ollama`` ...), if any."""
    turn: int = 0
    """0 for the first request of a multi-turn scenario, then 1, 2 ... (same session, grown)."""
    protocol_version: int = PROTOCOL_VERSION
    """The contract version this request was built for (:data:`PROTOCOL_VERSION`)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The message list of ``body`` (``messages``, ``input`` or ``contents``), copied."""
        items = self.body.get(MESSAGE_KEYS.get(self.shape, "messages"), [])
        return [dict(m) for m in items] if isinstance(items, list) else []


@runtime_checkable
class Assembler(Protocol):
    """A context assembler for one wire shape."""

    shape: ClassVar[str]

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """The request body to send, or raise :class:`Refusal` to refuse."""
        ...


MessageFunction = Callable[..., object]
"""``f(messages, budget) -> messages``, optionally ``f(messages, budget, *, tools, dialect,
counter)``: the plain-function form of a plug-in."""

FUNCTION_KEYWORDS: Final = ("tools", "dialect", "counter", "ledger")
"""The keyword-only arguments a plain function may declare to see more than its messages."""

LEDGER_CHECKS: Final = frozenset(("ledger_pinned", "ledger_in_summary"))
"""The checks that ask for the execution ledger's entries in the request: a plain function is
judged on them only when it takes ``ledger=`` (the ledger is not in its messages)."""

MEMORY_CHECKS: Final = frozenset(("memory_labelled",))
"""The checks that ask for the scenario's memory items injected into the request: a plain
function is never handed them (no keyword gives them), so they never judge it."""

_TOOL_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "openai-chat": ("tools",),
    "openai-responses": ("tools",),
    "anthropic-messages": ("tools",),
    "gemini": ("tools",),
    "bedrock-converse": ("toolConfig", "tools"),
}
"""Where each shape keeps its tool schemas (Bedrock: ``toolConfig.tools``)."""


def _declared_keywords(function: Callable[..., object]) -> frozenset[str]:
    """Which of :data:`FUNCTION_KEYWORDS` ``function`` takes (all of them with ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: the plain form
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return frozenset(FUNCTION_KEYWORDS)
    return frozenset(
        p.name
        for p in parameters
        if p.name in FUNCTION_KEYWORDS
        and p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )


def body_tools(body: Mapping[str, Any], shape: str) -> list[dict[str, Any]]:
    """The tool schemas of ``body`` as its shape sends them (copies; empty when there are none)."""
    keys = _TOOL_KEYS.get(shape, ("tools",))
    found: Any = body
    for key in keys:
        found = found.get(key) if isinstance(found, Mapping) else None
    return (
        [dict(t) if isinstance(t, Mapping) else t for t in found] if isinstance(found, list) else []
    )


def _with_tools(body: dict[str, Any], shape: str, tools: Sequence[Any]) -> None:
    keys = _TOOL_KEYS.get(shape, ("tools",))
    if len(keys) == 1:
        if tools:
            body[keys[0]] = list(tools)
        else:
            body.pop(keys[0], None)
        return
    outer = dict(body.get(keys[0]) or {})
    if tools:
        outer[keys[1]] = list(tools)
        body[keys[0]] = outer
    else:
        body.pop(keys[0], None)  # Converse rejects a toolConfig without tools


class MessageListAssembler:
    """Wraps a plain message function into an :class:`Assembler` for ``shape``.

    **The plain form** ``f(messages, budget) -> messages`` sees only the message list; system
    (when top-level), tools and the other body keys are put back unchanged around whatever it
    returns. So ``budget`` is what is left for its messages: the request's budget minus what the
    rest of the body costs by the reference counter (``request.counter``; at least 1: libraries
    refuse a limit of 0), and a
    function that keeps the messages it returns within it sends a request within the request's
    budget, which is what ``within_budget`` judges. Since it cannot drop tools or see the
    dialect, it is not judged on cases that need either: cases with a gateway dialect and cases
    whose scenario expects the tool schemas dropped because only that fits
    (:meth:`can_be_judged_on`).

    **The keyword form** ``f(messages, budget, *, tools=..., dialect=..., counter=...)``
    (detected by the signature; ``**kwargs`` takes them all) gets the tool schemas as the shape
    sends them (:func:`body_tools`), the case's dialect (``None`` for a first-party API) and/or
    the case's reference counter (``request.counter``: what ``within_budget`` counts with, for
    the model the case names, which the message list does not show; an image or the hidden
    tool-use prompt of Claude costs differently per model). A function that takes ``tools``
    counts them itself (its ``budget`` leaves them in) and may return
    ``{"messages": [...], "tools": [...]}`` to change the tools sent; one that takes ``dialect``
    is run on dialect cases. Either way it is then judged on everything an
    :class:`Assembler` is judged on.
    """

    shape: ClassVar[str] = "openai-chat"

    def __init__(self, function: MessageFunction, shape: str = "openai-chat") -> None:
        self.function = function
        self.name = getattr(function, "__qualname__", repr(function))
        # An instance attribute shadows the ClassVar: one wrapper per shape it was asked for.
        self.shape = shape  # type: ignore[misc]
        self.keywords = _declared_keywords(function)

    @property
    def sees_tools(self) -> bool:
        """Whether the function takes ``tools=`` (so it can be judged on tool-schema cases)."""
        return "tools" in self.keywords

    @property
    def unseen_checks(self) -> frozenset[str]:
        """The checks that judge what the function is not handed: the memory items'
        (:data:`MEMORY_CHECKS`), and the ledger's (:data:`LEDGER_CHECKS`) unless it takes
        ``ledger=``."""
        return MEMORY_CHECKS | (frozenset() if "ledger" in self.keywords else LEDGER_CHECKS)

    @property
    def sees_dialect(self) -> bool:
        """Whether the function takes ``dialect=`` (so it can be judged on dialect cases)."""
        return "dialect" in self.keywords

    def can_be_judged_on(self, dialect: str | None, expected_checks: Sequence[str]) -> bool:
        """False for a case that needs what the function cannot see: a dialect without
        ``dialect=``, an expected tool-schema drop (``tools_dropped``) without ``tools=``."""
        if dialect is not None and not self.sees_dialect:
            return False
        return self.sees_tools or "tools_dropped" not in expected_checks

    def message_budget(self, request: AssemblyRequest) -> int:
        """The request's budget minus the cost of what the function neither sees nor returns:
        every body key but the message list (a top-level system above all), and the tool schemas
        unless it takes ``tools``; 1 when that alone fills the budget (trimming libraries refuse
        a limit of 0 or below; a function that counts refuses such a request all the same)."""
        key = MESSAGE_KEYS.get(request.shape, "messages")
        hidden = {k: v for k, v in request.body.items() if k != key}
        if self.sees_tools:
            hidden.pop(_TOOL_KEYS.get(request.shape, ("tools",))[0], None)
        if not hidden:
            return request.budget
        from reference_impl.errors import CtxconfError  # noqa: PLC0415 - keep the contract light
        from reference_impl.shapes import get_shape  # noqa: PLC0415

        adapter = get_shape(request.shape)
        try:
            with_hidden = request.counter.count(adapter.parse_request({**hidden, key: []})).total
            bare = request.counter.count(adapter.parse_request({key: []})).total
        except CtxconfError:  # an unparsable remainder: the whole body is judged all the same
            return request.budget
        return max(1, request.budget - max(0, with_hidden - bare))

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """Call the function on ``request.messages`` (with :meth:`message_budget`) and put its
        list back into the body."""
        key = MESSAGE_KEYS.get(request.shape, "messages")
        extra: dict[str, Any] = {}
        if "tools" in self.keywords:
            extra["tools"] = body_tools(request.body, request.shape)
        if "dialect" in self.keywords:
            extra["dialect"] = request.dialect
        if "counter" in self.keywords:
            extra["counter"] = request.counter
        if "ledger" in self.keywords:
            extra["ledger"] = [dict(entry) for entry in request.ledger]
        # Typed as object: third-party code returns whatever it returns; checked below.
        returned: object = self.function(request.messages, self.message_budget(request), **extra)
        tools: object = None
        if self.sees_tools and isinstance(returned, Mapping):
            tools = returned.get("tools", extra["tools"])
            returned = returned.get("messages")
            if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
                raise MalformedReturnError(
                    f"{self.name} returned tools of type {type(tools).__name__}; expected a "
                    f"list of {request.shape} tool schemas"
                )
        if isinstance(returned, str | bytes) or not isinstance(returned, Sequence):
            raise MalformedReturnError(
                f"{self.name} returned {type(returned).__name__}; a message function must "
                f"return a list of {request.shape} message dicts"
                + (' (or {"messages": [...], "tools": [...]})' if self.sees_tools else "")
            )
        body = dict(request.body)
        body[key] = [dict(m) if isinstance(m, Mapping) else m for m in returned]
        if isinstance(tools, Sequence):
            _with_tools(body, request.shape, tools)
        return body

    def __repr__(self) -> str:
        return f"MessageListAssembler({self.name}, shape={self.shape!r})"


@runtime_checkable
class AssemblerFactory(Protocol):
    """A plug-in that makes one assembler per session (``ctxconf soak`` calls it once per run)."""

    shape: ClassVar[str]

    def new_session(self) -> Assembler:
        """A fresh assembler for one session, in the same shape."""
        ...


@runtime_checkable
class StatefulAssembler(Protocol):
    """An assembler that says what the agent should store as its session after each turn."""

    shape: ClassVar[str]

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """The request body to send, or raise :class:`Refusal` to refuse."""
        ...

    def session_after(self) -> Mapping[str, Any] | None:
        """The body whose message list replaces the stored session (None: keep it)."""
        ...
