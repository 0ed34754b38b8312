"""The cassette library in a run: loaded once, O(1) skeleton lookups, provenance in every report,
stale cassettes reported loudly; ``ctxconf record`` is idempotent and prunes what it no longer
produces."""

from __future__ import annotations

import io
import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import CASSETTES
from rich.console import Console

from conformance.cli import cli
from conformance.engine import run_events
from conformance.loading import load_plugin
from conformance.providers.catalog import load_catalog
from conformance.providers.validation import validate_request
from conformance.reporting import (
    JsonLinesWriter,
    record_from_events,
    render_html,
    render_junit,
    render_markdown,
    terminal_renderable,
)
from conformance.reporting.matrix import provenance_counts
from conformance.scenarios import default_corpus_path, load_corpus
from conformance.traffic.verdicts import (
    RERECORD_COMMAND,
    CassetteLibrary,
    judge_request,
    load_library,
)

SCENARIO = "single-tool"
SHAPE = "openai-chat"


def _copy(tmp_path: Path, shape: str = SHAPE, name: str = SCENARIO) -> Path:
    target = tmp_path / shape / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(CASSETTES / shape / f"{name}.yaml", target)
    return target


def _doctor_first_accept(path: Path) -> None:
    """Make the first accepted interaction claim a C1 rejection: a cassette the validators
    contradict (as if the catalog had changed since recording)."""
    document = yaml.safe_load(path.read_text("utf-8"))
    for interaction in document["interactions"]:
        response = interaction["response"]
        if response["status"]["code"] == 200:
            response["status"] = {"code": 400, "message": "Bad Request"}
            response["headers"]["x-ctxconf-rule"] = ["C1"]
            response["body"]["string"] = json.dumps(
                {"error": {"message": "doctored", "type": "invalid_request_error"}}
            )
            break
    else:
        pytest.fail(f"{path} has no accepted interaction to doctor")
    path.write_text(yaml.safe_dump(document, sort_keys=False), "utf-8")


def _run(library: CassetteLibrary) -> Any:
    scenarios = tuple(s for s in load_corpus(default_corpus_path()) if s.id == SCENARIO)
    assert scenarios
    events = list(run_events(load_plugin("reference"), scenarios, shapes=[SHAPE], library=library))
    return events, record_from_events(events)


# ------------------------------------------------------------------------------ the library


def test_library_is_read_once_and_again_after_a_rewrite(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    first = load_library(tmp_path)
    assert load_library(tmp_path) is first
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    again = load_library(tmp_path)
    assert again is not first
    assert len(again) == len(first)
    assert load_library(tmp_path / "absent").interactions == []


def test_a_live_recording_answers_before_an_emulated_one_of_the_same_skeleton(
    tmp_path: Path,
) -> None:
    emulated = _copy(tmp_path)
    live = emulated.with_name("zz-live-copy.yaml")  # sorts after: path order alone would lose
    document = yaml.safe_load(emulated.read_text("utf-8"))
    document["ctxconf"]["recorded_against"] = "live"
    live.write_text(yaml.safe_dump(document, sort_keys=False), "utf-8")
    library = CassetteLibrary(tmp_path)
    skel = library.interactions[0].skeleton
    found = library.lookup(skel, profile="openai-default")
    assert [i.path.name for i in found] == ["zz-live-copy.yaml", emulated.name]
    assert found[0].verdict().provenance == "recorded-live"
    assert found[1].verdict().provenance == "recorded-emulated"


def test_judgement_uses_the_recording_with_its_provenance_and_cassette() -> None:
    library = load_library(CASSETTES)
    item = next(
        i
        for i in library.interactions
        if i.metadata.scenario == SCENARIO and i.shape == SHAPE and i.status == 200
    )
    assert isinstance(item.request_body, Mapping)
    judged = judge_request(item.request_body, SHAPE, library=library)
    assert judged.verdict.provenance == "recorded-emulated"
    assert judged.cassette is not None
    assert judged.cassette.startswith(f"{SHAPE}/{SCENARIO}.yaml#")
    assert not judged.stale
    # Nothing recorded: the validators answer now, and say so.
    empty = CassetteLibrary(Path("/nonexistent"))
    now = judge_request(item.request_body, SHAPE, library=empty)
    assert now.verdict.provenance == "emulated"
    assert now.cassette is None


CONTENT = st.text(min_size=1, max_size=40)  # hypothesis never draws surrogates here


def _replace_texts(value: object, text: str) -> object:
    """Every user-visible text replaced (ids, names, roles and types kept): same skeleton."""
    if isinstance(value, dict):
        return {
            k: text
            if k in {"content", "text"} and isinstance(v, str) and v
            else _replace_texts(v, text)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_replace_texts(v, text) for v in value]
    return value


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=CONTENT, pick=st.integers(min_value=0))
def test_a_recorded_verdict_applies_to_every_request_of_the_same_structure(
    text: str, pick: int
) -> None:
    library = load_library(CASSETTES)
    full = [
        i
        for i in library.interactions
        if i.shape == SHAPE and i.metadata.content == "full" and isinstance(i.request_body, dict)
    ]
    item = full[pick % len(full)]
    assert isinstance(item.request_body, dict)
    body = _replace_texts(item.request_body, text)
    assert isinstance(body, dict)
    judged = judge_request(body, SHAPE, dialect=item.skeleton.get("dialect"), library=library)
    # Another body of the same structure gets the recorded answer, labelled as a skeleton match.
    exact = any(i.same_request(body) for i in library.interactions)
    assert judged.verdict.provenance == ("recorded-emulated" if exact else "recorded-skeleton")
    assert judged.verdict.verdict == item.verdict().verdict


# ------------------------------------------------------------------------------ stale cassettes


def test_a_stale_cassette_fails_loudly_in_the_check_and_every_report(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    _doctor_first_accept(path)
    events, record = _run(CassetteLibrary(tmp_path))
    stale = [c for c in record.cases if (c.verdict or {}).get("stale_cassette")]
    assert stale, "the doctored cassette should contradict the validators"
    case = stale[0]
    assert case.status == "fail"
    failed = {c.id: c for c in case.checks if c.status == "fail"}
    assert "provider_valid" in failed
    assert failed["provider_valid"].title.startswith("stale cassette")
    assert RERECORD_COMMAND in failed["provider_valid"].message
    assert case.verdict is not None
    assert case.verdict["provenance"] == "recorded-emulated"
    assert case.verdict["stale_cassette"]["validators"]["verdict"] == "accept"
    # The doctored recording names rule C1: its evidence class is stated with it.
    c1 = load_catalog().rules["C1"]
    assert f"rule C1 (evidence {c1.evidence})" in case.verdict["stale_cassette"]["message"]

    stream = io.StringIO()
    writer = JsonLinesWriter(stream)
    for event in events:
        writer(event)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert any((line.get("verdict") or {}).get("stale_cassette") for line in lines)
    markdown = render_markdown(record)
    assert "stale cassette" in markdown
    assert RERECORD_COMMAND in markdown
    assert "stale cassette" in render_html(record)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(terminal_renderable(record))
    assert "WARNING" in console.file.getvalue()  # type: ignore[attr-defined]
    junit = ET.fromstring(render_junit(record))
    names = {p.get("name") for p in junit.iter("property")}
    assert "stale_cassette" in names


def test_recorded_and_computed_verdicts_are_counted_apart(tmp_path: Path) -> None:
    _copy(tmp_path)
    _, recorded = _run(CassetteLibrary(tmp_path))
    _, computed = _run(CassetteLibrary(tmp_path / "absent"))
    with_verdict = sum(1 for c in computed.cases if c.verdict)
    assert with_verdict > 0
    assert provenance_counts(computed.cases)["emulated"] == with_verdict
    assert provenance_counts(recorded.cases)["recorded-emulated"] == with_verdict
    assert recorded.footer["cassettes"]["files"] == 1
    junit = ET.fromstring(render_junit(recorded))
    values = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert values["verdicts.recorded-emulated"] == str(with_verdict)
    assert values["verdict_provenance"] == "recorded-emulated"
    assert "recorded-emulated" in render_markdown(recorded)


# ------------------------------------------------------------------------------ ctxconf record


def _record(out: Path, *extra: str) -> Any:
    return CliRunner().invoke(
        cli, ["record", "--shape", "gemini", "--scenarios", SCENARIO, "--out", str(out), *extra]
    )


def test_recording_twice_changes_nothing_and_keeps_the_date(tmp_path: Path) -> None:
    assert _record(tmp_path).exit_code == 0
    files = sorted(tmp_path.rglob("*.yaml"))
    assert any(p.stem == SCENARIO for p in files)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    result = _record(tmp_path)
    assert result.exit_code == 0, result.output
    assert sorted(tmp_path.rglob("*.yaml")) == files
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before
    assert "0 written" in result.output

    # An older recording of the same interactions keeps its date.
    path = tmp_path / "gemini" / f"{SCENARIO}.yaml"
    text = path.read_text("utf-8")
    dated = yaml.safe_load(text)["ctxconf"]["date"]
    old = text.replace(f"date: '{dated}'", "date: '2000-01-01'")
    path.write_text(old, "utf-8")
    assert _record(tmp_path).exit_code == 0
    assert path.read_text("utf-8") == old

    # A changed interaction is written again, with today's date.
    document = yaml.safe_load(old)
    document["interactions"][0]["response"]["status"]["code"] = 299
    path.write_text(yaml.safe_dump(document, sort_keys=False), "utf-8")
    assert _record(tmp_path).exit_code == 0
    again = yaml.safe_load(path.read_text("utf-8"))
    assert again["ctxconf"]["date"] != "2000-01-01"
    assert again["interactions"][0]["response"]["status"]["code"] == 200


def test_prune_removes_cassettes_that_are_no_longer_produced(tmp_path: Path) -> None:
    orphan = _copy(tmp_path, "gemini", SCENARIO).with_name("renamed-long-ago.yaml")
    shutil.copy(tmp_path / "gemini" / f"{SCENARIO}.yaml", orphan)
    refused = _record(tmp_path, "--prune")
    assert refused.exit_code == 2
    assert "--prune needs the full set" in refused.output
    result = CliRunner().invoke(
        cli, ["record", "--shape", "gemini", "--out", str(tmp_path), "--prune"]
    )
    assert result.exit_code == 0, result.output
    assert not orphan.exists()
    assert "removed" in result.output
    assert (tmp_path / "gemini" / f"{SCENARIO}.yaml").is_file()
    assert (tmp_path / "gemini" / "probe-text.yaml").is_file()


def test_validators_agree_with_a_fresh_recording(tmp_path: Path) -> None:
    """The doctoring helper above really contradicts the validators (guards the stale test)."""
    path = _copy(tmp_path)
    _doctor_first_accept(path)
    library = CassetteLibrary(tmp_path)
    doctored = [
        i
        for i in library.interactions
        if i.status == 400 and i.headers.get("x-ctxconf-rule") == "C1"
    ]
    assert doctored
    body = doctored[0].request_body
    assert isinstance(body, dict)
    assert validate_request(body, SHAPE).accepted


def test_a_skeleton_match_the_validators_contradict_is_not_a_stale_cassette() -> None:
    """An emulator recording of another body of the same structure does not answer for this
    one when the validators read its content otherwise (A20: a whitespace-only text). The
    verdict is the validators' own (emulated), not the neighbour's accept labelled
    recorded-skeleton, and no cassette is called stale (re-recording would change nothing)."""
    shape = "anthropic-messages"
    library = load_library(CASSETTES)
    item = next(
        i
        for i in library.interactions
        if i.metadata.scenario == SCENARIO and i.shape == shape and i.status == 200
    )
    body = json.loads(json.dumps(item.request_body))
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    blocks = user["content"] if isinstance(user["content"], list) else None
    if blocks is None:
        user["content"] = " "
    else:
        for block in blocks:
            if block.get("type") == "text":
                block["text"] = " "
    judged = judge_request(body, shape, library=library)
    assert not judged.stale
    assert judged.cassette is None
    assert (judged.verdict.verdict, judged.verdict.rule) == ("reject", "A20")
    assert judged.verdict.provenance == "emulated"
    # The same structure with a text the rule accepts is still the recording's answer.
    for block in blocks or []:
        if block.get("type") == "text":
            block["text"] = "another question"
    if blocks is None:
        user["content"] = "another question"
    agreeing = judge_request(body, shape, library=library)
    assert agreeing.verdict.provenance == "recorded-skeleton"
    assert not agreeing.stale
