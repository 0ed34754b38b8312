"""``ctxconf inspect``, ``count`` and ``convert``: snapshot outputs and exit-2 input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import EXAMPLES
from shape_support import chat_unanswered
from syrupy.assertion import SnapshotAssertion

from conformance.cli import cli
from reference_impl import rings
from reference_impl.rings import Violation
from reference_impl.transcript import Transcript

EXAMPLE = EXAMPLES / "session.json"

CHAT_BODY = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_p",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_r",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_p", "content": "18C, cloudy"},
        {"role": "tool", "tool_call_id": "call_r", "content": "25C, sunny"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather of a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name"}},
                    "required": ["city"],
                },
            },
        }
    ],
}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def chat_body(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT_BODY), "utf-8")
    return path


def _run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


# ----------------------------------------------------------------------------- inspect


def test_inspect_example_session_text(
    runner: CliRunner, snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative path, so the text (wrapped at the terminal width) does not depend on where the
    # checkout lives.
    monkeypatch.chdir(EXAMPLE.parents[1])
    code, out, _ = _run(runner, "inspect", "examples/session.json")
    assert code == 0
    assert "ring" in out
    assert "counter tiktoken:o200k_base/openai-chat" in out
    assert out == snapshot


def test_inspect_example_session_json(runner: CliRunner, snapshot: SnapshotAssertion) -> None:
    code, out, _ = _run(runner, "inspect", str(EXAMPLE), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["input_tokens"] == sum(m["tokens"] for m in report["messages"]) + (
        report["tools_tokens"] + report["overhead_tokens"]
    )
    assert [s["kind"] for s in report["segments"]].count("ring") == 3
    report["session"] = "examples/session.json"
    assert report == snapshot


def test_inspect_lists_violations(runner: CliRunner, tmp_path: Path) -> None:
    # A real broken session, judged by the real validator (no stand-in).
    broken = {"model": "gpt-4o", "messages": chat_unanswered("call_x", name="read_queue")}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken), "utf-8")
    code, out, _ = _run(runner, "inspect", str(path), "--shape", "openai-chat")
    assert code == 0
    assert "messages[1] unanswered_call (call_x)" in out
    assert "C1" in out


def test_inspect_survives_validate_not_written_yet(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    def validate(transcript: Transcript) -> tuple[Violation, ...]:
        raise NotImplementedError

    monkeypatch.setattr(rings, "validate", validate)
    code, out, _ = _run(runner, "inspect", str(EXAMPLE), "--format", "json")
    assert code == 0
    assert json.loads(out)["violations"] is None


def test_inspect_request_body_with_estimate_counter(runner: CliRunner, chat_body: Path) -> None:
    code, out, _ = _run(runner, "inspect", str(chat_body), "--shape", "openai-chat")
    assert code == 0
    assert "ring" in out
    assert "call_p, call_r" in out


# ------------------------------------------------------------------------------- count


def test_count_json(runner: CliRunner, chat_body: Path, snapshot: SnapshotAssertion) -> None:
    code, out, _ = _run(
        runner, "count", str(chat_body), "--shape", "openai-chat", "--format", "json"
    )
    assert code == 0
    payload = json.loads(out)
    assert set(payload) == {"shape", "model", "encoding", "counter", "input_tokens"}
    assert payload["encoding"] == "o200k_base"
    assert payload == snapshot


def test_count_model_option_changes_encoding(runner: CliRunner, chat_body: Path) -> None:
    code, out, _ = _run(
        runner,
        "count",
        str(chat_body),
        "--shape",
        "openai-chat",
        "--model",
        "gpt-4",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out)["counter"] == "tiktoken:cl100k_base/openai-chat"


def test_count_anthropic_names_the_estimate(runner: CliRunner, tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hello, Claude"}],
    }
    path = tmp_path / "a.json"
    path.write_text(json.dumps(body), "utf-8")
    code, out, _ = _run(
        runner, "count", str(path), "--shape", "anthropic-messages", "--format", "json"
    )
    assert code == 0, out
    payload = json.loads(out)
    assert payload["counter"] == "estimate:anthropic(x1.30,o200k)"
    assert payload["input_tokens"] > 0


def test_count_text(runner: CliRunner, chat_body: Path, snapshot: SnapshotAssertion) -> None:
    code, out, _ = _run(runner, "count", str(chat_body), "--shape", "openai-chat")
    assert code == 0
    assert out == snapshot


# ----------------------------------------------------------------------------- convert


def test_convert_chat_to_anthropic(
    runner: CliRunner, chat_body: Path, snapshot: SnapshotAssertion
) -> None:
    code, out, _ = _run(
        runner, "convert", str(chat_body), "--from", "openai-chat", "--to", "anthropic-messages"
    )
    assert code == 0
    body = json.loads(out)
    assert body["system"]
    assert body == snapshot


def test_convert_round_trip_to_the_same_shape(runner: CliRunner, chat_body: Path) -> None:
    code, out, _ = _run(
        runner, "convert", str(chat_body), "--from", "openai-chat", "--to", "openai-chat"
    )
    assert code == 0
    assert json.loads(out)["messages"][3]["tool_call_id"] == "call_p"


# ------------------------------------------------------------------------ exit status 2


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("count", "{file}", "--shape", "openai-chat"), "neither JSON"),
        (("convert", "{file}", "--from", "openai-chat", "--to", "gemini"), "neither JSON"),
        (("inspect", "{file}"), "neither JSON"),
    ],
)
def test_not_json_or_yaml_is_exit_2(
    runner: CliRunner, tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"messages": [ oops', "utf-8")
    code, _, err = _run(runner, *(a.format(file=path) for a in args))
    assert code == 2
    assert err.count("\n") == 1
    assert str(path) in err
    assert expected in err


def test_wrong_shape_is_exit_2_naming_the_path(runner: CliRunner, chat_body: Path) -> None:
    code, _, err = _run(runner, "count", str(chat_body), "--shape", "gemini")
    assert code == 2
    assert err.startswith(f"ctxconf: error: {chat_body}: not a gemini request body")
    assert err.count("\n") == 1


def test_body_that_is_not_an_object_is_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", "utf-8")
    code, _, err = _run(runner, "count", str(path), "--shape", "openai-chat")
    assert code == 2
    assert "expected a JSON object" in err


def test_missing_file_is_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    code, _, err = _run(runner, "inspect", str(tmp_path / "nope.json"))
    assert code == 2
    assert "no such file" in err


def test_inspect_body_without_shape_says_what_to_type(runner: CliRunner, chat_body: Path) -> None:
    code, _, err = _run(runner, "inspect", str(chat_body))
    assert code == 2
    assert "pass --shape S" in err


def test_invalid_transcript_is_exit_2_with_a_path(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "format": "ctxconf.transcript",
                "version": 1,
                "messages": [{"role": "robot", "parts": []}],
            }
        ),
        "utf-8",
    )
    code, _, err = _run(runner, "inspect", str(path))
    assert code == 2
    assert "messages[0].role" in err


def test_yaml_request_body_is_read(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "chat.yaml"
    path.write_text("model: gpt-4o\nmessages:\n  - role: user\n    content: hello\n", "utf-8")
    code, out, _ = _run(runner, "count", str(path), "--shape", "openai-chat", "--format", "json")
    assert code == 0
    # cookbook: 3 + tokens("user") + tokens("hello") + 3 reply priming
    assert json.loads(out)["input_tokens"] == 3 + 1 + 1 + 3
