"""A body that gives a key twice: its two readings, and the verdict over both.

In ``{"model": ..., "messages": [...], "messages": [...]}`` Python's ``json`` keeps the *last*
copy of the key, and another server's parser may keep the *first*. A valid last copy must not
carry an invalid first one past a judge, so the validating proxy, the emulator, ``ctxconf audit``
and ``ctxconf validate`` all judge both readings (:func:`judge_both_readings`): the last copy kept,
then, when that reading is accepted, the first copy kept. The first rejection is the verdict, and
it names the reading that was refused (:data:`LAST_COPY_KEPT`, :data:`FIRST_COPY_KEPT`).

Finding out whether a key repeats costs little where nothing repeats, the common case:
:func:`read_unique` is jiter's parser (the one inside pydantic-core) told to stop at the first key
given twice, so a text it reads repeats none; the audit reads its log lines with it, and
:func:`first_copies` tries it before anything else. The first-copy reading is parsed only when a
key does repeat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias

from jiter import from_json

from conformance.providers.verdict import Verdict
from reference_impl.documents import int_digit_limit, loads_json

__all__ = [
    "FIRST_COPY_KEPT",
    "LAST_COPY_KEPT",
    "Reading",
    "first_copies",
    "judge_both_readings",
    "read_unique",
    "unique_reader_agrees",
]

Reading: TypeAlias = Literal["last copy kept", "first copy kept"]
"""A reading of a body that gives a key twice."""
LAST_COPY_KEPT: Final[Reading] = "last copy kept"
"""The reading of Python's parser (and so of the emulator and the validators)."""
FIRST_COPY_KEPT: Final[Reading] = "first copy kept"
"""The reading of a parser that keeps what it met first."""


_FAST_DIGITS: Final = 4300
"""The longest integer jiter's parser reads: Python's default digit limit, fixed. Under a lower
limit (``sys.set_int_max_str_digits``) it would read integers ``json.loads`` refuses; under a
higher one (or none) it refuses them and ``json.loads`` reads them."""


def unique_reader_agrees() -> bool:
    """Whether :func:`read_unique` gives ``json.loads``'s value wherever it gives one: not under
    an integer digit limit lower than its own (then read with ``json.loads`` alone)."""
    return not 0 < int_digit_limit() < _FAST_DIGITS


def read_unique(data: bytes, *, allow_non_finite: bool = False) -> Any:
    """``data`` as JSON, read by jiter, which raises ``ValueError`` at the first key given twice
    in one object as at any text it does not read (a lone surrogate escaped, nesting past ~200
    levels, an integer past 4,300 digits, ``NaN`` unless ``allow_non_finite``). Where it gives a
    value, that value is ``json.loads``'s (``tests/conformance/test_audit_line_json.py``)."""
    return from_json(data, allow_inf_nan=allow_non_finite, catch_duplicate_keys=True)


class _RepeatedKeyError(Exception):
    """Raised by :func:`_refuse_repeats` at the first object that has a key twice (not a
    ``ValueError``: ``loads_json`` lets it through as it is)."""


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _RepeatedKeyError
    return found


def _keep_first(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in pairs:
        kept.setdefault(key, value)
    return kept


def first_copies(raw: str | bytes, *, read_non_finite: bool = False) -> Any | None:
    """The JSON text ``raw`` read keeping the *first* copy of every key given twice, or ``None``
    when no key repeats (or ``raw`` is no JSON Python reads: its usual reading says so already).
    ``read_non_finite`` reads ``NaN`` and ``Infinity`` as floats, for a caller that judges them."""
    try:
        data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
        read_unique(data, allow_non_finite=read_non_finite)
    except ValueError:  # a key given twice, or text jiter does not read: the exact check decides
        pass
    else:
        return None
    options: dict[str, Any] = {"parse_constant": float} if read_non_finite else {}
    try:
        loads_json(raw, object_pairs_hook=_refuse_repeats, **options)
    except _RepeatedKeyError:
        pass
    except (ValueError, RecursionError):  # not JSON we read (JSONDecodeError is a ValueError)
        return None
    else:
        return None
    try:
        return loads_json(raw, object_pairs_hook=_keep_first, **options)
    except (ValueError, RecursionError):  # not JSON after all, past an inner object's repeat
        return None


def judge_both_readings(
    judge: Callable[[Any], Verdict], body: Any, first: Any | None
) -> tuple[Verdict, Reading | None]:
    """``judge``'s verdict on ``body`` (the body as Python reads it: the last copy of a repeated
    key kept) and, when a key repeats (``first``, from :func:`first_copies`, is not ``None``) and
    that verdict is an accept, on ``first``. The verdict is the first rejection, else the accept;
    the reading is the one rejected, ``None`` when no key repeats or both readings pass."""
    verdict = judge(body)
    if first is None:
        return verdict, None
    if not verdict.accepted:
        return verdict, LAST_COPY_KEPT
    other = judge(first)
    return (verdict, None) if other.accepted else (other, FIRST_COPY_KEPT)
