"""Provider wire shapes: parse request/response bodies into the transcript and render them back.

>>> from reference_impl.shapes import get_shape
>>> get_shape("openai-chat").name
'openai-chat'
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Final, TypeVar

from reference_impl.errors import CtxconfError, ShapeError
from reference_impl.shapes._extras import (
    MessageExtras,
    RawContent,
    carries_raw_blocks,
    carry_merged_extras,
    raw_block_texts_by_message,
    raw_blocks_by_message,
    raw_wire_content,
    single_message_record,
)
from reference_impl.shapes.base import (
    ForcedTools,
    GenerationOptions,
    MergePolicy,
    ResponseMeta,
    ShapeAdapter,
    ShapeCapabilities,
    camel_case,
)
from reference_impl.transcript import SHAPE_NAMES, Message, ShapeName, Transcript

__all__ = [
    "SHAPE_NAMES",
    "ForcedTools",
    "GenerationOptions",
    "RawContent",
    "ResponseMeta",
    "ShapeAdapter",
    "ShapeCapabilities",
    "ShapeFact",
    "camel_case",
    "carries_raw_blocks",
    "get_shape",
    "merge_policy",
    "merged_with_extras",
    "raw_block_texts_by_message",
    "raw_blocks_by_message",
    "raw_wire_content",
    "reasoning_opens_message",
    "shape_names",
]

T = TypeVar("T")

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


class ShapeFact(Mapping[str, T]):
    """One fact of every shape as a read-only mapping, read from the adapters when first asked
    (a shape module is imported only when its fact is needed).

    >>> ShapeFact(lambda adapter: adapter.messages_key)["gemini"]
    'contents'
    """

    def __init__(self, read: Callable[[ShapeAdapter], T]) -> None:
        self._read = read

    def __getitem__(self, name: str) -> T:
        if name not in _MODULES:
            raise KeyError(name)
        return self._read(get_shape(name))

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


@functools.cache
def reasoning_opens_message(origin: str) -> bool:
    """Whether a reasoning artifact of ``origin`` must open the assistant message that carries
    tool calls: its shape's capability (False for an origin that is not a shape, DeepSeek)."""
    return origin in _MODULES and get_shape(origin).capabilities.reasoning_opens_message


@functools.cache
def merge_policy(shape: str) -> MergePolicy | None:
    """How ``shape``'s default profile wants same-side turns merged (None: not at all, or not a
    shape)."""
    return get_shape(shape).capabilities.merge_policy if shape in _MODULES else None


def merged_with_extras(
    shape: str, before: Transcript, after: Transcript, groups: Sequence[Sequence[int]]
) -> Transcript:
    """``after``, ``before`` with neighbours merged (``groups``: see ``carry_merged_extras``),
    with the extras of what it merged carried to the merged messages (the transcript itself when
    ``before`` has no extras for ``shape`` or nothing merged)."""
    if shape not in _MODULES or not groups:
        return after
    return carry_merged_extras(shape, before, after, groups, functools.partial(_blocks_of, shape))


def _blocks_of(shape: str, message: Message, extras: MessageExtras) -> int:
    """How many wire blocks ``message`` is sent as in ``shape``, with its extras: it rendered
    alone (a message the shape refuses to render alone counts its parts and raw blocks)."""
    adapter = get_shape(shape)
    try:
        body = adapter.render_request(single_message_record(shape, message, extras))
    except CtxconfError:
        return len(message.parts) + sum(1 for position, _ in extras.raw if len(position) == 1)
    turns = body.get(adapter.messages_key) or []
    return len(turns[0][adapter.content_key]) if turns else 0
