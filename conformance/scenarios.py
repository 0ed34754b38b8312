"""Scenarios as data: the model, the YAML loader, schema validation and the built-in corpus.

A scenario file (``scenarios/<level>/<topic>.yaml``) holds ``version: 1`` and a list of
scenarios; ``conformance/schemas/scenario.schema.json`` is its schema. Messages use the neutral
transcript's full form (``{role, parts: [...]}``, as in ``reference_impl.transcript``) or this
compact form, expanded on load::

    {role: system, text: "..."}                       # also developer / user / assistant
    {role: user, text: "...", images: [{url: ..., width: 1024, height: 1024, detail: high}]}
    {role: user, summary: "..."}                      # a SummaryPart
    {role: assistant, text: "...", reasoning: [{origin: anthropic-messages, data: {...}}],
     calls: [{id: c1, name: get_status, args: {}}]}   # reasoning, then text, then calls
    {role: tool, results: [{id: c1, text: "...", is_error: false}], text: "trailing"}

Any ``text`` may be ``{repeat: "one line", times: 40}`` to build a long, deterministic payload
without pasting it (budgets are chosen against the reference counters; see each ``notes``).

Where the corpus is: ``--scenarios PATH``, else ``$CTXCONF_SCENARIOS``, else the ``scenarios/``
folder next to the installed ``conformance`` package (a checkout or an editable install). A wheel
does not carry the corpus; point one of the first two at a copy of the repository's folder.
"""

from __future__ import annotations

import difflib
import json
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, get_args

import jsonschema
import yaml

from conformance.bundled import find_bundled_folder, missing_folder_message
from conformance.errors import ScenarioError
from conformance.providers.catalog import profile_for_model
from reference_impl.config import AssemblyConfig
from reference_impl.documents import (
    DocumentLimitError,
    load_yaml_strict,
    max_input_bytes,
    read_input_text,
)
from reference_impl.errors import CtxconfError, ShapeError, TranscriptError
from reference_impl.ledger import Ledger
from reference_impl.rings import validate as validate_pairing
from reference_impl.shapes import ShapeFact
from reference_impl.shapes.dialects import get_dialect
from reference_impl.transcript import (
    SHAPE_NAMES,
    Message,
    ToolSpec,
    Transcript,
    canonical_json,
    json_type_name,
    transcript_from_dict,
)

__all__ = [
    "CORPUS_ENV",
    "DEFAULT_MODELS",
    "DEFAULT_PARAMS",
    "GATE_LEVELS",
    "LEVELS",
    "SCENARIO_FORMAT_VERSION",
    "STRICT_GATE_LEVELS",
    "TAG_PREFIX",
    "WORKLOADS_FOLDER",
    "Budget",
    "Expectation",
    "Level",
    "Outcome",
    "Scenario",
    "default_corpus_path",
    "expand_message",
    "json_path",
    "load_corpus",
    "load_file",
    "message_from_compact",
    "plain_schema_message",
    "read_yaml_file",
    "scan_corpus",
    "scenario_files",
    "schema_errors",
    "schema_violations",
    "select",
    "unknown_selectors",
]

SCENARIO_FORMAT_VERSION: Final = 1
CORPUS_ENV: Final = "CTXCONF_SCENARIOS"
WORKLOADS_FOLDER: Final = "workloads"
"""A corpus folder that holds soak workloads (``conformance.soak``), not scenarios: skipped here."""
Level: TypeAlias = Literal["must", "should", "may"]
LEVELS: Final[tuple[Level, ...]] = get_args(Level)
GATE_LEVELS: Final[tuple[Level, ...]] = ("must",)
"""The check levels every gate fails on by default: ``ctxconf run``'s exit status, the pytest
plug-in's failing items, baseline regressions. ``may`` is never gated."""
STRICT_GATE_LEVELS: Final[tuple[Level, ...]] = ("must", "should")
"""The check levels gated with ``--strict`` (``--ctxconf-strict`` in pytest)."""
Outcome: TypeAlias = Literal["assembled", "refused", "either"]
_SCHEMA_PATH: Final = Path(__file__).parent / "schemas" / "scenario.schema.json"
DEFAULT_MODELS: Final[Mapping[str, str]] = ShapeFact(lambda adapter: adapter.default_model)
"""The model a case names when its scenario does not (``models``), each shape's
``ShapeAdapter.default_model``: it picks the reference counter's encoding, and it is part of a
request's skeleton, so the runner and the recorder (roundtrip) share this one table."""


DEFAULT_PARAMS: Final[Mapping[str, Mapping[str, Any]]] = {
    # Request fields a shape requires that a session does not carry: the input body has them
    # unless the scenario's ``params`` set them, so the plug-in receives a complete request (the Messages API requires ``max_tokens``).
    "anthropic-messages": {"max_tokens": 1024},
}


@dataclass(frozen=True, slots=True)
class Budget:
    """Input-token budgets: one list for every shape, or a different one per shape."""

    default: tuple[int, ...]
    per_shape: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def for_shape(self, shape: str) -> tuple[int, ...]:
        """The budgets of ``shape`` (its own list, else the default one)."""
        return self.per_shape.get(shape, self.default)

    @property
    def is_sweep(self) -> bool:
        """Whether any shape has more than one budget."""
        return any(len(v) > 1 for v in (self.default, *self.per_shape.values()))


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a scenario expects: the outcome, extra and skipped checks, a refusal code."""

    outcome: Outcome
    checks: tuple[str, ...] = ()
    skip_checks: tuple[str, ...] = ()
    refusal_code: str | None = None
    input: Literal["valid", "invalid"] = "valid"
    """``invalid``: the session is broken on purpose and must be refused (the schema enforces
    ``outcome: refused``); otherwise every input body the engine builds is one the target's
    validators accept (``tests/conformance/test_engine_input_validity.py``)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One declarative case; ``session`` holds the tools, ``turns`` later messages (multi-turn)."""

    id: str
    title: str
    level: Level
    source: str
    session: Transcript
    budget: Budget
    expect: Expectation
    tags: tuple[str, ...] = ()
    shapes: tuple[str, ...] = SHAPE_NAMES
    dialects: tuple[str | None, ...] = (None,)
    turns: tuple[tuple[Message, ...], ...] = ()
    ledger: tuple[Mapping[str, Any], ...] = ()
    memory: tuple[Mapping[str, Any], ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    models: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    cassette: bool = False

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tool schemas the session offers."""
        return self.session.tools

    def params_for(self, shape: str) -> dict[str, Any]:
        """The body keys of ``shape``: :data:`DEFAULT_PARAMS`, then the scenario's ``params``."""
        return {**DEFAULT_PARAMS.get(shape, {}), **self.params.get(shape, {})}

    def model_for(self, shape: str) -> str:
        """The model this scenario names for ``shape``, else the shape's :data:`DEFAULT_MODELS`."""
        return self.models.get(shape, DEFAULT_MODELS[shape])

    def sessions(self) -> tuple[Transcript, ...]:
        """The session at each turn: the first, then each later turn appended to the previous."""
        out = [self.session]
        for extra in self.turns:
            previous = out[-1]
            # Ids are positional; clear them so the merged transcript numbers them afresh.
            merged = [m.with_id("") for m in (*previous.messages, *extra)]
            out.append(previous.with_messages(merged))
        return tuple(out)


# ------------------------------------------------------------------------------- compact form


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        join = str(value.get("join", "\n"))
        return join.join([str(value["repeat"])] * int(value["times"]))
    return str(value)


MAX_EXPANDED_CHARS: Final = 64 * 1024 * 1024
"""The most characters the texts of one scenario file may expand to (``{repeat, times}`` of a
long string, or of one aliased many times, can turn a 1 MB file into gigabytes)."""


def _is_repeat(value: Mapping[Any, Any]) -> bool:
    return set(value) in ({"repeat", "times"}, {"repeat", "times", "join"})


def expanded_chars(value: Any) -> int:
    """How many characters the strings in ``value`` come to once every ``{repeat, times}`` is
    expanded (an aliased node counted at each use), computed without expanding anything."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            times = item.get("times")
            if _is_repeat(item) and isinstance(times, int) and times > 0:
                joined = len(str(item.get("join", "\n")))
                total += len(str(item["repeat"])) * times + joined * (times - 1)
            else:
                stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


def _expand_values(value: Any) -> Any:
    """Tool-call arguments with ``{repeat, times}`` leaves expanded (for large payloads)."""
    if isinstance(value, Mapping):
        if _is_repeat(value):
            return _text(value)
        return {k: _expand_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_values(v) for v in value]
    return value


def _attachment(kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
    source = next(s for s in ("url", "base64", "file_id") if s in item)
    out: dict[str, Any] = {"kind": kind, "source": source, "data": item[source]}
    keys = ("media_type", "detail", "width", "height") if kind == "image" else ("media_type",)
    for key in (*keys, "filename") if kind == "file" else keys:
        if key in item:
            out[key] = item[key]
    return out


def expand_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """One compact message to the transcript's full ``{role, parts}`` dict (full form passes)."""
    out: dict[str, Any] = {"role": item["role"]}
    for key in ("name", "id"):
        if key in item:
            out[key] = item[key]
    if "parts" in item:
        out["parts"] = list(item["parts"])
        return out
    parts: list[dict[str, Any]] = []
    # Results first: a tool message's text may only follow its results (rule A3).
    for result in item.get("results", ()):
        entry: dict[str, Any] = {
            "kind": "tool_result",
            "call_id": result["id"],
            "content": [{"kind": "text", "text": _text(result.get("text", ""))}],
        }
        for key in ("is_error", "name", "item_id"):
            if key in result:
                entry[key] = result[key]
        parts.append(entry)
    # Reasoning precedes what it produced (R3/R4, A13, G6).
    parts.extend(
        {"kind": "reasoning", "origin": r["origin"], "data": canonical_json(r["data"])}
        for r in item.get("reasoning", ())
    )
    if "summary" in item:
        parts.append({"kind": "summary", "text": item["summary"]})
    if "text" in item:
        parts.append({"kind": "text", "text": _text(item["text"])})
    parts.extend(_attachment("image", a) for a in item.get("images", ()))
    parts.extend(_attachment("file", a) for a in item.get("files", ()))
    for call in item.get("calls", ()):
        args = call.get("args", {})
        entry = {
            "kind": "tool_call",
            "id": call["id"],
            "name": call["name"],
            "arguments": args if isinstance(args, str) else canonical_json(_expand_values(args)),
        }
        if "item_id" in call:
            entry["item_id"] = call["item_id"]
        parts.append(entry)
    out["parts"] = parts
    return out


# ------------------------------------------------------------------------------------ loading


@cache
def _validator(schema_path: Path) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_path.read_text("utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def schema_violations(schema_path: Path, document: Any) -> list[jsonschema.ValidationError]:
    """Every violation of the JSON schema in ``schema_path`` by ``document``, in document order
    (the validator is built and checked once per schema)."""
    errors = _validator(schema_path).iter_errors(document)
    return sorted(errors, key=lambda e: list(e.absolute_path))


def json_path(path: Iterable[Any]) -> str:
    """A place in a document as a JSON path: ``$.scenarios[0].expect``."""
    out = "$"
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else f".{step}"
    return out


def _listing(values: Iterable[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def plain_schema_message(error: jsonschema.ValidationError) -> str:
    """A schema violation in plain words (jsonschema's wording quotes whole sub-documents)."""
    instance: Any = error.instance
    value: Any = error.validator_value
    schema: Any = error.schema
    match error.validator:
        case "required":
            missing = [
                k for k in value if k not in (instance if isinstance(instance, Mapping) else {})
            ]
            return f"missing required key {_listing(missing)}"
        case "additionalProperties":
            allowed = set((schema if isinstance(schema, Mapping) else {}).get("properties", {}))
            extra = sorted(
                k for k in (instance if isinstance(instance, Mapping) else {}) if k not in allowed
            )
            known = f" (known keys: {', '.join(sorted(allowed))})" if allowed else ""
            return f"unknown key {_listing(extra)}{known}"
        case "enum":
            return f"{instance!r} is not one of {_listing(value)}"
        case "const":
            return f"must be {value!r}, not {instance!r}"
        case "type":
            wanted = value
            names = " or ".join(wanted) if isinstance(wanted, list) else str(wanted)
            return f"expected {names}, got {json_type_name(instance)}"
        case "pattern":
            return f"{instance!r} does not match the pattern {value}"
        case "minItems":
            return f"needs at least {value} item(s), has {len(instance)}"
        case "maxItems":
            return f"takes at most {value} item(s), has {len(instance)}"
        case "minLength":
            return "must not be empty" if value == 1 else error.message
        case "minimum" | "exclusiveMinimum":
            return f"{instance!r} is too small ({error.validator} {value})"
        case "oneOf" | "anyOf" if error.context:
            return _alternatives_message(error)
        case _:
            return error.message


def _branches(error: jsonschema.ValidationError) -> list[list[jsonschema.ValidationError]]:
    """The errors of each alternative of a ``oneOf``/``anyOf`` error, by alternative."""
    by_branch: dict[Any, list[jsonschema.ValidationError]] = {}
    for e in error.context or ():
        by_branch.setdefault(e.schema_path[0] if e.schema_path else None, []).append(e)
    return list(by_branch.values())


def _wrong_type(errors: Sequence[jsonschema.ValidationError], top: int) -> bool:
    """Whether an alternative failed only because the value is another JSON type."""
    return (
        len(errors) == 1 and errors[0].validator == "type" and len(errors[0].absolute_path) == top
    )


def _closest(error: jsonschema.ValidationError, top: int) -> jsonschema.ValidationError | None:
    """The error of the alternative the value comes closest to: not one of another JSON type,
    the fewest errors, the deepest one; nested alternatives (a ``$ref`` to another ``oneOf``)
    followed down. ``None`` when every alternative wants another JSON type."""
    candidates = [b for b in _branches(error) if not _wrong_type(b, top)]
    if not candidates:
        return None
    branch = min(candidates, key=lambda b: (len(b), -max(len(e.absolute_path) for e in b)))
    deepest = max(branch, key=lambda e: len(e.absolute_path))
    if deepest.validator in ("oneOf", "anyOf") and deepest.context:
        return _closest(deepest, len(deepest.absolute_path)) or deepest
    return deepest


def _wanted_types(error: jsonschema.ValidationError) -> list[str]:
    out: list[str] = []
    for e in error.context or ():
        kinds: Any = e.validator_value if e.validator == "type" else []
        if e.validator in ("oneOf", "anyOf"):
            kinds = _wanted_types(e)
        for kind in [kinds] if isinstance(kinds, str) else list(kinds):
            if kind not in out:
                out.append(kind)
    return out


def _alternatives_message(error: jsonschema.ValidationError) -> str:
    """A value that matches none of a ``oneOf``'s alternatives, explained by the alternative it
    comes closest to (``budget: {sweep: [10, 400, 0]}``: ``sweep[2]`` is too small, not "missing
    ``default``"), else by the JSON types it may have."""
    top = len(error.absolute_path)
    best = _closest(error, top)
    if best is None:
        return f"expected {' or '.join(_wanted_types(error))}, got {json_type_name(error.instance)}"
    inner = plain_schema_message(best)
    where = json_path(list(best.absolute_path)[top:]).removeprefix("$")
    return f"{where.removeprefix('.')}: {inner}" if where else inner


def schema_errors(document: Any) -> list[str]:
    """Every schema violation of one file as ``$.json.path: message`` lines (empty when valid),
    in plain words."""
    errors = schema_violations(_SCHEMA_PATH, document)
    return [f"{json_path(e.absolute_path)}: {plain_schema_message(e)}" for e in errors]


MAX_SWEEP_BUDGETS: Final = 200
"""The most budgets one sweep may name: every budget is a case in every shape and dialect, and the
corpus's widest sweep has 33; a typo such as ``[1, 100000000, 1]`` is refused at load, not
expanded into a hundred million cases."""


def _budget_values(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    start, stop, step = value["sweep"]
    count = len(range(start, stop + 1, step))
    if start > stop:
        raise ScenarioError(
            f"a sweep runs from its first budget up to its last: {start} is above {stop}",
            where=f"{where}.sweep",
        )
    if count > MAX_SWEEP_BUDGETS:
        raise ScenarioError(
            f"sweep [{start}, {stop}, {step}] names {count:,} budgets; at most "
            f"{MAX_SWEEP_BUDGETS} (a larger step, or a narrower range)",
            where=f"{where}.sweep",
        )
    return tuple(range(start, stop + 1, step))


def _budget(value: Any, where: str) -> Budget:
    if isinstance(value, Mapping) and "default" in value:
        return Budget(
            _budget_values(value["default"], f"{where}.default"),
            {
                s: _budget_values(v, f"{where}.per_shape.{s}")
                for s, v in value.get("per_shape", {}).items()
            },
        )
    return Budget(_budget_values(value, where))


def _transcript(messages: Sequence[Any], tools: Sequence[Any], where: str) -> Transcript:
    document = {
        "messages": [expand_message(m) for m in messages],
        "tools": [dict(t) for t in tools],
    }
    try:
        return transcript_from_dict(document)
    except TranscriptError as exc:
        raise ScenarioError(
            exc.message, where=f"{where}.{exc.where}" if exc.where else where
        ) from None


def _scenario(raw: Mapping[str, Any], level: Level, where: str, source: str) -> Scenario:
    session = _transcript(raw["session"], raw.get("tools", ()), f"{where}.session")
    turns = tuple(
        _transcript(turn, (), f"{where}.turns[{i}]").messages
        for i, turn in enumerate(raw.get("turns", ()))
    )
    expect = raw["expect"]
    declared = raw.get("level", level)
    if declared != level:
        raise ScenarioError(
            f"scenario {raw['id']!r} declares level {declared!r} but lives in the {level!r} "
            f"folder; move the file or fix the level (the folder encodes the level)",
            where=f"{where}.level",
        )
    shapes = tuple(s for s in SHAPE_NAMES if s in raw.get("shapes", SHAPE_NAMES))
    dialects = tuple(raw.get("dialects", (None,)))
    for i, name in enumerate(d for d in dialects if d is not None):
        try:
            base = get_dialect(name).base_shape
        except ShapeError as exc:
            raise ScenarioError(exc.message, where=f"{where}.dialects[{i}]") from None
        if shapes != (base,):
            raise ScenarioError(
                f"dialect {name!r} is a dialect of {base}; a scenario with dialects lists "
                f"that shape alone (shapes: [{base}])",
                where=f"{where}.shapes",
            )
    # What the plug-in is handed must be what the harness's own readers accept: a ledger status
    # or a config key the reference reader refuses would error every case of the run.
    try:
        Ledger.from_list(raw.get("ledger", ()), where=f"{where}.ledger")
        AssemblyConfig.from_mapping(raw.get("config", {}))
    except CtxconfError as exc:
        at = exc.where or ""
        if not at.startswith(where):
            at = f"{where}.config.{at}" if at else f"{where}.config"
        raise ScenarioError(exc.message, where=at) from None
    scenario = Scenario(
        id=raw["id"],
        title=raw["title"],
        level=level,
        source=source,
        session=session,
        budget=_budget(raw["budget"], f"{where}.budget"),
        expect=Expectation(
            outcome=expect["outcome"],
            checks=tuple(expect.get("checks", ())),
            skip_checks=tuple(expect.get("skip_checks", ())),
            refusal_code=expect.get("refusal_code"),
            input=expect.get("input", "valid"),
        ),
        tags=tuple(raw.get("tags", ())),
        shapes=shapes,
        dialects=dialects,
        turns=turns,
        ledger=tuple(dict(e) for e in raw.get("ledger", ())),
        memory=tuple(dict(m) for m in raw.get("memory", ())),
        config=dict(raw.get("config", {})),
        params={k: dict(v) for k, v in raw.get("params", {}).items()},
        models=dict(raw.get("model", {})),
        notes=str(raw.get("notes", "")).strip(),
        cassette=bool(raw.get("cassette", False)),
    )
    _check_declared_input(scenario, where)
    return scenario


def _message_path(scenario: Scenario, index: int, where: str) -> str:
    """Where message ``index`` of a turn's merged session is written in the file."""
    if index < len(scenario.session.messages):
        return f"{where}.session[{index}]"
    index -= len(scenario.session.messages)
    for turn, messages in enumerate(scenario.turns):
        if index < len(messages):
            return f"{where}.turns[{turn}][{index}]"
        index -= len(messages)
    return where


def _check_declared_input(scenario: Scenario, where: str) -> None:
    """A session that breaks tool-call pairing by a rule of a target the scenario runs against
    must say so (``expect.input: invalid``, which the schema allows only with ``outcome:
    refused``): otherwise a plug-in that rightly refuses it is failed for refusing
    (``assembles_when_feasible``). A scenario whose config asks for ``on_pairing_error:
    synthesize_error_results`` hands over a broken session on purpose."""
    if scenario.expect.input == "invalid":
        return
    if scenario.config.get("on_pairing_error") == "synthesize_error_results":
        return
    rules: set[str] = set()
    for shape in scenario.shapes:
        for dialect in scenario.dialects:
            rules.update(profile_for_model(shape, dialect, scenario.model_for(shape)).rules)
    for session in scenario.sessions():
        enforced = [v for v in validate_pairing(session) if rules.intersection(v.rules)]
        if enforced:
            first = enforced[0]
            raise ScenarioError(
                f"the session breaks tool-call pairing ({first.kind}, rules "
                f"{', '.join(first.rules)}): {first.detail.rstrip('.')}; a scenario that hands "
                "over a broken session declares expect: {outcome: refused, input: invalid}",
                where=_message_path(scenario, first.message_index, where),
            )


def _level_of(path: Path) -> Level:
    for part in reversed(path.parts[:-1]):
        if part in LEVELS:
            return part
    raise ScenarioError(
        "a scenario file must live under a must/, should/ or may/ folder (the folder is its level)",
        where=str(path),
    )


def load_file(path: Path) -> tuple[Scenario, ...]:
    """Every scenario of one YAML file; a :class:`ScenarioError` naming the file and JSON path.

    A file that loaded is kept for the life of the process under its identity, size, times and
    the input limit (:func:`_file_stamp`), so loading a corpus again (the pytest plug-in, a
    program that runs the harness several times) parses only the files that changed. A file
    that fails is read afresh every time."""
    stamp = _file_stamp(path)
    if stamp is None:
        return _load_file(path)
    return _load_file_kept(path, stamp)


_FileStamp: TypeAlias = tuple[int, int, int, int, int, "int | None"]


def _file_stamp(path: Path) -> _FileStamp | None:
    """What identifies one version of a regular file (``None``: do not keep it)."""
    try:
        found = path.stat()
        limit = max_input_bytes()
    except (OSError, DocumentLimitError):
        return None  # the uncached read reports it, as it always did
    if not stat.S_ISREG(found.st_mode):
        return None
    return (
        found.st_dev,
        found.st_ino,
        found.st_size,
        found.st_mtime_ns,
        found.st_ctime_ns,
        limit,
    )


@lru_cache(maxsize=1024)
def _load_file_kept(path: Path, _stamp: _FileStamp) -> tuple[Scenario, ...]:
    """:func:`_load_file`, kept per ``(path, stamp)``: the stamp is only the cache's key."""
    return _load_file(path)


def _load_file(path: Path) -> tuple[Scenario, ...]:
    document = _read_file(path)
    scenarios, problems = _file_scenarios(path, document)
    if problems:
        more = f" (and {len(problems) - 1} more: `ctxconf scenarios validate` lists them)"
        raise ScenarioError(problems[0] + (more if len(problems) > 1 else ""), where=str(path))
    return scenarios


def read_yaml_file(path: Path, error: type[CtxconfError], kind: str) -> Any:
    """The YAML document in ``path``, read within the input limits (size, aliases, depth); an
    ``error`` naming the file (and the line and column of a YAML syntax error) when it cannot
    be read or is not ``kind`` (``"a scenario file"``)."""
    try:
        return load_yaml_strict(read_input_text(path))
    except OSError as exc:
        raise error(exc.strerror or str(exc), where=str(path)) from None
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text (byte {exc.start})", where=str(path)) from None
    except DocumentLimitError as exc:
        raise error(f"not {kind}: {exc}", where=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise error(f"not YAML ({getattr(exc, 'problem', exc)})", where=f"{path}{at}") from None


def _read_file(path: Path) -> Any:
    return read_yaml_file(path, ScenarioError, "a scenario file")


def _file_scenarios(path: Path, document: Any) -> tuple[tuple[Scenario, ...], list[str]]:
    """The scenarios of one parsed file and, separately, every problem (``$.path: message``):
    the schema's, then those of each scenario the schema accepted."""
    raw_errors = schema_violations(_SCHEMA_PATH, document)
    problems = [f"{json_path(e.absolute_path)}: {plain_schema_message(e)}" for e in raw_errors]
    broken = {
        e.absolute_path[1]
        for e in raw_errors
        if len(e.absolute_path) > 1 and e.absolute_path[0] == "scenarios"
    }
    whole_file = any(
        len(e.absolute_path) < 2 or e.absolute_path[0] != "scenarios" for e in raw_errors
    )
    if whole_file:
        return (), problems
    level = _level_of(path)
    out: list[Scenario] = []
    expanded = 0
    for i, raw in enumerate(document["scenarios"]):
        if i in broken:
            continue
        expanded += expanded_chars(raw)
        if expanded > MAX_EXPANDED_CHARS:
            problems.append(
                f"$.scenarios[{i}]: the file's texts up to this scenario expand to "
                f"{expanded:,} characters ({{repeat, times}} counted in full); at most "
                f"{MAX_EXPANDED_CHARS:,} in one file"
            )
            break
        try:
            out.append(_scenario(raw, level, f"$.scenarios[{i}]", str(path)))
        except ScenarioError as exc:
            problems.append(f"{exc.where}: {exc.message}" if exc.where else exc.message)
    return tuple(out), problems


def scan_corpus(root: Path | None = None) -> tuple[tuple[Scenario, ...], list[str]]:
    """Every scenario that loads under ``root`` and every problem of every file, each as
    ``FILE: $.json.path: message`` (``scenarios validate`` reports them all, not the first).
    A file that cannot be read as YAML at all still raises :class:`ScenarioError`."""
    base = root if root is not None else default_corpus_path()
    out: list[Scenario] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for path in scenario_files(base):
        try:
            loaded, found = _file_scenarios(path, _read_file(path))
        except ScenarioError as exc:
            if exc.where == str(path) or (exc.where or "").startswith(f"{path}:"):
                raise  # unreadable: one named error, exit 2
            problems.append(f"{path}: {exc.where}: {exc.message}" if exc.where else exc.message)
            continue
        problems.extend(f"{path}: {p}" for p in found)
        for i, scenario in enumerate(loaded):
            if scenario.id in seen:
                problems.append(
                    f"{path}: $.scenarios[{i}].id: duplicate scenario id {scenario.id!r} (also in "
                    f"{seen[scenario.id]})"
                )
                continue
            seen[scenario.id] = str(path)
            out.append(scenario)
    order = {level: i for i, level in enumerate(LEVELS)}
    return tuple(sorted(out, key=lambda s: order[s.level])), problems


def default_corpus_path() -> Path:
    """The built-in corpus: ``$CTXCONF_SCENARIOS``, the installed package's copy, else the
    checkout's ``scenarios/`` folder (see :mod:`conformance.bundled`); named error otherwise."""
    found = find_bundled_folder("scenarios", env=CORPUS_ENV)
    if found is None:
        raise ScenarioError(
            missing_folder_message("scenarios", env=CORPUS_ENV)
            + "; or pass --scenarios PATH to a scenario folder of your own"
        )
    return found


def scenario_files(root: Path) -> list[Path]:
    """``root`` itself when it is not a folder (a file, or a pipe such as ``<(...)``), else
    every regular ``.yaml``/``.yml`` file below it, sorted: a pipe, socket or folder with that
    suffix inside a folder is no scenario file (reading a pipe nobody writes would wait
    forever)."""
    if not root.is_dir():
        if not root.exists():
            raise ScenarioError("no such file or folder", where=str(root))
        return [root]
    return sorted(
        p
        for p in root.rglob("*.y*ml")
        if p.suffix in {".yaml", ".yml"}
        and WORKLOADS_FOLDER not in p.relative_to(root).parts[:-1]
        and p.is_file()
    )


def load_corpus(root: Path | None = None) -> tuple[Scenario, ...]:
    """All scenarios under ``root`` (default: the built-in corpus), ids unique, in file order."""
    base = root if root is not None else default_corpus_path()
    out: list[Scenario] = []
    seen: dict[str, str] = {}
    for path in scenario_files(base):
        for scenario in load_file(path):
            if scenario.id in seen:
                raise ScenarioError(
                    f"duplicate scenario id {scenario.id!r} (also in {seen[scenario.id]})",
                    where=str(path),
                )
            seen[scenario.id] = str(path)
            out.append(scenario)
    order = {level: i for i, level in enumerate(LEVELS)}
    return tuple(sorted(out, key=lambda s: order[s.level]))


TAG_PREFIX: Final = "tag:"
"""A selector of this form names a tag only (``tag:single-tool``), even where an id is the same."""


def select(
    scenarios: Sequence[Scenario], *, selectors: Sequence[str] = (), level: Level | None = None
) -> tuple[Scenario, ...]:
    """Scenarios ``selectors`` name (all when empty), up to ``level``, in corpus order. A
    selector that is a scenario's id names that scenario alone (an id wins over a tag of the
    same name); ``tag:NAME`` names every scenario tagged NAME; any other names the scenarios
    tagged with it."""
    top = LEVELS.index(level) if level is not None else len(LEVELS) - 1
    ids, tags = _selected(scenarios, selectors)
    return tuple(
        s
        for s in scenarios
        if LEVELS.index(s.level) <= top
        and (not selectors or s.id in ids or tags.intersection(s.tags))
    )


def _selected(scenarios: Sequence[Scenario], selectors: Sequence[str]) -> tuple[set[str], set[str]]:
    known = {s.id for s in scenarios}
    ids: set[str] = set()
    tags: set[str] = set()
    for selector in selectors:
        if selector.startswith(TAG_PREFIX):
            tags.add(selector.removeprefix(TAG_PREFIX))
        elif selector in known:
            ids.add(selector)
        else:
            tags.add(selector)
    return ids, tags


def unknown_selectors(scenarios: Sequence[Scenario], selectors: Sequence[str]) -> list[str]:
    """The selectors that name no scenario of ``scenarios`` (at any level), each with the
    closest id or tag: ``'singel-tool' (did you mean 'single-tool'?)``."""
    known = {s.id for s in scenarios}
    tags = {t for s in scenarios for t in s.tags}
    found: list[str] = []
    for selector in selectors:
        name = selector.removeprefix(TAG_PREFIX)
        pool = tags if name != selector else known | tags  # ``tag:NAME`` names a tag only
        if name in pool:
            continue
        close = difflib.get_close_matches(name, sorted(pool), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        found.append(f"{selector!r}{hint}")
    return found


def message_from_compact(item: Mapping[str, Any]) -> Message:
    """A single compact message as a :class:`Message` (used by tests and fakes)."""
    return _transcript([item], (), "$").messages[0]
