"""Image token formulas (token-counting.md section 4), each with its source.

All functions take pixel sizes; ``None`` for an unknown size gives the formula's upper bound, because
under-counting is a conformance failure and an image whose size we cannot read can be any size.
Image counts are estimates in any case: forum measurements show billing and the published rules
disagree at times (section 4b), so an assembler keeps a safety margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

__all__ = [
    "AnthropicImageRule",
    "GeminiImageRule",
    "PatchRule",
    "TileRule",
    "anthropic_image_tokens",
    "claude_version",
    "gemini_image_tokens",
    "image_patches",
    "openai_image_rule",
    "patch_image_tokens",
    "tile_image_tokens",
]


# ------------------------------------------------------------------------ OpenAI: tiles (4a)


@dataclass(frozen=True, slots=True)
class TileRule:
    """GPT-4o class: ``base + tile * tiles``; ``detail: low`` costs ``base``."""

    base: int = 85
    tile: int = 170

    @property
    def label(self) -> str:
        """The rule as it is named in reports (``tile(base,tile)``)."""
        return f"tile({self.base},{self.tile})"


def tile_image_tokens(
    width: int | None, height: int | None, detail: str | None, rule: TileRule = TileRule()
) -> int:
    """[vendor] OpenAI vision guide via v2ex.com/t/1044688 and Azure OpenAI docs: ``low`` costs the
    base; otherwise fit in 2048x2048, then shortest side to 768 (both only scale down, as litellm
    and langchain-openai do), then count 512-px tiles. ``auto`` is counted as ``high`` (the model
    may pick either; the larger one never under-counts)."""
    if detail == "low":
        return rule.base
    if width is None or height is None or width <= 0 or height <= 0:
        # Largest tile grid after scaling: 768 x 2048 -> 2 x 4 tiles.
        return rule.base + rule.tile * 8
    scale = min(1.0, 2048 / max(width, height), 768 / min(width, height))
    w = math.floor(width * scale)
    h = math.floor(height * scale)
    return rule.base + rule.tile * math.ceil(w / 512) * math.ceil(h / 512)


# ---------------------------------------------------------------------- OpenAI: patches (4b)

_PATCH: Final = 32
_PATCH_BUDGET: Final = 1536


@dataclass(frozen=True, slots=True)
class PatchRule:
    """gpt-4.1-mini/nano, o4-mini, gpt-5-mini/nano: 32-px patches (cap 1536) times a multiplier."""

    multiplier: float

    @property
    def label(self) -> str:
        """The rule as it is named in reports (``patch(xmultiplier)``)."""
        return f"patch(x{self.multiplier:g})"


def image_patches(width: int | None, height: int | None) -> int:
    """[vendor, via the mintlify mirror of the OpenAI images guide and openai/openai-python#2851]:
    ``ceil(w/32) * ceil(h/32)``; over 1536, shrink by ``sqrt(1536 * 32^2 / (w*h))``, adjust so whole
    patches fit, and recount. 1024x1024 -> 1024; 1800x2400 -> 1452."""
    if width is None or height is None or width <= 0 or height <= 0:
        return _PATCH_BUDGET
    patches = math.ceil(width / _PATCH) * math.ceil(height / _PATCH)
    if patches <= _PATCH_BUDGET:
        return patches
    shrink = math.sqrt(_PATCH_BUDGET * _PATCH**2 / (width * height))
    w_patches = width * shrink / _PATCH
    h_patches = height * shrink / _PATCH
    shrink *= min(math.floor(w_patches) / w_patches, math.floor(h_patches) / h_patches)
    w = int(width * shrink)
    h = int(height * shrink)
    return min(_PATCH_BUDGET, math.ceil(w / _PATCH) * math.ceil(h / _PATCH))


def patch_image_tokens(width: int | None, height: int | None, rule: PatchRule) -> int:
    """Tokens of an image under a patch rule: its 32-pixel patches times the model's multiplier."""
    # Rounded up: a fractional token is still billed as a whole one somewhere.
    return math.ceil(image_patches(width, height) * rule.multiplier)


# Multipliers: [vendor] gpt-4.1-mini 1.62, gpt-4.1-nano 2.46 (OpenAI guide, section 4b);
# [community] tokenlens#7: gpt-5-mini 1.62, gpt-5-nano 2.46, o4-mini 1.72.
_PATCH_MODELS: Final[tuple[tuple[str, float], ...]] = (
    ("gpt-4.1-mini", 1.62),
    ("gpt-4.1-nano", 2.46),
    ("gpt-5-mini", 1.62),
    ("gpt-5-nano", 2.46),
    ("o4-mini", 1.72),
)
# Tile constants: [lib] litellm 1.110.2 _TILE_IMAGE_TOKEN_COSTS (section 4a). Checked in order:
# longer prefixes first so gpt-4o-mini does not fall under gpt-4o.
_TILE_MODELS: Final[tuple[tuple[str, TileRule], ...]] = (
    ("gpt-4o-mini", TileRule(2833, 5667)),
    ("gpt-4o", TileRule(85, 170)),
    ("chatgpt-4o", TileRule(85, 170)),
    ("gpt-4.1", TileRule(85, 170)),
    ("gpt-5", TileRule(70, 140)),
    ("o1", TileRule(75, 150)),
    ("o3", TileRule(75, 150)),
)


def openai_image_rule(model: str | None) -> TileRule | PatchRule:
    """Pick the image formula by model name: patch class first, then tile constants, else 85/170."""
    bare = (model or "").strip().rsplit("/", 1)[-1]
    for prefix, multiplier in _PATCH_MODELS:
        if bare.startswith(prefix):
            return PatchRule(multiplier)
    for prefix, rule in _TILE_MODELS:
        if bare.startswith(prefix):
            return rule
    return TileRule()


# ------------------------------------------------------------------------------ Anthropic (4c)


@dataclass(frozen=True, slots=True)
class AnthropicImageRule:
    """``w*h/750`` after scaling down so the long edge is at most ``max_long_edge`` and the image
    at most ``max_tokens`` (``max_tokens * 750`` pixels).

    Standard tier: [vendor] docs.anthropic.com/en/docs/vision: scaled down when the long edge is
    over 1568 px "or your image is more than ~1,600 tokens"; the 1.15 MP figure there is a
    recommendation (its own table charges 1092x1092 = 1.19 MP at ~1590), so it is not a cap here.
    High-res tier (Opus 4.7 and later; [community] teamchong/pxpipe#26 and litellm's
    ``claude-high``): 2576 px, 4784 tokens.
    """

    max_long_edge: int = 1568
    max_tokens: int = 1600

    @staticmethod
    def for_model(model: str | None) -> AnthropicImageRule:
        """The image limits of a Claude model (larger for 4.7 and later)."""
        if model and claude_version(model) >= (4, 7):
            return AnthropicImageRule(max_long_edge=2576, max_tokens=4784)
        return AnthropicImageRule()


def claude_version(model: str) -> tuple[int, int]:
    """(major, minor) of names like ``claude-opus-4-7``, ``claude-sonnet-4-5-2025…``; (0, 0) else."""
    parts = model.rsplit("/", 1)[-1].rsplit(".", maxsplit=1)[-1].split("-")
    numbers = [p for p in parts if p.isdigit() and len(p) <= 2]
    if not numbers:
        return (0, 0)
    major = int(numbers[0])
    minor = int(numbers[1]) if len(numbers) > 1 else 0
    return (major, minor)


def anthropic_image_tokens(
    width: int | None, height: int | None, rule: AnthropicImageRule = AnthropicImageRule()
) -> int:
    """Tokens of an image for Claude (width x height / 750 after scaling to the limits); the cap
    when the size is unknown."""
    if width is None or height is None or width <= 0 or height <= 0:
        return rule.max_tokens
    scale = min(
        1.0,
        rule.max_long_edge / max(width, height),
        math.sqrt(rule.max_tokens * 750 / (width * height)),
    )
    w = math.floor(width * scale)
    h = math.floor(height * scale)
    return min(rule.max_tokens, math.ceil(w * h / 750))


# --------------------------------------------------------------------------------------- Gemini


@dataclass(frozen=True, slots=True)
class GeminiImageRule:
    """Gemini 2.x: [community, quoting the Gemini token-counting docs] geminibyexample.com
    "Calculating multimodal input tokens": an image with both sides at most 384 px is 258 tokens,
    a larger one is cut into 768x768 tiles of 258 each. Gemini 3: the media resolution sets a
    budget per image, 1,120 at its default (high) ([community] a Gemini 3 guide's table: high
    ~1120, medium ~560 for PDFs); the recordings show 1,089 for a 128x128 PNG on
    gemini-3-flash-preview. ``per_image`` is that budget (None: the 2.x tiles); a PDF page is
    ``page`` tokens (2.x: one 258 image; Gemini 3: the medium budget)."""

    per_image: int | None = None
    tile: int = 258
    page: int = 258

    @staticmethod
    def for_generation(generation: int) -> GeminiImageRule:
        """The rule of a Gemini major version (3 and later: the media-resolution budgets)."""
        if generation >= 3:
            return GeminiImageRule(per_image=1120, page=560)
        return GeminiImageRule()

    @property
    def max_tokens(self) -> int:
        """What an image of unknown size is charged (the Gemini 3 default budget)."""
        return self.per_image if self.per_image is not None else 1120


def gemini_image_tokens(width: int | None, height: int | None, rule: GeminiImageRule) -> int:
    """Tokens of an image for Gemini (see ``GeminiImageRule``)."""
    if rule.per_image is not None:
        return rule.per_image
    if width is None or height is None or width <= 0 or height <= 0:
        return rule.max_tokens
    if width <= 384 and height <= 384:
        return rule.tile
    return math.ceil(width / 768) * math.ceil(height / 768) * rule.tile
