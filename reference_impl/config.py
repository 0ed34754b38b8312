"""``AssemblyConfig``: the knobs of the reference assembler, loaded from YAML or a mapping.

Every key of the documented example is accepted under an optional ``context_assembly:`` root.
Anything else is a ``ConfigError`` naming the key path (``context_assembly.memory.max_items``) and,
for an unknown key, the closest known key. Impossible combinations (an output reserve that eats the
whole window, a ratio outside (0, 1]) are refused at load time rather than at the first request.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, get_args

import yaml
from typing_extensions import Self

from reference_impl.documents import DocumentLimitError, load_yaml_strict, read_input_text
from reference_impl.errors import ConfigError

__all__ = [
    "AssemblyConfig",
    "LedgerPinMode",
    "MemoryConfig",
    "MiddleDeleteUnit",
    "OnPairingError",
    "OnStillOverBudget",
    "PinName",
    "TokenCounterChoice",
]

MiddleDeleteUnit: TypeAlias = Literal["tool_ring", "clear_tool_result"]
OnPairingError: TypeAlias = Literal["fail_closed", "synthesize_error_results"]
OnStillOverBudget: TypeAlias = Literal["fail_closed", "drop_tools_schema_then_fail"]
TokenCounterChoice: TypeAlias = Literal[
    "provider_or_tiktoken_model_encoding", "tiktoken_model_encoding"
]
PinName: TypeAlias = Literal["first_user_message", "side_effect_ledger", "security_system_prompt"]
LedgerPinMode: TypeAlias = Literal["always", "when_not_visible"]

ROOT: Final = "context_assembly"
MAX_RETRIES_CAP: Final = 2  # retry at most twice, never loop
ANTHROPIC_BREAKPOINT_CAP: Final = 4  # Anthropic accepts at most 4 cache_control blocks


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Memory injections: how many labelled items may be pinned at most."""

    max_items: int = 5


@dataclass(frozen=True, slots=True)
class AssemblyConfig:
    """What the assembler may keep, drop, summarize and refuse. Defaults match the issue's example."""

    model_input_limit: int = 128_000
    output_reserve_tokens: int = 8192
    safety_margin_tokens: int = 1024
    recent_tool_rings: int = 3
    """Suffix range: the last N complete rings and everything after the oldest of them are never
    cut. With 0 (or no complete ring) the range is everything after the last ring."""
    recent_user_turns: int = 2
    """The latest N plain user messages (at least the latest one) are never cut, each on its own:
    the rings and turns *between* them stay in the middle and may be deleted."""
    middle_delete_unit: MiddleDeleteUnit = "tool_ring"
    keep_middle_error_results: int = 5
    summarize_trigger_ratio: float = 0.8
    compaction_headroom: float = 0.0
    """When the middle must be cut (the view, nothing cut, is over the budget), it is cut until
    this share of the input budget is left free. An agent that stores the view
    (``Assembly.session_after()``), or a ``SessionAssembler``, which then keeps it, only appends
    to the request for the turns after it (a compaction every few turns, not a moving window
    every turn: the provider's prefix cache keeps hitting, and a turn counts only what it
    appends). 0: cut just enough."""
    summary_max_tokens: int = 1024
    summary_timeout_ms: int = 8000
    on_pairing_error: OnPairingError = "fail_closed"
    on_still_over_budget: OnStillOverBudget = "fail_closed"
    token_counter: TokenCounterChoice = "provider_or_tiktoken_model_encoding"
    """Counting policy. A provider count API needs a client and credentials, which are never
    borrowed silently: pass ``counter=AnthropicCountTokensCounter(client, model)`` (or
    ``OpenAIInputTokensCounter``) to ``assemble`` to use it. Without one, both values use the local
    counter for the shape: tiktoken with the model's encoding for OpenAI shapes, a calibrated
    estimate with an explicit safety factor for the others. The report names the counter used."""
    pin: tuple[PinName, ...] = (
        "first_user_message",
        "side_effect_ledger",
        "security_system_prompt",
    )
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    # Keys the issue implies (documented in examples/assembly.yaml):
    clear_min_tokens_won: int = 0
    """``clear_tool_result`` clears a result only when that wins at least this many tokens."""
    short_error_max_tokens: int = 256
    """An error ring in the middle counts as a *short* error result (kept longer) up to this size."""
    summary_max_depth: int = 3
    """How many times a summary may be summarized again before older summary text is let go."""
    max_retries: int = 2
    """``call_with_context_retry``: extra attempts after a context-length error (at most 2)."""
    anthropic_cache_breakpoints: int = 4
    """``cache_control`` breakpoints placed when rendering anthropic-messages (at most 4)."""
    ledger_pin_mode: LedgerPinMode = "always"
    """``always``: the pinned ledger note lists every side effect. ``when_not_visible``: it lists
    only those whose facts (a kept ring, the idempotency key or resource id in kept text or the
    summary) are not already in the view, so the request prefix stays byte-stable between
    compactions (prompt caching) while no side effect is ever out of sight."""

    def __new__(cls, *_positional: Any, **changes: Any) -> Self:
        # An unknown keyword is a ConfigError naming the closest key, as in a loaded file (the
        # generated __init__ would raise a bare TypeError before __post_init__ runs). Not
        # super(): slots=True rebuilds the class, which the zero-argument form does not follow.
        _known_keys(changes)
        return object.__new__(cls)

    def __post_init__(self) -> None:
        # A list of pins and a mapping of memory settings are taken as a loaded file takes them.
        pin: object = self.pin  # as passed: the annotation is what is kept
        if isinstance(pin, list):
            object.__setattr__(self, "pin", tuple(pin))
        memory: object = self.memory
        if isinstance(memory, Mapping):
            object.__setattr__(self, "memory", _read_memory(memory))
        _check(self, ROOT)

    # -- derived values ---------------------------------------------------------------------

    def headroom_tokens(self, budget: int) -> int:
        """The tokens ``compaction_headroom`` leaves free of ``budget`` after a cut, rounded up
        (so a cut leaves at least that share free; the product rounded to 6 places first, so
        that float noise does not add a token: 0.07 of 100,000 is 7,000.000000000001)."""
        return math.ceil(round(budget * self.compaction_headroom, 6))

    def cut_target(self, budget: int, fixed: int) -> int:
        """What a cut of the middle aims at: ``budget`` less the headroom, but never below
        ``fixed`` (what is not cut: prefix, suffix, tools, overhead) nor above the budget."""
        return min(budget, max(budget - self.headroom_tokens(budget), fixed))

    @property
    def input_budget(self) -> int:
        """limit - output reserve - safety margin: what the request itself may use."""
        return self.model_input_limit - self.output_reserve_tokens - self.safety_margin_tokens

    def pinned(self, name: PinName) -> bool:
        """Whether the pin ``name`` is switched on."""
        return name in self.pin

    def with_changes(self, **changes: Any) -> AssemblyConfig:
        """A copy with some keys changed, validated like a loaded file (an unknown key is a
        :class:`ConfigError` naming the closest one; ``pin`` may be a list, ``memory`` a
        mapping)."""
        return replace(self, **changes)

    def to_mapping(self) -> dict[str, Any]:
        """The config as plain data, in the YAML file's field names."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, MemoryConfig):
                value = {"max_items": value.max_items}
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return {ROOT: out}

    # -- loading ----------------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> AssemblyConfig:
        """Read a mapping with or without the ``context_assembly:`` root."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"expected a mapping, got {_type_name(data)}", where=ROOT)
        body: Any = data
        if ROOT in data:
            extra = sorted(set(data) - {ROOT})
            if extra:
                raise ConfigError(
                    f"unknown top-level key {extra[0]!r}; only {ROOT!r} is read", where=extra[0]
                )
            body = data[ROOT]
            if body is None:
                return cls()
            if not isinstance(body, Mapping):
                raise ConfigError(f"expected a mapping, got {_type_name(body)}", where=ROOT)
        return cls(**_read_body(body))

    @classmethod
    def from_yaml(cls, source: str | Path) -> AssemblyConfig:
        """Read a YAML file (a ``Path`` or an existing path string) or YAML text.

        The project's safe reader (:mod:`reference_impl.documents`) applies: a key given twice,
        an over-large file or a YAML alias bomb is a :class:`ConfigError` naming the place."""
        text: str
        origin = "<yaml>"
        if not isinstance(source, str | Path):
            raise ConfigError(
                f"expected YAML text or a file path, got {type(source).__name__}", where=origin
            )
        if isinstance(source, str) and _names_a_missing_file(source):
            raise ConfigError("cannot read config file: no such file", where=source)
        try:
            if isinstance(source, Path) or ("\n" not in source and Path(source).is_file()):
                origin = str(source)
                try:
                    text = read_input_text(source)
                except OSError as exc:
                    raise ConfigError(
                        f"cannot read config file: {exc.strerror}", where=origin
                    ) from None
                except UnicodeDecodeError as exc:
                    raise ConfigError(f"not UTF-8 text (byte {exc.start})", where=origin) from None
            else:
                text = source
            loaded = load_yaml_strict(text)
        except DocumentLimitError as exc:
            raise ConfigError(str(exc), where=origin) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f"{origin}:{mark.line + 1}:{mark.column + 1}" if mark else origin
            problem = getattr(exc, "problem", None)
            detail = f": {problem}" if problem else ""
            raise ConfigError(f"not valid YAML{detail}", where=at) from None
        if loaded is None:
            return cls()
        return cls.from_mapping(loaded)


_ENUMS: Final[dict[str, tuple[str, ...]]] = {
    "middle_delete_unit": get_args(MiddleDeleteUnit),
    "on_pairing_error": get_args(OnPairingError),
    "on_still_over_budget": get_args(OnStillOverBudget),
    "token_counter": get_args(TokenCounterChoice),
    "ledger_pin_mode": get_args(LedgerPinMode),
}
_PINS: Final = get_args(PinName)
_INTS: Final = (
    "model_input_limit",
    "output_reserve_tokens",
    "safety_margin_tokens",
    "recent_tool_rings",
    "recent_user_turns",
    "keep_middle_error_results",
    "summary_max_tokens",
    "summary_timeout_ms",
    "clear_min_tokens_won",
    "short_error_max_tokens",
    "summary_max_depth",
    "max_retries",
    "anthropic_cache_breakpoints",
)
_KEYS: Final = tuple(f.name for f in fields(AssemblyConfig))


def _known_keys(changes: Mapping[str, Any]) -> None:
    for key in changes:
        if key not in _KEYS:
            raise ConfigError(_unknown(key, _KEYS), where=f"{ROOT}.{key}")


def _read_body(body: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in body.items():
        if not isinstance(key, str) or key not in _KEYS:
            raise ConfigError(_unknown(key, _KEYS), where=f"{ROOT}.{key}")
        if key == "memory":
            out[key] = _read_memory(value)
        elif key == "pin":
            if not isinstance(value, list | tuple):
                raise ConfigError(
                    f"expected a list of pin names, got {_type_name(value)}", where=f"{ROOT}.pin"
                )
            out[key] = tuple(value)
        else:
            out[key] = value
    return out


def _read_memory(value: Any) -> MemoryConfig:
    where = f"{ROOT}.memory"
    if value is None:
        return MemoryConfig()
    if not isinstance(value, Mapping):
        raise ConfigError(f"expected a mapping, got {_type_name(value)}", where=where)
    for key in value:
        if key != "max_items":
            raise ConfigError(_unknown(key, ("max_items",)), where=f"{where}.{key}")
    return MemoryConfig(max_items=value.get("max_items", 5))


_MAX_INT: Final = 10**12
"""Above any count of tokens, turns, retries or milliseconds a setting means; the cap keeps an
absurd value (a YAML or Python integer of thousands of digits) from reaching arithmetic and
messages that cannot take it."""


def _in_range(value: int, where: str) -> None:
    """Not negative and at most :data:`_MAX_INT`; a value too long to print is named by its
    size (Python refuses to write an integer of more than 4,300 digits)."""
    if 0 <= value <= _MAX_INT:
        return
    shown = (
        str(value)
        if value.bit_length() < 64
        else f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    )
    if value < 0:
        raise ConfigError(f"must not be negative (got {shown})", where=where)
    raise ConfigError(f"must be at most {_MAX_INT:,} (got {shown})", where=where)


def _check(config: AssemblyConfig, root: str) -> None:
    """Types first (strict: no bool for int, no str for float), then impossible values."""
    for name in _INTS:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(
                f"expected an integer, got {_type_name(value)}", where=f"{root}.{name}"
            )
        _in_range(value, f"{root}.{name}")
    for name, options in _ENUMS.items():
        value = getattr(config, name)
        if not isinstance(value, str) or value not in options:
            raise ConfigError(
                f"{value!r} is not one of {', '.join(options)}{_hint(value, options)}",
                where=f"{root}.{name}",
            )
    ratio = config.summarize_trigger_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, int | float):
        raise ConfigError(
            f"expected a number, got {_type_name(ratio)}", where=f"{root}.summarize_trigger_ratio"
        )
    if not 0 < ratio <= 1:
        raise ConfigError(
            f"must be in (0, 1] (got {ratio})", where=f"{root}.summarize_trigger_ratio"
        )
    headroom = config.compaction_headroom
    if isinstance(headroom, bool) or not isinstance(headroom, int | float):
        raise ConfigError(
            f"expected a number, got {_type_name(headroom)}", where=f"{root}.compaction_headroom"
        )
    if not 0 <= headroom < 1:
        raise ConfigError(
            f"must be in [0, 1) (got {headroom})", where=f"{root}.compaction_headroom"
        )
    if not isinstance(config.pin, tuple):
        raise ConfigError(
            f"expected a list of pin names, got {_type_name(config.pin)}", where=f"{root}.pin"
        )
    pins: tuple[object, ...] = config.pin  # read from YAML: check what is really there
    for i, pin in enumerate(pins):
        if not isinstance(pin, str) or pin not in _PINS:
            raise ConfigError(
                f"unknown pin {pin!r}; known pins: {', '.join(_PINS)}{_hint(pin, _PINS)}",
                where=f"{root}.pin[{i}]",
            )
    if len(set(config.pin)) != len(config.pin):
        raise ConfigError("a pin is listed twice", where=f"{root}.pin")
    memory = config.memory
    if not isinstance(memory, MemoryConfig):
        raise ConfigError(
            f"expected a mapping (max_items) or a MemoryConfig, got {_type_name(memory)}",
            where=f"{root}.memory",
        )
    if isinstance(memory.max_items, bool) or not isinstance(memory.max_items, int):
        raise ConfigError(
            f"expected an integer, got {_type_name(memory.max_items)}",
            where=f"{root}.memory.max_items",
        )
    _in_range(memory.max_items, f"{root}.memory.max_items")
    if config.model_input_limit == 0:
        raise ConfigError("must be positive", where=f"{root}.model_input_limit")
    if config.output_reserve_tokens + config.safety_margin_tokens >= config.model_input_limit:
        raise ConfigError(
            f"output_reserve_tokens ({config.output_reserve_tokens}) + safety_margin_tokens "
            f"({config.safety_margin_tokens}) must be smaller than model_input_limit "
            f"({config.model_input_limit}); nothing would be left for the request",
            where=f"{root}.output_reserve_tokens",
        )
    if config.summary_max_tokens == 0:
        raise ConfigError("must be positive", where=f"{root}.summary_max_tokens")
    if config.summary_timeout_ms == 0:
        raise ConfigError("must be positive", where=f"{root}.summary_timeout_ms")
    if config.summary_max_depth == 0:
        raise ConfigError("must be at least 1", where=f"{root}.summary_max_depth")
    if config.max_retries > MAX_RETRIES_CAP:
        raise ConfigError(
            f"must be at most {MAX_RETRIES_CAP} (got {config.max_retries}); retries never loop",
            where=f"{root}.max_retries",
        )
    if config.anthropic_cache_breakpoints > ANTHROPIC_BREAKPOINT_CAP:
        raise ConfigError(
            f"Anthropic accepts at most {ANTHROPIC_BREAKPOINT_CAP} cache_control breakpoints "
            f"(got {config.anthropic_cache_breakpoints})",
            where=f"{root}.anthropic_cache_breakpoints",
        )


def _hint(value: object, options: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, options, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _unknown(key: object, known: tuple[str, ...]) -> str:
    return f"unknown key {key!r}{_hint(key, known)}"


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", float: "number"}.get(
        type(value), type(value).__name__
    )


def _names_a_missing_file(source: str) -> bool:
    """Whether ``source`` (YAML text or a path) is a path to a file that does not exist: one line
    ending in a YAML or JSON suffix, with no ``key: value`` in it. Read as YAML text it would be a
    bare string, refused as "expected a mapping" without a word about the typo in the path."""
    line = source.strip()
    return (
        "\n" not in line
        and ": " not in line
        and line.lower().endswith((".yaml", ".yml", ".json"))
        and not Path(line).exists()
    )
