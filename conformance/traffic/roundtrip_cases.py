"""The requests that round trips send: built-in probes and the scenario corpus, per shape.

Each session becomes up to two requests for one cassette: the reference assembler's request
(what a conforming agent sends), and the session rendered as it is when assembly refuses it or
changes it (so a cassette also records what the provider does with a broken structure; that is
what :func:`conformance.traffic.verdicts.recorded_verdict` answers for). Requests of equal
skeleton are sent once.

Scenario requests (:func:`scenario_cases`) are built by the engine exactly as ``ctxconf run``
builds them, one cassette per scenario, shape and dialect; :func:`unrecorded` lists the requests
that no cassette holds (the staleness test and ``ctxconf scenarios validate`` use it).

The probes are small sessions with a hand-written expectation per shape, taken from
provider-rules.md (C1, C2, A1, A2, A9, R1, R2, G2, G3, B1, B2, B3), so a replay can check the
recorded verdicts against something written independently of the emulator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from conformance.providers.catalog import profile_for_model
from conformance.providers.emulator_stream import STREAMING_SHAPES
from conformance.scenarios import DEFAULT_MODELS, Scenario
from conformance.traffic.roundtrip import Case
from conformance.traffic.skeleton import skeleton
from conformance.traffic.verdicts import RERECORD_COMMAND, CassetteLibrary
from reference_impl.assembler import assemble
from reference_impl.config import AssemblyConfig
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.shapes.dialects import render_for_dialect
from reference_impl.transcript import (
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)

__all__ = [
    "PROBES",
    "Expect",
    "Probe",
    "cases_for_session",
    "cassette_name",
    "probe_cases",
    "scenario_cases",
    "unrecorded",
]

Expect = Literal["accept", "reject"]

_WEATHER: Final = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters=canonical_json(
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    ),
)
_PARAMS: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    # Anthropic requires max_tokens; the other shapes do not need a sampling parameter.
    "anthropic-messages": (("max_tokens", "256"),),
}


def _user(text: str) -> Message:
    return Message(role="user", parts=(TextPart(text),))


def _calls(*ids: str) -> Message:
    parts: tuple[Part, ...] = tuple(
        ToolCallPart(id=i, name="get_weather", arguments=canonical_json({"city": f"City {i}"}))
        for i in ids
    )
    return Message(role="assistant", parts=parts)


def _results(*ids: str) -> Message:
    parts: tuple[Part, ...] = tuple(
        ToolResultPart(call_id=i, content=(TextPart(f"18C in City {i}"),), name="get_weather")
        for i in ids
    )
    return Message(role="tool", parts=parts)


@dataclass(frozen=True, slots=True)
class Probe:
    """A small session and what each provider does with it (``None``: no firm evidence)."""

    id: str
    title: str
    messages: tuple[Message, ...]
    expect: Mapping[str, Expect | None]
    calls_in_reply: int = 0
    """Tool calls the emulator's directive script answers with (checked after parsing)."""
    tools: tuple[ToolSpec, ...] = field(default=(_WEATHER,))
    stream: bool = False
    """Ask for an event stream (``stream: true``); only the shapes in ``STREAMING_SHAPES``."""

    def applies_to(self, shape: str) -> bool:
        """Whether the probe is sent in ``shape`` (a streaming probe only where a stream exists)."""
        return not self.stream or shape in STREAMING_SHAPES

    def session(self, shape: str, model: str) -> Transcript:
        """The probe as a transcript for ``shape`` and ``model`` (tool-result names only for
        Gemini)."""
        messages = self.messages if shape == "gemini" else tuple(map(_unnamed, self.messages))
        params = _PARAMS.get(shape, ()) + ((("stream", "true"),) if self.stream else ())
        return Transcript(messages=messages, tools=self.tools, model=model, params=params)


def _unnamed(message: Message) -> Message:
    """Only Gemini carries a tool result's name (``functionResponse.name``); drop it elsewhere."""
    parts = tuple(
        replace(p, name=None) if isinstance(p, ToolResultPart) else p for p in message.parts
    )
    return replace(message, parts=parts)


def _everywhere(expect: Expect) -> dict[str, Expect | None]:
    return dict.fromkeys(DEFAULT_MODELS, expect)


_SYSTEM: Final = Message(role="system", parts=(TextPart("You are a terse weather assistant."),))


def _question(
    probe_id: str, title: str, text: str, *, calls_in_reply: int = 0, stream: bool = False
) -> Probe:
    """The system turn and one user turn, which every provider accepts: a probe of the reply
    (the emulator's directives in ``text`` script it)."""
    shapes = STREAMING_SHAPES if stream else DEFAULT_MODELS
    return Probe(
        probe_id,
        title,
        (_SYSTEM, _user(text)),
        dict.fromkeys(shapes, "accept"),
        calls_in_reply=calls_in_reply,
        stream=stream,
    )


PROBES: Final[tuple[Probe, ...]] = (
    _question("probe-text", "system and one user turn: a plain text reply", "Say hello."),
    _question(
        "probe-call-single",
        "the reply is one tool call",
        "Weather in Paris? [emulator: call get_weather]",
        calls_in_reply=1,
    ),
    _question(
        "probe-call-parallel",
        "the reply is two parallel tool calls",
        "Weather in Paris and Rome? [emulator: call get_weather x2]",
        calls_in_reply=2,
    ),
    _question(
        "probe-think",
        "the reply carries a reasoning artifact before its tool call",
        "Weather in Oslo? [emulator: think] [emulator: call get_weather]",
        calls_in_reply=1,
    ),
    Probe(
        "probe-ring-followup",
        "one complete ring, then the model answers in text",
        (_SYSTEM, _user("Weather in Paris?"), _calls("call_p1"), _results("call_p1")),
        # Gemini's default model (gemini-2.5-flash) takes a function call without its
        # thoughtSignature: public recordings of 2.5-flash and 2.5-flash-lite show 200 (G6 is a
        # Gemini 3 rule, profile gemini-thinking).
        _everywhere("accept"),
    ),
    Probe(
        "probe-parallel-ring",
        "a complete parallel ring and a follow-up user turn",
        (
            _SYSTEM,
            _user("Weather in Paris and Rome?"),
            _calls("call_p1", "call_p2"),
            _results("call_p1", "call_p2"),
            Message(role="assistant", parts=(TextPart("Paris 18C, Rome 18C."),)),
            _user("Thanks."),
        ),
        _everywhere("accept"),
    ),
    Probe(
        "probe-unanswered-call",
        "a tool call without its result (C1, R1, A1, B2)",
        (_SYSTEM, _user("Weather in Paris?"), _calls("call_p1"), _user("And?")),
        # Gemini G3: a call turn followed by plain user text answers none of its calls
        # (observed: microsoft/vscode#299295, iOfficeAI/gemini-cli-pro#42).
        _everywhere("reject"),
    ),
    Probe(
        "probe-orphan-result",
        "a tool result without its call (C2, R2, A2, G2, B1)",
        (_SYSTEM, _user("Weather in Paris?"), _results("call_p9")),
        _everywhere("reject"),
    ),
    Probe(
        "probe-consecutive-users",
        "two user turns in a row (A9 old profile, B3 rejects; G4 contested)",
        (_SYSTEM, _user("Hello."), _user("Weather in Paris?")),
        {
            "openai-chat": "accept",
            "openai-responses": "accept",
            "anthropic-messages": "accept",  # anthropic-current merges them (A9 relaxed)
            "gemini": None,  # G4: contested evidence
            "bedrock-converse": "reject",  # B3
        },
    ),
    # Streaming: the answer arrives as the provider's event stream and the SDK accumulates it.
    _question(
        "probe-stream-text",
        "stream: true, a text reply read through the SDK's event stream",
        "Say hello. [emulator: say Hello from the event stream]",
        stream=True,
    ),
    _question(
        "probe-stream-call",
        "stream: true, reasoning and two parallel tool calls read through the event stream",
        "Weather in Paris and Rome? [emulator: think] [emulator: call get_weather x2]",
        calls_in_reply=2,
        stream=True,
    ),
)


def _body(shape: str, transcript: Transcript) -> dict[str, object]:
    return get_shape(shape).render_request(transcript)


def cases_for_session(
    cassette: str,
    session: Transcript,
    shape: str,
    *,
    config: AssemblyConfig | None = None,
    budget: int | None = None,
    dialect: str | None = None,
    model: str | None = None,
) -> list[Case]:
    """The assembled request and the session as it is (when different), deduplicated.

    A session the shape cannot carry (a part it has no wire form for) gives no case.
    """
    bodies: list[tuple[str, dict[str, object]]] = []
    with contextlib.suppress(CtxconfError):  # refused: nothing assembled to send
        assembly = assemble(session, config, shape=shape, budget=budget)  # type: ignore[arg-type]
        view = assembly.view
        # A gateway dialect renders the view its own way (Ollama's "" for null, Mistral's ids).
        rendered = (
            render_for_dialect(view, dialect) if dialect else assembly.render(shape)  # type: ignore[arg-type]
        )
        bodies.append((f"assembled@{budget}" if budget else "assembled", rendered))
    # The session as a naive client would send it (base shape), to record the provider's verdict
    # on the unassembled structure too.
    with contextlib.suppress(CtxconfError):
        bodies.append(("session as is", _body(shape, session)))
    return _unique(
        [Case(cassette, label, body, shape, dialect, model) for label, body in bodies if body]
    )


def probe_cases(
    shape: str, *, model: str | None = None, probes: Sequence[Probe] = PROBES
) -> list[Case]:
    """Every probe in ``shape``, for ``model`` (the shape's default model otherwise)."""
    chosen = model or DEFAULT_MODELS[shape]
    # A model carried in the URL (Gemini, Bedrock) is part of what a cassette matches.
    in_url = get_shape(shape).model_in_url
    out: list[Case] = []
    for probe in probes:
        if not probe.applies_to(shape):
            continue
        out.extend(
            cases_for_session(
                probe.id,
                probe.session(shape, chosen),
                shape,
                model=chosen if in_url else None,
            )
        )
    return out


def cassette_name(scenario_id: str, dialect: str | None) -> str:
    """A scenario's cassette id in ``cassettes/<shape>/``: ``<id>``, or ``<id>@<dialect>``."""
    return f"{scenario_id}@{dialect}" if dialect else scenario_id


def _with_model(scenario: Scenario, shape: str, model: str | None) -> Scenario:
    if model is None:
        return scenario
    return replace(scenario, models={**scenario.models, shape: model})


def scenario_cases(
    scenarios: Sequence[Scenario], shape: str, *, model: str | None = None
) -> list[Case]:
    """The requests ``ctxconf run`` sends for the scenarios that apply to ``shape``.

    Each case of the run's plan (scenario x dialect x budget) and each turn is built by the
    engine itself (:func:`conformance.engine.assembly_request`) and assembled by the reference
    plug-in, so a cassette holds exactly the skeletons a default run looks up. The session as the
    plug-in received it is added too (what a pass-through assembler sends). One cassette per
    scenario and dialect (:func:`cassette_name`); equal skeletons are sent once.
    """
    # Imported here: the engine pulls in the checks and reporters, which record does not need
    # for probes alone.
    from conformance.engine import assembly_request, plan_cases  # noqa: PLC0415
    from conformance.reference_plugin import ReferenceAssembler  # noqa: PLC0415

    chosen = [_with_model(s, shape, model) for s in scenarios if shape in s.shapes]
    assembler = ReferenceAssembler(shape)
    in_url = get_shape(shape).model_in_url
    grouped: dict[str, list[Case]] = {}
    for case in plan_cases(chosen, [shape], [shape]):
        name = cassette_name(case.scenario.id, case.dialect)
        url_model = case.scenario.model_for(shape) if in_url else None
        for turn, session in enumerate(case.scenario.sessions()):
            try:
                request = assembly_request(case, turn, session)
            except CtxconfError:
                continue  # not renderable in this shape: `ctxconf scenarios validate` says so
            where = f"turn {turn} @{case.budget}"
            bodies: list[tuple[str, Mapping[str, object]]] = []
            with contextlib.suppress(CtxconfError):  # refused: nothing assembled to send
                bodies.append((f"{where}: assembled", assembler.assemble(request)))
            bodies.append((f"{where}: session as received", request.body))
            grouped.setdefault(name, []).extend(
                Case(name, label, dict(body), shape, case.dialect, url_model)
                for label, body in bodies
            )
    return [case for cases in grouped.values() for case in _unique(cases)]


def _unique(cases: list[Case]) -> list[Case]:
    """The first case of each request: an equal body (canonical JSON, same URL model) is sent
    once. Bodies of equal skeleton are all sent, so every case's verdict is the recording of
    that very request (``recorded-emulated``), never a neighbour's (``recorded-skeleton``)."""
    by_request: dict[tuple[str | None, str | None, str], Case] = {}
    for case in cases:
        by_request.setdefault((case.dialect, case.model, canonical_json(case.body)), case)
    return list(by_request.values())


def unrecorded(
    cases: Sequence[Case], library: CassetteLibrary, *, command: str = RERECORD_COMMAND
) -> list[str]:
    """``shape/cassette: what is missing`` for every case without a recording: no cassette file,
    or no recorded interaction of its skeleton (the assembler or the scenario changed since the
    recording). Each line ends with the command that re-records."""
    files = {(i.path.parent.name, i.path.stem) for i in library.interactions}
    problems: list[str] = []
    for case in cases:
        where = f"{case.shape}/{case.cassette}"
        if (case.shape, case.cassette) not in files:
            problems.append(
                f"{where}: no cassette {library.root / case.shape / case.cassette}.yaml; "
                f"record it with `{command}`"
            )
            continue
        model = case.model or case.body.get("model")
        profile = profile_for_model(
            case.shape, case.dialect, model if isinstance(model, str) else None
        ).id
        skel = skeleton(case.body, shape=case.shape, dialect=case.dialect, model=case.model)
        # Skeleton coverage: a case whose very body is not recorded is replayed as
        # ``recorded-skeleton`` (Anthropic cases without max_tokens: the SDK adds it on recording).
        if not library.lookup(skel, profile=profile):
            problems.append(
                f"{where}: no recorded request has the skeleton of {case.label!r} (the reference "
                f"assembler or the scenario changed since recording); re-record with `{command}`"
            )
    return list(dict.fromkeys(problems))
