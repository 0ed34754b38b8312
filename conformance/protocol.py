"""The plug-in contract: what a third-party context assembler implements (protocol version 1).

An assembler declares the wire shape it speaks and turns one :class:`AssemblyRequest` into the
request body it would send to the provider::

    class MyAssembler:
        shape: ClassVar[str] = "openai-chat"

        def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
            body = dict(request.body)
            body["messages"] = trim(body["messages"], request.budget, request.counter)
            return body

To *refuse* (the right answer when the session is broken or cannot fit), raise :class:`Refusal`
(or ``reference_impl.errors.ContextAssemblyError``, which it extends). Any other exception, a
hang past the case timeout, or a return value that is not a request body of the declared shape
becomes an ``error`` result for that case; the run goes on.

A plain function ``f(messages: list[dict], budget: int) -> list[dict]`` over OpenAI Chat messages
(or the message list of another shape, see :class:`MessageListAssembler`) is accepted as is.

The contract is versioned by :data:`PROTOCOL_VERSION`; a change that breaks existing plug-ins
bumps it, and the run report records the version it ran with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from reference_impl.errors import ContextAssemblyError
from reference_impl.tokens import TokenCounter

__all__ = [
    "MESSAGE_KEYS",
    "PROTOCOL_VERSION",
    "Assembler",
    "AssemblyRequest",
    "MessageFunction",
    "MessageListAssembler",
    "Refusal",
]

PROTOCOL_VERSION: Final = 1

# Where each shape keeps its message list; the rest of a body (system, tools, model) is context
# that a plain message function never sees and the wrapper puts back unchanged.
MESSAGE_KEYS: Final[Mapping[str, str]] = {
    "openai-chat": "messages",
    "openai-responses": "input",
    "anthropic-messages": "messages",
    "gemini": "contents",
    "bedrock-converse": "messages",
}


class Refusal(ContextAssemblyError):  # noqa: N818 - a refusal is an answer, not a fault
    """Raised by a plug-in that refuses to assemble (fail closed). ``code`` says why."""

    def __init__(self, message: str, *, code: str = "context_assembly_refused") -> None:
        super().__init__(message, code=code)


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
    shape: str
    body: Mapping[str, Any]
    budget: int
    counter: TokenCounter
    ledger: tuple[Mapping[str, Any], ...] = ()
    memory: tuple[Mapping[str, Any], ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    dialect: str | None = None
    turn: int = 0
    protocol_version: int = PROTOCOL_VERSION

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


MessageFunction = Callable[[list[dict[str, Any]], int], Sequence[Mapping[str, Any]]]


class MessageListAssembler:
    """Wraps ``f(messages, budget) -> messages`` into an :class:`Assembler` for ``shape``.

    The function sees only the message list; system (when top-level), tools and the other body
    keys are put back unchanged around whatever it returns.
    """

    shape: ClassVar[str] = "openai-chat"

    def __init__(self, function: MessageFunction, shape: str = "openai-chat") -> None:
        self.function = function
        self.name = getattr(function, "__qualname__", repr(function))
        # An instance attribute shadows the ClassVar: one wrapper per shape it was asked for.
        self.shape = shape  # type: ignore[misc]

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        key = MESSAGE_KEYS.get(request.shape, "messages")
        # Typed as object: third-party code returns whatever it returns; checked below.
        returned: object = self.function(request.messages, request.budget)
        if isinstance(returned, str | bytes) or not isinstance(returned, Sequence):
            raise TypeError(
                f"{self.name} returned {type(returned).__name__}; a message function must "
                f"return a list of {request.shape} message dicts"
            )
        body = dict(request.body)
        body[key] = [dict(m) if isinstance(m, Mapping) else m for m in returned]
        return body

    def __repr__(self) -> str:
        return f"MessageListAssembler({self.name}, shape={self.shape!r})"
