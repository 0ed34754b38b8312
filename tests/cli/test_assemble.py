"""``ctxconf assemble``: JSON and text output, refusal with exit 3, bad input with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from assembler_support import ring, session, system, user, words
from click.testing import CliRunner
from paths import EXAMPLES

from conformance.cli import cli
from reference_impl.transcript import transcript_to_dict


def write_session(tmp_path: Path, s, ledger=None) -> Path:
    doc = transcript_to_dict(s)
    if ledger is not None:
        doc["ledger"] = ledger
    path = tmp_path / "session.json"
    path.write_text(json.dumps(doc), "utf-8")
    return path


def invoke(*args: str):
    return CliRunner().invoke(cli, ["assemble", *args], catch_exceptions=False)


def test_json_output_has_request_and_report(tmp_path):
    s = session(system(), user("goal"), ring("call_1", words(300)), user("latest"))
    path = write_session(
        tmp_path,
        s,
        ledger=[
            {"tool": "get_status", "call_id": "call_1", "status": "succeeded", "side_effect": False}
        ],
    )
    config = tmp_path / "config.yaml"
    text = (EXAMPLES / "assembly.yaml").read_text("utf-8")
    text = text.replace("recent_tool_rings: 3", "recent_tool_rings: 0")
    config.write_text(text.replace("recent_user_turns: 2", "recent_user_turns: 1"), "utf-8")
    result = invoke(
        str(path),
        "--config",
        str(config),
        "--shape",
        "anthropic-messages",
        "--budget",
        "120",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"request", "report"}
    assert out["report"]["decision"] == "ok"
    assert out["report"]["budget"] == {
        "input_budget": 120,
        "model_budget": 118784,
        "source": "override",
    }
    assert "messages" in out["request"]
    assert "system" in out["request"]
    assert out["report"]["dropped_ring_ids"]
    # The ring is gone whole: no tool_use or tool_result block is left.
    blocks = [b for m in out["request"]["messages"] for b in m["content"] if isinstance(b, dict)]
    assert not [b for b in blocks if b.get("type") in ("tool_use", "tool_result")]


def test_text_output_and_request_body_input(tmp_path):
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
        ],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), "utf-8")
    result = invoke(str(path), "--from", "openai-chat", "--shape", "gemini")
    assert result.exit_code == 0, result.output
    assert "decision: ok" in result.output
    assert "contents" in result.output


def test_refusal_exits_3_with_an_error_object(tmp_path):
    s = session(system(words(500)), user("goal"))
    path = write_session(tmp_path, s)
    result = invoke(str(path), "--shape", "openai-chat", "--budget", "10", "--format", "json")
    assert result.exit_code == 3
    error = json.loads(result.output)["error"]
    assert error["code"] == "context_assembly_prefix_over_budget"
    assert error["message"]


def test_bad_input_exits_2(tmp_path):
    bad_config = tmp_path / "c.yaml"
    bad_config.write_text("context_assembly:\n  recent_tool_ring: 3\n", "utf-8")
    s = session(system(), user("goal"))
    path = write_session(tmp_path, s)
    result = CliRunner().invoke(
        cli, ["assemble", str(path), "--config", str(bad_config), "--shape", "openai-chat"]
    )
    assert result.exit_code == 2
    assert "did you mean 'recent_tool_rings'" in result.output
    result = CliRunner().invoke(
        cli, ["assemble", str(tmp_path / "missing.json"), "--shape", "openai-chat"]
    )
    assert result.exit_code == 2
    path.write_text(json.dumps({**transcript_to_dict(s), "ledger": [{"tool": 1}]}), "utf-8")
    result = CliRunner().invoke(cli, ["assemble", str(path), "--shape", "openai-chat"])
    assert result.exit_code == 2
    assert "ledger[0]" in result.output
