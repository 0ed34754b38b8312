"""Verdicts that a cassette recorded, looked up by request skeleton, labelled by how well they match.

:func:`recorded_verdict` answers "did a provider (or our emulator, recorded) accept this
request?" for the conformance runner. The verdict's provenance says which, and how close:
``recorded-live`` for a cassette recorded against a provider's official endpoint,
``recorded-emulated`` for one recorded against the emulator, both only when the recorded request
body is canonically equal to the one judged (JSON equality, key order aside); a recording of the
same skeleton but another body is ``recorded-skeleton``. Cassettes recorded against another
host (``custom:<host>``) are neither, so they never answer here (see :class:`CassetteLibrary`
to read them anyway).

The runner loads the library once per run (:func:`load_library`, cached by root path and the
files' ``mtime``/size, so a re-recorded folder is read again) and asks :func:`judge_request` for
every assembled request: a dictionary lookup by skeleton digest, then the validators, so that a
recorded verdict that the validators contradict is reported as a **stale cassette** instead of
one of them being silently preferred. A recording of another body of the same skeleton is the
exception when the validators still give its own request its recorded answer: the two bodies differ
in what a rule reads (a whitespace-only text, a negative temperature, ``stop`` on a reasoning
model), the recording says nothing of this one, and the validators' is the verdict (``emulated``).

>>> recorded_verdict({"model": "gpt-4o", "messages": []}, "openai-chat", root=Path("/nonexistent"))
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from conformance.bundled import find_bundled_folder
from conformance.errors import CassetteError, RecordingError
from conformance.providers.catalog import load_catalog, profile_for_model
from conformance.providers.validation import validate_request
from conformance.providers.verdict import Evidence, Provenance, Verdict
from conformance.traffic.audit import recorded_betas
from conformance.traffic.cassette import METADATA_KEY, CassetteMetadata, load_cassette_document
from conformance.traffic.endpoints import RULE_HEADER, url_model
from conformance.traffic.reading import RecordedInteraction, interactions_in
from conformance.traffic.skeleton import StoredRequest, request_skeleton, skeleton, skeleton_digest
from reference_impl.transcript import canonical_json

__all__ = [
    "CASSETTES_ENV",
    "RERECORD_COMMAND",
    "CassetteEntry",
    "CassetteLibrary",
    "Judgement",
    "default_cassette_root",
    "judge_request",
    "load_library",
    "recorded_verdict",
    "reported_input_tokens",
]

CASSETTES_ENV: Final = "CTXCONF_CASSETTES"
RERECORD_COMMAND: Final = "ctxconf record --shape all --prune"
"""What re-records every probe and scenario cassette against the emulator (see ``ctxconf record``)."""
_EVIDENCE: Final = frozenset({"documented", "recorded", "observed", "inferred"})


def default_cassette_root() -> Path:
    """``$CTXCONF_CASSETTES``, the installed package's copy, else the checkout's ``cassettes/``
    (see :mod:`conformance.bundled`). When none exists this is where a checkout's would be, so a
    missing library reads as "no cassettes" (every verdict emulated) and `record` has a target."""
    found = find_bundled_folder("cassettes", env=CASSETTES_ENV)
    return found if found is not None else Path(__file__).resolve().parent.parent / "cassettes"


def reported_input_tokens(shape: str, body: object) -> int | None:
    """The input-token count a provider reported in a response body (``usage`` and kin)."""
    if not isinstance(body, Mapping):
        return None
    paths: dict[str, tuple[tuple[str, ...], ...]] = {
        "openai-chat": (("usage", "prompt_tokens"),),
        "openai-responses": (("usage", "input_tokens"), ("input_tokens",)),
        "anthropic-messages": (("usage", "input_tokens"), ("input_tokens",)),
        "gemini": (("usageMetadata", "promptTokenCount"), ("totalTokens",)),
        "bedrock-converse": (("usage", "inputTokens"),),
    }
    for path in paths.get(shape, ()):
        value: object = body
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _rule_evidence(rule: str | None) -> Evidence | None:
    if rule is None:
        return None
    found = load_catalog().rules.get(rule)
    evidence = found.evidence if found is not None else None
    return evidence if evidence in _EVIDENCE else None


@dataclass(frozen=True, slots=True)
class CassetteEntry:
    """One interaction of a cassette as the library holds it: the recorded interaction (the one
    model, :class:`~conformance.traffic.reading.RecordedInteraction`), the cassette's metadata,
    and the request's skeleton with its digest."""

    interaction: RecordedInteraction
    path: Path
    metadata: CassetteMetadata
    skeleton: Mapping[str, Any]
    digest: str

    @property
    def index(self) -> int:
        """The interaction's place in its cassette (0-based)."""
        return self.interaction.index

    @property
    def request_body(self) -> object:
        """The recorded request body (parsed JSON)."""
        return self.interaction.request_body

    @property
    def response_body(self) -> object:
        """The recorded answer's body (parsed JSON, else its text)."""
        return self.interaction.response_body

    @property
    def status(self) -> int:
        """The recorded HTTP status (``0`` when the cassette has none)."""
        return self.interaction.status or 0

    @property
    def headers(self) -> Mapping[str, str]:
        """The recorded answer's headers, lower-case names, the first value of each."""
        return {
            name: values[0] for name, values in self.interaction.response_headers.items() if values
        }

    @property
    def uri(self) -> str:
        """The URL the request was sent to."""
        return self.interaction.url

    @property
    def url_model(self) -> str | None:
        """The model named in the URL (Gemini, Bedrock), needed to send the request again."""
        return url_model(self.uri)

    @property
    def provenance(self) -> Literal["recorded-live", "recorded-emulated"] | None:
        """``recorded-live`` or ``recorded-emulated`` from the metadata; ``None`` for a custom host."""
        source = self.metadata.source
        return (
            "recorded-live"
            if source == "live"
            else "recorded-emulated"
            if source == "emulator"
            else None
        )

    @property
    def shape(self) -> str:
        """The shape of the recorded request."""
        return str(self.skeleton.get("shape") or self.metadata.shape)

    @property
    def input_tokens(self) -> int | None:
        """The input tokens the recorded answer reported, if any."""
        return reported_input_tokens(self.shape, self.response_body)

    @property
    def recorded_model(self) -> str | None:
        """The model the recorded request was sent for: the body's ``model``, else the one the
        URL names (Gemini, Bedrock)."""
        body = self.request_body
        if isinstance(body, Mapping) and isinstance(body.get("model"), str):
            return str(body["model"])
        return self.url_model

    def profile_for(self, dialect: str | None) -> str:
        """The catalog profile of the recorded request: the one it was recorded under (an
        emulator recording says), else the one the catalog gives its model."""
        if self.metadata.profile:
            return self.metadata.profile
        return profile_for_model(self.shape, dialect, self.recorded_model).id

    @property
    def betas(self) -> frozenset[str] | None:
        """The betas the recorded request named in its ``anthropic-beta`` header; None when the
        recording does not hold the request's headers (see ``audit.recorded_betas``)."""
        return recorded_betas(self.interaction, self.shape)

    def same_betas(self, betas: Iterable[str] = ()) -> bool | None:
        """Whether the recorded request named these betas (a header the body does not show that
        changes the verdict, A27's interleaved thinking); None when its betas are not known."""
        recorded = self.betas
        return None if recorded is None else recorded == frozenset(betas)

    def same_request(
        self, body: object, model: str | None = None, betas: Iterable[str] = ()
    ) -> bool:
        """Whether ``body``, sent for ``model`` with the ``anthropic-beta`` header naming
        ``betas``, is the recorded request: the same body (canonical JSON equality) for the same
        model with the same betas. Where the model is in the URL (Gemini, Bedrock), the body does
        not say it: ``model`` must be given and equal the recorded one, else the request may be
        another model's and is not the same. A recording whose betas are not known (its headers
        were not kept) is not known to be the same request."""
        if canonical_json(body) != canonical_json(self.request_body):
            return False
        if not self.same_betas(betas):
            return False
        in_url = self.url_model
        if in_url is None:
            return True  # the model is in the body, equal on both sides
        if model is None and isinstance(body, Mapping) and isinstance(body.get("model"), str):
            model = body["model"]
        return model == in_url

    def verdict(self, *, exact: bool = True) -> Verdict:
        """The recorded answer as a verdict, provenance from the metadata (``recorded-skeleton``
        when ``exact`` is false: the request judged only shares this one's skeleton). A recording
        against a custom host is neither a provider's nor the emulator's answer: no verdict."""
        source = self.provenance
        if source is None:
            raise CassetteError(
                f"{self.path}: recorded against {self.metadata.recorded_against}, "
                "which is neither a provider nor the emulator; it carries no verdict"
            )
        provenance: Provenance = source if exact else "recorded-skeleton"
        accepted = 200 <= self.status < 300
        rule = None if accepted else self.headers.get(RULE_HEADER)
        error = None
        if not accepted:
            error = dict(self.response_body) if isinstance(self.response_body, Mapping) else {}
        return Verdict(
            verdict="accept" if accepted else "reject",
            status=self.status,
            provenance=provenance,
            rule=rule,
            evidence=_rule_evidence(rule),
            error=error,
            shape=self.shape,
            dialect=self.skeleton.get("dialect"),
            profile=self.metadata.profile,
        )


def _interactions(path: Path) -> Iterator[CassetteEntry]:
    document = load_cassette_document(path)
    metadata = CassetteMetadata.from_dict(document.get(METADATA_KEY), source=str(path))
    try:
        read = interactions_in(document, file=str(path))
    except RecordingError as exc:
        raise CassetteError(f"{path}: {exc.reason} ({exc.where})") from None
    for interaction, raw in zip(read, document["interactions"], strict=True):
        skel = request_skeleton(StoredRequest.from_dict(raw["request"]))
        yield CassetteEntry(
            interaction=interaction,
            path=path,
            metadata=metadata,
            skeleton=skel,
            digest=skeleton_digest(skel),
        )


def _without_model(skel: Mapping[str, Any]) -> str:
    return skeleton_digest({**skel, "model": None})


_Stamp = tuple[tuple[str, int, int], ...]


def _scan(root: Path) -> _Stamp:
    """Path, ``mtime_ns`` and size of every ``<root>/**/*.yaml`` in a stable order: any
    re-recording changes it. ``os.scandir`` with plain strings: a run without an explicit library
    pays this per case, so it must stay well under a millisecond for a few hundred cassettes."""
    found: list[tuple[str, int, int]] = []
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue  # hidden, and record's temporary ``.<name>.recording`` files
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.name.endswith(".yaml"):
                        info = entry.stat()
                        found.append((entry.path, info.st_mtime_ns, info.st_size))
        except OSError:
            continue
    return tuple(sorted(found))


def _answer_order(item: CassetteEntry) -> tuple[bool, str, int]:
    """Live recordings answer first; then by cassette path and position (deterministic)."""
    return (item.metadata.source != "live", str(item.path), item.index)


def _cassette_files(root: Path) -> list[Path]:
    return [Path(name) for name, _, _ in _scan(root)]


class CassetteLibrary:
    """Every interaction of every cassette under a folder, indexed by skeleton digest."""

    def __init__(self, root: Path, files: list[Path] | None = None) -> None:
        self.root = root
        self.interactions: list[CassetteEntry] = []
        for path in _cassette_files(root) if files is None else files:
            self.interactions.extend(_interactions(path))
        self._by_digest: dict[str, list[CassetteEntry]] = {}
        self._by_modelless: dict[str, list[CassetteEntry]] = {}
        # Indexed in answer order (live first, then by place), once: lookups only filter.
        for item in sorted(self.interactions, key=_answer_order):
            self._by_digest.setdefault(item.digest, []).append(item)
            self._by_modelless.setdefault(_without_model(item.skeleton), []).append(item)
        self.files = len({item.path for item in self.interactions})

    def __len__(self) -> int:
        return len(self.interactions)

    def label(self, item: CassetteEntry) -> str:
        """``openai-chat/some-scenario.yaml#2``: where an interaction is, relative to the root."""
        try:
            where = item.path.relative_to(self.root).as_posix()
        except ValueError:
            where = str(item.path)
        return f"{where}#{item.index}"

    def lookup(self, skel: Mapping[str, Any], *, profile: str | None = None) -> list[CassetteEntry]:
        """Recorded interactions of this skeleton, live first. A skeleton without a model (the
        caller did not know it) matches every model; when ``profile`` is asked for, a recording
        must be of it (an emulator recording: the profile it was recorded under; a live one: the
        profile the catalog gives its model), so that a family's models the catalog judges by
        different rules (``o1``, ``o1-mini``) never answer for each other."""
        if skel.get("model") is None:
            found = self._by_modelless.get(_without_model(skel), [])
        else:
            found = self._by_digest.get(skeleton_digest(skel), [])
        dialect = skel.get("dialect")
        return [
            item
            for item in found
            if item.provenance is not None
            and (
                profile is None
                or item.profile_for(dialect if isinstance(dialect, str) else None) == profile
            )
        ]


@functools.lru_cache(maxsize=8)
def _library(root: str, stamp: _Stamp) -> CassetteLibrary:
    return CassetteLibrary(Path(root), [Path(name) for name, _, _ in stamp])


def load_library(root: Path | None = None) -> CassetteLibrary:
    """The library under ``root`` (default :func:`default_cassette_root`), read once: later calls
    cost one directory walk and a ``stat`` per file, and read the folder again only when a file
    was added, removed or rewritten."""
    base = (root if root is not None else default_cassette_root()).resolve()
    return _library(str(base), _scan(base))


def recorded_verdict(
    body: object,
    shape: str,
    *,
    dialect: str | None = None,
    profile: str | None = None,
    model: str | None = None,
    root: Path | None = None,
    library: CassetteLibrary | None = None,
    betas: Iterable[str] = (),
) -> Verdict | None:
    """The recorded verdict for a request of this body's skeleton, or ``None`` if none is recorded.

    ``model`` is needed for shapes whose model is in the URL (Gemini, Bedrock); without it any
    model of the same skeleton matches. ``betas``: those the request names in its
    ``anthropic-beta`` header (none by default); a recording that named others never answers.
    Live recordings win over emulated ones. Pass ``library`` (from :func:`load_library`) to skip
    even the directory walk.
    """
    chosen = library if library is not None else load_library(root)
    skel = skeleton(body, shape=shape, dialect=dialect, model=model)
    best = _best(chosen.lookup(skel, profile=profile), body, model, betas)
    return best[1] if best is not None else None


def _best(
    found: list[CassetteEntry], body: object, model: str | None, betas: Iterable[str] = ()
) -> tuple[CassetteEntry, Verdict] | None:
    """The recording of this very request (body, model and betas) if there is one (live first),
    with its exact verdict, else the first of the skeleton (live first), with its skeleton
    verdict. A recording whose request named other betas is of another request whatever its
    body (the header changes the verdict: A27), so it answers neither way; one whose betas are
    not known answers for the skeleton only."""
    wanted = frozenset(betas)
    usable = [item for item in found if item.same_betas(wanted) is not False]
    same = next((item for item in usable if item.same_request(body, model, wanted)), None)
    if same is not None:
        return same, same.verdict()
    return (usable[0], usable[0].verdict(exact=False)) if usable else None


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict a run reports for one request, where it came from, and any contradiction.

    ``verdict`` is the recorded one when a cassette matches (provenance ``recorded-live`` or
    ``recorded-emulated`` for the same body, ``recorded-skeleton`` for the same structure only),
    else the validators' (``emulated``). ``contradiction`` is the
    validators' verdict when it disagrees with the recorded one: a stale cassette (or, for a live
    recording, a catalog that no longer matches the provider). Neither side is preferred silently.
    """

    verdict: Verdict
    cassette: str | None = None
    contradiction: Verdict | None = None
    recorded_from: Provenance | None = None
    """``recorded-live`` or ``recorded-emulated``: what the cassette was recorded against, which a
    ``recorded-skeleton`` verdict does not say (None: the verdict's own provenance does)."""

    @property
    def stale(self) -> bool:
        """Whether the validators contradict the recorded verdict."""
        return self.contradiction is not None

    def stale_message(self) -> str:
        """One sentence naming both verdicts, the cassette and what to do."""
        now = self.contradiction
        if now is None:
            return ""
        source = self.recorded_from or self.verdict.provenance
        fix = (
            f"re-record with `{RERECORD_COMMAND}`"
            if source == "recorded-emulated"
            else "the provider answered this way live: fix the rule catalog"
        )
        return (
            f"stale cassette {self.cassette}: recorded {_said(self.verdict)} "
            f"({self.verdict.provenance}, profile {self.verdict.profile}) but the validators now "
            f"say {_said(now)}; {fix}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The verdict as the JSON-lines report stores it, plus ``cassette`` and ``stale_cassette``."""
        out = self.verdict.to_dict()
        out["cassette"] = self.cassette
        out["stale_cassette"] = (
            None
            if self.contradiction is None
            else {"message": self.stale_message(), "validators": self.contradiction.to_dict()}
        )
        return out


def _said(verdict: Verdict) -> str:
    """``accept (200)`` or ``reject 400 rule C1 (evidence recorded)``: a named rule always
    carries its evidence class."""
    if verdict.accepted:
        return f"accept ({verdict.status})"
    if verdict.rule is None:  # a live provider names no catalog rule
        return f"reject {verdict.status}"
    return f"reject {verdict.status} rule {verdict.rule} (evidence {verdict.evidence or 'unknown'})"


def _disagree(recorded: Verdict, now: Verdict) -> bool:
    if recorded.verdict != now.verdict:
        return True
    if recorded.accepted:
        return False
    # A live provider names no catalog rule; the emulator does, and must name the same one.
    if recorded.rule is not None and recorded.rule != now.rule:
        return True
    return recorded.status != now.status


def judge_request(
    body: Mapping[str, Any],
    shape: str,
    *,
    dialect: str | None = None,
    model: str | None = None,
    library: CassetteLibrary,
    betas: Iterable[str] = (),
) -> Judgement:
    """The recorded verdict for this request's skeleton when one exists, checked against the
    validators; the validators' verdict otherwise. Both use the profile the catalog gives the
    model (a Claude model on Bedrock is judged by ``bedrock-claude``), as the emulator and
    ``ctxconf audit`` do, so a recording and a fresh judgement always speak of the same rules.
    ``betas``: those the request names in its ``anthropic-beta`` header (a run's requests name
    none); only a recording of the same betas answers (see :func:`recorded_verdict`)."""
    if model is None and isinstance(body.get("model"), str):
        model = body["model"]
    wanted = frozenset(betas)
    profile = profile_for_model(shape, dialect, model).id
    now = validate_request(body, shape, dialect=dialect, profile=profile, betas=wanted)
    if not library.interactions:
        return Judgement(now)
    found = library.lookup(
        skeleton(body, shape=shape, dialect=dialect, model=model), profile=profile
    )
    best = _best(found, body, model, wanted)
    if best is None:
        return Judgement(now)
    item, recorded = best
    if not _disagree(recorded, now):
        return Judgement(recorded, library.label(item))
    again = (
        _judged_again(item, dialect, profile)
        if recorded.provenance == "recorded-skeleton"
        else None
    )
    if again is not None and not _disagree(recorded, again):
        # The validators still give the recorded request its recorded answer: the cassette is
        # not stale, this request differs from it where the skeleton does not look (a value such
        # as a negative temperature, or a knob it leaves out such as `stop`, C12). The recording
        # says nothing about this request: the validators answer.
        return Judgement(now)
    return Judgement(recorded, library.label(item), now, item.provenance)


def _judged_again(item: CassetteEntry, dialect: str | None, profile: str) -> Verdict | None:
    """The validators' verdict now on the recorded request itself (its betas, when known);
    None when the recorded body is no JSON object."""
    body = item.request_body
    if not isinstance(body, Mapping):
        return None
    return validate_request(body, item.shape, dialect=dialect, profile=profile, betas=item.betas)
