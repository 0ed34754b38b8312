"""Validators per shape (and gateway dialect): detectors over wire bodies, registered by name.

Importing this package registers every detector; :mod:`conformance.providers.validation` composes
them
per profile. One module per shape, plus ``gateways`` for the OpenAI-compatible dialect rules.
"""

from __future__ import annotations

from conformance.providers.validators import (  # noqa: F401 - imported to register their detectors
    anthropic_messages,
    bedrock_converse,
    gateways,
    gemini,
    openai_chat,
    openai_responses,
)
from conformance.providers.validators._base import (
    DETECTORS,
    STRUCTURE,
    Context,
    DetectorFn,
    Finding,
)

__all__ = ["DETECTORS", "STRUCTURE", "Context", "DetectorFn", "Finding"]
