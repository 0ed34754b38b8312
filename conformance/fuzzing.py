"""Fuzzing any assembler: the ``must`` checks over generated sessions and budgets, shrunk.

:func:`fuzz` draws a shape the plug-in speaks, a session for it (valid, or broken in one of the
ways ``rings.validate`` knows, from :mod:`conformance.strategies`) and a budget around the
session's own size, wraps them into a one-case :class:`~conformance.scenarios.Scenario`, and runs
it through the engine exactly as ``ctxconf run`` would (same rendering, timeout, verdicts and
checks, ``must`` level only). Hypothesis shrinks the first failure it finds to a small session;
:func:`scenario_document` turns that into a scenario file (format version 1) that
``ctxconf run --scenarios FILE`` replays, and :func:`fuzz` checks that the replay fails the same
way before it returns.

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

from conformance.checks import CheckResult, CheckSpec, checks_for
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
    "FuzzFinding",
    "FuzzReport",
    "finding_document",
    "fuzz",
    "minimize",
    "scenario_document",
    "scenario_yaml",
]

DEFAULT_EXAMPLES: Final = 200
_MINIMIZE_ATTEMPTS: Final = 300
# The scenario format has no field for these two wire details (a Responses output-message id and a
# wire ``tool_calls: []``), so sessions holding them could not be written out for replay.
_UNSUPPORTED_KINDS: Final = frozenset({"empty_tool_calls"})
_BROKEN_KINDS: Final = tuple(k for k in VIOLATION_KINDS if k not in _UNSUPPORTED_KINDS)


@dataclass(frozen=True, slots=True)
class FuzzFinding:
    """The shrunk failing case: its scenario, what the generator meant, and what failed."""

    scenario: Scenario
    shape: str
    budget: int
    generated_as: str
    """``valid`` or the violation kind the session was broken with."""
    result: CaseResult

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
    """What a fuzz run did (plug-in, seed, examples, shapes) and the smallest failing case, if any."""

    plugin: str
    seed: int
    examples: int
    shapes: tuple[str, ...]
    finding: FuzzFinding | None
    replayed: bool | None = None
    """Whether the written scenario, loaded back from YAML, failed the same checks again."""

    @property
    def found(self) -> bool:
        """Whether the fuzzer found a failing case."""
        return self.finding is not None


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

    @hypothesis_seed(used_seed)
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
    @given(cases())
    def search(case: tuple[str, Transcript, str, int]) -> None:
        shape, session, generated_as, budget = case
        assume(_expressible(session))
        judged = _judge_one(run, shape, session, budget)
        assume(judged is not None)
        assert judged is not None
        scenario, result = judged
        if result.status != "pass":
            raise _Found(FuzzFinding(scenario, shape, budget, generated_as, result))

    try:
        with fixed_generation():  # the same seed searches the same cases in any process
            search()
    except _Found as found:
        finding = _minimize(run, found.finding)
        return FuzzReport(
            plugin.name,
            used_seed,
            examples,
            chosen,
            finding,
            replayed=_replays(run, plugin, finding) if replay else None,
        )
    return FuzzReport(plugin.name, used_seed, examples, chosen, None)


def finding_document(report: FuzzReport) -> dict[str, Any]:
    """The scenario file for a report's finding (call only when ``report.found``)."""
    finding = report.finding
    assert finding is not None
    failed = ", ".join(c.id for c in finding.failures) or "error"
    notes = (
        f"Found by `ctxconf fuzz --impl {report.plugin} --seed {report.seed} "
        f"--examples {report.examples}` and shrunk by hypothesis. Generated as: "
        f"{finding.generated_as}. Failed: {failed}.\n{finding.describe()}"
    )
    return scenario_document(
        finding.scenario.session,
        scenario_id=f"fuzz-{report.seed}",
        title=f"fuzz finding ({finding.generated_as} session, {finding.shape} at {finding.budget})",
        shape=finding.shape,
        budget=finding.budget,
        outcome=finding.scenario.expect.outcome,
        notes=notes,
    )


def _replays(run: _Runner, plugin: Plugin, finding: FuzzFinding) -> bool:
    """Load the written scenario back through the runner's loader and run it again."""
    report = FuzzReport(plugin.name, 0, 0, (finding.shape,), finding)
    text = scenario_yaml(finding_document(report))
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
