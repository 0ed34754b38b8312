"""The provider rule catalog: every rule of ``provider-rules.md`` as data, and the profiles that use them.

The data lives in ``rules.yaml`` next to this module and is validated against ``rules.schema.json``:
by the test suite for the catalog the package ships (whose digest is then recorded,
:data:`SCHEMA_CHECKED`), and when it is first loaded for any other text, so a typo in the catalog
fails loudly, never as a wrong verdict later.

Vocabulary (ARCHITECTURE.md section 2):

* a **rule** is one acceptance rule with its id (``C1``, ``A13``, ``MI4`` ...), the condition in
  prose, the HTTP status, the provider's error envelope (type, code, ``param`` in that provider's
  index notation), a message template, an evidence class and a source;
* a **profile** is the set of rules one provider enforces at one point in time or for one model
  family (``anthropic-2024-strict-alternation`` vs ``anthropic-current``); a gateway **dialect** of a
  shape is a profile family of its own (``mistral-default``).

Profiles are written as ``extends`` + ``add``/``remove``/``replace`` so a profile's difference from
its base is visible in the data.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Final, cast

from conformance.errors import CatalogError, UnknownProfileError
from conformance.providers.verdict import Evidence
from reference_impl.documents import load_yaml_safe
from reference_impl.errors import CtxconfError, ShapeError
from reference_impl.shapes.dialects import get_dialect
from reference_impl.wording import did_you_mean, with_article

__all__ = [
    "SCHEMA_CHECKED",
    "SHAPES",
    "Catalog",
    "ErrorSpec",
    "Profile",
    "Rule",
    "Variant",
    "catalog_dialect",
    "catalog_digest",
    "closest_profile",
    "known_profiles",
    "list_dialects",
    "list_profiles",
    "load_catalog",
    "message_pattern",
    "profile_for_model",
    "resolve_profile",
    "rules_for",
]

SHAPES = ("openai-chat", "openai-responses", "anthropic-messages", "gemini", "bedrock-converse")


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """What the provider puts in its error envelope besides the message (templates for ``param``)."""

    type: str | None = None
    code: str | int | None = None
    param: str | None = None


@dataclass(frozen=True, slots=True)
class Variant:
    """An alternative wording of the same rule (for example A9 for ``user`` vs ``assistant``)."""

    message: str
    error: ErrorSpec | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """One provider acceptance rule: id, shapes, status and error, message template, evidence class."""

    id: str
    shapes: tuple[str, ...]
    dialect: str | None
    title: str
    condition: str
    status: int
    error: ErrorSpec
    message: str
    evidence: Evidence
    source: str
    judgeable: bool = True
    not_judgeable_reason: str | None = None
    detector: str = ""  # the validator detector that judges it; defaults to the rule id
    envelope: str | None = None  # overrides the profile's envelope family (Ollama's native API)
    variants: Mapping[str, Variant] = field(default_factory=dict)
    overflow: bool = False  # a context-window rule, judged by token counts, not by structure
    profiles: tuple[str, ...] = ()  # filled in at load: profiles that enforce it
    endpoints: tuple[str, ...] = ("generate", "count")  # where it applies (A26: generate only)

    @property
    def detector_name(self) -> str:
        """The validator detector that judges the rule (its id unless ``detector`` names another)."""
        return self.detector or self.id


@dataclass(frozen=True, slots=True)
class Profile:
    """A provider's rule set at one point in time or model family (which rules, which envelope)."""

    id: str
    shape: str
    dialect: str | None
    default: bool
    envelope: str
    description: str
    rules: tuple[str, ...]
    overflow: str | None
    settings: Mapping[str, Any]
    extends: str | None = None
    models: tuple[str, ...] = ()  # regexes of model names this profile describes


@dataclass(frozen=True, slots=True)
class Catalog:
    """Every rule and profile of ``rules.yaml``, by id."""

    version: int
    rules: Mapping[str, Rule]
    profiles: Mapping[str, Profile]

    def rule(self, rule_id: str) -> Rule:
        """The rule ``rule_id``; a :class:`CatalogError` when the catalog has none."""
        try:
            return self.rules[rule_id]
        except KeyError:
            raise CatalogError(f"no rule {rule_id!r} in the catalog") from None


def _read_resource(name: str) -> str:
    return resources.files("conformance.providers").joinpath(name).read_text("utf-8")


def _error_spec(raw: Mapping[str, Any] | None) -> ErrorSpec:
    raw = raw or {}
    return ErrorSpec(type=raw.get("type"), code=raw.get("code"), param=raw.get("param"))


def _rule(raw: Mapping[str, Any], profiles: tuple[str, ...]) -> Rule:
    variants = {
        name: Variant(message=v["message"], error=_error_spec(v["error"]) if "error" in v else None)
        for name, v in (raw.get("variants") or {}).items()
    }
    shapes = raw["shape"] if isinstance(raw["shape"], list) else [raw["shape"]]
    return Rule(
        id=raw["id"],
        shapes=tuple(shapes),
        dialect=raw.get("dialect"),
        title=raw["title"],
        condition=raw["condition"],
        status=raw["status"],
        error=_error_spec(raw.get("error")),
        message=raw["message"],
        evidence=cast("Evidence", raw["evidence"]),
        source=raw["source"],
        judgeable=raw.get("judgeable", True),
        not_judgeable_reason=raw.get("not_judgeable_reason"),
        detector=raw.get("detector", ""),
        envelope=raw.get("envelope"),
        variants=variants,
        overflow=raw.get("overflow", False),
        profiles=profiles,
        endpoints=tuple(raw.get("endpoints", ("generate", "count"))),
    )


def _resolve_profiles(raw_profiles: list[dict[str, Any]], rule_ids: set[str]) -> dict[str, Profile]:
    by_id = {p["id"]: p for p in raw_profiles}
    if len(by_id) != len(raw_profiles):
        raise CatalogError("duplicate profile ids in rules.yaml")
    resolved: dict[str, Profile] = {}

    def resolve(pid: str, seen: tuple[str, ...]) -> Profile:
        if pid in resolved:
            return resolved[pid]
        if pid in seen:
            raise CatalogError(f"profile {pid!r} extends itself through {' -> '.join(seen)}")
        raw = by_id.get(pid)
        if raw is None:
            raise CatalogError(f"profile {seen[-1]!r} extends unknown profile {pid!r}")
        base = resolve(raw["extends"], (*seen, pid)) if "extends" in raw else None
        rules = list(base.rules) if base else []
        rules += raw.get("rules", [])
        for old, new in (raw.get("replace") or {}).items():
            if old not in rules:
                raise CatalogError(f"profile {pid!r} replaces {old!r}, which its base lacks")
            rules[rules.index(old)] = new
        rules = [r for r in rules if r not in set(raw.get("remove", []))]
        rules += [r for r in raw.get("add", []) if r not in rules]
        for rid in [*rules, raw.get("overflow")]:
            if rid is not None and rid not in rule_ids:
                raise CatalogError(f"profile {pid!r} names unknown rule {rid!r}")
        settings = dict(base.settings) if base else {}
        settings.update(raw.get("settings") or {})
        profile = Profile(
            id=pid,
            shape=raw.get("shape", base.shape if base else ""),
            dialect=raw.get("dialect", base.dialect if base else None),
            default=raw.get("default", False),
            envelope=raw.get("envelope", base.envelope if base else ""),
            description=raw["description"],
            rules=tuple(rules),
            overflow=raw.get("overflow", base.overflow if base else None),
            settings=settings,
            extends=raw.get("extends"),
            models=tuple(raw.get("models", ())),
        )
        if profile.shape not in SHAPES:
            raise CatalogError(f"profile {pid!r} has unknown shape {profile.shape!r}")
        resolved[pid] = profile
        return profile

    for pid in by_id:
        resolve(pid, ())
    # Catalog order, not resolution order (a base resolves before the profiles extending it):
    # profile_for_model takes the first profile whose models match, as the catalog lists them.
    return {pid: resolved[pid] for pid in by_id}


SCHEMA_CHECKED: Final = "5ad230fbc822b5d82a27cd02bcbc03cee8e75ba9f19356a7ee5b90d0ee450871"
"""The :func:`catalog_digest` of the ``rules.yaml`` and ``rules.schema.json`` the test suite
checked against each other (``test_the_shipped_catalog_matches_its_schema``). The catalog with
that digest, the one the package ships, is not checked again at every start (importing
jsonschema and checking took ~0.15 s of every command's start-up); any other text is."""


def catalog_digest(catalog: str, schema: str) -> str:
    """SHA-256 of the catalog's text and its schema's."""
    return hashlib.sha256(f"{catalog}\0{schema}".encode()).hexdigest()


def _check_schema(data: Any, schema: Mapping[str, Any]) -> None:
    import jsonschema  # noqa: PLC0415 - only for a catalog the test suite did not check

    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise CatalogError(
            f"rules.yaml does not match its schema: {exc.message}", where=where
        ) from exc


@cache
def load_catalog() -> Catalog:
    """Load ``rules.yaml`` once per process, checked against its schema unless it is the
    catalog the test suite checked (:data:`SCHEMA_CHECKED`)."""
    text, schema = _read_resource("rules.yaml"), _read_resource("rules.schema.json")
    data = load_yaml_safe(text, limited=False)  # the package's own file, not an input
    if catalog_digest(text, schema) != SCHEMA_CHECKED:
        _check_schema(data, json.loads(schema))
    raw_rules: list[dict[str, Any]] = data["rules"]
    rule_ids = {r["id"] for r in raw_rules}
    if len(rule_ids) != len(raw_rules):
        raise CatalogError("duplicate rule ids in rules.yaml")
    profiles = _resolve_profiles(data["profiles"], rule_ids)
    users: dict[str, list[str]] = {}
    for profile in profiles.values():
        for rid in [*profile.rules, profile.overflow]:
            if rid is not None:
                users.setdefault(rid, []).append(profile.id)
    rules = {r["id"]: _rule(r, tuple(users.get(r["id"], ()))) for r in raw_rules}
    for profile in profiles.values():
        for rid in profile.rules:
            if profile.shape not in rules[rid].shapes:
                raise CatalogError(
                    f"profile {profile.id!r} ({profile.shape}) uses rule {rid!r} of {rules[rid].shapes}"
                )
    defaults = [(p.shape, p.dialect) for p in profiles.values() if p.default]
    if len(set(defaults)) != len(defaults):
        raise CatalogError("more than one default profile for one shape and dialect")
    return Catalog(version=data["version"], rules=rules, profiles=profiles)


def known_profiles(names: Iterable[str], error: Callable[..., CtxconfError]) -> tuple[str, ...]:
    """``names`` when the catalog knows each of them; otherwise ``error`` (the option's own
    error class) naming the unknown ones and the known, ``where="profile"``."""
    wanted = tuple(names)
    known = load_catalog().profiles
    unknown = [name for name in wanted if name not in known]
    if unknown:
        hint = closest_profile(unknown[0]) if len(unknown) == 1 else ""
        raise error(
            f"unknown profile {', '.join(map(repr, unknown))}{hint}; known: {', '.join(known)}",
            where="profile",
        )
    # Each profile applies to its shape and dialect (pick_profile takes the first that fits):
    # a second one for the same would be ignored without a word.
    taken: dict[tuple[str, str | None], str] = {}
    for name in dict.fromkeys(wanted):
        profile = known[name]
        first = taken.setdefault((profile.shape, profile.dialect), name)
        if first != name:
            of = f"shape {profile.shape}" + (
                f", dialect {profile.dialect}" if profile.dialect else ""
            )
            raise error(
                f"profiles {first!r} and {name!r} are both for {of}, whose requests are judged "
                "by one profile: give one of them",
                where="profile",
            )
    return wanted


def closest_profile(name: str, shape: str | None = None) -> str:
    """`` (did you mean 'openai-default'?)`` after a profile name the catalog does not have: the
    closest of ``shape``'s profiles, else of every shape's, saying the shape when it is another
    (`` (did you mean 'anthropic-current', a profile of shape anthropic-messages?)``). Empty
    when none is close."""
    profiles = load_catalog().profiles
    own = [p.id for p in profiles.values() if p.shape == shape]
    close = difflib.get_close_matches(name, own, n=1) or difflib.get_close_matches(
        name, list(profiles), n=1
    )
    if not close:
        return ""
    found = profiles[close[0]]
    if shape is None or found.shape == shape:
        return f" (did you mean {found.id!r}?)"
    return f" (did you mean {found.id!r}, a profile of shape {found.shape}?)"


def list_profiles(shape: str | None = None, dialect: str | None = None) -> tuple[Profile, ...]:
    """Every profile, or those of one shape (and dialect, any spelling), in catalog order."""
    if dialect is not None and shape is not None:
        dialect = catalog_dialect(shape, dialect)
    return tuple(
        p
        for p in load_catalog().profiles.values()
        if (shape is None or p.shape == shape) and (dialect is None or p.dialect == dialect)
    )


# First-party OpenAI is the base shape, not a dialect of it (``ctxconf convert --dialect openai``).
_BASE_DIALECT: Final = "openai"


def catalog_dialect(shape: str, dialect: str | None) -> str | None:
    """The canonical id of ``dialect`` for ``shape``, whatever spelling the caller used.

    A dialect has one id everywhere: the name in ``reference_impl.shapes.dialects`` is the id the
    catalog's profiles use (``azure``, ``lmstudio``, ``llamacpp``); the other spellings
    (``azure-openai``, ``lm-studio``, ``llama.cpp``, ``dashscope``, ...) are that table's aliases,
    so every command takes every spelling. Dialects of other shapes (``bedrock``, ``vertex``) are
    the catalog's own. ``openai`` is the first-party base shape (``None``). A name neither knows is
    returned as given, for :func:`resolve_profile` to report with the known dialects.
    """
    if dialect is None:
        return None
    key = dialect.strip().lower()
    known = {p.dialect for p in load_catalog().profiles.values() if p.shape == shape}
    if key in known:
        return key
    try:
        name = get_dialect(key).name
    except ShapeError:
        return dialect
    if name == _BASE_DIALECT and shape.startswith("openai-"):
        return None
    return name if name in known else dialect


def list_dialects(shape: str | None = None) -> tuple[str, ...]:
    """Every gateway dialect named in the catalog (for one shape)."""
    found = {p.dialect for p in list_profiles(shape) if p.dialect is not None}
    return tuple(sorted(found))


def resolve_profile(shape: str, dialect: str | None = None, profile: str | None = None) -> Profile:
    """The profile to judge with: the named one (checked against shape/dialect) or the default.

    ``dialect`` may be any spelling :func:`catalog_dialect` knows (``lmstudio``, ``lm-studio``).
    Resolved once per catalog and arguments (an audit resolves the same few for every request).
    """
    return _resolve_profile(id(load_catalog()), shape, dialect, profile)


@lru_cache(maxsize=1024)
def _resolve_profile(
    _catalog: int, shape: str, dialect: str | None, profile: str | None
) -> Profile:
    catalog = load_catalog()
    if shape not in SHAPES:
        raise UnknownProfileError(
            f"unknown shape {shape!r}; expected one of {', '.join(SHAPES)}", where="shape"
        )
    dialect = catalog_dialect(shape, dialect)
    if profile is not None:
        found = catalog.profiles.get(profile)
        if found is None or found.shape != shape:
            ids = [p.id for p in list_profiles(shape)]
            # a profile of another shape: the shape is what to change, not the name
            hint = _of_other_shapes(profile, "profile", [found.shape]) if found else ""
            raise UnknownProfileError(
                f"no profile {profile!r} for shape {shape}"
                f"{hint or closest_profile(profile, shape)}; known: {', '.join(ids)}",
                where="profile",
            )
        if dialect is not None and found.dialect != dialect:
            raise UnknownProfileError(
                f"profile {profile!r} belongs to dialect {found.dialect or 'none (the base shape)'}, "
                f"not {dialect!r}",
                where="profile",
            )
        return found
    for candidate in catalog.profiles.values():
        if candidate.shape == shape and candidate.dialect == dialect and candidate.default:
            return candidate
    dialects = list_dialects(shape)
    hint = ""
    if dialect:
        others = [
            s for s in SHAPES if s != shape and catalog_dialect(s, dialect) in list_dialects(s)
        ]
        hint = _of_other_shapes(dialect, "dialect", others) or did_you_mean(dialect, dialects)
    raise UnknownProfileError(
        f"no dialect {dialect!r} for shape {shape}{hint}; known dialects: "
        f"{', '.join(dialects) or 'none'}",
        where="dialect",
    )


def _of_other_shapes(name: str, kind: str, shapes: Sequence[str]) -> str:
    """``: 'anthropic-current' is a profile of shape anthropic-messages, for anthropic-messages
    requests only (...)`` after a profile or dialect (``kind``) name that the shape in use does
    not have but ``shapes`` do: the shape is what to change, not the name. Empty when no
    shape has it."""
    if not shapes:
        return ""
    if len(shapes) == 1:
        whose = f"shape {shapes[0]}, for {shapes[0]} requests only"
    else:
        whose = f"shapes {', '.join(shapes[:-1])} and {shapes[-1]}, for their requests only"
    return (
        f": {name!r} is {with_article(kind)} of {whose} (to use it, change the shape, not the name)"
    )


def profile_for_model(shape: str, dialect: str | None, model: str | None) -> Profile:
    """The profile describing ``model`` (by its ``models`` patterns), else the default one."""
    dialect = catalog_dialect(shape, dialect) if shape in SHAPES else dialect
    if model:
        for candidate in list_profiles(shape):
            if candidate.dialect == dialect and any(re.search(p, model) for p in candidate.models):
                return candidate
    return resolve_profile(shape, dialect)


def message_pattern(rule: Rule, variant: str | None = None) -> re.Pattern[str]:
    """A regex matching the rule's message with any value in each placeholder (calibration)."""
    template = rule.variants[variant].message if variant else rule.message
    parts = re.split(r"\{[a-z_]+\}", template)
    body = ".+?".join(re.escape(" ".join(part.split())) for part in parts)
    return re.compile(body.replace(r"\ ", r"\s+"), re.DOTALL)


def rules_for(
    shape: str, dialect: str | None = None, profile: str | None = None
) -> tuple[Rule, ...]:
    """The rules one profile enforces, in the order they are checked, with its overflow rule last."""
    resolved = resolve_profile(shape, dialect, profile)
    catalog = load_catalog()
    ids = [*resolved.rules, *([resolved.overflow] if resolved.overflow else [])]
    return tuple(catalog.rules[rid] for rid in ids)
