"""The public API refuses arguments of the wrong type by name (the error's ``where`` is the
argument), never with an ``AttributeError`` or ``TypeError`` from deep inside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from paths import EXAMPLES

from reference_impl import AssemblyConfig, Ledger, SessionAssembler, assemble
from reference_impl.assembler import assemble_pipeline
from reference_impl.errors import ConfigError, SessionFileError, TranscriptError
from reference_impl.transcript import Message, TextPart, Transcript, transcript_from_json

SESSION_TEXT = (EXAMPLES / "session.json").read_text("utf-8")


def _session() -> Transcript:
    return transcript_from_json(SESSION_TEXT, source="session.json")


@pytest.mark.parametrize("entry", [assemble, assemble_pipeline])
@pytest.mark.parametrize(
    ("kwargs", "error", "where", "words"),
    [
        ({"session": json.loads(SESSION_TEXT)}, TranscriptError, "session", "got dict"),
        ({"session": None}, TranscriptError, "session", "got NoneType"),
        (
            {"config": {"recent_tool_rings": 1}},
            ConfigError,
            "config",
            "AssemblyConfig.from_mapping",
        ),
        ({"ledger": [{"tool": "deploy"}]}, TranscriptError, "ledger", "Ledger.from_list"),
        ({"memory": "remember this"}, TranscriptError, "memory", "got str"),
        ({"memory": [{"source": "a", "text": "b"}]}, TranscriptError, "memory[0]", "got dict"),
        ({"counter": object()}, ConfigError, "counter", "expected a TokenCounter"),
        ({"counter": "o200k_base"}, ConfigError, "counter", "got str"),
        ({"summarizer": object()}, ConfigError, "summarizer", "expected a Summarizer"),
        ({"metrics": object()}, ConfigError, "metrics", "expected an AssemblyMetrics"),
    ],
)
def test_an_argument_of_the_wrong_type_is_named(
    entry: Any, kwargs: dict[str, Any], error: type[Exception], where: str, words: str
) -> None:
    arguments: dict[str, Any] = {"session": _session(), "shape": "openai-chat", **kwargs}
    session = arguments.pop("session")
    with pytest.raises(error, match=words) as caught:
        entry(session, **arguments)
    assert caught.value.where == where  # type: ignore[attr-defined]


def test_the_incremental_assembler_names_them_too() -> None:
    with pytest.raises(ConfigError, match="got dict"):
        SessionAssembler({"recent_tool_rings": 1}, shape="gemini")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="got object") as named:
        SessionAssembler(shape="gemini", counter=object())  # type: ignore[arg-type]
    assert named.value.where == "counter"
    assembler = SessionAssembler(shape="gemini")
    with pytest.raises(TranscriptError, match="got dict") as caught:
        assembler.assemble(json.loads(SESSION_TEXT))  # type: ignore[arg-type]
    assert caught.value.where == "session"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (None, "expected session file text (str or bytes), got NoneType"),
        (json.loads(SESSION_TEXT), "got dict; pass a parsed object to transcript_from_dict"),
        ('{"messages": [], "messages": []}', "duplicate key 'messages'"),
        ('{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        (b'{"messages": "\xff"}', "not UTF-8 text (byte 14)"),
    ],
)
def test_session_text_that_cannot_be_read_is_named(text: Any, words: str) -> None:
    with pytest.raises(SessionFileError, match=words.replace("(", r"\(").replace(")", r"\)")):
        transcript_from_json(text, source="s.json")


_BROKEN = '{\n  "messages": [\n    {"role": "user", "content": }\n  ]\n}'
_NAN = '{"messages": [], "temperature": NaN}'


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (_BROKEN, "s.json:3: not valid JSON (Expecting value at column 33)"),
        (_NAN, "s.json:1: not valid JSON (NaN is not a JSON number at column 33)"),
    ],
    ids=["expecting-value", "nan"],
)
def test_session_text_that_is_not_json_is_worded_as_every_reader_words_it(
    text: str, said: str
) -> None:
    # through documents.json_problem; it was "s.json:3:32: not JSON: Expecting value"
    with pytest.raises(SessionFileError) as caught:
        transcript_from_json(text, source="s.json")
    assert str(caught.value) == said


def test_session_text_may_be_bytes() -> None:
    assert transcript_from_json(SESSION_TEXT.encode(), source="s.json") == _session()


@pytest.mark.parametrize("items", [None, 5, "deploy", {"tool": "deploy"}])
def test_a_ledger_that_is_not_a_list_is_named(items: Any) -> None:
    with pytest.raises(TranscriptError, match="expected a list of ledger entries") as caught:
        Ledger.from_list(items)
    assert caught.value.where == "ledger"


def test_config_from_yaml_names_a_missing_file_and_a_wrong_type(tmp_path: Path) -> None:
    missing = tmp_path / "asembly.yaml"
    with pytest.raises(ConfigError, match="cannot read config file: no such file") as caught:
        AssemblyConfig.from_yaml(str(missing))  # was "expected a mapping, got string"
    assert caught.value.where == str(missing)
    with pytest.raises(ConfigError, match="expected YAML text or a file path, got int"):
        AssemblyConfig.from_yaml(5)  # type: ignore[arg-type]
    # YAML text that merely ends like a file name is still text
    assert AssemblyConfig.from_yaml("context_assembly: {recent_tool_rings: 1}  # a.yaml")


def test_a_text_part_that_is_not_a_string_is_named() -> None:
    with pytest.raises(TranscriptError, match="a text part's text must be a string, got int"):
        Message("user", (TextPart(5),))  # type: ignore[arg-type]
