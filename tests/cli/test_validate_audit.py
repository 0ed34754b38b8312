"""``ctxconf validate`` and ``ctxconf audit``: output lines and exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_support import messages_twice
from click.testing import CliRunner
from paths import RECORDINGS

from conformance.cli import cli

ORPHAN = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c1", "content": "x"}]}
GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _write(tmp_path: Path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), "utf-8")
    return str(path)


def test_validate_reject_prints_the_verdict_and_exits_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["validate", _write(tmp_path, "r.json", ORPHAN), "--shape", "openai-chat"]
    )
    assert result.exit_code == 1
    payload = json.loads(result.output)
    assert payload["verdict"] == "reject"
    assert payload["rule"] == "C2"
    assert payload["status"] == 400
    assert payload["provenance"] == "emulated"
    assert payload["evidence"] == "observed"
    assert payload["error"]["error"]["param"] == "messages.[0].role"


def test_validate_accept_exits_0(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["validate", _write(tmp_path, "r.json", GOOD), "--shape", "openai-chat"]
    )
    assert result.exit_code == 0
    assert json.loads(result.output)["verdict"] == "accept"


@pytest.mark.parametrize(
    ("first", "last", "reading"),
    [(ORPHAN, GOOD, "first copy kept"), (GOOD, ORPHAN, "last copy kept")],
)
def test_validate_judges_both_readings_of_a_key_given_twice(
    tmp_path: Path, first: dict[str, object], last: dict[str, object], reading: str
) -> None:
    # Python's parser keeps the last "messages", another server's may keep the first: either
    # reading's rejection is the verdict, and the output says which reading was refused
    path = tmp_path / "twice.json"
    path.write_text(messages_twice(first, last), "utf-8")
    args = ["validate", str(path), "--shape", "openai-chat"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    payload = json.loads(result.output)
    assert (payload["verdict"], payload["rule"], payload["reading"]) == ("reject", "C2", reading)
    linted = CliRunner().invoke(cli, [*args, "--lint", "--format", "text"])
    assert linted.exit_code == 1
    assert linted.output.startswith("reject 400 C2 [observed] (openai-default, emulated; ")
    assert f"; {reading}): " in linted.output


def test_validate_judges_a_body_without_a_repeated_key_as_before(tmp_path: Path) -> None:
    harmless = tmp_path / "harmless.json"  # a key given twice with one value: both pass
    harmless.write_text('{"model": "m", "messages": [], "model": "m"}', "utf-8")
    accepted = CliRunner().invoke(cli, ["validate", str(harmless), "--shape", "openai-chat"])
    assert accepted.exit_code == 0, accepted.output
    assert json.loads(accepted.output)["reading"] is None
    plain = CliRunner().invoke(
        cli, ["validate", _write(tmp_path, "r.json", ORPHAN), "--shape", "openai-chat"]
    )
    assert plain.exit_code == 1
    assert "reading" not in json.loads(plain.output)  # the verdict alone, as before


def test_validate_takes_the_betas_of_the_request_s_header(tmp_path: Path) -> None:
    # A27: interleaved thinking, named in the anthropic-beta header, lets the budget exceed
    # the cap; the body alone cannot say so
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "hi"}],
    }
    args = ["validate", _write(tmp_path, "r.json", body), "--shape", "anthropic-messages"]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 1
    assert json.loads(refused.output)["rule"] == "A27"
    for betas in (
        ["--beta", "interleaved-thinking-2025-05-14"],
        ["--beta", "context-1m-2025-08-07,interleaved-thinking-2025-05-14"],
        ["--beta", "context-1m-2025-08-07", "--beta", "interleaved-thinking-2025-05-14"],
    ):
        result = CliRunner().invoke(cli, [*args, *betas])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["verdict"] == "accept"


def test_validate_lint_and_dialect(tmp_path: Path) -> None:
    args = [
        "validate",
        _write(tmp_path, "r.json", ORPHAN),
        "--shape",
        "openai-chat",
        "--dialect",
        "mistral",
        "--lint",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert [v["rule"] for v in json.loads(result.output)] == [
        "MI4",
        "MI3",
    ]  # tool first: no user before it (MI2)


def test_validate_bad_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json: [", "utf-8")
    result = CliRunner().invoke(cli, ["validate", str(bad), "--shape", "openai-chat"])
    assert result.exit_code == 2
    unknown = CliRunner().invoke(
        cli,
        [
            "validate",
            _write(tmp_path, "r.json", GOOD),
            "--shape",
            "openai-chat",
            "--profile",
            "nope",
        ],
    )
    assert unknown.exit_code == 2
    assert "nope" in unknown.output


def test_validate_names_the_shape_a_profile_of_another_shape_is_for(tmp_path: Path) -> None:
    body = _write(tmp_path, "r.json", GOOD)
    args = ["validate", body, "--shape", "openai-chat", "--profile", "gemini-vertex"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert (
        "ctxconf: error: profile: no profile 'gemini-vertex' for shape openai-chat: "
        "'gemini-vertex' is a profile of shape gemini, for gemini requests only"
    ) in result.stderr


def test_audit_jsonl_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "requests.jsonl"
    log.parent.mkdir()
    lines = [
        {
            "url": "https://api.openai.com/v1/chat/completions",
            "method": "POST",
            "body": GOOD,
            "status": 200,
        },
        {"url": "https://api.mistral.ai/v1/chat/completions", "method": "POST", "body": ORPHAN},
    ]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n", "utf-8")
    result = CliRunner().invoke(cli, ["audit", str(tmp_path), "--format", "jsonl", "--all"])
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [(r["shape"], r["dialect"], r["verdict"], r["rule"]) for r in rows] == [
        ("openai-chat", None, "accept", None),
        ("openai-chat", "mistral", "reject", "MI4"),
    ]
    assert rows[1]["location"] == f"{log}:2"
    assert rows[1]["status"] == 400
    assert rows[1]["message"]
    findings = CliRunner().invoke(cli, ["audit", str(tmp_path), "--format", "jsonl"])
    assert [json.loads(line) for line in findings.output.splitlines()] == rows[1:]
    assert rows[0]["recorded_status"] == 200
    assert {
        "file",
        "interaction",
        "shape",
        "verdict",
        "rule",
        "evidence",
        "recorded_status",
    } <= set(rows[0])


def test_audit_all_accepted_exits_0(tmp_path: Path) -> None:
    log = tmp_path / "ok.jsonl"
    log.write_text(
        json.dumps(
            {"url": "https://api.openai.com/v1/chat/completions", "method": "POST", "body": GOOD}
        )
        + "\n",
        "utf-8",
    )
    result = CliRunner().invoke(cli, ["audit", str(log)])
    assert result.exit_code == 0
    assert "accept" in result.output


def test_audit_missing_path_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["audit", str(tmp_path / "absent")])
    assert result.exit_code == 2


@pytest.mark.recordings
def test_audit_public_recordings_table() -> None:
    if not RECORDINGS.is_dir():
        pytest.skip(f"{RECORDINGS} is absent: ../shared/recordings holds the public evidence")
    result = CliRunner().invoke(cli, ["audit", str(RECORDINGS), "--format", "jsonl"])
    assert result.exit_code == 1  # the recordings include real 400s we reproduce
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert {r["rule"] for r in rows if r["verdict"] == "reject"} >= {"C8", "R4", "A12", "G7", "DS4"}
