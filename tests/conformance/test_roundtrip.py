"""Recorded round trips replay offline through the real SDKs; recorded verdicts are served with
their provenance; the live code path, pointed at the emulator, labels its cassettes truthfully.

The committed set (probes and every scenario x shape x dialect) replays through the SDKs with
record_mode none, and a staleness test fails, naming the command, when the reference assembler's
current requests are not all recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from paths import CASSETTES

from conformance.cli import cli
from conformance.engine import run_events
from conformance.errors import CassetteMissError
from conformance.loading import load_plugin
from conformance.providers.emulator import create_app
from conformance.providers.emulator_transport import serving
from conformance.providers.validation import validate_request
from conformance.reporting import record_from_events
from conformance.reporting.matrix import provenance_counts, stale_cases
from conformance.scenarios import default_corpus_path, load_corpus
from conformance.traffic.roundtrip import Case, Exchange, Target, recorded_against, replay
from conformance.traffic.roundtrip_cases import (
    PROBES,
    cassette_name,
    probe_cases,
    scenario_cases,
    unrecorded,
)
from conformance.traffic.verdicts import RERECORD_COMMAND, CassetteLibrary, recorded_verdict
from reference_impl.transcript import SHAPE_NAMES

EXPECT = {probe.id: probe for probe in PROBES}


@pytest.fixture(scope="module", params=SHAPE_NAMES)
def replayed(request: pytest.FixtureRequest) -> tuple[str, list[Exchange]]:
    shape: str = request.param
    return shape, replay(probe_cases(shape), CASSETTES)


def test_replay_parses_every_recorded_answer_through_the_sdks(
    replayed: tuple[str, list[Exchange]],
) -> None:
    shape, exchanges = replayed
    assert {e.case.cassette for e in exchanges} == {
        probe.id for probe in PROBES if probe.applies_to(shape)
    }
    for exchange in exchanges:
        probe = EXPECT[exchange.case.cassette]
        if exchange.accepted:
            assert exchange.parse_error is None
            assert exchange.message is not None
            assert len(exchange.message.tool_calls) == probe.calls_in_reply, exchange.case.label
        assert exchange.input_tokens is None or exchange.input_tokens > 0


def test_recorded_verdicts_match_the_hand_written_expectations(
    replayed: tuple[str, list[Exchange]],
) -> None:
    shape, exchanges = replayed
    # The expectation is about the probe's session; when assembly changed its structure (merged
    # consecutive users for B3, say) the session is recorded as sent too, and that is judged.
    as_sent = {e.case.cassette: e for e in exchanges if e.case.label == "session as is"}
    for exchange in exchanges:
        if as_sent.get(exchange.case.cassette, exchange) is not exchange:
            continue
        expected = EXPECT[exchange.case.cassette].expect.get(shape)
        if expected is None:
            continue  # no firm evidence either way (G4, Gemini after an unanswered call)
        got = "accept" if exchange.accepted else "reject"
        assert got == expected, (shape, exchange.case.cassette, exchange.case.label)


def test_recorded_verdicts_agree_with_the_validators_now(
    replayed: tuple[str, list[Exchange]],
) -> None:
    """A drift here means the catalog changed since recording: re-record (ctxconf record)."""
    shape, exchanges = replayed
    for exchange in exchanges:
        recorded = exchange.verdict("recorded-emulated")
        now = validate_request(exchange.case.body, shape, profile=recorded.profile)
        assert (recorded.verdict, recorded.rule) == (now.verdict, now.rule), exchange.case.label


def test_recorded_verdict_api_serves_recordings_with_provenance() -> None:
    case = next(c for c in probe_cases("openai-chat") if c.cassette == "probe-unanswered-call")
    verdict = recorded_verdict(case.body, "openai-chat", root=CASSETTES)
    assert verdict is not None
    assert verdict.provenance == "recorded-emulated"
    assert (verdict.verdict, verdict.rule, verdict.evidence) == ("reject", "C1", "observed")
    # Same structure, other content and ids: the same recorded verdict applies.
    body = json.loads(json.dumps(case.body).replace("call_p1", "call_zz9").replace("Paris", "Oslo"))
    again = recorded_verdict(body, "openai-chat", root=CASSETTES)
    assert again is not None
    assert again.rule == "C1"
    # A structure never recorded has no recorded verdict.
    assert (
        recorded_verdict({"model": "gpt-4o", "messages": []}, "openai-chat", root=CASSETTES) is None
    )
    # Gemini: the model is in the URL; without it any model of the skeleton matches.
    gemini = next(c for c in probe_cases("gemini") if c.cassette == "probe-text")
    found = recorded_verdict(gemini.body, "gemini", root=CASSETTES)
    assert found is not None
    assert found.accepted
    assert recorded_verdict(gemini.body, "gemini", model="gemini-9-ultra", root=CASSETTES) is None


def test_recorded_verdict_respects_the_profile() -> None:
    case = next(c for c in probe_cases("anthropic-messages") if c.cassette == "probe-text")
    assert recorded_verdict(
        case.body, "anthropic-messages", profile="anthropic-current", root=CASSETTES
    )
    assert (
        recorded_verdict(
            case.body,
            "anthropic-messages",
            profile="anthropic-2024-strict-alternation",
            root=CASSETTES,
        )
        is None
    )


def test_a_replay_miss_names_the_closest_recorded_skeleton() -> None:
    case = next(c for c in probe_cases("openai-chat") if c.cassette == "probe-ring-followup")
    messages = [*case.body["messages"], {"role": "user", "content": "one more"}]
    changed = Case(case.cassette, "extra turn", {**case.body, "messages": messages}, case.shape)
    with pytest.raises(CassetteMissError, match=r"closest recorded: interaction 0 \(.*messages"):
        replay([changed], CASSETTES)


def test_recorded_against_is_decided_from_the_answers() -> None:
    case = Case("x", "x", {}, "openai-chat")
    emulated = Exchange(
        case, 200, {}, {"x-ctxconf-provenance": "emulated", "x-ctxconf-profile": "openai-2024"}
    )
    plain = Exchange(case, 200, {}, {})
    official = Target.official("openai-chat", env={})
    assert recorded_against(official, "openai-chat", [plain]) == "live"
    assert recorded_against(official, "openai-chat", [emulated]) == "emulator:openai-2024"
    gateway = Target(root="https://gateway.example:8443", live=True)
    assert recorded_against(gateway, "openai-chat", [plain]) == "custom:gateway.example:8443"
    plain_http = Target(root="http://api.openai.com", live=True)
    assert recorded_against(plain_http, "openai-chat", [plain]).startswith("custom:")
    bedrock = Target.official("bedrock-converse", env={"AWS_REGION": "eu-west-1"})
    assert bedrock.root == "https://bedrock-runtime.eu-west-1.amazonaws.com"
    assert recorded_against(bedrock, "bedrock-converse", [plain]) == "live"


def test_live_path_pointed_at_the_emulator_records_it_as_emulated(tmp_path: Path) -> None:
    """``record --live --base-url``: the same code path as a live recording, labelled truthfully."""
    env = {
        "OPENAI_API_KEY": "sk-proj-thisisnotarealkey1234567",
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-123456",
    }
    with serving(create_app(profile="anthropic-2024-strict-alternation")) as url:
        result = CliRunner().invoke(
            cli,
            [
                "record",
                "--live",
                "--base-url",
                url,
                "--shape",
                "openai-chat",
                "--shape",
                "anthropic-messages",
                "--scenarios",
                "broken-unanswered-call",
                "--out",
                str(tmp_path),
            ],
            env=env,
        )
    assert result.exit_code == 0, result.output
    written = sorted(tmp_path.rglob("*.yaml"))
    assert len(written) == 2 * (len(PROBES) + 1)
    for path in written:
        document = yaml.safe_load(path.read_text("utf-8"))
        assert document["ctxconf"]["recorded_against"].startswith("emulator:")
        text = path.read_text("utf-8")
        assert "sk-proj" not in text
        assert "sk-ant" not in text
    strict = yaml.safe_load(
        (tmp_path / "anthropic-messages" / "probe-consecutive-users.yaml").read_text()
    )
    assert strict["ctxconf"]["recorded_against"] == "emulator:anthropic-2024-strict-alternation"
    assert strict["interactions"][0]["response"]["status"]["code"] == 400


def test_live_without_a_key_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["record", "--live", "--shape", "gemini", "--out", str(tmp_path)],
        env={"GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""},
    )
    assert result.exit_code == 2
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in result.output


def _record_hashed(shape: str, out: Path) -> None:
    """``ctxconf record`` of the single-tool probes in ``shape`` into ``out``, content hashed."""
    argv = ["record", "--shape", shape, "--scenarios", "single-tool", "--out", str(out)]
    result = CliRunner().invoke(cli, [*argv, "--hash-content"])
    assert result.exit_code == 0, result.output


def test_record_then_replay_in_a_fresh_folder(tmp_path: Path) -> None:
    _record_hashed("bedrock-converse", tmp_path)
    text = (tmp_path / "bedrock-converse" / "probe-text.yaml").read_text()
    assert "Say hello" not in text
    assert "content: hashed" in text
    exchanges = replay(probe_cases("bedrock-converse"), tmp_path)
    assert {e.case.cassette for e in exchanges} == {
        p.id for p in PROBES if p.applies_to("bedrock-converse")
    }
    shutil.rmtree(tmp_path / "bedrock-converse")
    with pytest.raises(CassetteMissError, match="no cassette"):
        replay(probe_cases("bedrock-converse"), tmp_path)


@pytest.mark.parametrize(
    ("shape", "framing"),
    [
        ("anthropic-messages", "event: content_block_delta"),
        ("openai-responses", "event: response.function_call_arguments.delta"),
        ("openai-chat", "data: [DONE]"),
    ],
)
def test_a_hashed_event_stream_keeps_its_events_but_not_their_text(
    tmp_path: Path, shape: str, framing: str
) -> None:
    _record_hashed(shape, tmp_path)
    text = (tmp_path / shape / "probe-stream-text.yaml").read_text()
    assert "Hello from" not in text
    assert "sha256:" in text
    assert framing in (tmp_path / shape / "probe-stream-call.yaml").read_text()
    exchanges = replay(probe_cases(shape), tmp_path)
    streamed = [e for e in exchanges if e.case.cassette.startswith("probe-stream-")]
    assert streamed
    for exchange in streamed:
        assert exchange.accepted
        assert exchange.message is not None, exchange.parse_error
        calls = exchange.message.tool_calls
        assert len(calls) == EXPECT[exchange.case.cassette].calls_in_reply
        assert all("sha256" in json.loads(c.arguments) for c in calls)


# ------------------------------------------------------------------ the committed scenario set

LIBRARY = CassetteLibrary(CASSETTES)
CORPUS = load_corpus(default_corpus_path())
SCENARIO_FILES = sorted(
    {i.path for i in LIBRARY.interactions if not i.metadata.scenario.startswith("probe-")}
)


def _recorded_cases(shape: str) -> list[Case]:
    """Every recorded request of a shape, sent again exactly as it was recorded."""
    return [
        Case(
            item.path.stem,
            f"interaction {item.index}",
            item.request_body,
            item.shape,
            item.skeleton.get("dialect"),
            item.url_model,
        )
        for item in LIBRARY.interactions
        if item.shape == shape and isinstance(item.request_body, dict)
    ]


def test_scenario_cassettes_are_committed() -> None:
    applicable = {(shape, s.id) for s in CORPUS for shape in s.shapes}
    recorded = {(p.parent.name, p.stem.split("@")[0]) for p in SCENARIO_FILES}
    assert applicable <= recorded, sorted(applicable - recorded)[:5]


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_every_committed_cassette_replays_through_the_sdks(shape: str) -> None:
    """Each recorded request goes through the real SDK again with record_mode none; the SDK parses
    the recorded answer and the status is the recorded one (probes and scenarios alike)."""
    cases = _recorded_cases(shape)
    assert cases, f"no cassettes for {shape}"
    statuses = {
        (i.path.stem, f"interaction {i.index}"): i.status
        for i in LIBRARY.interactions
        if i.shape == shape
    }
    for exchange in replay(cases, CASSETTES):
        key = (exchange.case.cassette, exchange.case.label)
        assert exchange.status == statuses[key], key
        if exchange.accepted:
            assert exchange.parse_error is None, key
            assert exchange.message is not None, key


def test_every_recorded_verdict_agrees_with_the_validators_now() -> None:
    """A disagreement is a stale cassette (the catalog changed since recording)."""
    stale = []
    for item in LIBRARY.interactions:
        if not isinstance(item.request_body, dict) or item.metadata.content != "full":
            continue
        recorded = item.verdict()
        now = validate_request(
            item.request_body,
            item.shape,
            dialect=item.skeleton.get("dialect"),
            profile=recorded.profile,
        )
        if (recorded.verdict, recorded.rule) != (now.verdict, now.rule):
            stale.append(f"{LIBRARY.label(item)}: {recorded.rule} recorded, {now.rule} now")
    assert not stale, f"re-record with `{RERECORD_COMMAND}`: " + "; ".join(stale[:5])


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_the_reference_assemblers_requests_are_recorded(shape: str) -> None:
    """Staleness: every request `ctxconf run` sends for the reference assembler (and every probe)
    has a recorded skeleton, so a changed assembler forces a re-recording."""
    cases = probe_cases(shape) + scenario_cases(CORPUS, shape)
    problems = unrecorded(cases, LIBRARY)
    assert not problems, (
        f"{len(problems)} request(s) of {shape} are not recorded; the reference assembler or the "
        f"corpus changed. Re-record with `{RERECORD_COMMAND}` and commit cassettes/.\n"
        + "\n".join(problems[:10])
    )


def test_no_cassette_outlives_its_scenario() -> None:
    produced = {
        (shape, cassette_name(s.id, d))
        for s in CORPUS
        for shape in s.shapes
        for d in s.dialects
        if d is None or shape == "openai-chat"
    }
    orphans = [
        str(p.relative_to(CASSETTES))
        for p in SCENARIO_FILES
        if (p.parent.name, p.stem) not in produced
    ]
    assert not orphans, f"remove them with `{RERECORD_COMMAND}`: {orphans}"


def test_a_default_run_replays_the_recorded_verdicts() -> None:
    """`ctxconf run` with the reference plug-in: every verdict comes from a cassette."""
    plugin = load_plugin("reference")
    events = list(run_events(plugin, CORPUS, library=LIBRARY))
    record = record_from_events(events)
    counts = provenance_counts(record.cases)
    assert counts["emulated"] == 0, [
        c.key for c in record.cases if (c.verdict or {}).get("provenance") == "emulated"
    ][:5]
    assert counts["recorded-emulated"] > 0
    assert not stale_cases(record.cases)
    assert record.footer["cassettes"]["files"] == LIBRARY.files
