"""Reading provider wire bodies: every value knows its JSON path, every error names it.

A parser walks a body through :class:`Wire` values instead of indexing dicts, so a wrong type, a
missing key or an unknown value becomes a :class:`~reference_impl.errors.ParseError` whose
``where`` is the path a user can find in the body (``messages[3].content[0].type``), never a
``KeyError``/``TypeError`` traceback. Each provider writes indices its own way (provider-rules.md,
"Index paths"): ``Wire.root(body)`` gives OpenAI's/Gemini's ``messages[3]``,
``Wire.root(body, dotted=True)`` gives Anthropic's/Bedrock's ``messages.3.content.0``.

>>> body = Wire.root({"messages": [{"role": 7}]})
>>> body.get("messages").items()[0].get("role").str_()
Traceback (most recent call last):
...
reference_impl.errors.ParseError: messages[0].role: expected a string, got int
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from reference_impl.documents import non_finite_number
from reference_impl.errors import ParseError
from reference_impl.transcript import canonical_json, json_type_name
from reference_impl.transcript.serialization import JsonValueReader

__all__ = ["Wire", "type_name"]


type_name = json_type_name
"""The JSON name of a value for error messages (one namer for the whole assembler)."""


@dataclass(slots=True, eq=False)
class Wire(JsonValueReader):
    """One JSON value of a wire body and where it sits. ``present`` is False for an absent key.

    Never assigned to after it is made, but not a frozen dataclass: a parser makes one for
    every value it walks, and a frozen dataclass's ``__init__`` (``object.__setattr__`` per
    field) costs three times as much. Compared and hashed by identity."""

    value: Any
    path: str = ""
    present: bool = True
    dotted: bool = False
    """Write array indices as ``.3`` (Anthropic, Bedrock) instead of ``[3]``."""

    @staticmethod
    def root(value: object, *, dotted: bool = False) -> Wire:
        """The whole body, at the root path."""
        return Wire(value, "", dotted=dotted)

    @property
    def where(self) -> str:
        """The JSON path for errors (``$`` for the root)."""
        return self.path or "$"

    def fail(self, what: str) -> ParseError:
        """A ParseError at this value's path (the caller raises it)."""
        return ParseError(what, where=self.where)

    def came(self) -> str:
        """``missing`` for an absent key, else what was found (``got an integer`` ...)."""
        # Named, not super(): a slots dataclass is a new class, which zero-argument super() misses.
        return "missing" if not self.present else JsonValueReader.came(self)

    # -- containers ------------------------------------------------------------------------

    def get(self, key: str) -> Wire:
        """The value under ``key``; absent keys give a ``Wire`` with ``present=False``."""
        mapping = self.obj()
        path = f"{self.path}.{key}" if self.path else key
        if key in mapping:
            return Wire(mapping[key], path, dotted=self.dotted)
        return Wire(None, path, present=False, dotted=self.dotted)

    def key_names(self) -> tuple[str, ...]:
        """The object's keys, in wire order."""
        return tuple(str(k) for k in self.obj())

    def canonical(self) -> str:
        """The value's canonical JSON text (sorted keys); a ParseError if it is not JSON data."""
        try:
            return canonical_json(self.value)
        except (TypeError, ValueError, RecursionError) as exc:
            # a NaN or an infinity is named where it is, not by the encoder's "out of range"
            found = non_finite_number(self.value) if isinstance(exc, ValueError) else None
            raise self.fail(f"not JSON data: {found or exc}") from None

    def only_keys(self, allowed: Collection[str], what: str) -> None:
        """Reject keys the caller cannot represent, naming the first one (nothing is ignored)."""
        for key in self.obj():
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                raise self.get(str(key)).fail(
                    f"unknown key {key!r} in {what}; this parser understands: {known}"
                )

    def items(self) -> list[Wire]:
        """The array's items, each with its path."""
        if not isinstance(self.value, list):
            raise self.fail(f"expected an array, {self.came()}")
        return [self.at(i) for i in range(len(self.value))]

    def at(self, i: int) -> Wire:
        """Item ``i`` of the array (which the caller knows to be one), with its path."""
        if self.dotted:
            prefix = f"{self.path}." if self.path else ""
            return Wire(self.value[i], f"{prefix}{i}", dotted=True)
        return Wire(self.value[i], f"{self.path}[{i}]")

    # -- scalars ---------------------------------------------------------------------------

    def int_(self) -> int:
        """The value as an integer (not a boolean), or a ParseError."""
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.fail(f"expected an integer, {self.came()}")
        return self.value

    def choice(self, options: Sequence[str], what: str = "value") -> str:
        """The value as one of ``options``, or a ParseError listing them."""
        text = self.str_()
        if text not in options:
            raise self.fail(f"unknown {what} {text!r}; expected one of {', '.join(options)}")
        return text

    @property
    def is_null(self) -> bool:
        """True when the key is absent or holds JSON null."""
        return self.value is None
