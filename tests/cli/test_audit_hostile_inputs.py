"""``ctxconf audit`` over log lines a provider's parser would refuse (invalid UTF-8, a byte-order
mark): an ``unreadable`` row naming why (exit bit 4), never an ``accept``; a body holding NaN or
Infinity (which Python's JSON writer emits): the provider's 400 for a body that is not JSON;
and paths that are neither files nor folders named for what they are."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from audit_support import GOOD, URL
from cli_support import invoke

LINE = json.dumps({"url": URL, "body": GOOD})


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (
            LINE.replace('"hi"', '"h\\u00e9"').encode().replace(b"\\u00e9", b"\xe9"),
            "not UTF-8 text",
        ),
        ("\ufeff".encode() + LINE.encode(), "not valid JSON (Unexpected UTF-8 BOM"),
    ],
)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_line_a_provider_cannot_parse_is_unreadable_not_accepted(
    tmp_path: Path, line: bytes, words: str, jobs: str
) -> None:
    log = tmp_path / "traffic.jsonl"
    log.write_bytes(LINE.encode() + b"\n" + line + b"\n")
    code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", jobs])
    rows = [json.loads(row) for row in out.splitlines()]
    assert [row["verdict"] for row in rows] == ["accept", "unreadable"]
    assert words in rows[1]["message"]
    assert rows[1]["location"] == f"{log}:2"
    assert code == 4, err  # unreadable input, nothing rejected


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_line_cut_inside_a_string_is_named_at_a_column_of_its_own(
    tmp_path: Path, jobs: str
) -> None:
    """Parsed with its line end, a line the log cuts inside a string reads its "\\n" as a
    control character one column past its last; the row words it as ``ctxconf report`` words
    a bad line of run.jsonl."""
    log = tmp_path / "traffic.jsonl"
    cut = '{"body": {"model": "gpt-4o", "messages": "abc'
    log.write_text(cut + '\n{"body": 1\n', "utf-8")
    _, out, _ = invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", jobs])
    rows = [json.loads(row) for row in out.splitlines()]
    assert rows[0]["location"] == f"{log}:1"
    # column 42, the string's opening quote, within the line's 45 characters
    assert rows[0]["message"] == "not valid JSON (Unterminated string starting at column 42)"


@pytest.mark.parametrize(
    "line",
    [
        LINE.replace('"gpt-4o"', '"gpt-4o", "temperature": NaN'),
        LINE.replace('"gpt-4o"', '"gpt-4o", "top_p": -Infinity'),
        json.dumps({"url": URL, "body": json.dumps(GOOD)[:-1] + ', "top_p": Infinity}'}),
    ],
    ids=["body-object-nan", "body-object-minus-infinity", "body-text-infinity"],
)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_body_holding_nan_gets_the_400_of_a_body_that_is_not_json(
    tmp_path: Path, line: str, jobs: str
) -> None:
    log = tmp_path / "traffic.jsonl"
    not_json = json.dumps({"url": URL, "body": '{"model": "gpt-4o", "messages": ['})
    log.write_text(f"{LINE}\n{line}\n{not_json}\n", "utf-8")
    code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", jobs])
    rows = [json.loads(row) for row in out.splitlines()]
    assert [row["verdict"] for row in rows] == ["accept", "reject", "reject"]
    judged = [{k: row[k] for k in ("rule", "status", "message", "profile")} for row in rows[1:]]
    assert judged[0] == judged[1]  # as a body that is not JSON
    assert judged[0]["rule"] == "C0"
    assert code == 1, err


def test_nan_outside_the_body_of_a_log_line_leaves_the_request_judged(tmp_path: Path) -> None:
    # a logger's own field (a latency it could not measure): the request sent is strict JSON
    log = tmp_path / "traffic.jsonl"
    log.write_text(LINE[:-1] + ', "latency": NaN}\n', "utf-8")
    code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    assert [json.loads(row)["verdict"] for row in out.splitlines()] == ["accept"]
    assert code == 0, err


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (os.mkfifo, "not a regular file or folder (a named pipe"),
        (lambda p: p.symlink_to(p), "a symbolic link that leads nowhere"),
        (lambda p: p.symlink_to(p.parent / "gone.jsonl"), "a symbolic link that leads nowhere"),
    ],
)
def test_a_path_that_is_no_file_or_folder_is_named_for_what_it_is(
    tmp_path: Path, make: object, words: str
) -> None:
    path = tmp_path / "traffic.jsonl"
    make(path)  # type: ignore[operator]
    code, _, err = invoke(["audit", str(path)])  # a FIFO: never waits for a writer
    assert code == 2
    assert words in err  # was "no such file or folder" for each


def test_a_gzip_bomb_of_blank_lines_is_counted_through_to_the_line_after_it(
    tmp_path: Path,
) -> None:
    # 20 MiB of empty lines in a 20 KiB file: skipped in bulk, the request after them keeps its
    # line number.
    import gzip

    log = tmp_path / "traffic.jsonl.gz"
    log.write_bytes(gzip.compress(b"\n" * (20 << 20) + LINE.encode() + b"\n"))
    code, out, err = invoke(["audit", str(log), "--format", "jsonl", "--all"])
    rows = [json.loads(row) for row in out.splitlines()]
    assert [(row["verdict"], row["location"]) for row in rows] == [
        ("accept", f"{log}:{(20 << 20) + 1}")
    ]
    assert code == 0, err


def test_a_line_over_the_limit_in_a_block_of_jobs_is_named_as_with_one_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With --jobs the parent cuts the log into blocks at newlines; a line over the input limit
    # is not read whole to find its end: the rows are those of --jobs 1.
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "100kB")
    log = tmp_path / "traffic.jsonl"
    log.write_bytes(
        LINE.encode() + b"\n" + b"x" * (3 << 20) + b"\n" + b"\n" * 5 + LINE.encode() + b"\n"
    )
    results = [
        invoke(["audit", str(log), "--format", "jsonl", "--all", "--jobs", jobs])
        for jobs in ("1", "2")
    ]
    assert results[0] == results[1]
    code, out, _ = results[0]
    rows = [json.loads(row) for row in out.splitlines()]
    assert [(row["verdict"], row["location"]) for row in rows] == [
        ("accept", f"{log}:1"),
        ("unreadable", f"{log}:2"),
        ("accept", f"{log}:8"),
    ]
    assert "line 2 is over the input limit" in rows[1]["message"]
    assert code == 4
