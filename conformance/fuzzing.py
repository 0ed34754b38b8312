"""Fuzzing any assembler: the ``must`` checks over generated sessions and budgets, shrunk.

:func:`fuzz` draws a shape the plug-in speaks, a session for it (valid, or broken in one of the
ways ``rings.validate`` knows, from :mod:`conformance.strategies`) and a budget around the
session's own size, wraps them into a one-case :class:`~conformance.scenarios.Scenario`, and runs
it through the engine exactly as ``ctxconf run`` would (same rendering, timeout, verdicts and
checks, ``must`` level only).

Each must check is its own failure (:func:`finding_key`: a case that fails several is the failure
of the first of them in :func:`finding_order`, a broken input sent on first, ``within_budget``
last, a plug-in error before any). The search goes in rounds: each round's property fails only
on a failure not found in an earlier round, and hypothesis shrinks what it finds; the round
that finds nothing new ends the search, and the rounds share the ``examples`` budget. So a
ring-blind trimmer's pairing bug is shown with its own small case, not hidden behind the
one-message case over a budget of 1 that any trimmer which cannot refuse fails, which is
what shrinking all failures together ends on. :func:`scenario_document` turns each finding into
a scenario (format version 1, all of them in one file) that ``ctxconf run --scenarios FILE``
replays, and :func:`fuzz` checks that each replay fails the same way before it returns.

What a generated case expects, judged against the *target*: the input is built as the engine
builds it (:func:`conformance.engine.render_input`) and judged by the validators of the shape's
default-model profile.

* A session whose input breaks pairing in a way the target's rules name (a ``rings.validate``
  violation citing a rule of that profile) must be refused (``refuses_broken_input``). A break
  only other providers care about (a detached reasoning item on ``openai-chat``) demands nothing.
* A session generated as valid whose input the target's validators still reject (thinking in a
  final Anthropic assistant turn while thinking is disabled, A14; a Gemini 3 call without its
  ``thoughtSignature``, G6, were the target a Gemini 3 model) is not a valid session for that
  target: it is discarded, so ``--valid-only`` means what it says.
* Any other session may be assembled or refused, but what is assembled must be accepted by the
  provider's validators (``provider_valid``) and invent nothing (``nothing_invented``); and
  refusing a valid session whose whole input already fits the budget fails
  ``assembles_when_feasible`` (must), so an assembler that refuses everything is caught.

After hypothesis has shrunk a failure, :func:`minimize` removes what it left that does not matter
(attachments, message names, extra tool calls with their results, whole messages) as long as the
case still fails the same checks.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from hypothesis import HealthCheck, Phase, Verbosity, assume, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conformance.checks import REGISTRY, CheckResult, CheckSpec, checks_for
from conformance.engine import (
    DEFAULT_MODELS,
    DEFAULT_TIMEOUT,
    Case,
    reference_counter,
    render_input,
    unrun_result,
)
from conformance.events import CaseResult
from conformance.loading import Plugin
from conformance.providers.catalog import profile_for_model
from conformance.providers.validation import lint_request
from conformance.scenarios import (
    LEVELS,
    SCENARIO_FORMAT_VERSION,
    Budget,
    Expectation,
    Scenario,
    expand_message,
    load_file,
)
from conformance.strategies import (
    VIOLATION_KINDS,
    broken_transcripts,
    fixed_generation,
    transcripts,
)
from conformance.traffic.verdicts import load_library
from conformance.workers import WorkerPool
from reference_impl.documents import dump_yaml
from reference_impl.errors import CtxconfError
from reference_impl.rings import validate as pairing_violations
from reference_impl.shapes import get_shape
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    message_to_dict,
)

__all__ = [
    "DEFAULT_EXAMPLES",
    "PLUGIN_ERROR",
    "FuzzFinding",
    "FuzzReport",
    "finding_document",
    "finding_id",
    "finding_key",
    "finding_order",
    "fuzz",
    "minimize",
    "scenario_document",
    "scenario_yaml",
]

DEFAULT_EXAMPLES: Final = 200
_MINIMIZE_ATTEMPTS: Final = 300
# Cases hypothesis may run through the plug-in while shrinking one round's finding: shrinking a
# ring-breaking trim took some 500 plug-in calls, half the run; past the cap the finding is the
# smallest seen so far, and minimize() still removes what does not matter.
_SHRINK_CALLS: Final = 150
# The scenario format has no field for these two wire details (a Responses output-message id and a
# wire ``tool_calls: []``), so sessions holding them could not be written out for replay.
_UNSUPPORTED_KINDS: Final = frozenset({"empty_tool_calls"})
_BROKEN_KINDS: Final = tuple(k for k in VIOLATION_KINDS if k not in _UNSUPPORTED_KINDS)

PLUGIN_ERROR: Final = "plugin-error"
"""The key of a finding where the plug-in raised, crashed or hung (nothing could be judged)."""
# Within a level, checks rank in registry order except these two. A broken session sent on fails
# refuses_broken_input and provider_valid alike; ranked first, such a case is a refusal finding,
# so provider_valid's own case is one where the plug-in broke the pairing of a valid session (the
# trimmer bug). Nearly every session cut to a budget of a few tokens fails within_budget in a
# plug-in that cannot refuse; ranked last, a case that fails it and another check is the other's.
_RANK_IN_LEVEL: Final = {"refuses_broken_input": 0, "within_budget": 2}


def finding_order(key: str) -> tuple[int, int, int]:
    """Where a finding's key ranks: a plug-in error first, then the checks by level (``must``
    first) and registry order (``provider_valid`` leads it), with ``refuses_broken_input`` first
    and ``within_budget`` last of their level; a check the registry does not know comes last."""
    if key == PLUGIN_ERROR:
        return (-1, 0, 0)
    spec = REGISTRY.get(key)
    if spec is None:
        return (len(LEVELS), 0, 0)
    return (LEVELS.index(spec.level), _RANK_IN_LEVEL.get(key, 1), list(REGISTRY).index(key))


def finding_key(result: CaseResult) -> str | None:
    """Which failure a generated case is (None when it passed): :data:`PLUGIN_ERROR` when the
    plug-in errored, else the first check that did not pass in :func:`finding_order`."""
    if result.outcome == "error":
        return PLUGIN_ERROR
    failed = [c.id for c in result.checks if c.status != "pass"]
    if not failed:
        return None if result.status == "pass" else PLUGIN_ERROR
    return min(failed, key=finding_order)


@dataclass(frozen=True, slots=True)
class FuzzFinding:
    """The shrunk failing case: its scenario, what the generator meant, and what failed."""

    scenario: Scenario
    shape: str
    budget: int
    generated_as: str
    """``valid`` or the violation kind the session was broken with."""
    result: CaseResult
    replayed: bool | None = None
    """Whether its scenario, written and loaded back from YAML, failed the same checks again
    (None when not replayed)."""

    @property
    def key(self) -> str:
        """The failure this is the shrunk case of (:func:`finding_key`): a check id, or
        :data:`PLUGIN_ERROR`."""
        return finding_key(self.result) or PLUGIN_ERROR

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The checks of the finding's case that did not pass."""
        return tuple(c for c in self.result.checks if c.status != "pass")

    def describe(self) -> str:
        """One line per failed check (or the error), naming indices, ids and provenance."""
        if self.result.status == "error":
            return f"error: {self.result.reason}"
        return "\n".join(
            f"{c.id} ({c.level}, {c.status}): {c.title}: {c.message}" for c in self.failures
        )


@dataclass(frozen=True, slots=True)
class FuzzReport:
    """What a fuzz run did (plug-in, seed, examples, shapes) and the smallest failing case of
    each failure found (:attr:`findings`, in :func:`finding_order`: pairing first)."""

    plugin: str
    seed: int
    examples: int
    shapes: tuple[str, ...]
    findings: tuple[FuzzFinding, ...] = ()

    @property
    def found(self) -> bool:
        """Whether the fuzzer found a failing case."""
        return bool(self.findings)

    @property
    def finding(self) -> FuzzFinding | None:
        """The first finding (the highest-ranked failure), None when nothing failed."""
        return self.findings[0] if self.findings else None

    @property
    def replayed(self) -> bool | None:
        """Whether every finding's scenario, loaded back, failed the same checks again (None
        when nothing was found or replayed)."""
        runs = [f.replayed for f in self.findings]
        if not runs or None in runs:
            return None
        return all(runs)


class _Found(AssertionError):  # noqa: N818 - hypothesis needs an exception to shrink on
    def __init__(self, finding: FuzzFinding) -> None:
        super().__init__(finding.describe())
        self.finding = finding


# ----------------------------------------------------------------------------- the scenario


def _expressible(session: Transcript) -> bool:
    return not any(m.wire_id is not None or m.empty_tool_calls for m in session.messages)


def _compact(message: Message) -> dict[str, Any]:
    """The compact scenario form when it expands back to exactly this message, else full form."""
    full = message_to_dict(message, with_id=False)
    compact: dict[str, Any] = {"role": message.role}
    if message.name is not None:
        compact["name"] = message.name
    kinds = [p["kind"] for p in full["parts"]]
    texts = [p for p in full["parts"] if p["kind"] == "text"]
    if (
        kinds.count("text") <= 1
        and kinds.count("summary") <= 1
        and all(k in {"text", "summary", "tool_call", "tool_result", "reasoning"} for k in kinds)
    ):
        for part in full["parts"]:
            if part["kind"] == "tool_result":
                content = part["content"]
                if len(content) != 1 or content[0]["kind"] != "text":
                    break
                result: dict[str, Any] = {"id": part["call_id"], "text": content[0]["text"]}
                for key in ("is_error", "name", "item_id"):
                    if key in part:
                        result[key] = part[key]
                compact.setdefault("results", []).append(result)
            elif part["kind"] == "tool_call":
                call: dict[str, Any] = {"id": part["id"], "name": part["name"]}
                call["args"] = part["arguments"]
                if "item_id" in part:
                    call["item_id"] = part["item_id"]
                compact.setdefault("calls", []).append(call)
            elif part["kind"] == "reasoning":
                reasoning = {"origin": part["origin"], "data": json.loads(part["data"])}
                compact.setdefault("reasoning", []).append(reasoning)
            elif part["kind"] == "summary":
                compact["summary"] = part["text"]
        else:
            if texts:
                compact["text"] = texts[0]["text"]
            expanded = expand_message(compact)
            if expanded.get("parts") == full["parts"] and set(compact) - {"role", "name"}:
                return compact
    return {k: v for k, v in full.items() if k in {"role", "name", "parts"}}


def scenario_document(
    session: Transcript,
    *,
    scenario_id: str,
    title: str,
    shape: str,
    budget: int,
    outcome: str,
    notes: str = "",
) -> dict[str, Any]:
    """A scenario file (format version 1, one ``must`` scenario) holding ``session`` as data."""
    tools = []
    for tool in session.tools:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description:
            entry["description"] = tool.description
        entry["parameters"] = tool.parameters_value()
        if tool.side_effect:
            entry["side_effect"] = True
        tools.append(entry)
    scenario: dict[str, Any] = {
        "id": scenario_id,
        "title": title,
        "level": "must",
        "tags": ["fuzz"],
    }
    if notes:
        scenario["notes"] = notes
    scenario |= {
        "shapes": [shape],
        "tools": tools,
        "session": [_compact(m) for m in session.messages],
        "budget": budget,
        # A session broken on purpose says so (the loader refuses one that does not).
        "expect": {"outcome": outcome, "input": "invalid"}
        if outcome == "refused"
        else {"outcome": outcome},
    }
    return {"version": SCENARIO_FORMAT_VERSION, "topic": "fuzz finding", "scenarios": [scenario]}


def scenario_yaml(document: Mapping[str, Any]) -> str:
    """A scenario document as YAML, in the corpus's key order, ready to drop into ``scenarios/``."""
    return dump_yaml(dict(document), sort_keys=False, allow_unicode=True, width=100)


def _scenario(session: Transcript, shape: str, budget: int, outcome: str) -> Scenario:
    """The in-memory twin of what :func:`scenario_document` writes (same session, same knobs)."""
    return Scenario(
        id="fuzz-case",
        title="generated by ctxconf fuzz",
        level="must",
        source="<fuzz>",
        session=session,
        budget=Budget((budget,)),
        expect=Expectation(
            outcome=outcome,  # type: ignore[arg-type]
            input="invalid" if outcome == "refused" else "valid",
        ),
        tags=("fuzz",),
        shapes=(shape,),
    )


# --------------------------------------------------------------------------------- the search


_Runner = Callable[[Case, Sequence[CheckSpec]], CaseResult]


def _target_rules(shape: str) -> frozenset[str]:
    """The rule ids of the profile a generated case is judged with (the shape's default model)."""
    return frozenset(profile_for_model(shape, None, DEFAULT_MODELS[shape]).rules)


def _expected_outcome(scenario: Scenario, shape: str) -> str | None:
    """``refused`` when the input breaks pairing by a rule of the target, ``either`` when it is
    valid there, None when the target rejects it for another reason (not a case to judge)."""
    body = render_input(scenario, scenario.session, shape)
    as_seen = get_shape(shape).parse_request(body)
    rules = _target_rules(shape)
    if any(rules.intersection(v.rules) for v in pairing_violations(as_seen)):
        return "refused"
    profile = profile_for_model(shape, None, DEFAULT_MODELS[shape]).id
    if any(not v.accepted for v in lint_request(body, shape, profile=profile)):
        return None
    return "either"


def _run(run: _Runner, scenario: Scenario, shape: str, budget: int) -> CaseResult:
    case = Case(0, scenario, shape, None, budget)
    return run(case, checks_for(scenario, level="must"))


def _judge_one(
    run: _Runner, shape: str, session: Transcript, budget: int
) -> tuple[Scenario, CaseResult] | None:
    """Run one generated case; None when it is no case for the target (the shape cannot carry
    the session, or its validators reject it for a reason no assembler can repair)."""
    try:
        outcome = _expected_outcome(_scenario(session, shape, budget, "either"), shape)
    except CtxconfError:
        return None
    if outcome is None:
        return None
    scenario = _scenario(session, shape, budget, outcome)
    return scenario, _run(run, scenario, shape, budget)


# ---------------------------------------------------------------------------- minimizing


def _failed_ids(result: CaseResult) -> frozenset[str]:
    return frozenset(c.id for c in result.checks if c.status != "pass")


def _without_call(session: Transcript, call_id: str) -> Transcript:
    """``session`` without one tool call and its results (messages left empty are dropped)."""
    messages: list[Message] = []
    for message in session.messages:
        parts = tuple(
            p
            for p in message.parts
            if not (isinstance(p, ToolCallPart) and p.id == call_id)
            and not (isinstance(p, ToolResultPart) and p.call_id == call_id)
        )
        if parts or not message.parts:
            messages.append(replace(message, parts=parts))
    return session.with_messages(messages)


def _simpler(session: Transcript) -> list[Transcript]:
    """Candidate sessions one simplification away, most drastic first."""
    messages = session.messages
    out = [session.with_messages(messages[:i] + messages[i + 1 :]) for i in range(len(messages))]
    ids = [p.id for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
    out.extend(_without_call(session, call_id) for call_id in ids)
    for i, message in enumerate(messages):
        for j, part in enumerate(message.parts):
            if isinstance(part, ImagePart | FilePart) and len(message.parts) > 1:
                parts = message.parts[:j] + message.parts[j + 1 :]
                out.append(
                    session.with_messages(
                        (*messages[:i], replace(message, parts=parts), *messages[i + 1 :])
                    )
                )
        if message.name is not None:
            out.append(
                session.with_messages(
                    (*messages[:i], replace(message, name=None), *messages[i + 1 :])
                )
            )
    if session.tools:
        used = {p.name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
        kept = tuple(t for t in session.tools if t.name in used)
        if len(kept) < len(session.tools):
            out.append(replace(session, tools=kept))
    return out


def minimize(plugin: Plugin, finding: FuzzFinding, timeout: float = DEFAULT_TIMEOUT) -> FuzzFinding:
    """Greedily remove parts of the finding's session that do not matter: each candidate one
    step simpler (a message, a tool call with its results, an attachment, a name, unused tool
    schemas) is kept when the case still fails with the same checks and the same expectation.
    Every candidate runs in a supervised worker, as in :func:`fuzz`."""
    with WorkerPool(
        plugin, jobs=1, timeout=timeout, library=load_library(), failed=unrun_result
    ) as pool:
        return _minimize(pool.run_one, finding)


def _minimize(run: _Runner, finding: FuzzFinding) -> FuzzFinding:
    target = _failed_ids(finding.result)
    current = finding
    attempts = 0
    improved = True
    while improved and attempts < _MINIMIZE_ATTEMPTS:
        improved = False
        for candidate in _simpler(current.scenario.session):
            attempts += 1
            if attempts > _MINIMIZE_ATTEMPTS:
                break
            if not candidate.messages or not _expressible(candidate):
                continue
            judged = _judge_one(run, current.shape, candidate, current.budget)
            if judged is None:
                continue
            scenario, result = judged
            if scenario.expect.outcome != current.scenario.expect.outcome:
                continue
            if result.status == current.result.status and _failed_ids(result) == target:
                current = replace(current, scenario=scenario, result=result)
                improved = True
                break
    return current


def _session_strategy(shape: str, broken: bool) -> st.SearchStrategy[tuple[Transcript, str]]:
    caps = get_shape(shape).capabilities
    valid = transcripts(caps, min_messages=2, max_messages=12).map(lambda t: (t, "valid"))
    if not broken:
        return valid
    kinds = st.sampled_from(_BROKEN_KINDS)
    damaged = kinds.flatmap(lambda k: broken_transcripts(k, caps, max_messages=8))
    # Mostly valid sessions: budget pressure on real rings is where trimmers break.
    return st.one_of(valid, valid, valid, damaged.map(lambda pair: (pair[0], str(pair[1]))))


def _full_size(shape: str, session: Transcript) -> int:
    counter = reference_counter(shape, DEFAULT_MODELS[shape])
    try:
        return counter.count(
            get_shape(shape).parse_request(get_shape(shape).render_request(session))
        ).total
    except CtxconfError:
        return 0


def fuzz(
    plugin: Plugin,
    *,
    shapes: Sequence[str] | None = None,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    broken: bool = True,
    replay: bool = True,
) -> FuzzReport:
    """Search for a session and budget on which ``plugin`` fails a ``must`` check; shrink it.

    Every example runs in a supervised worker process (:class:`conformance.workers.WorkerPool`),
    as ``ctxconf run`` runs its cases: a plug-in that ends its process is a finding, not the end
    of the search."""
    with WorkerPool(
        plugin, jobs=1, timeout=timeout, library=load_library(), failed=unrun_result
    ) as pool:
        return _fuzz(
            pool.run_one,
            plugin,
            shapes=shapes,
            examples=examples,
            seed=seed,
            broken=broken,
            replay=replay,
        )


def _fuzz(
    run: _Runner,
    plugin: Plugin,
    *,
    shapes: Sequence[str] | None,
    examples: int,
    seed: int | None,
    broken: bool,
    replay: bool,
) -> FuzzReport:
    chosen = tuple(s for s in plugin.shapes if shapes is None or s in shapes)
    if not chosen:
        raise ValueError(f"the plug-in speaks {', '.join(plugin.shapes)}; none of {shapes} chosen")
    used_seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
    # Round by round, each a search whose property fails only on a failure not found yet: a
    # case whose first failing check (finding_key) was found in an earlier round passes. So each
    # check gets a shrunk case of its own, and the one round that finds nothing ends the search.
    # The rounds share the example budget: a round that finds something used the cases it
    # generated up to its finding (shrinking is not counted, as before).
    found: dict[str, FuzzFinding] = {}
    left, number = examples, 0
    while left > 0:
        tried, finding = _search_round(
            run, _cases(chosen, broken), _round_seed(used_seed, number), left, frozenset(found)
        )
        if finding is None:
            break
        found[finding.key] = finding
        left -= tried
        number += 1
    findings = []
    for key in sorted(found, key=finding_order):
        finding = _minimize(run, found[key])
        if replay:
            finding = replace(finding, replayed=_replays(run, plugin, used_seed, finding))
        findings.append(finding)
    return FuzzReport(plugin.name, used_seed, examples, chosen, tuple(findings))


def _cases(
    chosen: Sequence[str], broken: bool
) -> st.SearchStrategy[tuple[str, Transcript, str, int]]:
    """A shape, a session for it (``valid`` or the violation kind) and a budget."""

    @st.composite
    def cases(draw: st.DrawFn) -> tuple[str, Transcript, str, int]:
        shape = draw(st.sampled_from(chosen))
        session, generated_as = draw(_session_strategy(shape, broken))
        size = _full_size(shape, session)
        # Around the session's own size: below it the plug-in must cut, above it nothing to do.
        # Budgets start at 1: the scenario format has no zero budget.
        low, high = max(1, size), max(1, size) * 2 + 64
        budget = draw(st.integers(1, low) | st.integers(low, high) | st.just(low))
        return shape, session, generated_as, budget

    return cases()


def _round_seed(seed: int, number: int) -> int:
    """The seed of search round ``number``: the run's own for the first (a run that finds
    nothing searches as it always did), one derived from it for each later round."""
    if number == 0:
        return seed
    return random.Random(f"{seed}/{number}").randrange(2**32)  # noqa: S311 - a search seed


def _search_round(
    run: _Runner,
    cases: st.SearchStrategy[tuple[str, Transcript, str, int]],
    seed: int,
    examples: int,
    known: frozenset[str],
) -> tuple[int, FuzzFinding | None]:
    """One search of up to ``examples`` cases for a failure whose key is not in ``known``;
    returns how many cases it generated up to it and the finding, shrunk by hypothesis (None
    when nothing new failed). A local minimum of "fails with a new key" is one of its own key.

    Each case is judged once (hypothesis draws the same case more than once, and replays the
    smallest at the end); past :data:`_SHRINK_CALLS` judged while shrinking, a case not judged
    yet counts as passing, so that shrinking ends on the smallest failing case judged."""
    tried, shrinking = 0, False
    judged_cases: dict[str, FuzzFinding | None] = {}

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(cases)
    def search(case: tuple[str, Transcript, str, int]) -> None:
        nonlocal tried, shrinking
        shape, session, generated_as, budget = case
        assume(_expressible(session))
        seen = repr(case)
        if seen not in judged_cases:
            if shrinking and len(judged_cases) >= tried + _SHRINK_CALLS:
                return
            judged = _judge_one(run, shape, session, budget)
            assume(judged is not None)
            assert judged is not None
            scenario, result = judged
            tried += not shrinking  # after the first finding, hypothesis is shrinking it
            key = finding_key(result)
            new = key is not None and key not in known
            judged_cases[seen] = (
                FuzzFinding(scenario, shape, budget, generated_as, result) if new else None
            )
        finding = judged_cases[seen]
        if finding is not None:
            shrinking = True
            raise _Found(finding)

    try:
        with fixed_generation():  # the same seed searches the same cases in any process
            search()
    except _Found as found:
        return tried, found.finding
    return tried, None


def finding_id(seed: int, finding: FuzzFinding) -> str:
    """The scenario id a finding is written under: ``fuzz-<seed>-<key>`` (``fuzz-1-provider-valid``:
    a scenario id has no underscore)."""
    return f"fuzz-{seed}-{finding.key.replace('_', '-')}"


def finding_document(report: FuzzReport) -> dict[str, Any]:
    """The scenario file for a report's findings, one scenario each, in the report's order
    (call only when ``report.found``)."""
    assert report.found
    scenarios = [
        _finding_scenario(report.plugin, report.seed, report.examples, finding)
        for finding in report.findings
    ]
    return {**scenarios[0], "scenarios": [s for d in scenarios for s in d["scenarios"]]}


def _finding_scenario(
    plugin: str, seed: int, examples: int, finding: FuzzFinding
) -> dict[str, Any]:
    failed = ", ".join(c.id for c in finding.failures) or "error"
    notes = (
        f"Found by `ctxconf fuzz --impl {plugin} --seed {seed} --examples {examples}` and "
        f"shrunk by hypothesis to the smallest case whose first failure is {finding.key}. "
        f"Generated as: {finding.generated_as}. Failed: {failed}.\n{finding.describe()}"
    )
    return scenario_document(
        finding.scenario.session,
        scenario_id=finding_id(seed, finding),
        title=(
            f"fuzz finding: {finding.key} ({finding.generated_as} session, {finding.shape} at "
            f"{finding.budget})"
        ),
        shape=finding.shape,
        budget=finding.budget,
        outcome=finding.scenario.expect.outcome,
        notes=notes,
    )


def _replays(run: _Runner, plugin: Plugin, seed: int, finding: FuzzFinding) -> bool:
    """Load the finding's written scenario back through the runner's loader and run it again."""
    text = scenario_yaml(_finding_scenario(plugin.name, seed, 0, finding))
    with tempfile.TemporaryDirectory(prefix="ctxconf-fuzz-") as folder:
        path = Path(folder) / "must" / "finding.yaml"
        path.parent.mkdir()
        path.write_text(text, "utf-8")
        try:
            (loaded,) = load_file(path)
        except CtxconfError:
            return False
    again = _run(run, loaded, finding.shape, finding.budget)
    before = {c.id for c in finding.failures}
    after = {c.id for c in again.checks if c.status != "pass"}
    return again.status == finding.result.status and before == after
