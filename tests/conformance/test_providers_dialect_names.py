"""One set of dialect names for every command: ``convert``'s names and aliases work in validate,
audit, the emulator's ``/dialect/{name}/`` path and ``x-ctxconf-dialect`` header (which ``record``
sends), and the catalog's short names work in ``convert``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from shape_support import chat_ring

from conformance.cli import cli
from conformance.errors import UnknownProfileError
from conformance.providers.catalog import (
    catalog_dialect,
    list_dialects,
    list_profiles,
    profile_for_model,
    resolve_profile,
)
from conformance.providers.emulator import create_app
from conformance.providers.emulator_transport import httpx_transport
from conformance.providers.validation import validate_request
from conformance.traffic.audit import dialect_for
from conformance.traffic.endpoints import DIALECT_HEADER, PROFILE_HEADER
from reference_impl.shapes.dialects import DIALECTS, get_dialect

# Every spelling ``ctxconf convert --dialect`` takes, with the gateway it names.
CONVERT_NAMES = [
    (name, spec.name) for spec in DIALECTS.values() for name in (spec.name, *spec.aliases)
]
# Written out by hand: the gateways' own spellings, each one ``validate`` must take.
SPELLINGS = [
    ("azure-openai", "azure"),
    ("azure", "azure"),
    ("lm-studio", "lmstudio"),
    ("lmstudio", "lmstudio"),
    ("llama-cpp", "llamacpp"),
    ("llama.cpp", "llamacpp"),
    ("llamacpp", "llamacpp"),
    ("dashscope", "qwen"),
    ("grok", "xai"),
    ("kimi", "moonshot"),
    ("LM-Studio", "lmstudio"),
]
# A body only the gateways refuse: content null on an assistant tool-call message is accepted by
# OpenAI (C5) and refused by LM Studio (LM1) and llama.cpp (LC1).
NULL_CONTENT = {
    "model": "m",
    "messages": [{"role": "user", "content": "q"}, *chat_ring("c1", content=None)],
}


def test_one_dialect_id_the_catalog_and_the_dialect_table_share() -> None:
    """A gateway has one id; the catalog's profiles name exactly the table's dialects."""
    assert set(list_dialects("openai-chat")) == set(DIALECTS) - {"openai"}


@pytest.mark.parametrize(("spelling", "catalog_name"), SPELLINGS)
def test_each_spelling_resolves_to_the_catalog_dialect(spelling: str, catalog_name: str) -> None:
    assert catalog_dialect("openai-chat", spelling) == catalog_name
    assert resolve_profile("openai-chat", spelling).dialect == catalog_name
    assert resolve_profile("openai-chat", spelling) == resolve_profile("openai-chat", catalog_name)


@pytest.mark.parametrize(("name", "gateway"), CONVERT_NAMES)
def test_every_convert_name_is_a_validate_name(name: str, gateway: str) -> None:
    """The alias table is dialects.py's own: a gateway added there without a profile fails here."""
    profile = resolve_profile("openai-chat", name)
    if gateway == "openai":
        assert profile == resolve_profile("openai-chat")  # first-party: the base shape
    else:
        assert profile.dialect is not None
        assert get_dialect(profile.dialect).name == gateway


@pytest.mark.parametrize("name", list_dialects("openai-chat"))
def test_every_catalog_name_is_a_convert_name(name: str) -> None:
    assert resolve_profile("openai-chat", get_dialect(name).name).dialect == name


def test_other_shapes_keep_their_dialects_and_refuse_unknown_names() -> None:
    assert resolve_profile("openai-responses", "deepseek").id == "deepseek-responses"
    assert resolve_profile("openai-responses", "openai").dialect is None
    assert resolve_profile("gemini", "vertex").id == "gemini-vertex"
    with pytest.raises(UnknownProfileError, match="known dialects: vertex"):
        resolve_profile("gemini", "lm-studio")
    with pytest.raises(UnknownProfileError, match="no dialect 'bogus-gw'"):
        resolve_profile("openai-chat", "bogus-gw")


def test_profile_and_dialect_spellings_agree() -> None:
    assert resolve_profile("openai-chat", "lm-studio", "lmstudio-default").id == "lmstudio-default"
    assert [p.id for p in list_profiles("openai-chat", "llama-cpp")] == ["llamacpp-default"]
    assert profile_for_model("openai-chat", "azure-openai", "gpt-4o").id == "azure-default"
    with pytest.raises(UnknownProfileError, match="belongs to dialect lmstudio"):
        resolve_profile("openai-chat", "llama-cpp", "lmstudio-default")


def test_validate_same_verdict_under_both_spellings() -> None:
    assert validate_request(NULL_CONTENT, "openai-chat").accepted
    long = validate_request(NULL_CONTENT, "openai-chat", dialect="lm-studio")
    short = validate_request(NULL_CONTENT, "openai-chat", dialect="lmstudio")
    assert long.rule == "LM1"
    assert long == short
    assert validate_request(NULL_CONTENT, "openai-chat", dialect="llama-cpp").rule == "LC1"


@pytest.mark.parametrize("spelling", ["lm-studio", "lmstudio"])
def test_validate_command_takes_both_spellings(tmp_path: Path, spelling: str) -> None:
    request = tmp_path / "r.json"
    request.write_text(json.dumps(NULL_CONTENT), "utf-8")
    result = CliRunner().invoke(
        cli, ["validate", str(request), "--shape", "openai-chat", "--dialect", spelling]
    )
    assert result.exit_code == 1, result.output
    payload = json.loads(result.output)
    assert payload["rule"] == "LM1"


def test_audit_maps_a_detected_name_in_either_spelling() -> None:
    assert dialect_for("openai-chat", "azure-openai") == "azure"
    assert dialect_for("openai-chat", "azure") == "azure"
    assert dialect_for("openai-chat", "together") is None  # a gateway we have no rules for
    assert dialect_for("openai-chat", None) is None


@pytest.mark.parametrize("spelling", ["llama-cpp", "llama.cpp", "llamacpp"])
def test_emulator_dialect_path_and_header_take_every_spelling(spelling: str) -> None:
    client = httpx.Client(transport=httpx_transport(create_app()), base_url="http://emulator.test")
    by_path = client.post(f"/dialect/{spelling}/v1/chat/completions", json=NULL_CONTENT)
    by_header = client.post(
        "/v1/chat/completions", json=NULL_CONTENT, headers={DIALECT_HEADER: spelling}
    )
    for response in (by_path, by_header):
        assert response.status_code == 400, response.text
        assert response.headers[PROFILE_HEADER] == "llamacpp-default"
        assert response.headers["x-ctxconf-rule"] == "LC1"
