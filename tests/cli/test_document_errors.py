"""Every command that reads a user document names the file and what is wrong (exit 2).

Duplicate keys (JSON and YAML) are refused with their place, never resolved silently (but for
``validate``, which judges both readings of a JSON request body that gives a key twice:
``tests/cli/test_validate_audit.py``), and documents nested ten thousand levels deep are a named
error, never a ``RecursionError``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import invoke
from paths import EXAMPLES

from reference_impl.documents import (
    DocumentTooDeepError,
    DuplicateKeyError,
    load_json_strict,
    load_yaml_strict,
)

EXAMPLE = EXAMPLES / "session.json"
DEEP = "[" * 10_000 + "]" * 10_000


def _assert_named(args: list[str], path: Path, *words: str) -> str:
    code, _, err = invoke(args)
    assert code == 2, err
    assert "Traceback" not in err
    assert str(path) in err
    for word in words:
        assert word in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err


COMMANDS = [
    ["count", "{f}", "--shape", "openai-chat", "--format", "json"],
    ["validate", "{f}", "--shape", "openai-chat", "--format", "json"],
    ["inspect", "{f}", "--shape", "openai-chat"],
    ["convert", "{f}", "--from", "openai-chat", "--to", "gemini"],
    ["assemble", "{f}", "--from", "openai-chat", "--shape", "gemini"],
]


def _fill(template: list[str], path: Path) -> list[str]:
    return [str(path) if a == "{f}" else a for a in template]


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: t[0])
def test_deeply_nested_json_is_named_not_a_traceback(tmp_path: Path, template: list[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP, "utf-8")
    _assert_named(_fill(template, path), path, "nested too deeply")


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: t[0])
def test_deeply_nested_object_inside_a_body(tmp_path: Path, template: list[str]) -> None:
    path = tmp_path / "deep.json"
    inner = '{"a":' * 10_000 + "1" + "}" * 10_000
    path.write_text('{"model":"gpt-4o","messages":[],"metadata":' + inner + "}", "utf-8")
    _assert_named(_fill(template, path), path, "nested too deeply")


# validate judges a request body that gives a key twice in both readings instead
JUDGING_BOTH_READINGS = {"validate"}


@pytest.mark.parametrize(
    "template", [t for t in COMMANDS if t[0] not in JUDGING_BOTH_READINGS], ids=lambda t: t[0]
)
def test_duplicate_json_key_is_refused(tmp_path: Path, template: list[str]) -> None:
    path = tmp_path / "dup.json"
    path.write_text(
        '{"model": "gpt-4o", "model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}',
        "utf-8",
    )
    _assert_named(_fill(template, path), path, "duplicate key 'model'")


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: t[0])
def test_duplicate_yaml_key_is_refused_with_its_line(tmp_path: Path, template: list[str]) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        "model: gpt-4o\nmessages:\n  - role: user\n    content: hi\n    content: bye\n", "utf-8"
    )
    _assert_named(_fill(template, path), path, "duplicate key 'content'", "line 5")


def test_duplicate_key_in_assembly_config_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "assembly.yaml"
    config.write_text(
        "context_assembly:\n  recent_tool_rings: 3\n  recent_tool_rings: 0\n", "utf-8"
    )
    args = ["assemble", str(EXAMPLE), "--config", str(config), "--shape", "gemini"]
    _assert_named(args, config, "duplicate key 'recent_tool_rings'", "line 3")


def test_yaml_with_tabs_names_the_yaml_problem(tmp_path: Path) -> None:
    path = tmp_path / "tabs.yaml"
    path.write_text("messages:\n\t- role: user\n", "utf-8")
    args = ["count", str(path), "--shape", "openai-chat"]
    _assert_named(args, path, "line 2", "cannot start any token")


def test_yaml_merge_keys_still_override() -> None:
    # `<<: *base` then an explicit key is YAML's documented override, not a duplicate.
    loaded = load_yaml_strict("base: &b {x: 1, y: 2}\nd: {<<: *b, x: 3}\n")
    assert loaded["d"] == {"x": 3, "y": 2}


def test_strict_loaders_raise_named_errors() -> None:
    with pytest.raises(DuplicateKeyError, match="'a'"):
        load_json_strict('{"a": 1, "b": {"c": 2}, "a": 3}')
    with pytest.raises(DocumentTooDeepError):
        load_json_strict(DEEP)
    assert load_json_strict(json.dumps({"a": [{"a": 1}], "b": {"a": 2}})) == {
        "a": [{"a": 1}],
        "b": {"a": 2},
    }
