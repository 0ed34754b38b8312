"""Cassettes: vcrpy configured for provider round trips, and the ``ctxconf:`` header they carry.

A cassette file is vcrpy's YAML plus one top-level ``ctxconf:`` mapping (:class:`CassetteMetadata`)::

    ctxconf:
      version: 1
      recorded_against: emulator:anthropic-current   # live | emulator:<profile> | custom:<host>
      date: '2026-05-01'
      sdk: {anthropic: 2.14.0, httpx: 0.28.1, httpx2: 2.16.2, openai: 3.57.0}
      model: claude-haiku-4-5
      shape: anthropic-messages
      dialect: null
      scenario: probe-single-tool
      content: full                                  # full | hashed
    interactions: [...]
    version: 1

:func:`make_vcr` records and replays through vcrpy with the skeleton matcher
(:mod:`conformance.traffic.skeleton`) and scrubbing (:mod:`conformance.traffic.scrubbing`);
:func:`load_cassette_document` reads a cassette file as written, for the ``ctxconf:`` header.
Reading the interactions themselves, in every serialisation, is :mod:`conformance.traffic.reading`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import yaml

from conformance.errors import CassetteError
from conformance.traffic.scrubbing import hash_body, scrub_request, scrub_response
from conformance.traffic.skeleton import skeleton_matcher
from reference_impl.documents import (
    DocumentLimitError,
    dump_yaml,
    load_yaml_safe,
    read_input_text,
)

if TYPE_CHECKING:  # vcrpy is imported only to record or replay (make_vcr), never to read
    import vcr
    from vcr.request import Request as VcrRequest

__all__ = [
    "METADATA_KEY",
    "METADATA_VERSION",
    "CassetteMetadata",
    "ContentMode",
    "RecordMode",
    "load_cassette_document",
    "make_vcr",
    "parse_record_mode",
    "sdk_versions",
]

METADATA_VERSION: Final = 1
METADATA_KEY: Final = "ctxconf"


class RecordMode(str, Enum):
    """When to touch the network. CI replays with ``none``; recording uses ``all``."""

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"


class ContentMode(str, Enum):
    """``hashed`` replaces every content string in stored bodies by a short sha256."""

    FULL = "full"
    HASHED = "hashed"


def parse_record_mode(value: str | RecordMode) -> RecordMode:
    """A record mode from its name; a loud error listing the valid names otherwise."""
    try:
        return RecordMode(value)
    except ValueError:
        valid = ", ".join(mode.value for mode in RecordMode)
        raise CassetteError(
            f"unknown record mode {value!r}; use one of: {valid}", where="record_mode"
        ) from None


def sdk_versions() -> dict[str, str]:
    """Installed versions of the client libraries that shape what is sent and parsed."""
    return {
        package: _installed_version(package)
        for package in ("openai", "anthropic", "boto3", "httpx", "httpx2")
    }


def _installed_version(package: str) -> str:
    try:
        return importlib_metadata.version(package)
    except importlib_metadata.PackageNotFoundError:
        return "absent"


_AGAINST: Final = re.compile(r"^(live|emulator:[A-Za-z0-9_.-]+|custom:[A-Za-z0-9_.:\[\]-]+)$")


@dataclass(frozen=True, slots=True)
class CassetteMetadata:
    """The ``ctxconf:`` header of a cassette: what it was recorded against, when, with what."""

    recorded_against: str
    shape: str
    model: str
    scenario: str
    date: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).date().isoformat())
    sdk: Mapping[str, str] = field(default_factory=sdk_versions)
    dialect: str | None = None
    content: Literal["full", "hashed"] = "full"
    version: int = METADATA_VERSION

    def __post_init__(self) -> None:
        if not _AGAINST.match(self.recorded_against):
            raise CassetteError(
                f"recorded_against {self.recorded_against!r} must be 'live', "
                "'emulator:<profile>' or 'custom:<host>'",
                where="ctxconf.recorded_against",
            )

    @property
    def source(self) -> Literal["live", "emulator", "custom"]:
        """``live``, ``emulator`` or ``custom``: the head of ``recorded_against``."""
        head = self.recorded_against.split(":", 1)[0]
        return "live" if head == "live" else "emulator" if head == "emulator" else "custom"

    @property
    def profile(self) -> str | None:
        """The emulator profile a cassette was recorded against (``None`` unless emulated)."""
        return self.recorded_against.split(":", 1)[1] if self.source == "emulator" else None

    def to_dict(self) -> dict[str, Any]:
        """The ``ctxconf:`` mapping as written into a cassette."""
        return {
            "version": self.version,
            "recorded_against": self.recorded_against,
            "date": self.date,
            "sdk": dict(sorted(self.sdk.items())),
            "model": self.model,
            "shape": self.shape,
            "dialect": self.dialect,
            "scenario": self.scenario,
            "content": self.content,
        }

    @staticmethod
    def from_dict(value: object, *, source: str = "cassette") -> CassetteMetadata:
        """Read and validate a cassette's ``ctxconf:`` mapping; a :class:`CassetteError` naming
        ``source`` otherwise."""
        if not isinstance(value, Mapping):
            raise CassetteError(f"{source}: no '{METADATA_KEY}:' mapping", where=METADATA_KEY)
        if value.get("version") != METADATA_VERSION:
            raise CassetteError(
                f"{source}: metadata version {value.get('version')!r} is not {METADATA_VERSION}",
                where=f"{METADATA_KEY}.version",
            )
        missing = [k for k in ("recorded_against", "shape", "model", "scenario") if k not in value]
        if missing:
            raise CassetteError(
                f"{source}: metadata lacks {', '.join(missing)}", where=METADATA_KEY
            )
        content = value.get("content", "full")
        if content not in ("full", "hashed"):
            raise CassetteError(
                f"{source}: content {content!r} is not full or hashed",
                where=f"{METADATA_KEY}.content",
            )
        sdk = value.get("sdk") or {}
        return CassetteMetadata(
            recorded_against=str(value["recorded_against"]),
            shape=str(value["shape"]),
            model=str(value["model"]),
            scenario=str(value["scenario"]),
            date=str(value.get("date", "")),
            sdk={str(k): str(v) for k, v in dict(sdk).items()},
            dialect=None if value.get("dialect") is None else str(value["dialect"]),
            content=content,
        )


class _CtxconfYamlSerializer:
    """vcrpy's YAML with its ``metadata.ctxconf`` lifted to a top-level ``ctxconf:`` mapping."""

    @staticmethod
    def deserialize(cassette_string: str) -> dict[str, Any]:
        data = load_yaml_safe(cassette_string) or {}
        if not isinstance(data, dict):
            raise ValueError("a cassette is a YAML mapping with 'interactions'")
        header = data.pop(METADATA_KEY, None)
        if header is not None:
            data["metadata"] = {**(data.get("metadata") or {}), METADATA_KEY: header}
        return data

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        data = dict(cassette_dict)
        meta = dict(data.pop("metadata", None) or {})
        header = meta.pop(METADATA_KEY, None)
        ordered: dict[str, Any] = {}
        if header is not None:
            ordered[METADATA_KEY] = header
        if meta:
            ordered["metadata"] = meta
        ordered.update(data)
        return dump_yaml(ordered, sort_keys=False, allow_unicode=True, width=100)


def make_vcr(
    *,
    record_mode: str | RecordMode = RecordMode.NONE,
    content: ContentMode = ContentMode.FULL,
) -> vcr.VCR:
    """A vcrpy instance: skeleton matching, scrubbing, the ``ctxconf:`` header serializer."""
    import vcr  # noqa: PLC0415 - only recording and replaying need vcrpy (and its HTTP stacks)

    mode = parse_record_mode(record_mode)
    hashed = content is ContentMode.HASHED

    def before_request(request: VcrRequest) -> VcrRequest:
        request = scrub_request(request)
        if hashed:
            request.body = hash_body(request.body)
        return request

    def before_response(response: dict[str, Any]) -> dict[str, Any]:
        response = scrub_response(response)
        body = response.get("body")
        if hashed and isinstance(body, dict) and "string" in body:
            body["string"] = hash_body(body["string"])
        return response

    recorder = vcr.VCR(
        record_mode=mode.value,
        serializer="ctxconf-yaml",
        match_on=["method", "skeleton"],
        before_record_request=before_request,
        before_record_response=before_response,
        decode_compressed_response=True,
    )
    recorder.register_serializer("ctxconf-yaml", _CtxconfYamlSerializer)
    recorder.register_matcher("skeleton", skeleton_matcher)
    return recorder


def load_cassette_document(path: Path) -> dict[str, Any]:
    """A cassette document as written (``ctxconf`` header at the top); named errors otherwise."""
    try:
        # libyaml's loader when PyYAML was built with it (reading every cassette of a run is then
        # a small fraction of the run), with the project's size and alias limits.
        data = load_yaml_safe(read_input_text(path))
    except DocumentLimitError as exc:
        raise CassetteError(f"{path}: not a cassette: {exc}") from None
    except OSError as exc:
        raise CassetteError(f"{path}: cannot read cassette ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise CassetteError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        # One line: the problem and where (str(exc) spans several lines).
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CassetteError(f"{path}: not YAML{at}: {problem}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(f"{path}: not a vcrpy cassette (no 'interactions' list)")
    return data
