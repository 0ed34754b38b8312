"""Audit recorded traffic: judge every provider request found in cassettes and request logs.

Shared by ``ctxconf audit`` and the calibration tests. Reading the many cassette serialisations is
``conformance.recordings``' job; this module only decides shape, dialect and profile for each
recorded request and asks the validators for a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from conformance.providers.catalog import catalog_dialect, list_dialects, profile_for_model
from conformance.providers.validation import validate_request
from conformance.providers.verdict import Verdict
from conformance.recordings import RecordedInteraction, iter_recordings

__all__ = ["AuditRow", "audit_interaction", "audit_paths", "dialect_for", "model_of"]

# Gemini puts the model in the path (``/models/gemini-2.5-pro:generateContent``), Bedrock too
# (``/model/amazon.nova-micro-v1:0/converse``); the other shapes carry ``model`` in the body.
_URL_MODEL = re.compile(r"/models?/([^/:]+(?::\d+)?)(?::|/)")


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One audited request: where it was, how it was judged, and what the provider answered."""

    file: str
    interaction: int
    shape: str
    dialect: str | None
    verdict: Verdict
    recorded_status: int | None
    url: str

    def to_dict(self) -> dict[str, Any]:
        """The row as ``ctxconf audit --json`` prints it."""
        return {
            "file": self.file,
            "interaction": self.interaction,
            "shape": self.shape,
            "dialect": self.dialect,
            "profile": self.verdict.profile,
            "verdict": self.verdict.verdict,
            "rule": self.verdict.rule,
            "evidence": self.verdict.evidence,
            "recorded_status": self.recorded_status,
        }


def dialect_for(shape: str, detected: str | None) -> str | None:
    """The catalog dialect for a detected gateway; unknown gateways are judged as the base shape."""
    dialect = catalog_dialect(shape, detected)
    return dialect if dialect in list_dialects(shape) else None


def model_of(url: str, body: object) -> str | None:
    """The model a request names, from its body or (Gemini, Bedrock) from its URL."""
    if isinstance(body, Mapping) and isinstance(body.get("model"), str):
        return str(body["model"])
    found = _URL_MODEL.search(unquote(url))
    return found.group(1) if found else None


def audit_interaction(interaction: RecordedInteraction) -> AuditRow | None:
    """The verdict on one recorded request; ``None`` when it is not a provider request we judge."""
    shape = interaction.shape
    if shape is None or interaction.method.upper() != "POST":
        return None
    dialect = dialect_for(shape, interaction.dialect)
    # A body that is not a JSON object is judged too: it gets the provider's own 400 (C0, A12 ...).
    body: Any = interaction.judged_body
    profile = profile_for_model(shape, dialect, model_of(interaction.url, body))
    verdict = validate_request(body, shape, dialect=dialect, profile=profile.id)
    return AuditRow(
        file=interaction.file,
        interaction=interaction.index,
        shape=shape,
        dialect=dialect,
        verdict=verdict,
        recorded_status=interaction.status,
        url=interaction.url,
    )


def audit_paths(paths: Iterable[str | Path]) -> Iterator[AuditRow]:
    """Every judged request under ``paths`` (files or folders, recursively, in sorted order).

    Raises ``conformance.recordings.RecordingError`` naming a file that cannot be read.
    """
    for path in paths:
        for interaction in iter_recordings(path):
            row = audit_interaction(interaction)
            if row is not None:
                yield row
