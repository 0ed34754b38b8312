"""``log_lines``: the numbered, non-blank lines of a log read in pieces, a line over the input
limit named (``None``) and never held whole, blank lines counted at C speed. Checked against the
plain definition (split on newlines, skip what ``strip`` leaves empty) for any content and any
size of the pieces the stream hands out."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.traffic.audit import log_lines


class _Trickle(io.RawIOBase):
    """A stream that hands out at most ``step`` bytes a read (pieces end anywhere)."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._step, self._pos = data, step, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = self._step if size < 0 else min(size, self._step)
        piece = self._data[self._pos : self._pos + size]
        self._pos += len(piece)
        return piece


def _defined(data: bytes, limit: int | None) -> list[tuple[int, bytes | None]]:
    lines = data.split(b"\n")
    out: list[tuple[int, bytes | None]] = []
    for index, line in enumerate(lines):
        last = index == len(lines) - 1
        if limit is not None and len(line) > limit:
            out.append((index, None))
        elif line.strip(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"):  # ASCII white space, as str.strip
            out.append((index, line if last else line + b"\n"))
    return out


_PIECES = st.sampled_from(
    [b"\n", b" ", b"\t", b"\r", b"\x1c", b"{}", b"x", b'{"a": 1}', b"\xc3\xa9"]
)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(_PIECES, max_size=60),
    step=st.integers(1, 9),
    limit=st.one_of(st.none(), st.integers(1, 12)),
)
def test_the_lines_are_those_of_the_plain_definition(
    parts: list[bytes], step: int, limit: int | None
) -> None:
    data = b"".join(parts)
    assert list(log_lines(_Trickle(data, step), limit)) == _defined(data, limit)


def test_a_long_run_of_blank_lines_is_counted_not_yielded() -> None:
    data = b"\n" * 3_000_000 + b"  \t\n" + b'{"a": 1}\n'
    assert list(log_lines(io.BytesIO(data), 100)) == [(3_000_001, b'{"a": 1}\n')]


def test_a_line_over_the_limit_is_named_once_and_the_next_line_keeps_its_number() -> None:
    data = b"x" * 5_000_000 + b"\n" + b'{"a": 1}\n'
    assert list(log_lines(io.BytesIO(data), 1000)) == [(0, None), (1, b'{"a": 1}\n')]


def test_leading_white_space_of_a_line_is_kept() -> None:
    assert list(log_lines(io.BytesIO(b"\n  {}\n"), None)) == [(1, b"  {}\n")]
