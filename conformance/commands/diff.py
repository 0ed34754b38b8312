"""``ctxconf diff OLD NEW``: did a provider's (or a profile's) acceptance change?

Each side is a cassette folder, ``profile:NAME[,NAME]``, which sends a request set to the
emulator with those profiles through the real SDKs, or ``ours:DIR``: the verdicts our validators
gave the requests of folder ``DIR`` as ``ctxconf proxy --mode observe`` recorded them beside the
provider's answers, so ``ctxconf diff ours:DIR DIR`` lists every disagreement: ``ours-stricter``
(our rule rejected what the provider accepted), ``provider-stricter`` (the reverse) and
``changed-error`` (both rejected, with another status, type, code or message). The request set is the other side's recorded
requests when it is a folder, else the built-in probes (plus ``--scenarios``). Requests are paired
by skeleton; a drift is a request newly rejected or newly accepted, a changed error (status, type,
code or message), or a changed input-token count in ``usage``. Exit status 1 on any drift.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final

import click

from conformance.commands._io import EXIT_FINDING, checked_input_limit, fail
from conformance.errors import CassetteError, EmulatorConfigError, ScenarioError
from conformance.providers.emulator import create_app
from conformance.providers.proxy_cassettes import VERDICT_KEY
from conformance.scenarios import Scenario, load_corpus, select
from conformance.traffic.cassette import load_cassette_document
from conformance.traffic.roundtrip import Case, Exchange, Target, send
from conformance.traffic.roundtrip_cases import probe_cases, scenario_cases
from conformance.traffic.skeleton import skeleton, skeleton_digest
from conformance.traffic.verdicts import CassetteLibrary, reported_input_tokens
from reference_impl.transcript import SHAPE_NAMES

__all__ = ["DIFF_FORMAT_VERSION", "Drift", "Observation", "command", "compare"]

DIFF_FORMAT_VERSION: Final = 1
_PROFILE_PREFIX: Final = "profile:"
_OURS_PREFIX: Final = "ours:"
# With our verdicts on one side, an acceptance change is a disagreement with the provider.
_OURS_OLD: Final = {"newly-rejected": "provider-stricter", "newly-accepted": "ours-stricter"}
_OURS_NEW: Final = {"newly-rejected": "ours-stricter", "newly-accepted": "provider-stricter"}


@dataclass(frozen=True, slots=True)
class Observation:
    """One request's answer on one side, reduced to what a drift is judged on."""

    digest: str
    shape: str
    case: str
    verdict: str
    status: int
    error_type: str | None
    error_code: str | None
    error_message: str | None
    input_tokens: int | None


@dataclass(frozen=True, slots=True)
class Drift:
    kind: str  # newly-rejected | newly-accepted | changed-error | token-drift (+ ours: below)
    shape: str
    case: str
    detail: str
    old: Observation
    new: Observation


def _error_fields(body: object, headers: Mapping[str, str]) -> tuple[str | None, ...]:
    """(type, code, message) from any provider envelope (OpenAI, Anthropic, Gemini, Bedrock)."""
    if not isinstance(body, Mapping):
        return None, None, None if body is None else str(body)[:200]
    inner = body.get("error")
    if isinstance(inner, Mapping):
        kind = inner.get("type") or inner.get("status")
        code = inner.get("code")
        message = inner.get("message")
    else:  # Bedrock: {"message": ...} and the type in a header
        kind, code, message = headers.get("x-amzn-errortype"), None, body.get("message")
    return (
        None if kind is None else str(kind),
        None if code is None else str(code),
        None if message is None else str(message),
    )


def _observation(  # noqa: PLR0917 - one flat record, built in two places
    digest: str, shape: str, case: str, status: int, body: object, headers: Mapping[str, str]
) -> Observation:
    accepted = 200 <= status < 300
    kind, code, message = (None, None, None) if accepted else _error_fields(body, headers)
    return Observation(
        digest=digest,
        shape=shape,
        case=case,
        verdict="accept" if accepted else "reject",
        status=status,
        error_type=kind,
        error_code=code,
        error_message=message,
        input_tokens=reported_input_tokens(shape, body),
    )


def _digest(case: Case) -> str:
    return skeleton_digest(
        skeleton(case.body, shape=case.shape, dialect=case.dialect, model=case.model)
    )


def _from_exchange(exchange: Exchange) -> Observation:
    case = exchange.case
    # Cases taken from a cassette folder are labelled ``file#index`` already; keep that label so
    # both sides of a folder-vs-profile diff pair the same request.
    label = case.label if "#" in case.label else f"{case.cassette} ({case.label})"
    return _observation(
        _digest(case), case.shape, label, exchange.status, exchange.response_body, exchange.headers
    )


def _key(obs: Observation) -> str:
    """Sides pair by skeleton *and* request label: requests of one skeleton recorded in several
    cassettes are each compared (a drift in one of them must not hide behind another)."""
    return f"{obs.digest}:{obs.case}"


def _folder_side(root: Path) -> tuple[dict[str, Observation], list[Case]]:
    library = CassetteLibrary(root)
    observations: dict[str, Observation] = {}
    cases: list[Case] = []
    for item in library.interactions:
        label = f"{item.path.relative_to(root)}#{item.index}"
        obs = _observation(
            item.digest, item.shape, label, item.status, item.response_body, item.headers
        )
        observations.setdefault(_key(obs), obs)
        if isinstance(item.request_body, Mapping):
            dialect = item.skeleton.get("dialect")
            cases.append(
                Case(item.path.stem, label, item.request_body, item.shape, dialect, item.url_model)
            )
    return observations, cases


def _ours_side(root: Path) -> dict[str, Observation]:
    """The verdicts the observing proxy recorded (``ctxconf_verdict``), keyed and labelled like
    the folder's own interactions so that each pairs with the provider's answer to it."""
    observations: dict[str, Observation] = {}
    documents: dict[Path, list[Any]] = {}
    for item in CassetteLibrary(root).interactions:
        if item.path not in documents:
            documents[item.path] = list(load_cassette_document(item.path)["interactions"])
        ours = documents[item.path][item.index].get(VERDICT_KEY)
        if not isinstance(ours, Mapping) or ours.get("verdict") not in ("accept", "reject"):
            continue  # not recorded by the proxy: nothing of ours to compare
        label = f"{item.path.relative_to(root)}#{item.index}"
        headers = {str(k).lower(): str(v) for k, v in dict(ours.get("headers") or {}).items()}
        accepted = ours["verdict"] == "accept"
        kind, code, message = (
            (None, None, None) if accepted else _error_fields(ours.get("error"), headers)
        )
        obs = Observation(
            digest=item.digest,
            shape=item.shape,
            case=label,
            verdict=str(ours["verdict"]),
            status=int(ours.get("status") or 0),
            error_type=kind,
            error_code=code,
            error_message=message,
            input_tokens=None,  # our verdict counts nothing; the provider's usage is not ours
        )
        observations.setdefault(_key(obs), obs)
    return observations


def _profile_side(names: str, cases: Sequence[Case], limit: int | None) -> dict[str, Observation]:
    app = create_app(profile=names, input_limit=limit)
    target = Target.emulator(app)
    observations: dict[str, Observation] = {}
    for case in cases:
        obs = _from_exchange(send(case, target))
        observations.setdefault(_key(obs), obs)
    return observations


def compare(old: Mapping[str, Observation], new: Mapping[str, Observation]) -> list[Drift]:
    """Every drift between two sides, skeleton by skeleton, in a stable order."""
    drifts: list[Drift] = []
    for digest in sorted(set(old) & set(new), key=lambda d: (old[d].shape, old[d].case)):
        a, b = old[digest], new[digest]
        found: list[tuple[str, str]] = []
        if a.verdict == "accept" and b.verdict == "reject":
            found.append(("newly-rejected", f"now {b.status} {b.error_type}: {b.error_message}"))
        elif a.verdict == "reject" and b.verdict == "accept":
            found.append(("newly-accepted", f"was {a.status} {a.error_type}: {a.error_message}"))
        elif a.verdict == "reject":
            changed = [
                f"{name} {x!r} -> {y!r}"
                for name, x, y in (
                    ("status", a.status, b.status),
                    ("type", a.error_type, b.error_type),
                    ("code", a.error_code, b.error_code),
                    ("message", a.error_message, b.error_message),
                )
                if x != y
            ]
            if changed:
                found.append(("changed-error", "; ".join(changed)))
        if a.input_tokens != b.input_tokens and None not in (a.input_tokens, b.input_tokens):
            found.append(("token-drift", f"input tokens {a.input_tokens} -> {b.input_tokens}"))
        drifts.extend(Drift(kind, a.shape, a.case, detail, a, b) for kind, detail in found)
    return drifts


def _named_for_ours(drifts: list[Drift], old: str, new: str) -> list[Drift]:
    """Acceptance changes renamed as disagreements when exactly one side is ``ours:``."""
    ours_old, ours_new = old.startswith(_OURS_PREFIX), new.startswith(_OURS_PREFIX)
    if ours_old == ours_new:
        return drifts
    names = _OURS_OLD if ours_old else _OURS_NEW
    return [replace(d, kind=names.get(d.kind, d.kind)) for d in drifts]


def _default_cases(shapes: Sequence[str], selectors: tuple[str, ...]) -> list[Case]:
    cases: list[Case] = []
    scenarios: tuple[Scenario, ...] = ()
    if selectors:
        try:
            scenarios = select(load_corpus(), selectors=[s for s in selectors if s != "all"])
        except ScenarioError as exc:
            fail(f"--scenarios: {exc}")
    for shape in shapes:
        cases += probe_cases(shape)
        cases += scenario_cases(scenarios, shape)
    return cases


def _side(
    spec: str, other_cases: Sequence[Case], default: Sequence[Case], limit: int | None
) -> dict[str, Observation]:
    if spec.startswith(_PROFILE_PREFIX):
        try:
            return _profile_side(spec[len(_PROFILE_PREFIX) :], other_cases or default, limit)
        except EmulatorConfigError as exc:
            fail(f"{spec}: {exc.message}")
    if spec.startswith(_OURS_PREFIX):
        path = Path(spec[len(_OURS_PREFIX) :])
        _read_folder(path)  # the same named errors for a missing or empty folder
        ours = _ours_side(path)
        if not ours:
            fail(f"{spec}: no verdicts of ours (recorded by `ctxconf proxy --mode observe`)")
        return ours
    path = Path(spec)
    if not path.is_dir():
        fail(f"{spec}: not a cassette folder (or profile:NAME, ours:DIR)")
    return _read_folder(path)[0]


def _read_folder(path: Path) -> tuple[dict[str, Observation], list[Case]]:
    """A cassette folder's side; a named exit-2 error when unreadable or empty (an empty side
    would report "0 drift(s)" and pass an upgrade check that compared nothing)."""
    try:
        side = _folder_side(path)
    except CassetteError as exc:
        fail(f"{path}: {exc}")
    if not side[0]:
        fail(f"{path}: no cassette interactions found (expected <shape>/<name>.yaml files)")
    return side


def _nothing_paired(old: Mapping[str, Observation], new: Mapping[str, Observation]) -> str:
    """Why a diff compared no request, and what to do: sides pair by skeleton and place, and a
    skeleton holds the model family, so two recordings made for different models pair nothing."""
    if not old or not new:
        empty = [name for name, side in (("OLD", old), ("NEW", new)) if not side]
        verb = "hold" if len(empty) == 2 else "holds"
        return (
            f"nothing compared: {' and '.join(empty)} {verb} no request of the shapes compared "
            "(--shape)"
        )
    placed = {o.case for o in old.values()} & {o.case for o in new.values()}
    why = (
        f"{len(placed)} request(s) recorded at the same place have another skeleton on each side "
        "(a skeleton holds the model family: record both sides for the same --model)"
        if placed
        else "the sides hold different cassettes (record the same scenarios and probes)"
    )
    return (
        f"nothing compared: no request of OLD ({len(old)}) pairs with one of NEW ({len(new)}) "
        f"by skeleton and place; {why}; an upgrade check that compares nothing would pass"
    )


def _table(drifts: Sequence[Drift], old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    paired = set(old) & set(new)
    skeletons = len({old[k].digest for k in paired})
    lines = [f"compared {len(paired)} requests ({skeletons} skeletons); {len(drifts)} drift(s)"]
    lines += [f"{d.kind:15} {d.shape:20} {d.case}: {d.detail}" for d in drifts]
    only_old, only_new = len(set(old) - set(new)), len(set(new) - set(old))
    if only_old or only_new:
        lines.append(f"not compared: {only_old} only in OLD, {only_new} only in NEW")
    return "\n".join(lines)


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--shape", "shapes", multiple=True, type=click.Choice(SHAPE_NAMES))
@click.option("--scenarios", "selectors", multiple=True, help="Add scenarios (ids, tags, 'all').")
def command(
    old: str, new: str, fmt: str, shapes: tuple[str, ...], selectors: tuple[str, ...]
) -> None:
    """Compare two cassette folders, emulator profiles (profile:NAME) or our recorded verdicts
    (ours:DIR, from `ctxconf proxy --mode observe`) skeleton by skeleton."""
    # read once, before any folder or request: the in-process emulator (profile:NAME) keeps it
    limit = checked_input_limit()
    wanted = list(shapes) or list(SHAPE_NAMES)
    folder_cases: list[Case] = []
    for spec in (old, new):
        folder = spec.removeprefix(_OURS_PREFIX)
        if not spec.startswith(_PROFILE_PREFIX) and Path(folder).is_dir():
            folder_cases = [c for c in _read_folder(Path(folder))[1] if c.shape in wanted]
            break
    default = [] if folder_cases else _default_cases(wanted, selectors)
    left = _side(old, folder_cases, default, limit)
    right = _side(new, folder_cases, default, limit)
    left = {k: v for k, v in left.items() if v.shape in wanted}
    right = {k: v for k, v in right.items() if v.shape in wanted}
    drifts = _named_for_ours(compare(left, right), old, new)
    if fmt == "json":
        document = {
            "version": DIFF_FORMAT_VERSION,
            "old": old,
            "new": new,
            "compared": len(set(left) & set(right)),
            "skeletons": len({left[k].digest for k in set(left) & set(right)}),
            "only_old": sorted(v.case for k, v in left.items() if k not in right),
            "only_new": sorted(v.case for k, v in right.items() if k not in left),
            "drift": [asdict(d) for d in drifts],
        }
        click.echo(json.dumps(document, indent=2, sort_keys=True))
    else:
        click.echo(_table(drifts, left, right))
    if drifts:
        raise SystemExit(EXIT_FINDING)
    if not set(left) & set(right):
        # "0 drift(s)" over no pair would pass a scheduled upgrade check that compared nothing,
        # as an empty side would (refused above).
        fail(_nothing_paired(left, right))
