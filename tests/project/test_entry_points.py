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
    "langchain-summarization-middleware": "conformance.adapters.langchain_summarization:summarization_middleware",
    "langchain-summarization-middleware-keep-tokens": "conformance.adapters.langchain_summarization:summarization_middleware_keep_tokens",
    "langmem-summarize": "conformance.adapters.langchain_summarization:langmem_summarize",
    "openai-agents-session-limit": "conformance.adapters.openai_agents:session_limit",
    "openai-agents-tool-output-trimmer": "conformance.adapters.openai_agents:tool_output_trimmer",
    "pydantic-ai-keep-last": "conformance.adapters.pydantic_ai:keep_last",
    "pydantic-ai-keep-last-no-repair": "conformance.adapters.pydantic_ai:keep_last_no_repair",
    "autogen-buffered": "conformance.adapters.autogen:buffered",
    "autogen-head-and-tail": "conformance.adapters.autogen:head_and_tail",
    "autogen-token-limited": "conformance.adapters.autogen:token_limited",
    "llama-index-chat-memory-buffer": "conformance.adapters.llama_index:chat_memory_buffer",
    "llama-index-memory": "conformance.adapters.llama_index:memory",
    "semantic-kernel-truncation": "conformance.adapters.semantic_kernel:truncation",
    "semantic-kernel-summarization": "conformance.adapters.semantic_kernel:summarization",
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


@pytest.mark.parametrize(
    "name",
    # Loading imports the library: on the worker of the other such tests (tests/test_adapters.py).
    [pytest.param(n, marks=pytest.mark.xdist_group("adapter-libraries")) for n in sorted(ADAPTERS)],
)
def test_every_registered_adapter_loads_by_name(name: str) -> None:
    """Each name resolves to a plug-in of the shape its library speaks."""
    plugin = load_plugin(name)
    expected = "openai-responses" if name.startswith("openai-agents") else "openai-chat"
    assert plugin.shapes == (expected,)
