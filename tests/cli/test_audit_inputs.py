"""``ctxconf audit``: the jsonl contract, exit statuses, and bad inputs as named exit-2 errors
(over-deep cassettes, logs and bodies: a named error, never a ``RecursionError``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from audit_support import GOOD, ORPHAN, URL
from cli_support import invoke

DEEP = "[" * 10_000 + "]" * 10_000
DEEP_OBJECT = '{"a":' * 5_000 + "1" + "}" * 5_000
DEEP_BODY = (
    '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"metadata":' + DEEP_OBJECT + "}"
)
ROW_KEYS = {"file", "interaction", "shape", "verdict", "rule", "evidence", "recorded_status"}


def _cassette(body: str) -> str:
    interaction = {
        "request": {"uri": URL, "method": "POST", "body": body, "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": "{}"}},
    }
    return yaml.safe_dump({"interactions": [interaction]})


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("deep.jsonl", DEEP, ":1"),
        ("deep.json", DEEP, "nested too deeply"),
        ("deep.yaml", "interactions: " + DEEP, "nested too deeply"),
        ("body.jsonl", json.dumps({"url": URL, "body": DEEP_BODY}), ":1"),
        ("body.yaml", _cassette(DEEP_BODY), "interactions[0]"),
    ],
)
def test_audit_over_deep_inputs_are_named(
    tmp_path: Path, name: str, content: str, where: str
) -> None:
    path = tmp_path / name
    path.write_text(content, "utf-8")
    code, out, err = invoke(["audit", str(path), "--format", "jsonl"])
    assert code == 4, err  # EXIT_UNREADABLE: a named warning row, never a traceback
    assert "Traceback" not in err
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["verdict"] == "unreadable"
    assert row["file"] == str(path)
    assert "nested too deeply" in row["message"]
    assert where in f"{row['location']} {row['message']}"
    assert f"warning: {row['location']}" in err


def test_audit_jsonl_rows_and_exit_status(tmp_path: Path) -> None:
    good, orphan = GOOD, ORPHAN
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"url": URL, "body": good}) + "\n", "utf-8")
    code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    assert code == 0, err
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert set(row) >= ROW_KEYS
    assert row["verdict"] == "accept"
    with log.open("a", encoding="utf-8") as stream:
        stream.write(json.dumps({"url": URL, "body": orphan}) + "\n")
    code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    assert code == 1, err  # any request a provider would reject
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["verdict"] for r in rows] == ["accept", "reject"]
    assert rows[1]["rule"] == "C2"  # orphan tool result (provider-rules.md)
