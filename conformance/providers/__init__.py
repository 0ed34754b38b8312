"""Provider acceptance rules as data, validators per shape/dialect/profile, and the emulator."""

from __future__ import annotations

from conformance.providers.verdict import Evidence, Provenance, Verdict

__all__ = ["Evidence", "Provenance", "Verdict"]
