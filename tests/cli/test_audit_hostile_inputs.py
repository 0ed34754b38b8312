"""``ctxconf audit`` over log lines a provider's parser would refuse (NaN, invalid UTF-8): an
``unreadable`` row naming why (exit bit 4), never an ``accept``; and paths that are neither files
nor folders named for what they are."""

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
        (LINE.replace('"gpt-4o"', '"gpt-4o", "temperature": NaN').encode(), "not JSON: NaN"),
        (LINE.replace('"gpt-4o"', '"gpt-4o", "top_p": -Infinity').encode(), "not JSON: -Infinity"),
        (
            LINE.replace('"hi"', '"h\\u00e9"').encode().replace(b"\\u00e9", b"\xe9"),
            "not UTF-8 text",
        ),
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
