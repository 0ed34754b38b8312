"""The ready adapters are registered in the ``ctxconf.assemblers`` entry-point group."""

from __future__ import annotations

import importlib.util
from importlib.metadata import entry_points

import pytest

from conformance.loading import ENTRY_POINT_GROUP, load_plugin

ADAPTERS = {
    "langchain-trim-last": "conformance.adapters.langchain:trim_last",
    "langchain-trim-last-start-on-human": "conformance.adapters.langchain:trim_last_start_on_human",
    "langchain-trim-first": "conformance.adapters.langchain:trim_first",
    "litellm-trim-messages": "conformance.adapters.litellm:trim_messages",
}


def test_adapters_are_registered_under_their_names() -> None:
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {name: found.get(name) for name in ADAPTERS} == ADAPTERS


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None,
    reason="langchain_core is not installed; install the extra: pip install -e '.[langchain]'",
)
def test_a_registered_adapter_loads_by_name() -> None:
    plugin = load_plugin("langchain-trim-last")
    assert "openai-chat" in plugin.shapes
