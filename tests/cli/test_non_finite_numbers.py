"""NaN, Infinity and -Infinity, which Python's ``json`` reads and writes and JSON does not have: no
request is ever rendered with one, and every judge treats a body holding one as a body that is
not JSON (the provider's parser refuses it: C0, R0, A12, G0, B0), as the emulator's first gate
does. ``reference_impl.documents`` is their one home (``loads_json``, ``non_finite_number``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from audit_support import GOOD, URL
from cli_support import invoke
from paths import EXAMPLES

from conformance.traffic.audit import audit_lines
from reference_impl.documents import (
    NonFiniteNumberError,
    json_problem,
    loads_json,
    non_finite_number,
)
from reference_impl.transcript.model import canonical_json

NAN_BODY = json.dumps(GOOD)[:-1] + ', "temperature": NaN}'
"""An OpenAI Chat body as ``json.dumps`` writes it for ``temperature=float("nan")``."""
NOT_JSON = '{"model": "gpt-4o", "messages": ['


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("encode", [False, True])
def test_loads_json_refuses_each_constant_where_it_stands(token: str, encode: bool) -> None:
    text = '{"note": "NaN and -Infinity in a string", "n": [1, ' + token + "]}"
    with pytest.raises(NonFiniteNumberError) as caught:
        loads_json(text.encode("utf-16") if encode else text)
    assert isinstance(caught.value, json.JSONDecodeError)
    assert caught.value.pos == text.index(", " + token) + 2
    assert caught.value.token == token
    assert caught.value.msg == f"{token} is not a JSON number"
    # as every reader words bad JSON (it said "NaN, a number JSON does not have at column 46")
    column = caught.value.pos + 1
    assert json_problem(caught.value) == f"{token} is not a JSON number at column {column}"
    # a caller that judges them reads them
    assert loads_json(text, parse_constant=float)["n"][1] != 1


def test_non_finite_number_names_the_path_of_the_first() -> None:
    assert non_finite_number({"a": [1.5, {"b": "NaN"}], "c": 1}) is None
    found = non_finite_number({"a": [1.5, {"b": float("-inf")}], "c": float("nan")})
    assert found == "-Infinity at a.1.b is not a JSON number"
    assert non_finite_number(float("inf")) == "Infinity at the top level is not a JSON number"


def test_canonical_json_never_writes_nan() -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical_json({"temperature": float("nan")})


def _session_with_arguments(tmp_path: Path, arguments: str) -> Path:
    session = json.loads((EXAMPLES / "session.json").read_text("utf-8"))
    session["messages"][2]["parts"][1]["arguments"] = arguments
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session), "utf-8")
    return path


@pytest.mark.parametrize(
    ("shape", "field"),
    [
        ("anthropic-messages", "tool_use.input"),
        ("gemini", "functionCall.args"),
        ("bedrock-converse", "toolUse.input"),
    ],
)
@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_assemble_refuses_arguments_holding_nan_for_shapes_that_send_them_parsed(
    tmp_path: Path, shape: str, field: str, token: str
) -> None:
    path = _session_with_arguments(tmp_path, '{"env":"staging","retries":' + token + "}")
    code, out, err = invoke(["assemble", str(path), "--shape", shape])
    assert code == 2, out
    assert out == ""
    assert "tool call 'call_status_1' has arguments that are not JSON" in err
    assert f"({token} is not a JSON number, at char 27); {field} must be" in err
    assert "messages[2].parts[1]" in err


def test_openai_chat_sends_such_arguments_as_the_text_they_are(tmp_path: Path) -> None:
    arguments = '{"env":"staging","retries":NaN}'
    path = _session_with_arguments(tmp_path, arguments)
    code, out, err = invoke(["assemble", str(path), "--shape", "openai-chat", "--format", "json"])
    assert code == 0, err
    body = loads_json(out)["request"]  # strict JSON: the NaN is inside a string
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == arguments


def test_gemini_sends_a_tool_result_holding_nan_as_text() -> None:
    from reference_impl.shapes.gemini import _response_object
    from reference_impl.transcript.model import TextPart, ToolResultPart

    for is_error in (False, True):
        part = ToolResultPart("c1", (TextPart('{"x":NaN}'),), is_error=is_error, name="f")
        value = _response_object(part)
        assert non_finite_number(value) is None
        assert '{"x":NaN}' in value.values()


_BODIES = {
    "openai-chat": (GOOD, "C0"),
    "openai-responses": ({"model": "gpt-4o", "input": "hi"}, "R0"),
    "anthropic-messages": (
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
        },
        "A12",
    ),
    "gemini": ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "G0"),
    "bedrock-converse": ({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, "B0"),
}


@pytest.mark.parametrize("shape", sorted(_BODIES))
@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_validate_judges_a_body_holding_nan_as_a_body_that_is_not_json(
    tmp_path: Path, shape: str, suffix: str
) -> None:
    good, rule = _BODIES[shape]
    path = tmp_path / f"body.{suffix}"
    for temperature, outcome in (
        (0.5, ("accept", None, 200)),
        (float("nan"), ("reject", rule, 400)),
    ):
        body = {**good, "temperature": temperature}
        dump = json.dumps if suffix == "json" else yaml.safe_dump
        path.write_text(dump(body), "utf-8")
        for lint in ([], ["--lint"]):
            code, out, err = invoke(["validate", str(path), "--shape", shape, *lint])
            assert code == (0 if outcome[0] == "accept" else 1), err
            found = loads_json(out)
            verdict = found[0] if lint else found
            assert (verdict["verdict"], verdict["rule"], verdict["status"]) == outcome


def test_validate_names_where_the_nan_is(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(NAN_BODY, "utf-8")
    code, out, _ = invoke(["validate", str(path), "--shape", "openai-chat"])
    assert code == 1
    message = loads_json(out)["error"]["error"]["message"]
    assert message == (
        "Invalid type for 'body': expected an object, but got invalid JSON "
        "(NaN at temperature is not a JSON number) instead."
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # worded through documents.json_problem, as every reader words bad JSON (it was
        # "not JSON: NaN, a number JSON does not have (line 1, column 85)")
        (
            NAN_BODY,
            (
                "body.txt: line 1: not valid JSON (NaN is not a JSON number at column "
                f"{NAN_BODY.index('NaN') + 1})\n"
            ),
        ),
        ("model: gpt-4o\nmessages: []\ntop_p: .inf\n", "YAML holds Infinity at top_p"),
    ],
)
def test_other_commands_refuse_a_document_holding_nan_by_name(
    tmp_path: Path, text: str, words: str
) -> None:
    path = tmp_path / "body.txt"
    path.write_text(text, "utf-8")
    code, out, err = invoke(["count", str(path), "--shape", "openai-chat"])
    assert code == 2, out
    assert words in err
    assert "internal error" not in err


def _audit(path: Path) -> list[dict[str, Any]]:
    code, out, err = invoke(["audit", str(path), "--format", "jsonl", "--all"])
    assert code == 1, err
    return [loads_json(row) for row in out.splitlines()]


def _judged(row: dict[str, Any]) -> tuple[object, ...]:
    return row["verdict"], row["rule"], row["status"], row["message"]


def _har(*bodies: str) -> dict[str, Any]:
    def entry(body: str) -> dict[str, Any]:
        request = {"method": "POST", "url": URL, "headers": [], "postData": {"text": body}}
        return {"request": request, "response": {"status": 200, "content": {"text": "{}"}}}

    return {"log": {"entries": [entry(body) for body in bodies]}}


def _vcr(*bodies: str) -> dict[str, Any]:
    def interaction(body: str) -> dict[str, Any]:
        request = {"method": "POST", "uri": URL, "body": body, "headers": {}}
        response = {"status": {"code": 200}, "headers": {}, "body": {"string": "{}"}}
        return {"request": request, "response": response}

    return {"version": 1, "interactions": [interaction(body) for body in bodies]}


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("traffic.har", lambda p, *b: p.write_text(json.dumps(_har(*b)), "utf-8")),
        ("cassette.yaml", lambda p, *b: p.write_text(yaml.safe_dump(_vcr(*b)), "utf-8")),
    ],
)
def test_audit_judges_a_recorded_body_text_holding_nan_as_not_json(
    tmp_path: Path, name: str, write: Any
) -> None:
    path = tmp_path / name
    write(path, json.dumps(GOOD), NAN_BODY, NOT_JSON)
    rows = _audit(path)
    assert [row["verdict"] for row in rows] == ["accept", "reject", "reject"]
    assert _judged(rows[1]) == _judged(rows[2])
    assert rows[1]["rule"] == "C0"


def test_audit_lines_judge_a_parsed_record_holding_nan_as_not_json() -> None:
    records = [
        {"url": URL, "body": {**GOOD, "temperature": float("nan")}},
        {"url": URL, "body": NOT_JSON},
        {"url": URL, "body": GOOD, "latency": float("nan")},  # the logger's own field
    ]
    rows = list(audit_lines(records))
    assert [row.outcome for row in rows] == ["reject", "reject", "accept"]
    assert rows[0].verdict == rows[1].verdict


def test_hashed_recording_hashes_the_content_of_a_body_holding_nan() -> None:
    # --hash-content: a body holding NaN is stored as it was sent, its content strings hashed
    from conformance.traffic.scrubbing import hash_body

    body = b'{"choices": [{"message": {"content": "SECRET"}}], "n": NaN}'
    stream = 'data: {"choices": [{"delta": {"content": "SECRET"}}], "n": NaN}\n\n'
    for recorded in (body, stream):
        stored = hash_body(recorded)
        text = stored if isinstance(stored, str) else bytes(stored).decode("utf-8")
        assert "SECRET" not in text
        assert "NaN" in text
