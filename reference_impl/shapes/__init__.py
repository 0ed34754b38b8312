"""Provider wire shapes: parse request/response bodies into the transcript and render them back.

>>> from reference_impl.shapes import get_shape
>>> get_shape("openai-chat").name
'openai-chat'
"""

from __future__ import annotations

import importlib
from typing import Final

from reference_impl.errors import ShapeError
from reference_impl.shapes.base import ResponseMeta, ShapeAdapter, ShapeCapabilities
from reference_impl.transcript import SHAPE_NAMES, ShapeName

__all__ = [
    "SHAPE_NAMES",
    "ResponseMeta",
    "ShapeAdapter",
    "ShapeCapabilities",
    "get_shape",
    "shape_names",
]

_MODULES: Final[dict[str, str]] = {
    "openai-chat": "reference_impl.shapes.openai_chat",
    "openai-responses": "reference_impl.shapes.openai_responses",
    "anthropic-messages": "reference_impl.shapes.anthropic_messages",
    "gemini": "reference_impl.shapes.gemini",
    "bedrock-converse": "reference_impl.shapes.bedrock_converse",
}


def shape_names() -> tuple[ShapeName, ...]:
    """The names of every wire shape, in registry order."""
    return SHAPE_NAMES  # type: ignore[return-value]


def get_shape(name: str) -> ShapeAdapter:
    """The adapter of one shape; a named error listing the known shapes otherwise."""
    module = _MODULES.get(name)
    if module is None:
        raise ShapeError(f"unknown shape {name!r}; known shapes: {', '.join(_MODULES)}")
    adapter: ShapeAdapter = importlib.import_module(module).ADAPTER
    return adapter
