"""Gemini's and Bedrock's official SDKs (google-genai, boto3) against the emulator on loopback:
the answers parse in the SDKs' own models, a request a rule rejects surfaces as the SDK's error
with the provider's status, type and message (the catalog's text, rules G1 and B4), and the
Bedrock round trips that write the committed cassettes go through boto3 with the case's body."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from conformance.errors import SdkMissingError
from conformance.providers.catalog import load_catalog
from conformance.providers.emulator import create_app
from conformance.providers.emulator_transport import serving
from conformance.traffic.cassette import load_cassette_document
from conformance.traffic.roundtrip import Target, record, send
from conformance.traffic.roundtrip_cases import probe_cases

GEMINI_MODEL = "gemini-2.5-flash"
BEDROCK_MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
WEATHER_DECLARATION = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serving(create_app()) as url:
        yield url


def _gemini(url: str) -> Any:
    return genai.Client(api_key="test", http_options=genai_types.HttpOptions(base_url=url))


def _bedrock(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDCTXCONFTEST",
        aws_secret_access_key="not-secret",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def _message(rule_id: str) -> str:
    return load_catalog().rules[rule_id].message


def test_google_genai_parses_parallel_calls_and_counts_tokens(served: str) -> None:
    client = _gemini(served)
    config = {"tools": [{"functionDeclarations": [WEATHER_DECLARATION]}]}
    prompt = "Weather in Paris and Rome? [emulator: call get_weather x2]"
    reply = client.models.generate_content(model=GEMINI_MODEL, contents=prompt, config=config)
    assert [call.name for call in reply.function_calls or []] == ["get_weather", "get_weather"]
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata.prompt_token_count or 0) > 0
    counted = client.models.count_tokens(model=GEMINI_MODEL, contents=prompt)
    assert (counted.total_tokens or 0) > 0


def test_google_genai_gets_the_providers_error_for_g1(served: str) -> None:
    # History opening with a model function call (G1): the SDK's ClientError carries it.
    contents = [
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]},
    ]
    client = _gemini(served)  # held: a google-genai client closes its HTTP client when freed
    with pytest.raises(genai_errors.ClientError) as caught:
        client.models.generate_content(model=GEMINI_MODEL, contents=contents)
    assert caught.value.code == 400
    assert caught.value.status == "INVALID_ARGUMENT"
    assert caught.value.message == _message("G1")


def test_boto3_converse_parses_the_tool_calls(served: str) -> None:
    reply = _bedrock(served).converse(
        modelId=BEDROCK_MODEL,
        messages=[
            {"role": "user", "content": [{"text": "Paris? [emulator: call get_weather x2]"}]}
        ],
        toolConfig={"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {}}}}]},
    )
    blocks = reply["output"]["message"]["content"]
    assert [b["toolUse"]["name"] for b in blocks] == ["get_weather", "get_weather"]
    assert reply["stopReason"] == "tool_use"
    assert reply["usage"]["inputTokens"] > 0


def test_boto3_gets_the_providers_error_for_b4(served: str) -> None:
    with pytest.raises(ClientError) as caught:
        _bedrock(served).converse(
            modelId=BEDROCK_MODEL, messages=[{"role": "assistant", "content": [{"text": "hi"}]}]
        )
    error = caught.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"] == {"Code": "ValidationException", "Message": _message("B4")}


def test_bedrock_round_trips_send_the_case_body_through_boto3(tmp_path: Path) -> None:
    cases = probe_cases("bedrock-converse")
    record(cases, Target.emulator(create_app()), tmp_path)
    sent: dict[str, list[Any]] = {}
    for path in sorted((tmp_path / "bedrock-converse").glob("*.yaml")):
        document = load_cassette_document(path)
        for interaction in document["interactions"]:
            request = interaction["request"]
            assert request["headers"]["user-agent"][0].startswith("Boto3/")
            assert "authorization" not in request["headers"]  # SigV4 of the placeholder keys
            sent.setdefault(path.stem, []).append(json.loads(request["body"]))
    # Every case's body went out as built: boto3 re-serializes it byte for byte the same JSON.
    for case in cases:
        assert dict(case.body) in sent[case.cassette], case.label
    assert sum(len(bodies) for bodies in sent.values()) == len(cases)


def test_without_boto3_a_bedrock_round_trip_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # what an environment without it imports
    case = probe_cases("bedrock-converse")[0]
    with pytest.raises(SdkMissingError, match=r"pip install 'ctxconf\[sdks\]'"):
        send(case, Target.emulator(create_app()))
