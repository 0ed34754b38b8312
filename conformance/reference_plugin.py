"""The built-in plug-in ``reference``: ``reference_impl.assemble`` behind the plug-in contract.

One instance per shape. The request body is parsed with the shape's adapter, assembled with the
scenario's knobs (``AssemblyConfig.from_mapping``), the case's budget as an explicit input-budget
override, the reference counter, the ledger and the memory items, and rendered back in the same
shape (through the gateway dialect's renderer when the case names one, e.g. Ollama's ``""`` for
``content: null``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from conformance.protocol import Assembler, AssemblyRequest
from reference_impl.assembler import assemble
from reference_impl.config import AssemblyConfig
from reference_impl.incremental import SessionAssembler
from reference_impl.ledger import Ledger
from reference_impl.memory import MemoryItem
from reference_impl.shapes import get_shape
from reference_impl.transcript import SHAPE_NAMES, Transcript

__all__ = ["ReferenceAssembler", "ReferenceSession", "reference_assemblers"]


class ReferenceAssembler:
    """``reference_impl.assemble`` for one shape."""

    shape: ClassVar[str] = "openai-chat"

    def __init__(self, shape: str) -> None:
        self.shape = shape  # type: ignore[misc]  # instance attribute shadows the ClassVar

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """Assemble with ``reference_impl.assemble`` and render in the request's shape (and
        dialect)."""
        session = get_shape(self.shape).parse_request(request.body)
        assembly = assemble(
            session,
            AssemblyConfig.from_mapping(request.config),
            shape=self.shape,  # type: ignore[arg-type]
            counter=request.counter,
            ledger=Ledger.from_list(request.ledger),
            memory=tuple(MemoryItem(str(m["source"]), str(m["text"])) for m in request.memory),
            budget=request.budget,
        )
        if request.dialect is not None:
            return assembly.render(self.shape, dialect=request.dialect)  # type: ignore[arg-type]
        return assembly.render(self.shape)  # type: ignore[arg-type]

    def new_session(self) -> ReferenceSession:
        """A :class:`ReferenceSession` for one long run (``ctxconf soak``)."""
        return ReferenceSession(self.shape)

    def __repr__(self) -> str:
        return f"ReferenceAssembler({self.shape!r})"


def reference_assemblers() -> dict[str, Assembler]:
    """One :class:`ReferenceAssembler` per shape (the ``reference`` plug-in)."""
    return {shape: ReferenceAssembler(shape) for shape in SHAPE_NAMES}


class ReferenceSession:
    """``reference_impl.SessionAssembler`` for one session: what ``ctxconf soak`` runs.

    Each turn the session is parsed from the request, assembled by the session's
    ``SessionAssembler`` (config and counter fixed by the first request), and
    ``Assembly.session_after()`` (the view without the ledger and memory injections, the summary
    kept) is what the agent stores for the next turn.
    """

    shape: ClassVar[str] = "openai-chat"

    def __init__(self, shape: str) -> None:
        self.shape = shape  # type: ignore[misc]  # instance attribute shadows the ClassVar
        self._assembler: SessionAssembler | None = None
        self._after: Transcript | None = None
        self.summary_failures = 0

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """Assemble one turn; remember what to store."""
        session = get_shape(self.shape).parse_request(request.body)
        if self._assembler is None:
            self._assembler = SessionAssembler(
                AssemblyConfig.from_mapping(request.config),
                shape=self.shape,  # type: ignore[arg-type]
                counter=request.counter,
            )
        self._after = None
        assembly = self._assembler.assemble(
            session,
            ledger=Ledger.from_list(request.ledger),
            memory=tuple(MemoryItem(str(m["source"]), str(m["text"])) for m in request.memory),
            budget=request.budget,
        )
        if assembly.report.summary_failed:
            self.summary_failures += 1
        self._after = assembly.session_after()
        if request.dialect is not None:
            return assembly.render(self.shape, dialect=request.dialect)  # type: ignore[arg-type]
        return assembly.render(self.shape)  # type: ignore[arg-type]

    def session_after(self) -> Mapping[str, Any] | None:
        """The last assembly's ``session_after()`` rendered in this shape."""
        if self._after is None:
            return None
        return get_shape(self.shape).render_request(self._after)

    def __repr__(self) -> str:
        return f"ReferenceSession({self.shape!r})"
