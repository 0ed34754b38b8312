"""The ready adapters are registered in the ``ctxconf.assemblers`` entry-point group."""

from __future__ import annotations

import importlib.util
import sys
from importlib.metadata import entry_points

import pytest
from cli_support import invoke

from conformance.errors import PluginLoadError
from conformance.loading import ENTRY_POINT_GROUP, REQUIRES_ATTR, load_plugin, requires

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


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xdist_group("adapter-libraries"))
        for n in sorted(ADAPTERS)
        if not n.startswith("litellm")  # imports litellm when its module is imported
    ],
)
def test_an_adapter_whose_extra_is_missing_is_a_load_error(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each adapter imports its library when called; without the extra, every case was an error
    # "the plug-in raised ImportError" (and soak wrote it as a finding). Loading it now checks
    # the modules it is marked with: one load error saying what to install (exit status 2).
    (entry,) = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    marked = getattr(entry.load(), REQUIRES_ATTR, None)
    assert marked is not None, f"{name} is not marked with the modules it needs"
    hint, modules = marked
    assert "pip install 'ctxconf[" in hint
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # an import of it now fails
    with pytest.raises(PluginLoadError) as refused:
        load_plugin(name)
    assert str(refused.value) == f"{name}: {hint}"


def test_any_plugin_may_say_what_it_needs_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def plugin(messages: list[dict[str, object]], budget: int) -> list[dict[str, object]]:
        return messages

    marked = requires("plugin needs tomllib_x: pip install tomllib-x", "tomllib_x_missing")(plugin)
    assert marked is plugin
    module = type(sys)("needs_demo")
    module.plugin = plugin  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "needs_demo", module)
    with pytest.raises(PluginLoadError, match=r"^needs_demo:plugin: plugin needs tomllib_x: pip"):
        load_plugin("needs_demo:plugin")
    code, _, err = invoke(["run", "--impl", "needs_demo:plugin", "--no-reports"])
    assert code == 2
    assert "plugin needs tomllib_x: pip install tomllib-x" in err
