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
from reference_impl.ledger import Ledger
from reference_impl.memory import MemoryItem
from reference_impl.shapes import get_shape
from reference_impl.transcript import SHAPE_NAMES

__all__ = ["ReferenceAssembler", "reference_assemblers"]


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

    def __repr__(self) -> str:
        return f"ReferenceAssembler({self.shape!r})"


def reference_assemblers() -> dict[str, Assembler]:
    """One :class:`ReferenceAssembler` per shape (the ``reference`` plug-in)."""
    return {shape: ReferenceAssembler(shape) for shape in SHAPE_NAMES}
