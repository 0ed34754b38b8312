"""The endpoint table: which provider endpoint a URL names (shape, kind, gateway dialect, model).

One table (:data:`ROUTES`) serves everyone who reads a URL: the emulator routes requests by the
paths it serves (:func:`endpoint_for_path`), cassettes compute a recorded request's skeleton from
its URL, the recordings reader and the audit tell a recorded URL's shape (:func:`url_shape`), the
token-count endpoints (:func:`is_token_count_url`), the model named in a path (:func:`url_model`)
and the gateway behind a host (:func:`detect_dialect`), and round trips build the URLs they send
to (:func:`generate_path`, :data:`OFFICIAL_ROOTS`). Gateways are emulated with a path prefix
``/dialect/{name}/...`` (or the ``x-ctxconf-dialect`` header, read by the caller).

>>> endpoint_for_path("/dialect/mistral/v1/chat/completions")
Endpoint(shape='openai-chat', kind='generate', dialect='mistral', model=None)
>>> endpoint_for_path("/v1beta/models/gemini-2.5-flash:generateContent").model
'gemini-2.5-flash'
>>> url_shape("https://api.deepseek.com/chat/completions"), detect_dialect("https://api.deepseek.com/")
('openai-chat', 'deepseek')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal, TypeAlias
from urllib.parse import quote, unquote, urlsplit

from reference_impl.transcript import ShapeName

__all__ = [
    "DIALECT_HEADER",
    "OFFICIAL_ROOTS",
    "PROFILE_HEADER",
    "PROVENANCE_HEADER",
    "READING_HEADER",
    "ROUTES",
    "RULE_HEADER",
    "Endpoint",
    "EndpointKind",
    "Route",
    "detect_dialect",
    "endpoint_for_path",
    "generate_path",
    "is_bedrock_count_tokens",
    "is_bedrock_runtime_host",
    "is_token_count_url",
    "url_model",
    "url_shape",
]

EndpointKind: TypeAlias = Literal["generate", "count"]

DIALECT_HEADER: Final = "x-ctxconf-dialect"
PROFILE_HEADER: Final = "x-ctxconf-profile"
PROVENANCE_HEADER: Final = "x-ctxconf-provenance"
RULE_HEADER: Final = "x-ctxconf-rule"
READING_HEADER: Final = "x-ctxconf-reading"
"""On a rejection of a body that gives a key twice: the reading refused (``last copy kept``,
``first copy kept``; ``conformance.providers.repeated_keys``)."""


@dataclass(frozen=True, slots=True)
class Route:
    """One provider endpoint.

    ``ending`` is the lower-case path ending that names it in any recorded URL (whatever host or
    prefix: Azure deployments, gateways); ``served`` is the path the emulator answers on (``None``:
    not emulated, such as the streaming variants); ``template`` is the path a round trip sends to
    when the model goes in the URL (Gemini, Bedrock; the SDKs build the others).
    """

    shape: ShapeName
    kind: EndpointKind
    ending: str
    served: re.Pattern[str] | None = None
    template: str | None = None


def _under_v1(shape: ShapeName, kind: EndpointKind, ending: str) -> Route:
    """An OpenAI or Anthropic endpoint: served at ``ending``, with or without ``/v1`` before it."""
    return Route(shape, kind, ending, re.compile(rf"^(?:/v1)?{re.escape(ending)}/?$"))


def _gemini(kind: EndpointKind, method: str, *, sent: bool = False) -> Route:
    """A Gemini endpoint ``/v1beta/models/{model}:{method}`` (``v1`` served too); ``sent``: the
    path round trips send to."""
    served = re.compile(rf"^/v1(?:beta)?/models/(?P<model>[^/:]+):{method}$")
    template = f"/v1beta/models/{{model}}:{method}" if sent else None
    return Route("gemini", kind, f":{method.lower()}", served, template)


# Most specific first (``/responses/input_tokens`` before ``/responses``); the first match wins.
ROUTES: Final[tuple[Route, ...]] = (
    _under_v1("openai-chat", "generate", "/chat/completions"),
    _under_v1("openai-responses", "count", "/responses/input_tokens"),
    _under_v1("openai-responses", "generate", "/responses"),
    _under_v1("anthropic-messages", "count", "/messages/count_tokens"),
    _under_v1("anthropic-messages", "generate", "/messages"),
    _gemini("generate", "generateContent", sent=True),
    Route("gemini", "generate", ":streamgeneratecontent"),
    _gemini("count", "countTokens"),
    Route(
        "bedrock-converse",
        "generate",
        "/converse",
        re.compile(r"^/model/(?P<model>[^/]+)/converse$"),
        "/model/{model}/converse",
    ),
    Route("bedrock-converse", "generate", "/converse-stream"),
)

# Bedrock CountTokens wraps a Converse or InvokeModel request: its shape is told by the body.
_BEDROCK_COUNT_TOKENS: Final = "/count-tokens"
_TOKEN_COUNT_ENDINGS: Final = (
    *(route.ending for route in ROUTES if route.kind == "count"),
    _BEDROCK_COUNT_TOKENS,
)

# The official API of each shape (``{region}``: the AWS region).
OFFICIAL_ROOTS: Final[Mapping[str, str]] = {
    "openai-chat": "https://api.openai.com",
    "openai-responses": "https://api.openai.com",
    "anthropic-messages": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "bedrock-converse": "https://bedrock-runtime.{region}.amazonaws.com",
}

# Hosts of gateways that vary a shape (provider-rules.md section 6). Suffix match on the host.
_HOST_DIALECTS: Final[tuple[tuple[str, str], ...]] = (
    ("api.deepseek.com", "deepseek"),
    ("openrouter.ai", "openrouter"),
    ("api.mistral.ai", "mistral"),
    ("aliyuncs.com", "qwen"),  # dashscope.aliyuncs.com, dashscope-intl.aliyuncs.com
    ("openai.azure.com", "azure"),
    ("cognitiveservices.azure.com", "azure"),
    ("api.moonshot.ai", "moonshot"),
    ("api.moonshot.cn", "moonshot"),
    ("api.x.ai", "xai"),
    ("api.perplexity.ai", "perplexity"),
    ("api.groq.com", "groq"),
    ("api.together.xyz", "together"),
    ("api.fireworks.ai", "fireworks"),
    ("ollama.com", "ollama"),
)
_OLLAMA_PORT: Final = 11434

_DIALECT_PREFIX: Final = re.compile(r"^/dialect/(?P<dialect>[A-Za-z0-9_.-]+)(?P<rest>/.*)$")
# Gemini puts the model in the path (``/models/gemini-2.5-pro:generateContent``), Bedrock too
# (``/model/amazon.nova-micro-v1:0/converse``); the other shapes carry ``model`` in the body.
_URL_MODEL: Final = re.compile(r"/models?/([^/:]+(?::\d+)?)(?::|/)")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What a request path names: the shape, the kind of endpoint, the dialect and model."""

    shape: str
    kind: EndpointKind
    dialect: str | None = None
    model: str | None = None
    """The model when the path carries it (Gemini, Bedrock); otherwise it is in the body."""


def endpoint_for_path(path: str) -> Endpoint | None:
    """The endpoint a path names, or ``None`` for a path no emulated provider serves."""
    dialect: str | None = None
    prefixed = _DIALECT_PREFIX.match(path)
    if prefixed:
        dialect = prefixed.group("dialect")
        path = prefixed.group("rest")
    for route in ROUTES:
        found = route.served.match(path) if route.served is not None else None
        if found:
            model = found.groupdict().get("model")
            return Endpoint(
                shape=route.shape,
                kind=route.kind,
                dialect=dialect,
                model=unquote(model) if model is not None else None,
            )
    return None


# A log holds millions of requests to a handful of URLs: what a URL names is computed once.
@lru_cache(maxsize=4096)
def _path(url: str) -> str:
    return unquote(urlsplit(url).path).rstrip("/").lower()


@lru_cache(maxsize=4096)
def url_shape(url: str) -> ShapeName | None:
    """The shape a URL's path names (by its ending, whatever the host), else ``None``."""
    path = _path(url)
    for route in ROUTES:
        if path.endswith(route.ending):
            return route.shape
    return None


def is_token_count_url(url: str) -> bool:
    """True for the token-count endpoints (Responses ``input_tokens``, Anthropic, Gemini, Bedrock)."""
    return _path(url).endswith(_TOKEN_COUNT_ENDINGS)


def is_bedrock_count_tokens(url: str) -> bool:
    """Whether ``url`` is Bedrock's CountTokens, whose body wraps the request counted."""
    return _path(url).endswith(_BEDROCK_COUNT_TOKENS)


@lru_cache(maxsize=8192)
def url_model(url: str) -> str | None:
    """The model a URL names in its path (Gemini, Bedrock), if any."""
    found = _URL_MODEL.search(unquote(url))
    return found.group(1) if found else None


def generate_path(shape: str, model: str) -> str:
    """The path a generation request for ``model`` goes to, for the shapes with the model in the
    URL (Gemini, Bedrock Converse); ``ValueError`` for the others (their SDKs build the path)."""
    for route in ROUTES:
        if route.shape == shape and route.template is not None:
            return route.template.format(model=quote(model, safe=""))
    raise ValueError(f"{shape} does not carry the model in the URL")


def is_bedrock_runtime_host(host: str) -> bool:
    """Whether ``host`` is a Bedrock runtime endpoint (``bedrock-runtime.<region>.amazonaws.com``)."""
    return host.startswith("bedrock-runtime.") and host.endswith(".amazonaws.com")


@lru_cache(maxsize=4096)
def detect_dialect(url: str) -> str | None:
    """The gateway dialect a request URL points at (``api.deepseek.com`` -> ``deepseek``).

    ``None`` for the first-party APIs and unknown hosts. Gemini's OpenAI-compatible endpoint is
    ``gemini-openai`` (G9); a local server on Ollama's default port 11434 is ``ollama``; a request
    to ctxconf's emulator names its dialect in the path (``/dialect/mistral/v1/...``).
    """
    parts = urlsplit(url)
    emulated = endpoint_for_path(parts.path)
    if emulated is not None and emulated.dialect is not None:
        return emulated.dialect
    host = (parts.hostname or "").lower()
    if host == "generativelanguage.googleapis.com" and "/openai/" in parts.path:
        return "gemini-openai"
    if host.endswith("aiplatform.googleapis.com"):  # us-central1-aiplatform.googleapis.com
        return "vertex"
    if is_bedrock_runtime_host(host):
        return "bedrock"  # an Anthropic body here is InvokeModel's (anthropic-bedrock-invoke)
    for suffix, dialect in _HOST_DIALECTS:
        if host == suffix or host.endswith("." + suffix):
            return dialect
    try:
        port = parts.port
    except ValueError:
        return None
    if port == _OLLAMA_PORT:
        return "ollama"
    return None
