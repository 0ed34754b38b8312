"""Error lines that read as written: a size the reader did not measure is not given, and a
message that names YAML already is not prefixed with it again."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from cli_support import invoke

from reference_impl.documents import DocumentTooLargeError, read_input_bytes

BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g"], "abcdefgh", strict=True)
)


def test_a_stream_over_the_limit_says_more_than_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "1000")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 5000)))
    with pytest.raises(DocumentTooLargeError) as caught:
        read_input_bytes("-")
    # only 1,001 bytes were read: "1001 bytes is over the 1000 bytes input limit" was wrong
    assert str(caught.value).startswith("input too large: more than the 1000 bytes input limit")


def test_a_file_over_the_limit_gives_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "1000")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 5000)
    with pytest.raises(DocumentTooLargeError, match=r"4\.9 KiB is over the 1000 bytes input limit"):
        read_input_bytes(big)


def test_an_alias_bomb_in_a_body_file_is_named_once_as_yaml(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB, "utf-8")
    code, _, err = invoke(["validate", str(bomb), "--shape", "openai-chat"])
    assert code == 2
    assert f"{bomb}: YAML aliases expand to more than" in err
    assert "YAML YAML" not in err
