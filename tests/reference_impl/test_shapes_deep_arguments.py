"""Tool-call arguments nested deeper than Python's recursion limit (a JSON *string* in
openai-chat, decoded only when rendering to a shape that carries an object): rendering names
the call in an error (exit 2 from the CLI), never a ``RecursionError`` traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from shape_support import chat_ring

from conformance.cli import cli
from reference_impl.errors import TranscriptError, UnsupportedPartError
from reference_impl.shapes import get_shape

DEPTH = 5_000  # far past the interpreter's default recursion limit of 1,000
DEEP_ARGS = '{"a":' * DEPTH + "1" + "}" * DEPTH
BODY = {
    "model": "gpt-4o",
    "messages": [
        {"role": "user", "content": "go"},
        *chat_ring("c1", content=None, arguments=DEEP_ARGS),
    ],
}
OBJECT_SHAPES = ["anthropic-messages", "gemini", "bedrock-converse"]


@pytest.mark.parametrize("shape", OBJECT_SHAPES)
def test_deep_arguments_render_is_a_named_error(shape: str) -> None:
    transcript = get_shape("openai-chat").parse_request(BODY)
    with pytest.raises(UnsupportedPartError, match=r"c1.*nested too deeply"):
        get_shape(shape).render_request(transcript)


def test_deep_arguments_value_is_a_named_error() -> None:
    transcript = get_shape("openai-chat").parse_request(BODY)
    call = transcript.messages[1].parts[0]
    with pytest.raises(TranscriptError, match="nested too deeply"):
        call.arguments_value()  # type: ignore[union-attr]


@pytest.mark.parametrize("shape", OBJECT_SHAPES)
@pytest.mark.parametrize("command", ["convert", "assemble"])
def test_deep_arguments_cli(tmp_path: Path, shape: str, command: str) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(BODY), "utf-8")
    if command == "convert":
        args = ["convert", str(path), "--from", "openai-chat", "--to", shape]
    else:
        args = ["assemble", str(path), "--from", "openai-chat", "--shape", shape]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert str(path) in result.stderr
    assert "'c1'" in result.stderr
    assert "nested too deeply" in result.stderr
