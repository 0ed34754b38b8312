"""``ctxconf diff`` finds acceptance drift between emulator profiles and cassette sets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner
from paths import CASSETTES
from vcr.request import Request

from conformance.cli import cli
from conformance.commands.diff import Observation, compare
from conformance.traffic.skeleton import request_skeleton, skeleton_digest


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["diff", *args])
    return result.exit_code, result.output


def test_A9_old_strict_alternation_vs_current_newly_accepts_consecutive_user_turns() -> None:
    code, output = _run(
        "profile:anthropic-2024-strict-alternation",
        "profile:anthropic-current",
        "--shape",
        "anthropic-messages",
        "--format",
        "json",
    )
    assert code == 1, output
    report = json.loads(output)
    assert report["version"] == 1
    accepted = [d for d in report["drift"] if d["kind"] == "newly-accepted"]
    assert accepted
    assert {d["case"].split(" ")[0] for d in accepted} == {"probe-consecutive-users"}
    assert all(d["old"]["status"] == 400 and d["new"]["status"] == 200 for d in accepted)
    assert all("roles must alternate" in d["old"]["error_message"] for d in accepted)
    assert not [d for d in report["drift"] if d["kind"] == "newly-rejected"]


def test_the_same_profile_twice_has_no_drift() -> None:
    code, output = _run(
        "profile:anthropic-current", "profile:anthropic-current", "--shape", "anthropic-messages"
    )
    assert code == 0, output
    assert "0 drift(s)" in output


def test_profiles_of_other_shapes_leave_a_shape_alone() -> None:
    code, output = _run(
        "profile:anthropic-2024-strict-alternation",
        "profile:anthropic-current",
        "--shape",
        "openai-chat",
    )
    assert code == 0, output


def test_committed_cassettes_against_their_own_profile_have_no_drift() -> None:
    code, output = _run(
        str(CASSETTES), "profile:anthropic-current", "--shape", "anthropic-messages"
    )
    assert code == 0, output
    # Probes that differ only in content (a directive) share a skeleton: count distinct ones.
    distinct = set()
    for path in (CASSETTES / "anthropic-messages").glob("*.yaml"):
        for item in yaml.safe_load(path.read_text())["interactions"]:
            distinct.add(skeleton_digest(request_skeleton(Request._from_dict(item["request"]))))
    requests = sum(
        len(yaml.safe_load(p.read_text())["interactions"])
        for p in (CASSETTES / "anthropic-messages").glob("*.yaml")
    )
    assert len(distinct) < requests
    assert f"compared {requests} requests ({len(distinct)} skeletons)" in output


def test_cassette_folder_vs_a_stricter_profile_is_a_newly_rejected_drift() -> None:
    code, output = _run(
        str(CASSETTES), "profile:anthropic-2024-strict-alternation", "--shape", "anthropic-messages"
    )
    assert code == 1
    assert "newly-rejected" in output
    assert "probe-consecutive-users" in output


def test_two_cassette_folders_show_token_drift(tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(CASSETTES / "openai-chat", old / "openai-chat")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    path = new / "openai-chat" / "probe-text.yaml"
    document = yaml.safe_load(path.read_text())
    body = json.loads(document["interactions"][0]["response"]["body"]["string"])
    body["usage"]["prompt_tokens"] += 7
    document["interactions"][0]["response"]["body"]["string"] = json.dumps(body)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    code, output = _run(str(old), str(new))
    assert code == 1
    assert "token-drift" in output
    assert f"{body['usage']['prompt_tokens'] - 7} -> {body['usage']['prompt_tokens']}" in output


def _obs(
    verdict: str, status: int = 200, message: str | None = None, tokens: int | None = 10
) -> Observation:
    return Observation(
        "d1",
        "openai-chat",
        "case",
        verdict,
        status,
        None if verdict == "accept" else "invalid_request_error",
        None,
        message,
        tokens,
    )


def test_compare_kinds() -> None:
    assert [d.kind for d in compare({"d1": _obs("accept")}, {"d1": _obs("reject", 400, "no")})] == [
        "newly-rejected"
    ]
    assert [d.kind for d in compare({"d1": _obs("reject", 400, "no")}, {"d1": _obs("accept")})] == [
        "newly-accepted"
    ]
    assert [
        d.kind for d in compare({"d1": _obs("reject", 400, "a")}, {"d1": _obs("reject", 400, "b")})
    ] == ["changed-error"]
    assert [
        d.kind
        for d in compare({"d1": _obs("accept", tokens=10)}, {"d1": _obs("accept", tokens=11)})
    ] == ["token-drift"]
    assert compare({"d1": _obs("accept")}, {"d1": _obs("accept")}) == []
    assert compare({"d1": _obs("accept")}, {"d2": _obs("accept")}) == []  # nothing to pair


def test_bad_sides_are_one_line_errors(tmp_path: Path) -> None:
    code, output = _run(str(tmp_path / "missing"), "profile:anthropic-current")
    assert code == 2
    assert "not a cassette folder" in output
    code, output = _run("profile:nope", "profile:anthropic-current")
    assert code == 2
    assert "nope" in output


def test_two_folders_that_pair_no_request_are_an_error_not_a_pass(tmp_path: Path) -> None:
    """A scheduled upgrade check must not pass on "0 drift(s)" when it compared nothing: the
    same cassette recorded for another model family pairs no request (the skeleton holds the
    family), nor do folders of other cassettes, nor a --shape neither side holds."""
    old = tmp_path / "old"
    shutil.copytree(CASSETTES / "openai-chat", old / "openai-chat")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    for path in (new / "openai-chat").glob("*.yaml"):
        document = yaml.safe_load(path.read_text())
        for item in document["interactions"]:
            request = item["request"]
            body = request["body"]
            text = body["string"] if isinstance(body, dict) else body
            data = json.loads(text)
            data["model"] = "gpt-5"
            text = json.dumps(data)
            if isinstance(body, dict):
                body["string"] = text
            else:
                request["body"] = text
        path.write_text(yaml.safe_dump(document, sort_keys=False))
    code, output = _run(str(old), str(new))
    assert code == 2, output
    assert "nothing compared" in output
    assert "model family" in output
    other = tmp_path / "other"
    shutil.copytree(CASSETTES / "anthropic-messages", other / "anthropic-messages")
    code, output = _run(str(old), str(other))
    assert code == 2, output
    assert "different cassettes" in output
    code, output = _run(str(old), str(old), "--shape", "gemini")
    assert code == 2, output
    assert "OLD and NEW hold no request" in output
    code, output = _run(str(old), str(old))
    assert code == 0, output
