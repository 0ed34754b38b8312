"""``ctxconf audit`` as a stream: unreadable input is a named row, never an abort; exit statuses
say separately whether a request would be rejected and whether input could not be read; rows come
out as lines are read; ``--jobs`` gives the same rows; the table shows findings and totals."""

from __future__ import annotations

import base64
import contextlib
import gc
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from audit_support import GOOD, ORPHAN, URL, messages_twice
from cli_support import invoke

from conformance.commands import audit as audit_command
from conformance.errors import RecordingError
from conformance.traffic import audit as traffic_audit
from conformance.traffic.audit import audit_interaction, audit_lines, audit_paths, recorded_betas
from conformance.traffic.reading import RecordedInteraction


def _line(body: object) -> str:
    return json.dumps({"url": URL, "method": "POST", "body": body})


def _rows(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_an_unreadable_file_is_a_row_and_the_folder_is_still_audited(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(_line(ORPHAN) + "\n", "utf-8")
    (tmp_path / "b.yaml").write_text("interactions: [unclosed\n", "utf-8")
    (tmp_path / "c.jsonl").write_text(_line(GOOD) + "\n", "utf-8")
    code, out, err = invoke(["audit", str(tmp_path), "--format", "jsonl", "--all"])
    rows = _rows(out)
    assert [(Path(str(r["file"])).name, r["verdict"]) for r in rows] == [
        ("a.jsonl", "reject"),
        ("b.yaml", "unreadable"),
        ("c.jsonl", "accept"),
    ]
    assert "not YAML" in str(rows[1]["message"])
    assert f"warning: {tmp_path / 'b.yaml'}" in err
    assert code == 5  # 1 (a request would be rejected) | 4 (a file could not be read)


def test_an_answer_in_more_codings_than_are_decoded_is_its_interaction_s_unreadable_row(
    tmp_path: Path,
) -> None:
    """The recordings reader decodes content codings as the proxy does (repeated lines one list,
    at most 5 codings); an interaction it cannot decode is its row, the others are judged."""
    body = json.dumps({"id": "r1"}).encode()
    for _ in range(6):
        body = gzip.compress(body, mtime=0)
    cassette = tmp_path / "coded.yaml"
    cassette.write_text(
        "interactions:\n"
        f"- request: {{uri: '{URL}', body: '{json.dumps(GOOD)}'}}\n"
        "  response:\n"
        "    status: {code: 200}\n"
        # the sixth coding on a line of its own: a reader of the first line never sees it
        "    headers: {Content-Encoding: ['gzip, gzip, gzip, gzip, gzip', gzip]}\n"
        f"    body: {{string: !!binary {base64.b64encode(body).decode()}}}\n"
        f"- request: {{uri: '{URL}', body: '{json.dumps(ORPHAN)}'}}\n",
        "utf-8",
    )
    code, out, _ = invoke(["audit", str(cassette), "--format", "jsonl"])
    rows = _rows(out)
    assert [(r["location"], r["verdict"]) for r in rows] == [
        (f"{cassette}#0", "unreadable"),
        (f"{cassette}#1", "reject"),
    ]
    assert rows[0]["message"] == (
        "interactions[0].response.body.string: the body cannot be decoded: content-encoding "
        "lists 6 codings, more than the 5 ctxconf decodes"
    )
    assert code == 5


@pytest.mark.parametrize(
    ("lines", "status"),
    [([_line(GOOD)], 0), ([_line(ORPHAN)], 1), ([_line(GOOD), "{not json"], 4)],
)
def test_exit_status_bits(tmp_path: Path, lines: list[str], status: int) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n", "utf-8")
    code, _, _ = invoke(["audit", str(log), "--format", "jsonl"])
    assert code == status


def test_a_bad_line_is_named_and_the_rest_of_the_log_is_judged(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([_line(GOOD), "", "[1, 2", _line(ORPHAN)]) + "\n", "utf-8")
    rows = list(audit_paths([log]))
    assert [(r.location, r.outcome) for r in rows] == [
        (f"{log}:1", "accept"),
        (f"{log}:3", "unreadable"),
        (f"{log}:4", "reject"),
    ]
    assert rows[1].message is not None
    assert rows[1].message.startswith("not valid JSON (")
    assert rows[2].verdict is not None
    assert rows[2].verdict.rule == "C2"
    assert rows[2].message == rows[2].to_dict()["message"] != ""


def test_a_log_line_that_is_no_request_of_any_shape_is_named_not_left_out(tmp_path: Path) -> None:
    # A log written in another format (the request nested under a key the reader does not
    # know, a line of something else) passed as "0 requests, exit 0": a clean audit of nothing.
    log = tmp_path / "log.jsonl"
    wrapped = json.dumps({"ts": "2026-01-01T00:00:00Z", "request": ORPHAN})
    lines = [wrapped, json.dumps({"foo": 1}), json.dumps({"url": URL, "body": ORPHAN})]
    log.write_text("\n".join(lines) + "\n", "utf-8")
    rows = list(audit_paths([log]))
    assert [(r.location, r.outcome) for r in rows] == [
        (f"{log}:1", "unreadable"),
        (f"{log}:2", "unreadable"),
        (f"{log}:3", "reject"),
    ]
    assert rows[0].message is not None
    assert rows[0].message.startswith("not a provider request: no URL, and an object with ts,")
    assert "an object with foo" in (rows[1].message or "")
    code, _, err = invoke(["audit", str(log), "--format", "jsonl"])
    assert code == 5  # a rejection and unreadable lines
    assert f"{log}:1: not a provider request" in err


def test_a_log_line_of_another_call_to_a_provider_is_not_judged(tmp_path: Path) -> None:
    # A gateway's log holds embeddings, uploads, completions: calls no generation route of a
    # judged shape matches, which are not requests to judge (and not unreadable either).
    log = tmp_path / "log.jsonl"
    lines = [
        json.dumps({"url": "https://api.openai.com/v1/embeddings", "body": {"model": "m"}}),
        json.dumps({"url": "https://api.openai.com/v1/files", "body": {"purpose": "batch"}}),
        json.dumps({"url": URL, "body": GOOD}),
    ]
    log.write_text("\n".join(lines) + "\n", "utf-8")
    assert [(r.location, r.outcome) for r in audit_paths([log])] == [(f"{log}:3", "accept")]


def test_a_log_line_whose_messages_is_no_list_is_judged_as_a_malformed_request() -> None:
    [row] = audit_lines([json.dumps({"model": "gpt-4o", "messages": "hello"})], file="f")
    assert (row.shape, row.outcome) == ("openai-chat", "reject")
    assert row.verdict is not None
    assert row.verdict.rule == "C0"


def _long(words: int) -> dict[str, object]:
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": "deploy " * words}]}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_context_limit_judges_requests_by_the_context_window_rule(
    tmp_path: Path, jobs: str
) -> None:
    # Without a limit no request is too long (the model's window is not in the log); with one,
    # the shape's context-window rule applies (C10 for Chat), in every worker.
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([_line(GOOD), _line(_long(30_000))]) + "\n", "utf-8")
    code, out, _ = invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", jobs])
    assert code == 0
    assert [r["verdict"] for r in _rows(out)] == ["accept", "accept"]
    args = ["audit", str(log), "--format", "jsonl", "--all", "--jobs", jobs]
    code, out, _ = invoke([*args, "--context-limit", "8000"])
    assert code == 1
    assert [(r["verdict"], r["rule"]) for r in _rows(out)] == [("accept", None), ("reject", "C10")]


def test_a_context_limit_counts_the_input_the_recorded_answer_reports() -> None:
    # The provider's own count wins over the local estimate: a short body whose answer
    # reported 20,000 input tokens is over a 10,000-token window.
    record = {
        "url": URL,
        "body": GOOD,
        "status": 200,
        "response": {"usage": {"prompt_tokens": 20_000}},
    }
    [over] = audit_lines([record], file="f", context_limit=10_000)
    assert (over.outcome, over.verdict.rule if over.verdict else None) == ("reject", "C10")
    [fits] = audit_lines([record], file="f", context_limit=30_000)
    assert fits.outcome == "accept"
    [plain] = audit_lines([record], file="f")
    assert plain.outcome == "accept"


def test_audit_lines_streams_and_takes_records_too() -> None:
    pulled: list[int] = []

    def lines() -> Iterator[str]:
        for n in range(1000):
            pulled.append(n)
            yield _line(GOOD if n % 2 else ORPHAN)

    rows = audit_lines(lines(), file="traffic")
    first = next(rows)
    assert (first.outcome, first.location) == ("reject", "traffic:1")
    assert len(pulled) == 1  # a row per line as it is read, not after reading everything
    records = [{"url": URL, "body": GOOD}, {"url": URL, "body": ORPHAN}]
    as_records = [r.to_dict() for r in audit_lines(records, file="f", start=10)]
    as_text = [
        r.to_dict() for r in audit_lines([json.dumps(r) for r in records], file="f", start=10)
    ]
    assert as_records == as_text
    assert [r["location"] for r in as_records] == ["f:11", "f:12"]


def test_jobs_give_the_same_rows_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_command, "_BLOCK_BYTES", 2_000)  # many blocks from a small log
    log = tmp_path / "big.jsonl"
    log.write_text(
        "".join(_line(ORPHAN if n % 7 == 0 else GOOD) + "\n" for n in range(300)), "utf-8"
    )
    (tmp_path / "bad.json").write_text("{", "utf-8")
    one = invoke(["audit", str(tmp_path), "--format", "jsonl", "--all"])
    two = invoke(["audit", str(tmp_path), "--format", "jsonl", "--all", "--jobs", "2"])
    assert one == two
    assert one[0] == 5
    assert len(_rows(one[1])) == 301


def test_jobs_build_what_the_first_log_line_needs_before_forking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent judges the first log line before the workers fork (its profile and the
    validators' facts are then built once and shared), freezes what it built for the forks and
    unfreezes it after."""
    samples: list[list[bytes]] = []
    prepare = audit_command.prepare

    def recorded(sample: Iterable[bytes] = ()) -> None:
        samples.append(list(sample))
        prepare(samples[-1])

    monkeypatch.setattr(audit_command, "prepare", recorded)
    log = tmp_path / "log.jsonl"
    log.write_text(_line(GOOD) + "\n" + _line(ORPHAN) + "\n", "utf-8")
    expected = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    assert samples == []  # one process: nothing to share
    assert invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", "2"]) == expected
    assert samples == [[_line(GOOD).encode()]]
    assert gc.get_freeze_count() == 0
    traffic_audit._profile.cache_clear()
    traffic_audit.prepare(samples[0])
    assert traffic_audit._profile.cache_info().currsize == 1  # the line was judged


def test_jobs_judge_what_was_read_when_the_log_changes_under_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker reads its block from the file; if the bytes there are no longer those the
    parent read (checked by length and CRC), the parent judges the bytes it read."""
    monkeypatch.setattr(audit_command, "_BLOCK_BYTES", 2_000)
    log = tmp_path / "log.jsonl"
    lines = [_line(ORPHAN if n % 5 == 0 else GOOD) for n in range(60)]
    log.write_text("".join(line + "\n" for line in lines), "utf-8")
    expected = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    sent = audit_command._sent
    spans: list[object] = []

    def sent_then_blank_the_first_line(work: object) -> object:
        span = sent(work)  # type: ignore[arg-type]
        if not spans:  # the first block, once its place is taken: its first line blanked
            with log.open("r+b") as raw:
                raw.write(b" " * len(lines[0]))
        spans.append(span)
        return span

    monkeypatch.setattr(audit_command, "_sent", sent_then_blank_the_first_line)
    changed = invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", "2"])
    assert len(spans) > 2  # the log was cut into blocks and each sent by its place
    assert changed == expected
    assert _rows(changed[1])[0]["verdict"] == "reject"  # the first line as the parent read it
    blanked = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    assert _rows(blanked[1])[0]["location"] != _rows(expected[1])[0]["location"]


def _log_of_many_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(audit_command, "_BLOCK_BYTES", 2_000)
    log = tmp_path / "log.jsonl"
    lines = [_line(ORPHAN if n % 5 == 0 else GOOD) for n in range(120)]
    log.write_text("".join(line + "\n" for line in lines), "utf-8")
    return log


@pytest.mark.timeout(120)
@pytest.mark.parametrize("at_line", [0, 50])
def test_jobs_a_worker_that_dies_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at_line: int
) -> None:
    """A worker killed while it holds blocks (the OOM killer, a signal): the parent judges what
    it held, the other worker goes on; the rows are those of ``--jobs 1``, nothing hangs."""
    log = _log_of_many_blocks(tmp_path, monkeypatch)
    expected = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    judge_sent = audit_command._judge_sent

    def dies(sent: Any, options: Any) -> object:
        if sent.start <= at_line < sent.start + 14:  # the worker sent the block of that line
            os._exit(9)
        return judge_sent(sent, options)

    monkeypatch.setattr(audit_command, "_judge_sent", dies)
    assert invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", "2"]) == expected

    def every_worker_dies(sent: Any, options: Any) -> object:
        os._exit(9)

    monkeypatch.setattr(audit_command, "_judge_sent", every_worker_dies)
    assert invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", "2"]) == expected


@pytest.mark.timeout(120)
def test_jobs_a_block_a_worker_could_not_judge_is_judged_by_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judging raised in the worker: the parent judges that block itself, so the rows (or the
    error) are those of ``--jobs 1``."""
    log = _log_of_many_blocks(tmp_path, monkeypatch)
    expected = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    parent = os.getpid()

    def raises_in_a_worker(sent: Any, options: Any) -> object:
        assert os.getpid() == parent, "judged in a worker"
        raise AssertionError("unreachable")

    monkeypatch.setattr(audit_command, "_judge_sent", raises_in_a_worker)
    assert invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", "2"]) == expected


@pytest.mark.timeout(120)
def test_jobs_an_error_comes_after_the_rows_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judging a block raises (in a worker, then in the parent): with ``--jobs 2`` the rows of
    every block before it are written first, as with ``--jobs 1``."""
    log = _log_of_many_blocks(tmp_path, monkeypatch)
    judge_work = audit_command._judge_work

    def raises_from_line_60(work: Any, options: Any) -> object:
        if not isinstance(work, str) and work.start >= 60:
            raise RecordingError("the disk went away", file=work.file)
        return judge_work(work, options)

    monkeypatch.setattr(audit_command, "_judge_work", raises_from_line_60)
    one = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    assert one[0] == 2
    assert 0 < len(_rows(one[1])) < 120
    for _ in range(5):  # the worker that fails first varies from run to run
        assert invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", "2"]) == one


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@pytest.mark.timeout(120)
@pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
    reason="finds the workers in /proc/PID/task/PID/children (Linux, CONFIG_PROC_CHILDREN)",
)
def test_jobs_workers_end_when_the_audit_is_killed(tmp_path: Path) -> None:
    """The parent killed (SIGKILL: nothing of it runs): its workers see their pipes close and
    end, rather than wait for work forever."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(_line(GOOD) + "\n" for _ in range(200_000)), "utf-8")
    code = "import sys; from conformance.cli import main; main(sys.argv[1:])"
    command = [sys.executable, "-c", code, "audit", str(log), "--format", "jsonl", "--all"]
    audit = subprocess.Popen(
        [*command, "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers := _children(audit.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(workers) == 2, "the workers did not start"
        audit.kill()
        audit.wait()
        deadline = time.monotonic() + 30
        while not all(map(_gone, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(map(_gone, workers)), "a worker outlived the killed audit"
    finally:
        audit.kill()
        for pid in workers:  # when the test failed: none is left behind
            if not _gone(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def test_table_shows_findings_and_totals_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    Path("logs").mkdir()
    Path("logs/requests.jsonl").write_text(
        "\n".join([_line(GOOD), _line(ORPHAN), _line(GOOD)]) + "\n", "utf-8"
    )
    code, out, _ = invoke(["audit", "logs"])
    assert code == 1
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "logs/requests.jsonl:2" in out  # the file column is readable at 80 columns
    for header in ("request", "verdict", "rule", "evidence", "message"):
        assert header in out
    assert "…" not in out
    assert "reject" in out
    assert "C2" in out
    assert "accept " not in out  # findings only
    assert "3 requests in 1 file: 2 accepted, 1 would be rejected; by rule: C2 1" in out
    _, everything, _ = invoke(["audit", "logs", "--all"])
    assert everything.count("logs/requests.jsonl:") == 3


def test_a_recorded_beta_header_is_read_with_the_request() -> None:
    # A27: interleaved thinking, turned on in the anthropic-beta header, lets the thinking
    # budget exceed the cap; the recording's header is what the audit judges by
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8000,
        "thinking": {"type": "enabled", "budget_tokens": 16000},
        "messages": [{"role": "user", "content": "hi"}],
    }

    def recorded(headers: dict[str, tuple[str, ...]]) -> RecordedInteraction:
        url = "https://api.anthropic.com/v1/messages"
        return RecordedInteraction("x.yaml", 0, "POST", url, headers, body, 200)

    version = {"anthropic-version": ("2023-06-01",)}
    beta = recorded({"anthropic-beta": ("interleaved-thinking-2025-05-14",), **version})
    row = audit_interaction(beta)
    assert row is not None
    assert row.verdict.accepted
    row = audit_interaction(recorded(version))
    assert row is not None
    assert row.verdict.rule == "A27"
    row = audit_interaction(recorded({"anthropic-beta": ("context-1m-2025-08-07",)}))
    assert row is not None
    assert row.verdict.rule == "A27"


def test_a_recording_without_the_request_headers_is_not_judged_by_a_header_beta() -> None:
    # Every first-party Anthropic request sends anthropic-version: a recording without it (a
    # recorder that drops anthropic-* headers, as pydantic-ai's does, or a log line of bodies
    # only) does not say whether interleaved thinking was on, so A27 is not judged; through
    # Vertex, a recording of no header at all; Bedrock's InvokeModel reads its betas from the
    # body, so its recordings are judged without headers.
    body: dict[str, Any] = {
        "max_tokens": 8000,
        "thinking": {"type": "enabled", "budget_tokens": 16000},
        "messages": [{"role": "user", "content": "hi"}],
    }
    first_party = "https://api.anthropic.com/v1/messages"
    vertex = (
        "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
        "publishers/anthropic/models/claude-sonnet-4-5:rawPredict"
    )
    bedrock = (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
        "anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"
    )
    some = {"content-type": ("application/json",)}
    cases = [
        (first_party, {**body, "model": "claude-sonnet-4-5"}, {}, None),
        (first_party, {**body, "model": "claude-sonnet-4-5"}, some, None),
        (vertex, {**body, "anthropic_version": "vertex-2023-10-16"}, {}, None),
        (vertex, {**body, "anthropic_version": "vertex-2023-10-16"}, some, "A27"),
        (bedrock, {**body, "anthropic_version": "bedrock-2023-05-31"}, {}, "A27"),
    ]
    for url, sent, headers, rule in cases:
        interaction = RecordedInteraction("x.yaml", 0, "POST", url, headers, sent, 200)
        row = audit_interaction(interaction)
        assert row is not None
        assert row.verdict is not None
        assert row.verdict.rule == rule, (url, headers, row.verdict)
        assert recorded_betas(interaction, "anthropic-messages") == (
            None if rule is None else frozenset()
        )


# ------------------------------------------------------------------- a key given twice


TWICE = [(ORPHAN, GOOD, "first copy kept"), (GOOD, ORPHAN, "last copy kept")]
"""(first copy, last copy, the reading refused): either reading's rejection is the verdict."""


@pytest.mark.parametrize(("first", "last", "reading"), TWICE)
def test_a_body_that_gives_messages_twice_is_judged_in_both_readings(
    first: dict[str, Any], last: dict[str, Any], reading: str
) -> None:
    body = messages_twice(first, last)
    lines = [
        f'{{"url": "{URL}", "method": "POST", "body": {body}}}',  # the body as an object
        json.dumps({"url": URL, "method": "POST", "body": body}),  # the body as JSON text
        f'{{"url": "{URL}", "body": {body}, "latency": NaN}}',  # read by the slow path
        body,  # a bare request body
    ]
    rows = list(audit_lines(line.encode() for line in lines))
    assert [(row.outcome, row.verdict and row.verdict.rule, row.reading) for row in rows] == [
        ("reject", "C2", reading)
    ] * len(lines)
    assert rows[0].to_dict()["reading"] == reading


@pytest.mark.parametrize(("first", "last", "reading"), TWICE)
def test_a_key_the_line_repeats_does_not_hide_one_its_body_text_repeats(
    first: dict[str, Any], last: dict[str, Any], reading: str
) -> None:
    # the line's own repeat (a harmless "method" twice) sends it down the slow path, whose
    # first-copy reading of the line must read the body text keeping its first copies too
    body = json.dumps(messages_twice(first, last))
    line = f'{{"url": "{URL}", "method": "POST", "method": "POST", "body": {body}}}'
    [row] = audit_lines([line.encode()])
    assert (row.outcome, row.verdict and row.verdict.rule, row.reading) == (
        "reject",
        "C2",
        reading,
    )


@pytest.mark.parametrize(("first", "last", "reading"), TWICE)
def test_a_recorded_body_that_gives_messages_twice_is_judged_in_both_readings(
    first: dict[str, Any], last: dict[str, Any], reading: str
) -> None:
    text = messages_twice(first, last)
    recorded = RecordedInteraction(
        "c.yaml", 0, "POST", URL, request_body=json.loads(text), raw_request_text=text
    )
    row = audit_interaction(recorded)
    assert row is not None
    assert (row.outcome, row.reading) == ("reject", reading)


def test_a_body_without_a_repeated_key_is_judged_as_before() -> None:
    harmless = (
        '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}'
    )
    lines = [_line(GOOD), _line(ORPHAN), f'{{"url": "{URL}", "body": {harmless}}}']
    rows = list(audit_lines(lines))
    assert [(row.outcome, row.reading) for row in rows] == [
        ("accept", None),
        ("reject", None),
        ("accept", None),  # a key given twice with one value: both readings pass
    ]
    assert rows[1].verdict == next(iter(audit_lines([_line(ORPHAN).encode()]))).verdict


def test_the_jsonl_row_and_the_table_name_the_reading_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the table's cells on one line each
    log = tmp_path / "twice.jsonl"
    log.write_text(f'{{"url": "{URL}", "body": {messages_twice(ORPHAN, GOOD)}}}\n', "utf-8")
    code, out, _ = invoke(["audit", str(log), "--format", "jsonl"])
    assert code == 1
    [row] = _rows(out)
    assert (row["verdict"], row["rule"], row["reading"]) == ("reject", "C2", "first copy kept")
    code, table, _ = invoke(["audit", str(log)])
    assert code == 1
    assert "(a key given twice: rejected with the first copy kept)" in table


# -------------------------------------------------------------------------- standard input


def _audit_stdin(args: list[str], data: bytes) -> tuple[int, list[dict[str, Any]], str]:
    """``ctxconf audit ARGS`` in its own process, ``data`` piped to its standard input."""
    code = "import sys; from conformance.cli import main; main(sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, "audit", *args, "--format", "jsonl"],
        input=data,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return done.returncode, _rows(done.stdout.decode()), done.stderr.decode()


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("compressed", [False, True])
def test_a_log_on_standard_input_is_judged_as_the_same_file(
    tmp_path: Path, jobs: str, compressed: bool
) -> None:
    """``-`` reads a JSONL log from standard input (gzip by its first bytes, as a ``.gz`` file):
    the rows are the file's, named ``<stdin>``; ``--jobs 2`` sends the blocks themselves."""
    lines = [_line(ORPHAN if i % 700 == 3 else GOOD) for i in range(3000)]
    text = ("\n".join(lines) + "\n").encode()
    log = tmp_path / "log.jsonl"
    log.write_bytes(text)
    _, expected, _ = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    code, rows, err = _audit_stdin(
        ["-", "--all", "--jobs", jobs], gzip.compress(text) if compressed else text
    )
    assert code == 1, err  # rejections found, everything read
    assert len(rows) == 3000
    file_rows = _rows(expected)
    assert [r["location"] for r in rows] == [
        str(r["location"]).replace(str(log), "<stdin>") for r in file_rows
    ]
    assert [(r["verdict"], r["rule"]) for r in rows] == [
        (r["verdict"], r["rule"]) for r in file_rows
    ]
    assert sum(r["verdict"] == "reject" for r in rows) == 5


def test_a_corrupt_gzip_stream_on_standard_input_is_an_unreadable_row() -> None:
    text = ("\n".join(_line(ORPHAN) for _ in range(50)) + "\n").encode()
    packed = gzip.compress(text)
    code, rows, err = _audit_stdin(["-"], packed[: len(packed) // 2])
    assert code & 4, err  # something could not be read
    assert rows[-1]["verdict"] == "unreadable"
    assert rows[-1]["location"] == "<stdin>"
    assert str(rows[-1]["message"]).startswith("corrupt gzip stream: ")
    assert "Traceback" not in err
    assert "Aborted" not in err


def test_standard_input_is_read_once() -> None:
    code, _, err = invoke(["audit", "-", "-"])
    assert code == 2
    assert "standard input can be read once" in err


def test_a_block_of_standard_input_is_sent_whole_to_a_worker() -> None:
    """A worker reads a file's block itself (sent where it is); it cannot read standard input
    again, so a block of it is sent as it is."""
    block = audit_command._LogBlock(audit_command.STDIN_NAME, 0, 0, b'{"url": "u"}\n')
    assert audit_command._sent(block) is block
    on_disk = audit_command._LogBlock("log.jsonl", 0, 0, b'{"url": "u"}\n')
    assert isinstance(audit_command._sent(on_disk), audit_command._Span)


@pytest.mark.timeout(60)  # a row held until standard input ends would wait here for ever
def test_standard_input_streams_its_rows_as_its_lines_arrive() -> None:
    """A log still being written (``tail -f``) gets its rows as its lines come, not per MiB."""
    code = "import sys; from conformance.cli import main; main(sys.argv[1:])"
    audit = subprocess.Popen(
        [sys.executable, "-c", code, "audit", "-", "--format", "jsonl", "--all"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert audit.stdin is not None
    assert audit.stdout is not None
    try:
        audit.stdin.write((_line(GOOD) + "\n").encode())
        audit.stdin.flush()
        first = audit.stdout.readline()  # before standard input ends
        assert json.loads(first)["location"] == "<stdin>:1"
    finally:
        audit.stdin.close()
        audit.stdout.close()
        audit.wait(timeout=60)


@pytest.mark.parametrize("how", ["file", "file --jobs 2", "stdin", "stdin --jobs 2"])
def test_a_log_line_holding_a_unicode_line_separator_is_one_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A logger writing ``ensure_ascii=False`` keeps U+2028, U+0085 and U+001C raw in a JSON
    string; the log, its blocks (``--jobs``) and standard input end lines at ``\n`` only."""
    monkeypatch.setattr(audit_command, "_BLOCK_BYTES", 64)  # the file's blocks: about a line
    text = "one\u2028two\u2029three\x85four\x1cfive"
    orphan = {**ORPHAN, "messages": [{"role": "user", "content": text}, *ORPHAN["messages"][1:]]}
    lines = [_line(GOOD), json.dumps({"url": URL, "body": orphan}, ensure_ascii=False)]
    data = ("\n".join([*lines, _line(GOOD)]) + "\n").encode()
    jobs = ["--jobs", "2"] if "jobs" in how else []
    if how.startswith("stdin"):
        code, rows, err = _audit_stdin(["-", "--all", *jobs], data)
    else:
        log = tmp_path / "log.jsonl"
        log.write_bytes(data)
        code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all", *jobs])
        rows = [json.loads(line) for line in out.split("\n") if line]
    assert code == 1, err  # one rejection, nothing unreadable
    assert [(str(r["location"]).rsplit(":", 1)[1], r["verdict"]) for r in rows] == [
        ("1", "accept"),
        ("2", "reject"),
        ("3", "accept"),
    ]


def test_a_corrupt_gz_log_is_an_unreadable_row_and_the_folder_is_still_audited(
    tmp_path: Path,
) -> None:
    packed = bytearray(gzip.compress(("\n".join(_line(GOOD) for _ in range(200)) + "\n").encode()))
    for i in range(20, 60):  # the deflate data made invalid (zlib.error, not an OSError)
        packed[i] ^= 0xFF
    (tmp_path / "corrupt.jsonl.gz").write_bytes(bytes(packed))
    (tmp_path / "good.jsonl").write_text(_line(ORPHAN) + "\n", "utf-8")
    code, out, _ = invoke(["audit", str(tmp_path), "--format", "jsonl"])
    rows = _rows(out)
    assert code == 5  # a rejection (the good log) and an unreadable file
    assert any(r["verdict"] == "unreadable" and "corrupt gzip" in str(r["message"]) for r in rows)
    assert any(r["verdict"] == "reject" for r in rows)


def test_an_emulator_url_naming_no_dialect_of_its_shape_is_named_not_judged_as_the_base(
    tmp_path: Path,
) -> None:
    # The emulator and the proxy refuse /dialect/NAME/ when NAME is no dialect of the route's
    # shape (misspelled, or another shape's): judged as the base shape it passed in silence.
    base = "http://127.0.0.1:8787/dialect/{}/v1/chat/completions"
    claude = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    log = tmp_path / "log.jsonl"
    lines = [
        {"url": base.format("mistrl"), "body": GOOD},
        {"url": base.format("vertex"), "body": GOOD},
        {"url": "http://127.0.0.1:8787/dialect/mistral/v1/messages", "body": claude},
        {"url": base.format("mistral"), "body": GOOD},  # a dialect of the shape: judged
        {"url": "https://api.unknown-gateway.example/v1/chat/completions", "body": GOOD},
    ]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n", "utf-8")
    code, out, _ = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    rows = _rows(out)
    assert [r["verdict"] for r in rows] == ["unreadable"] * 3 + ["accept", "accept"]
    assert code == 4
    messages = [str(r["message"]) for r in rows[:3]]
    assert "/dialect/mistrl/ prefix: no dialect 'mistrl' for shape openai-chat" in messages[0]
    assert "did you mean 'mistral'?" in messages[0]
    assert "'vertex' is a dialect of shape gemini" in messages[1]
    assert "'mistral' is a dialect of shape openai-chat" in messages[2]
    assert [r["shape"] for r in rows[:3]] == ["openai-chat", "openai-chat", "anthropic-messages"]
    assert rows[3]["dialect"] == "mistral"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_gzip_log_cut_short_has_every_whole_line_judged_from_a_file_and_from_stdin(
    tmp_path: Path, jobs: str
) -> None:
    # A gzip log cut mid-way (a copy interrupted, a log being written): every line that decodes
    # whole is judged, then one unreadable row; the file and standard input read alike (the
    # file's reader lost what it had decoded in the read that met the cut: none was judged).
    import random
    import zlib

    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta"]
    lines = []
    for i in range(3000):
        text = " ".join(rng.choice([*words, str(rng.random())]) for _ in range(12))
        body = ORPHAN if i % 7 == 0 else {**GOOD, "messages": [{"role": "user", "content": text}]}
        lines.append(json.dumps({"url": URL, "body": body}))
    packed = gzip.compress(("\n".join(lines) + "\n").encode())
    cut = packed[: len(packed) // 2]
    whole = zlib.decompressobj(wbits=31).decompress(cut).count(b"\n")
    assert 0 < whole < len(lines)
    log = tmp_path / "cut.jsonl.gz"
    log.write_bytes(cut)
    args = ["--all", "--jobs", jobs]
    _, from_file, _ = invoke(["audit", str(log), "--format", "jsonl", *args])
    _, from_stdin, err = _audit_stdin(["-", *args], cut)
    assert "Traceback" not in err
    for rows in (_rows(from_file), from_stdin):
        assert [r["verdict"] for r in rows[-1:]] == ["unreadable"]
        judged = rows[:-1]
        assert len(judged) == whole
        assert [r["verdict"] for r in judged] == [
            "reject" if i % 7 == 0 else "accept" for i in range(whole)
        ]
