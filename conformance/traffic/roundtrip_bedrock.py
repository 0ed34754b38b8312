"""Bedrock Converse round trips through ``boto3`` (the ``sdks`` extra), over an ``httpx`` client.

boto3 serializes, signs and parses as usual; a ``before-send`` handler (botocore's event for
supplying the HTTP response) hands the signed request to the round trip's ``httpx.Client``, so
boto3 reaches the in-process emulator without a port and vcrpy records it as it records every
other round trip. The body's fields are ``converse``'s parameters, with base64 blobs (image,
document and video bytes) decoded to the bytes boto3 encodes again: what goes out is the case's
body (tests/conformance/test_roundtrip.py compares them for every probe).

Gemini stays on plain ``httpx``: google-genai re-serializes a body through its own models (it
adds an empty ``generationConfig``, sends ``parameters_json_schema`` for
``parametersJsonSchema`` and refuses a thought signature that is not base64 before sending), so
a cassette would not hold the request the assembler built; its SDK is tested against the
emulator instead (tests/conformance/test_emulator_sdks.py).
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import httpx
import httpx2

from conformance.errors import SdkMissingError
from reference_impl.documents import loads_json

__all__ = ["answer_json", "headers_of", "send_bedrock"]

# Placeholder keys: boto3 signs every request, and the emulator ignores the signature.
_FAKE_AWS: Final = {"aws_access_key_id": "AKIDCTXCONFTEST", "aws_secret_access_key": "not-secret"}
_REGION: Final = "us-east-1"


def headers_of(raw: httpx.Headers | httpx2.Headers) -> dict[str, str]:
    """Header names in lower case (what the verdict headers are looked up by)."""
    return {k.lower(): v for k, v in raw.items()}


def answer_json(response: httpx.Response | httpx2.Response) -> Any:
    """The answer's JSON, or its text when it is not JSON we can read."""
    try:
        return loads_json(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError):  # an over-long integer included
        return response.text


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise SdkMissingError(
            f"Bedrock round trips go through boto3: pip install 'ctxconf[sdks]' ({exc})",
            where=name,
        ) from exc


def _blobs(value: Any, shape: Any, convert: Callable[[Any], Any]) -> Any:
    """``value`` with ``convert`` applied to every blob member of botocore ``shape``."""
    kind = shape.type_name
    if kind == "blob":
        return convert(value)
    if kind == "structure" and isinstance(value, Mapping):
        members = shape.members
        return {k: _blobs(v, members[k], convert) if k in members else v for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [_blobs(v, shape.member, convert) for v in value]
    if kind == "map" and isinstance(value, Mapping):
        return {k: _blobs(v, shape.value, convert) for k, v in value.items()}
    return value


def _from_wire(value: Any) -> Any:
    return base64.b64decode(value) if isinstance(value, str) else value


def _to_wire(value: Any) -> Any:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value


class _Body:
    """What botocore's ``AWSResponse`` reads an answer from (``raw.stream()``)."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._content


def send_bedrock(
    body: Mapping[str, Any],
    model: str,
    *,
    base: str,
    bearer: str | None,
    client: httpx.Client,
    headers: Mapping[str, str],
) -> tuple[int, Any, dict[str, str]]:
    """``converse`` through boto3's ``bedrock-runtime`` client: (status, answer, headers).

    A 2xx answer is boto3's parse of it (blobs back to base64), an error the provider's body as
    sent. ``bearer`` (a Bedrock API key, live) replaces the placeholder keys' SigV4 signature.
    """
    boto3 = _module("boto3")
    botocore_config = _module("botocore.config")
    awsrequest = _module("botocore.awsrequest")
    exceptions = _module("botocore.exceptions")
    answers: list[httpx.Response] = []

    def through_httpx(request: Any, **_: Any) -> Any:
        outgoing = dict(request.headers.items()) | dict(headers)
        if bearer is not None:
            outgoing["Authorization"] = f"Bearer {bearer}"
        content = request.body or b""
        data = content if isinstance(content, bytes) else str(content).encode()
        answer = client.request(request.method, request.url, headers=outgoing, content=data)
        answers.append(answer)
        return awsrequest.AWSResponse(
            str(answer.url), answer.status_code, dict(answer.headers), _Body(answer.content)
        )

    sdk = boto3.client(
        "bedrock-runtime",
        region_name=_REGION,
        endpoint_url=base,
        # One attempt (a round trip records what one request got); the body is sent as given,
        # so boto3's own checks do not refuse the broken sessions the probes send on purpose.
        config=botocore_config.Config(
            retries={"max_attempts": 1, "mode": "standard"}, parameter_validation=False
        ),
        **_FAKE_AWS,
    )
    sdk.meta.events.register("before-send.bedrock-runtime.Converse", through_httpx)
    operation = sdk.meta.service_model.operation_model("Converse")
    try:
        output = sdk.converse(
            modelId=model, **_blobs(dict(body), operation.input_shape, _from_wire)
        )
    except exceptions.ClientError:
        answer = answers[-1]  # boto3 keeps only the code and message of the error body
        return answer.status_code, answer_json(answer), headers_of(answer.headers)
    output.pop("ResponseMetadata", None)
    parsed = _blobs(output, operation.output_shape, _to_wire)
    return answers[-1].status_code, parsed, headers_of(answers[-1].headers)
