"""The verdict on one request: accept, or reject with the provider's own error envelope.

Every verdict states its provenance, so nothing emulated is ever presented as a provider's answer:

* ``recorded-live``: a real provider answered this very request (a live cassette holds a request
  whose JSON body is equal, key order aside, for the same model, naming the same betas in its
  ``anthropic-beta`` header);
* ``recorded-emulated``: a cassette recorded against our emulator answered this very request;
* ``recorded-skeleton``: a cassette (live or emulated: its ``recorded_against`` says which)
  answered a request of the same structure (skeleton) but not this body: the texts, ids or
  values differ, so the answer may not apply (a negative ``temperature`` shares its skeleton
  with a valid one; where the validators refuse such a request but still accept the recorded
  one, the verdict is theirs, ``emulated``);
* ``emulated``: the validators computed it now.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeAlias

__all__ = ["Evidence", "Provenance", "Verdict"]

Evidence: TypeAlias = Literal["documented", "recorded", "observed", "inferred"]
Provenance: TypeAlias = Literal[
    "recorded-live", "recorded-emulated", "recorded-skeleton", "emulated"
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """``accept`` carries no rule; ``reject`` names the rule, its evidence and the error body.
    The fields are in the order reports store them (:meth:`to_dict`)."""

    verdict: Literal["accept", "reject"]
    status: int
    rule: str | None = None
    evidence: Evidence | None = None
    provenance: Provenance = "emulated"
    error: dict[str, Any] | None = field(default=None, hash=False, compare=True)
    shape: str | None = None
    dialect: str | None = None
    profile: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether the request was accepted."""
        return self.verdict == "accept"

    def to_dict(self) -> dict[str, Any]:
        """The verdict as reports store it: every field (provenance and evidence always)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
