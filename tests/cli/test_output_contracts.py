"""The output contracts the issues state, checked from the user's side (key names, exit
statuses), and hints that name the option the command really has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import invoke
from paths import EXAMPLES

EXAMPLE = EXAMPLES / "session.json"
CONFIG = EXAMPLES / "assembly.yaml"


@pytest.fixture
def body(tmp_path: Path) -> Path:
    """A one-message Chat Completions body in a file."""
    path = tmp_path / "body.json"
    path.write_text(
        json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    )
    return path


def _json_output(command: str, body: Path) -> dict[str, Any]:
    """``ctxconf COMMAND BODY --shape openai-chat --format json``, exit 0, its JSON."""
    code, out, err = invoke([command, str(body), "--shape", "openai-chat", "--format", "json"])
    assert code == 0, err
    payload: dict[str, Any] = json.loads(out)
    return payload


def test_count_json_keys(body: Path) -> None:
    payload = _json_output("count", body)
    assert set(payload) == {"shape", "model", "encoding", "counter", "input_tokens"}
    assert payload["model"] == "gpt-4o"
    assert payload["encoding"] == "o200k_base"  # gpt-4o's encoding (token-counting.md)
    assert isinstance(payload["input_tokens"], int)
    assert payload["input_tokens"] > 0


def test_assemble_json_and_refusal_contract() -> None:
    args = ["assemble", str(EXAMPLE), "--config", str(CONFIG), "--shape", "gemini"]
    code, out, err = invoke([*args, "--budget", "1000", "--format", "json"])
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) == {"request", "report"}
    assert "contents" in payload["request"]  # a gemini body
    assert payload["report"]["decision"] == "ok"
    code, out, _ = invoke([*args, "--budget", "10", "--format", "json"])
    assert code == 3
    error = json.loads(out)["error"]
    assert set(error) == {"code", "message"}
    assert error["code"].startswith("context_assembly_")


def test_validate_json_keys(body: Path) -> None:
    payload = _json_output("validate", body)
    assert {"verdict", "status", "rule", "evidence", "provenance", "error"} <= set(payload)
    assert payload["provenance"] == "emulated"
    assert payload["verdict"] == "accept"


def test_assemble_hint_names_the_from_option(body: Path) -> None:
    code, _, err = invoke(["assemble", str(body), "--shape", "gemini"])
    assert code == 2
    assert str(body) in err
    assert "pass --from S" in err  # `assemble` has no --shape for the input; it was suggested
    code, _, err = invoke(["inspect", str(body)])
    assert code == 2
    assert "pass --shape S" in err
