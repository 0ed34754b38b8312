"""Cross-shape conversion: portable options mapped, the rest listed, never dropped silently."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conformance.cli import cli
from reference_impl.shapes import get_shape
from reference_impl.shapes.convert import convert

ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 512,
    "temperature": 0.2,
    "stop_sequences": ["END"],
    "metadata": {"user_id": "u1"},
    "system": "Be brief.",
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ],
    "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
}


def test_options_map_to_gemini_generation_config_and_the_rest_is_listed() -> None:
    transcript = get_shape("anthropic-messages").parse_request(ANTHROPIC_BODY)
    result = convert(transcript, "anthropic-messages", "gemini")
    body = get_shape("gemini").render_request(result.transcript)
    assert body["generationConfig"] == {
        "maxOutputTokens": 512,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }
    assert "max_tokens" not in body
    assert "params.metadata" in result.dropped
    assert any(d.startswith("model 'claude-sonnet-4-5'") for d in result.dropped)


def test_gemini_generation_config_back_to_bedrock_inference_config() -> None:
    gemini = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"maxOutputTokens": 64, "topP": 0.5, "candidateCount": 1},
    }
    transcript = get_shape("gemini").parse_request(gemini)
    result = convert(transcript, "gemini", "bedrock-converse")
    body = get_shape("bedrock-converse").render_request(result.transcript)
    assert body["inferenceConfig"] == {"maxTokens": 64, "topP": 0.5}
    assert result.dropped == ("params.generationConfig.candidateCount",)


def test_responses_item_ids_are_taken_out_for_chat_and_said_so() -> None:
    body = {
        "model": "gpt-4o",
        "max_output_tokens": 100,
        "input": [
            {"role": "user", "content": "weather?"},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "w",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
    }
    transcript = get_shape("openai-responses").parse_request(body)
    result = convert(transcript, "openai-responses", "openai-chat")
    chat = get_shape("openai-chat").render_request(result.transcript)
    assert chat["max_tokens"] == 100
    assert chat["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert "provider item ids on 1 message(s)" in result.dropped


def test_same_shape_is_untouched() -> None:
    transcript = get_shape("anthropic-messages").parse_request(ANTHROPIC_BODY)
    assert convert(transcript, "anthropic-messages", "anthropic-messages").transcript is transcript


def test_cli_prints_notes_on_stderr_and_the_body_on_stdout(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(ANTHROPIC_BODY))
    result = CliRunner().invoke(
        cli, ["convert", str(path), "--from", "anthropic-messages", "--to", "gemini"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["generationConfig"]["maxOutputTokens"] == 512
    assert "not carried to gemini: params.metadata" in result.stderr


def test_cli_mistral_refuses_foreign_ids_unless_remapped(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(ANTHROPIC_BODY))
    args = ["convert", str(path), "--from", "anthropic-messages", "--to", "openai-chat"]
    refused = CliRunner().invoke(cli, [*args, "--dialect", "mistral"])
    assert refused.exit_code == 2
    assert "toolu_1" in refused.stderr
    remapped = CliRunner().invoke(cli, [*args, "--dialect", "mistral", "--remap-ids"])
    assert remapped.exit_code == 0, remapped.output
    messages = json.loads(remapped.stdout)["messages"]  # system, user, assistant, tool
    call_id = messages[2]["tool_calls"][0]["id"]
    assert len(call_id) == 9
    assert call_id.isalnum()
    assert messages[3]["tool_call_id"] == call_id
