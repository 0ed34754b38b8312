"""An integer of more digits than Python converts from text (4,300 by default) in any input: a
named error at its place, or an ``unreadable`` row, never an internal error. ``json.loads``
raises a bare ``ValueError`` for one (every reader waited for ``JSONDecodeError``), and YAML's
hexadecimal integers of that size read, then failed wherever they were written out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from audit_support import GOOD, URL
from cli_support import invoke
from paths import EXAMPLES

from reference_impl.documents import JsonNumberTooLongError, load_yaml_strict, loads_json

LONG = "9" * 5000
"""An integer literal over the limit."""
HEX = "0x" + "f" * 4000
"""A YAML integer whose value has ~4,800 decimal digits."""


def test_loads_json_names_the_integer_where_it_stands() -> None:
    text = '["' + "1" * 5000 + '", 1.' + LONG + ", 1e" + LONG + ", -" + LONG + "]"
    with pytest.raises(JsonNumberTooLongError) as caught:
        loads_json(text)
    # the digits inside the string and the two floats are read; the integer is not
    assert caught.value.pos == text.index(", -") + 2
    assert caught.value.digits == 5000
    assert "an integer of 5,000 digits, more than the 4,300 Python reads" in str(caught.value)
    assert isinstance(caught.value, json.JSONDecodeError)
    assert loads_json(b'{"a": ' + b"9" * 4300 + b"}")["a"] == int("9" * 4300)
    # the digits of a signed exponent are no integer either
    text = "[1e-" + "0" * 4301 + ", " + LONG + "]"
    with pytest.raises(JsonNumberTooLongError) as caught:
        loads_json(text)
    assert (caught.value.pos, caught.value.digits) == (text.index(", 9") + 2, 5000)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32-le"])
def test_loads_json_finds_the_integer_in_bytes_of_any_json_encoding(encoding: str) -> None:
    text = '{"model": "x", "n": ' + LONG + "}"
    with pytest.raises(JsonNumberTooLongError) as caught:
        loads_json(text.encode(encoding))
    assert caught.value.pos == text.index("99")  # the position in the text json.loads read


def test_a_hook_error_passes_through_loads_json() -> None:
    class RefusedError(ValueError):
        pass

    def refuse(name: str) -> object:
        raise RefusedError(name)

    with pytest.raises(RefusedError):
        loads_json('{"a": NaN}', parse_constant=refuse)

    def plain(pairs: list[tuple[str, object]]) -> object:
        raise ValueError("the hook's own words")

    # a hook's bare ValueError is its own, even with a long integer elsewhere in the text
    with pytest.raises(ValueError, match="the hook's own words"):
        loads_json('[{"a": 1}, ' + LONG + "]", object_pairs_hook=plain)


def test_an_int_tag_on_a_sequence_is_named_as_such_not_as_a_long_integer() -> None:
    with pytest.raises(yaml.YAMLError, match="expected a scalar node"):
        load_yaml_strict("a: !!int [" + ", ".join(["0"] * 1300) + "]\n")


def test_hashed_recording_never_keeps_json_it_cannot_read_in_clear() -> None:
    # --hash-content: JSON with an over-long integer cannot have its content strings found;
    # stored as the hash of its text, never as it came (the cassette says content: hashed)
    from conformance.traffic.scrubbing import hash_body

    body = b'{"choices": [{"message": {"content": "SECRET"}}], "n": ' + LONG.encode() + b"}"
    stream = 'data: {"choices": [{"delta": {"content": "SECRET"}}], "n": ' + LONG + "}\n\n"
    for recorded in (body, stream):
        stored = hash_body(recorded)
        assert isinstance(stored, bytes)
        assert b"SECRET" not in stored
        assert LONG.encode() not in stored


@pytest.mark.parametrize(
    ("value", "words"),
    [("0b_", "not an integer"), ("!!int abc", "not an integer"), ("!!int ''", "not an integer")],
)
def test_yaml_names_an_integer_it_cannot_read_as_such(value: str, words: str) -> None:
    with pytest.raises(yaml.YAMLError, match="line 2") as caught:
        load_yaml_strict(f"a: 1\nb: {value}\n")
    assert words in str(caught.value)
    assert "4,300" not in str(caught.value)


@pytest.mark.parametrize(
    "value",
    # base 60 (only with the tag now: a plain 1:59 is text): refused unsummed
    [LONG, "-" + LONG, HEX, "0b" + "1" * 15000, "!!int 1" + ":59" * 30_000],
)
def test_yaml_refuses_an_integer_too_long_to_write_with_its_line(value: str) -> None:
    with pytest.raises(Exception, match="line 2") as caught:
        load_yaml_strict(f"a: 1\nb: {value}\n")
    assert "an integer of more than 4,300 digits" in str(caught.value)
    assert load_yaml_strict("a: 0xff\nb: " + "9" * 4300 + "\n")["a"] == 255


def _assert_named(args: list[str], path: Path, *words: str) -> None:
    code, _, err = invoke(args)
    assert code == 2, err
    assert "internal error" not in err
    assert "Traceback" not in err
    assert str(path) in err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("body.json", '{"model": "gpt-4o", "max_tokens": ' + LONG + ', "messages": []}', "5,000"),
        ("body.yaml", f"model: gpt-4o\nmax_tokens: {LONG}\nmessages: []\n", "line 2"),
        ("body_hex.yaml", f"model: gpt-4o\nmax_tokens: {HEX}\nmessages: []\n", "line 2"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "count", "convert"])
def test_a_request_document_with_one_is_a_named_error(
    tmp_path: Path, name: str, text: str, words: str, command: str
) -> None:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    args = {
        "validate": ["validate", str(path), "--shape", "openai-chat", "--context-limit", "100"],
        "count": ["count", str(path), "--shape", "openai-chat"],
        "convert": ["convert", str(path), "--from", "openai-chat", "--to", "gemini"],
    }[command]
    _assert_named(args, path, "an integer of", words)


@pytest.mark.parametrize("value", [LONG, HEX])
def test_an_assembly_config_with_one_is_a_named_error(tmp_path: Path, value: str) -> None:
    config = tmp_path / "assembly.yaml"
    config.write_text(f"context_assembly:\n  model_input_limit: {value}\n", "utf-8")
    args = [
        "assemble",
        str(EXAMPLES / "session.json"),
        "--config",
        str(config),
        "--shape",
        "gemini",
    ]
    _assert_named(args, config, "line 2", "an integer of more than 4,300 digits")


def test_tool_call_arguments_with_one_name_it_when_rendered_as_an_object(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    call["function"]["arguments"] = '{"n": ' + LONG + "}"  # type: ignore[index]
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ],
    }
    path.write_text(json.dumps(body), "utf-8")
    args = ["convert", str(path), "--from", "openai-chat", "--to", "anthropic-messages"]
    _assert_named(args, path, "tool call 'call_1' has arguments", "an integer of 5,000 digits")
    # a tool result holding one is text to every shape (Gemini and Bedrock read JSON results)
    body["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{}"  # type: ignore[index]
    body["messages"][2]["content"] = '{"n": ' + LONG + "}"  # type: ignore[index]
    path.write_text(json.dumps(body), "utf-8")
    for shape in ("gemini", "bedrock-converse"):
        code, out, err = invoke(["convert", str(path), "--from", "openai-chat", "--to", shape])
        assert code == 0, err
        assert LONG in out


def _audit_rows(path: Path) -> tuple[int, list[dict[str, object]], str]:
    code, out, err = invoke(["audit", str(path), "--format", "jsonl", "--all"])
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.mark.parametrize("where", ["body", "status", "body as text"])
def test_an_audited_log_line_with_one_is_unreadable_and_the_audit_goes_on(
    tmp_path: Path, where: str
) -> None:
    good = json.dumps({"url": URL, "body": GOOD})
    if where == "body":
        bad = good.replace('"gpt-4o"', '"gpt-4o", "max_tokens": ' + LONG)
    elif where == "status":
        bad = good[:-1] + ', "status": ' + LONG + "}"
    else:
        bad = json.dumps({"url": URL, "body": json.dumps(GOOD)[:-1] + ', "n": ' + LONG + "}"})
    log = tmp_path / "traffic.jsonl"
    log.write_text(f"{good}\n{bad}\n{good}\n", "utf-8")
    code, rows, err = _audit_rows(log)
    assert "internal error" not in err
    assert [row["verdict"] for row in rows] == ["accept", "unreadable", "accept"]
    assert "an integer of 5,000 digits" in str(rows[1]["message"])
    assert rows[1]["location"] == f"{log}:2"
    assert code == 4


@pytest.mark.parametrize("value", [LONG, HEX])
def test_an_audited_cassette_with_one_is_unreadable_and_the_audit_goes_on(
    tmp_path: Path, value: str
) -> None:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"url": URL, "body": GOOD}) + "\n", "utf-8")
    (folder / "b.yaml").write_text(
        "interactions:\n- request:\n    method: POST\n    uri: " + URL + "\n"
        "    body: '{}'\n  response:\n    status: {code: " + value + ", message: OK}\n",
        "utf-8",
    )
    code, rows, err = _audit_rows(folder)
    assert "internal error" not in err
    verdicts = sorted(str(row["verdict"]) for row in rows)
    assert verdicts == ["accept", "unreadable"]
    assert code == 4


@pytest.mark.parametrize(
    "answer",
    [
        b"not json",
        b'{"id": "x", "object": "chat.completion", "usage": {"n": ' + LONG.encode() + b"}}",
    ],
    ids=["not-json", "long-integer"],
)
def test_record_keeps_an_answer_the_sdk_cannot_read(tmp_path: Path, answer: bytes) -> None:
    # An upstream answering 200 with a body the SDK cannot parse (or a non-stream answer to a
    # streamed request): recorded as its text, never an internal error.
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from conformance.providers.emulator_transport import serving

    async def upstream(request: Request) -> Response:
        await request.body()
        return Response(answer, media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", upstream, methods=["POST"])])
    out = tmp_path / "cassettes"
    with serving(app) as url:
        code, _, err = invoke(
            [
                *("record", "--base-url", url, "--shape", "openai-chat", "--out", str(out)),
                *("--scenarios", "single-tool"),  # the probes (two of them streamed) and one
            ]
        )
    assert code == 0, err
    assert "probe-text.yaml: a 200 answer that does not parse as openai-chat" in err
    reason = (  # worded through json_problem: the column said
        "Expecting value at column 1)" if answer == b"not json" else "an integer of 5,000 digits"
    )
    assert f"not JSON the SDK reads ({reason}" in err
    written = list((out / "openai-chat").glob("*.yaml"))
    assert written
    assert all(answer.decode()[:20] in path.read_text("utf-8") for path in written[:3])


def _cassette_with_body_text(folder: Path) -> Path:
    body = json.dumps(GOOD)[:-1] + ', "n": ' + LONG + "}"
    path = folder / "openai-chat" / "long.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "interactions:\n- request:\n    method: POST\n    uri: " + URL + "\n"
        "    body: '" + body + "'\n  response:\n    status: {code: 200, message: OK}\n"
        "    body: {string: '{}'}\n",
        "utf-8",
    )
    return path


def test_the_other_interactions_of_that_cassette_are_still_judged(tmp_path: Path) -> None:
    path = _cassette_with_body_text(tmp_path)
    good = json.dumps(GOOD)
    path.write_text(
        path.read_text("utf-8")
        + "- request:\n    method: POST\n    uri: "
        + URL
        + "\n    body: '"
        + good
        + "'\n"
        "  response:\n    status: {code: 200, message: OK}\n    body: {string: '{}'}\n",
        "utf-8",
    )
    code, rows, _ = _audit_rows(path)
    assert [(row["verdict"], row["location"]) for row in rows] == [
        ("unreadable", f"{path}#0"),
        ("accept", f"{path}#1"),
    ]
    assert code == 4


def test_a_cassette_whose_request_text_holds_one_is_unreadable_not_judged(tmp_path: Path) -> None:
    # judged as a body that is not JSON it was a confident C0 rejection; a provider may read it
    path = _cassette_with_body_text(tmp_path)
    code, rows, err = _audit_rows(path)
    assert [row["verdict"] for row in rows] == ["unreadable"], rows
    assert "an integer of 5,000 digits" in str(rows[0]["message"])
    assert code == 4
    code, _, err = invoke(["diff", str(tmp_path), str(tmp_path)])
    assert "internal error" not in err


@pytest.mark.parametrize(
    ("request_side", "where"),
    [
        ({"postData": {"mimeType": "application/json", "text": "BODY"}}, "request.postData.text"),
        ({"body": {"string": "BODY"}}, "request.body.string"),  # Ruby VCR, R vcr
        ({"body": "BODY"}, "request.body"),  # vcrpy
    ],
    ids=["har", "body-string", "vcrpy"],
)
def test_the_unreadable_row_names_where_the_request_body_sits(
    tmp_path: Path, request_side: dict[str, object], where: str
) -> None:
    body = json.dumps(GOOD)[:-1] + ', "n": ' + LONG + "}"
    side = json.loads(json.dumps(request_side).replace('"BODY"', json.dumps(body)))
    request = {"method": "POST", "url": URL, "headers": [], **side}
    response = {"status": 200, "headers": [], "content": {"mimeType": "application/json"}}
    if "postData" in side:
        document: dict[str, object] = {
            "log": {"entries": [{"request": request, "response": response}]}
        }
        path = tmp_path / "long.har"
    else:
        request = {"method": "POST", "uri": URL, **side}
        document = {"interactions": [{"request": request, "response": {"status": {"code": 200}}}]}
        path = tmp_path / "long.json"
    path.write_text(json.dumps(document), "utf-8")
    code, rows, err = _audit_rows(path)
    assert "internal error" not in err
    assert [row["verdict"] for row in rows] == ["unreadable"], rows
    assert f"{where}: the body holds an integer of 5,000 digits" in str(rows[0]["message"]), rows
    assert code == 4
