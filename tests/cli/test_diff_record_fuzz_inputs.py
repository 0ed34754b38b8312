"""Bad inputs of ``ctxconf diff``, ``record`` and ``fuzz``: named exit-2 errors.

An unreadable cassette in either folder is one line naming the file (a YAML error too), an
empty folder is an error rather than a clean "0 drift(s)", and an ``--out`` under a file is
refused before anything is recorded or fuzzed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import invoke
from paths import CASSETTES


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (bytes(range(128, 256)), ("not UTF-8",)),
        (("interactions: " + "[" * 10_000 + "]" * 10_000).encode(), ("nested too deeply",)),
        (b"interactions:\n\t- x\n", ("line 2",)),
    ],
    ids=["binary", "deep", "tabs"],
)
@pytest.mark.parametrize("side", ["old", "new"])
def test_diff_unreadable_cassette_is_named(
    tmp_path: Path, content: bytes, words: tuple[str, ...], side: str
) -> None:
    bad = tmp_path / "bad" / "openai-chat" / "x.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(content)
    pair = [str(tmp_path / "bad"), str(CASSETTES)]
    code, _, err = invoke(["diff", *(pair if side == "old" else pair[::-1])])
    assert code == 2, err
    assert "Traceback" not in err
    assert str(bad) in err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize("side", ["old", "new"])
def test_diff_empty_folder_is_not_a_clean_diff(tmp_path: Path, side: str) -> None:
    empty = tmp_path / "new"
    empty.mkdir()
    pair = [str(CASSETTES), str(empty)]
    code, out, err = invoke(["diff", *(pair if side == "new" else pair[::-1])])
    assert code == 2, err
    assert str(empty) in err
    assert "no cassette interactions" in err
    assert "0 drift" not in out


@pytest.mark.parametrize(
    ("command", "under"),
    [
        (["record", "--shape", "openai-chat"], "cassettes"),
        (["fuzz", "--examples", "1", "--seed", "1"], "must/found.yaml"),
    ],
    ids=["record", "fuzz"],
)
def test_out_under_a_file_is_refused_before_recording_or_fuzzing(
    tmp_path: Path, command: list[str], under: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", "utf-8")
    target = blocker / under
    code, _, err = invoke([*command, "--out", str(target)])
    assert code == 2, err  # fuzz: not exit 70 (NotADirectoryError) after the whole search
    assert "Traceback" not in err
    assert "--out" in err
    assert str(target) in err


_NOT_A_SIZE = (
    "ctxconf: error: $CTXCONF_MAX_INPUT_BYTES='lots' is not a size "
    "(examples: 1000000, 500kB, 64MiB, none)\n"
)


@pytest.mark.parametrize(
    "args",
    [
        # in process the emulator read the limit for each request: every answer a 500, and
        # two profiles compared "0 drift(s)", exit 0
        ["diff", "profile:anthropic-current", "profile:anthropic-2024-strict-alternation"],
        # read first by the cassette reader: "<file>: not a cassette: ..."
        ["diff", str(CASSETTES), str(CASSETTES)],
    ],
    ids=["profiles", "folders"],
)
def test_diff_names_an_input_limit_that_is_not_a_size_at_start(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
    code, out, err = invoke([*args, "--shape", "anthropic-messages"])
    assert code == 2
    assert err == _NOT_A_SIZE
    assert out == ""


def test_record_names_an_input_limit_that_is_not_a_size_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # read first by the corpus reader: "--corpus: <file>: not a scenario file: ..."
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
    out_folder = tmp_path / "out"
    code, out, err = invoke(["record", "--shape", "openai-chat", "--out", str(out_folder)])
    assert code == 2
    assert err == _NOT_A_SIZE
    assert out == ""
    assert not out_folder.exists()  # checked before anything is made or recorded
