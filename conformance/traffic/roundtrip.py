"""Round trips through the real SDKs: send a request, parse the answer back, record or replay it.

The ``openai`` SDK sends ``openai-chat`` and ``openai-responses`` requests, the ``anthropic`` SDK
sends ``anthropic-messages``, ``boto3`` sends ``bedrock-converse``
(:mod:`conformance.traffic.roundtrip_bedrock`, the ``sdks`` extra); Gemini goes as plain
``httpx`` (google-genai rewrites the body it sends, see that module). A :class:`Target` says
where: the in-process emulator (no port), any base URL (``ctxconf serve`` on loopback, a
gateway), or a provider's official endpoint with keys from the usual environment variables. The
code path is the same for all three.

Recording (:func:`record`) writes ``<out>/<shape>/<case-id>.yaml`` through vcrpy with the
skeleton matcher and scrubbing of :mod:`conformance.traffic.skeleton` and :mod:`conformance.traffic.scrubbing`; what the cassette was recorded
against is decided from the answers, never assumed (:func:`recorded_against`). Re-recording is
idempotent: a cassette whose interactions did not change keeps its bytes (and its date). Replay
(:func:`replay`) sends the same requests with ``record_mode="none"``: the SDKs parse recorded
answers, and a request whose skeleton was not recorded raises :class:`CassetteMissError`
naming the closest recorded skeleton.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlsplit

import anthropic
import httpx
import httpx2
import openai
from openai.lib.streaming.chat import ChatCompletionStreamState
from starlette.types import ASGIApp
from vcr.errors import CannotOverwriteExistingCassetteException

from conformance.errors import CassetteError, CassetteMissError, CredentialsError
from conformance.providers.emulator_transport import httpx2_transport, httpx_transport
from conformance.providers.verdict import Provenance, Verdict
from conformance.scenarios import DEFAULT_MODELS
from conformance.traffic.cassette import (
    METADATA_KEY,
    CassetteMetadata,
    ContentMode,
    RecordMode,
    load_cassette_document,
    make_vcr,
)
from conformance.traffic.endpoints import (
    DIALECT_HEADER,
    OFFICIAL_ROOTS,
    PROFILE_HEADER,
    PROVENANCE_HEADER,
    RULE_HEADER,
    generate_path,
    is_bedrock_runtime_host,
)
from conformance.traffic.roundtrip_bedrock import answer_json, headers_of, send_bedrock
from conformance.traffic.skeleton import closest_skeleton, request_skeleton
from conformance.traffic.verdicts import reported_input_tokens
from reference_impl.documents import json_problem, loads_json
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.transcript import Message

__all__ = [
    "DEFAULT_MODELS",
    "Case",
    "Exchange",
    "RecordedCassette",
    "Target",
    "model_of",
    "record",
    "recorded_against",
    "replay",
    "send",
]

_KEY_VARIABLES: Final[Mapping[str, tuple[str, ...]]] = {
    "openai-chat": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic-messages": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    # Bedrock API keys are bearer tokens; SigV4 signing would need botocore, not a dependency.
    "bedrock-converse": ("AWS_BEARER_TOKEN_BEDROCK",),
}
_PLACEHOLDER_KEY: Final = "test-key-not-secret"
_EMULATOR_ROOT: Final = "http://emulator.invalid"
_REPLAY_ROOT: Final = "http://replay.invalid"


@dataclass(frozen=True, slots=True)
class Case:
    """One request to send: a cassette id (scenario or probe), a label, the body, the dialect."""

    cassette: str
    label: str
    body: Mapping[str, Any]
    shape: str
    dialect: str | None = None
    model: str | None = None
    """The model when it travels in the URL (Gemini, Bedrock); defaults to the body's."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """What came back for one :class:`Case`: status, body, headers, and the parsed message."""

    case: Case
    status: int
    response_body: Any
    headers: Mapping[str, str]
    message: Message | None = None
    parse_error: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether the answer was a 2xx."""
        return 200 <= self.status < 300

    @property
    def input_tokens(self) -> int | None:
        """The input tokens the answer reported, if any."""
        return reported_input_tokens(self.case.shape, self.response_body)

    def verdict(self, provenance: Provenance) -> Verdict:
        """The answer as a verdict with ``provenance``; the rule from the emulator's header."""
        rule = None if self.accepted else self.headers.get(RULE_HEADER)
        error = None
        if not self.accepted:
            error = dict(self.response_body) if isinstance(self.response_body, Mapping) else {}
        return Verdict(
            verdict="accept" if self.accepted else "reject",
            status=self.status,
            provenance=provenance,
            rule=rule,
            error=error,
            shape=self.case.shape,
            dialect=self.case.dialect,
            profile=self.headers.get(PROFILE_HEADER),
        )


@dataclass(frozen=True, slots=True)
class Target:
    """Where requests go: an in-process app, or a root URL (``http://127.0.0.1:8080``)."""

    root: str
    app: ASGIApp | None = None
    live: bool = False
    """Read keys from the environment (a real provider or a gateway that needs them)."""
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @staticmethod
    def emulator(app: ASGIApp) -> Target:
        """The in-process emulator ``app`` (no port, placeholder keys)."""
        return Target(root=_EMULATOR_ROOT, app=app)

    @staticmethod
    def official(shape: str, env: Mapping[str, str] | None = None) -> Target:
        """The provider's official endpoint for ``shape``, keys from ``env``."""
        values = dict(os.environ if env is None else env)
        region = values.get("AWS_REGION") or values.get("AWS_DEFAULT_REGION") or "us-east-1"
        return Target(root=OFFICIAL_ROOTS[shape].format(region=region), live=True, env=values)

    def is_official(self, shape: str) -> bool:
        """Whether the root is the official host of ``shape`` (what makes a recording ``live``)."""
        host = urlsplit(self.root).hostname or ""
        official = urlsplit(OFFICIAL_ROOTS[shape].format(region="x")).hostname or ""
        if shape == "bedrock-converse":
            return is_bedrock_runtime_host(host)
        return urlsplit(self.root).scheme == "https" and host == official

    def key(self, shape: str) -> str:
        """The API key for ``shape``: a placeholder unless live; :class:`CredentialsError` when
        missing."""
        if not self.live:
            return _PLACEHOLDER_KEY
        for name in _KEY_VARIABLES[shape]:
            if self.env.get(name):
                return self.env[name]
        names = " or ".join(_KEY_VARIABLES[shape])
        raise CredentialsError(f"recording {shape} live needs {names} in the environment")

    def base(self, shape: str, dialect: str | None) -> str:
        """The root plus the emulator's dialect prefix (only where the emulator answers)."""
        root = self.root.rstrip("/")
        if dialect and not self.is_official(shape):
            root = f"{root}/dialect/{quote(dialect, safe='')}"
        return root


def _split(body: Mapping[str, Any], *named: str) -> tuple[list[Any], dict[str, Any]]:
    return [body.get(k) for k in named], {k: v for k, v in body.items() if k not in named}


def _send_openai(
    case: Case, target: Target, client: httpx2.Client
) -> tuple[int, Any, dict[str, str]]:
    sdk = openai.OpenAI(
        base_url=f"{target.base(case.shape, case.dialect)}/v1",
        api_key=target.key(case.shape),
        http_client=client,
        max_retries=0,
    )
    rest = dict(case.body)
    try:
        if rest.pop("stream", None) is True:
            return _stream_openai(case, sdk, rest)
        # .parse(): the SDK's own models must accept the answer.
        if case.shape == "openai-chat":
            (model, messages), rest = _split(rest, "model", "messages")
            chat = sdk.chat.completions.with_raw_response.create(
                model=model, messages=messages, extra_body=rest
            )
            return chat.status_code, _parsed(chat), headers_of(chat.headers)
        (model, items), rest = _split(rest, "model", "input")
        raw = sdk.responses.with_raw_response.create(model=model, input=items, extra_body=rest)
        return raw.status_code, _parsed(raw), headers_of(raw.headers)
    except openai.APIStatusError as exc:
        return exc.status_code, answer_json(exc.response), headers_of(exc.response.headers)


def _parsed(raw: Any) -> Any:
    """A 2xx answer parsed by the SDK's own models (``.parse()``: they must accept it) as JSON
    data; an answer the SDK cannot read (not JSON, an integer too long to read) is kept as its
    text, and ``send`` names the problem (``Exchange.parse_error``: a text is no answer)."""
    try:
        return raw.parse().to_dict(mode="json")
    except ValueError:  # json.JSONDecodeError and the digit limit's bare ValueError
        return answer_json(raw.http_response)


def _unread(answer: str | None) -> str:
    """Why a 2xx answer kept as text (or none, a stream without events) was not read."""
    if answer is None:
        return "no answer to read (a stream without events, or no body)"
    try:
        loads_json(answer)
    except json.JSONDecodeError as exc:
        return f"not JSON the SDK reads ({json_problem(exc)})"
    return "an answer the SDK could not read"


def _plain_completion(completion: dict[str, Any]) -> dict[str, Any]:
    """The accumulated completion without what the SDK's stream state adds for its parse helpers
    (``message.parsed``, ``function.parsed_arguments``, a tool call's chunk ``index``), so it has
    the form of a non-streamed ``chat.completion``."""
    for choice in completion.get("choices") or []:
        message = choice.get("message") or {}
        message.pop("parsed", None)
        for call in message.get("tool_calls") or []:
            call.pop("index", None)
            (call.get("function") or {}).pop("parsed_arguments", None)
    return completion


def _stream_openai(
    case: Case, sdk: openai.OpenAI, body: dict[str, Any]
) -> tuple[int, Any, dict[str, str]]:
    """``stream: true``: the event stream read through the SDK and accumulated by the SDK's own
    stream state (chat) or taken from ``response.completed`` (Responses)."""
    if case.shape == "openai-chat":
        (model, messages), rest = _split(body, "model", "messages")
        chunks = sdk.chat.completions.create(
            model=model, messages=messages, stream=True, extra_body=rest
        )
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        handled = 0
        for chunk in chunks:
            state.handle_chunk(chunk)
            handled += 1
        # No chunk (an answer that is no event stream): no answer to parse, the exchange says so
        final = (
            _plain_completion(state.get_final_completion().to_dict(mode="json"))
            if handled
            else None
        )
        return chunks.response.status_code, final, headers_of(chunks.response.headers)
    (model, items), rest = _split(body, "model", "input")
    events = sdk.responses.create(model=model, input=items, stream=True, extra_body=rest)
    completed = [e.response for e in events if e.type == "response.completed"]
    # A stream without response.completed has no answer to parse: the exchange says so.
    answer = completed[-1].to_dict(mode="json") if completed else None
    return events.response.status_code, answer, headers_of(events.response.headers)


def _send_anthropic(
    case: Case, target: Target, client: httpx2.Client
) -> tuple[int, Any, dict[str, str]]:
    sdk = anthropic.Anthropic(
        base_url=target.base(case.shape, case.dialect),
        api_key=target.key(case.shape),
        http_client=client,
        max_retries=0,
    )
    (model, max_tokens, messages), rest = _split(case.body, "model", "max_tokens", "messages")
    limit = max_tokens if isinstance(max_tokens, int) else 1024
    try:
        if rest.pop("stream", None) is True:
            # The SDK's streaming helper accumulates the events into the final message.
            with sdk.messages.stream(
                model=model, max_tokens=limit, messages=messages, extra_body=rest
            ) as stream:
                final = stream.get_final_message().to_dict(mode="json")
                return stream.response.status_code, final, headers_of(stream.response.headers)
        raw = sdk.messages.with_raw_response.create(
            model=model,
            max_tokens=limit,
            messages=messages,
            extra_body=rest,
        )
        return raw.status_code, _parsed(raw), headers_of(raw.headers)
    except anthropic.APIStatusError as exc:
        return exc.status_code, answer_json(exc.response), headers_of(exc.response.headers)


def _send_url_model(
    case: Case, target: Target, client: httpx.Client
) -> tuple[int, Any, dict[str, str]]:
    """The shapes with the model in the URL: Bedrock Converse through boto3
    (:mod:`conformance.traffic.roundtrip_bedrock`), Gemini as plain HTTP (why: that module)."""
    model = case.model or str(case.body.get("model") or DEFAULT_MODELS[case.shape])
    base = target.base(case.shape, case.dialect)
    extra = {DIALECT_HEADER: case.dialect} if case.dialect else {}
    if case.shape == "bedrock-converse":
        bearer = target.key(case.shape) if target.live else None  # else boto3 signs
        return send_bedrock(
            case.body, model, base=base, bearer=bearer, client=client, headers=extra
        )
    headers = {"content-type": "application/json", "x-goog-api-key": target.key(case.shape)}
    url = base + generate_path(case.shape, model)
    response = client.post(url, content=json.dumps(case.body).encode(), headers=headers | extra)
    return response.status_code, answer_json(response), headers_of(response.headers)


def send(case: Case, target: Target) -> Exchange:
    """Send one case through its SDK and parse a 2xx answer back into a message."""
    extra = {DIALECT_HEADER: case.dialect} if case.dialect else {}
    if case.shape in ("openai-chat", "openai-responses", "anthropic-messages"):
        transport2 = httpx2_transport(target.app) if target.app is not None else None
        with httpx2.Client(transport=transport2, headers=extra, timeout=60.0) as client2:
            sender = _send_anthropic if case.shape == "anthropic-messages" else _send_openai
            status, body, headers = sender(case, target, client2)
    else:
        transport = httpx_transport(target.app) if target.app is not None else None
        with httpx.Client(transport=transport, timeout=60.0) as client:
            status, body, headers = _send_url_model(case, target, client)
    message: Message | None = None
    problem: str | None = None
    if 200 <= status < 300 and (body is None or isinstance(body, str)):
        problem = _unread(body)  # what _parsed and the streams keep of an answer not read
    elif 200 <= status < 300:
        try:
            message = get_shape(case.shape).parse_response(body)
        except CtxconfError as exc:
            problem = str(exc)
    return Exchange(case, status, body, headers, message, problem)


def recorded_against(target: Target, shape: str, exchanges: Sequence[Exchange]) -> str:
    """What the answers truthfully came from: ``live`` only for a provider's official endpoint;
    ``emulator:<profile>`` when the answers say they are emulated; otherwise ``custom:<host>``."""
    emulated = [e for e in exchanges if e.headers.get(PROVENANCE_HEADER) == "emulated"]
    if exchanges and len(emulated) == len(exchanges):
        profiles = sorted({e.headers.get(PROFILE_HEADER, "none") for e in emulated})
        return f"emulator:{'+'.join(profiles)}"
    if target.is_official(shape) and not emulated:
        return "live"
    return f"custom:{urlsplit(target.root).netloc or 'unknown'}"


def model_of(cases: Sequence[Case]) -> str:
    """The model the cases' requests name (in the body, or the URL's), as a cassette's header
    records it."""
    for case in cases:
        model = case.model or case.body.get("model")
        if isinstance(model, str):
            return model
    return "unknown"


def _grouped(cases: Sequence[Case]) -> Iterator[tuple[str, str, list[Case]]]:
    groups: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        groups.setdefault((case.shape, case.cassette), []).append(case)
    for (shape, cassette), items in groups.items():
        yield shape, cassette, items


@dataclass(frozen=True, slots=True)
class RecordedCassette:
    """One cassette that :func:`record` wrote (``changed``) or left byte-identical."""

    path: Path
    exchanges: list[Exchange]
    changed: bool


# Header fields that say *when* and *with which client versions*: a re-recording whose
# interactions and other header fields are equal keeps the old file byte for byte.
_VOLATILE_HEADER: Final = frozenset({"date", "sdk"})


def _comparable(path: Path) -> object:
    try:
        document = load_cassette_document(path)
    except CassetteError:
        return None
    header = document.get(METADATA_KEY)
    if isinstance(header, Mapping):
        document[METADATA_KEY] = {k: v for k, v in header.items() if k not in _VOLATILE_HEADER}
    return document


def record(
    cases: Sequence[Case],
    target: Target,
    out: Path,
    *,
    content: ContentMode = ContentMode.FULL,
) -> list[RecordedCassette]:
    """Send every case and write one cassette per (shape, cassette id).

    Idempotent: each cassette is recorded to a temporary file first; when only its date and SDK
    versions differ from the cassette already there, the old file is kept untouched, otherwise
    the new one replaces it.
    """
    written: list[RecordedCassette] = []
    recorder = make_vcr(record_mode=RecordMode.ALL, content=content)
    for shape, cassette_id, items in _grouped(cases):
        path = out / shape / f"{cassette_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = path.with_name(f".{path.name}.recording")
        fresh.unlink(missing_ok=True)
        try:
            with recorder.use_cassette(str(fresh)) as cassette:
                exchanges = [send(case, target) for case in items]
                metadata = CassetteMetadata(
                    recorded_against=recorded_against(target, shape, exchanges),
                    shape=shape,
                    model=model_of(items),
                    scenario=cassette_id,
                    dialect=items[0].dialect,
                    content=content.value,
                )
                cassette.get_metadata("ctxconf", metadata.to_dict())
            changed = not path.is_file() or _comparable(fresh) != _comparable(path)
            if changed:
                os.replace(fresh, path)
        finally:
            fresh.unlink(missing_ok=True)
        written.append(RecordedCassette(path, exchanges, changed))
    return written


async def _refusing_app(scope: Any, receive: Any, send: Any) -> None:
    del scope, receive, send
    raise CassetteError("replay reached the network; the cassette should have answered")


_MISSES: Final = (
    openai.APIConnectionError,
    anthropic.APIConnectionError,
    CannotOverwriteExistingCassetteException,
)


def _replay_one(case: Case, target: Target, path: Path, cassette: Any) -> Exchange:
    try:
        return send(case, target)
    except _MISSES as exc:
        cause = exc if isinstance(exc, CannotOverwriteExistingCassetteException) else exc.__cause__
        raise _miss(case, path, cassette.requests, cause) from None


def replay(cases: Sequence[Case], root: Path) -> list[Exchange]:
    """Send every case with ``record_mode="none"`` against ``<root>/<shape>/<id>.yaml``."""
    recorder = make_vcr(record_mode=RecordMode.NONE)
    target = Target(root=_REPLAY_ROOT, app=_refusing_app)
    out: list[Exchange] = []
    for shape, cassette_id, items in _grouped(cases):
        path = root / shape / f"{cassette_id}.yaml"
        if not path.is_file():
            raise CassetteMissError(f"no cassette {path} for {shape} case {cassette_id!r}")
        with recorder.use_cassette(str(path), allow_playback_repeats=True) as cassette:
            out.extend(_replay_one(case, target, path, cassette) for case in items)
    return out


def _miss(case: Case, path: Path, recorded: Sequence[Any], cause: object) -> CassetteMissError:
    wanted = None
    if isinstance(cause, CannotOverwriteExistingCassetteException):
        wanted = request_skeleton(cause.failed_request)
    labelled = [(f"interaction {i}", request_skeleton(r)) for i, r in enumerate(recorded)]
    nearest = closest_skeleton(wanted, labelled) if wanted is not None else None
    hint = f"; closest recorded: {nearest[0]} ({nearest[1]})" if nearest else ""
    return CassetteMissError(
        f"{path}: no recorded request has the skeleton of case {case.label!r}{hint}",
        where=f"{case.shape}/{case.cassette}",
    )
