"""The framework adapters (LangChain v1 middleware, langmem, OpenAI Agents SDK, pydantic-ai, AutoGen,
LlamaIndex, Semantic Kernel), run offline through the engine on scenarios of this file.

Each test pins the failure class ``shared/design/peers.md`` reports for that library, recognized
twice: by the harness's check (``provider_valid`` with its rule, ``system_kept``...) and
independently here, by validating the returned request with ``rings.validate`` or by looking at
what it contains. A library that is not installed skips its tests with the extra to install.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import run_events
from conformance.events import CaseFinished, CaseResult
from conformance.loading import load_plugin
from conformance.scenarios import load_corpus
from reference_impl.rings import validate
from reference_impl.shapes import get_shape

# On the worker of the other tests that import the libraries (tests/test_adapters.py).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("adapter-libraries")]

# The scenario every framework test runs: two user turns, each answered by a parallel ring.
CORPUS = Path(__file__).with_name("frameworks_corpus.yaml")

MODULES = {
    "autogen": ("autogen_core", "autogen"),
    "openai_agents": ("agents", "openai-agents"),
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "langchain_summarization": ("langmem", "langchain-summarization"),
    "llama_index": ("llama_index.core", "llama-index"),
    "semantic_kernel": ("semantic_kernel", "semantic-kernel"),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("frameworks")
    (root / "must").mkdir()
    (root / "must" / "cases.yaml").write_text(CORPUS.read_text("utf-8"))
    return root


def _run(corpus: Path, spec: str, shape: str = "openai-chat") -> list[CaseResult]:
    module = spec.split(":", maxsplit=1)[0].rsplit(".", 1)[-1]
    needed, extra = MODULES[module]
    try:
        found = importlib.util.find_spec(needed) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip(f"{needed} is not installed: pip install -e '.[{extra}]'")
    plugin = load_plugin(f"conformance.adapters.{spec}")
    events = run_events(plugin, load_corpus(corpus), shapes=[shape], level="may", timeout=120)
    results = [e.result for e in events if isinstance(e, CaseFinished)]
    assert results
    errors = [(r.key, r.reason) for r in results if r.status == "error"]
    assert not errors, errors  # every adapter runs offline, on every budget
    return results


def _violations(result: CaseResult) -> set[str]:
    assert result.output is not None
    return {v.kind for v in validate(get_shape(result.shape).parse_request(result.output))}


def _failed(result: CaseResult, check: str) -> str:
    found = [c for c in result.checks if c.id == check and c.status == "fail"]
    return found[0].title if found else ""


def _messages(result: CaseResult) -> list[dict[str, Any]]:
    assert result.output is not None
    return list(result.output["messages"])


def test_autogen_token_limited_pops_the_middle_and_orphans_results(corpus: Path) -> None:
    """autogen#7955: TokenLimitedChatCompletionContext pops the middle message until it fits."""
    results = _run(corpus, "autogen:token_limited")
    broken = [r for r in results if r.output is not None and "orphan_result" in _violations(r)]
    assert broken
    assert all("rule C2" in _failed(r, "provider_valid") for r in broken)


def test_autogen_buffered_drops_the_system_message(corpus: Path) -> None:
    """BufferedChatCompletionContext keeps the last N messages, system included or not."""
    results = _run(corpus, "autogen:buffered")
    dropped = [r for r in results if all(m["role"] != "system" for m in _messages(r))]
    assert dropped
    assert all(_failed(r, "system_kept") for r in dropped)


def test_autogen_head_and_tail_inserts_its_placeholder(corpus: Path) -> None:
    """HeadAndTail inserts the user message 'Skipped N messages.' where it dropped messages: a
    marker of them, as a summary by contract stands for them: no invention."""
    results = _run(corpus, "autogen:head_and_tail")
    placeholder = [
        r for r in results if any("Skipped" in str(m.get("content")) for m in _messages(r))
    ]
    assert placeholder
    assert not any(_failed(r, "nothing_invented") for r in placeholder)


def test_agents_session_limit_can_start_on_an_orphan_output(corpus: Path) -> None:
    """openai-agents-python#4322: the last N items can begin with a function_call_output."""
    results = _run(corpus, "openai_agents:session_limit", shape="openai-responses")
    broken = [r for r in results if r.output is not None and "orphan_result" in _violations(r)]
    assert broken
    assert all("rule R2" in _failed(r, "provider_valid") for r in broken)


def test_agents_tool_output_trimmer_shortens_but_never_drops(corpus: Path) -> None:
    """ToolOutputTrimmer keeps every item (pairing holds) and has no token budget."""
    results = _run(corpus, "openai_agents:tool_output_trimmer", shape="openai-responses")
    for result in results:
        assert result.input is not None
        assert result.output is not None
        assert len(result.output["input"]) == len(result.input["input"])
        assert not _violations(result)
    assert any(_failed(r, "within_budget") for r in results)


def test_pydantic_ai_repair_silently_drops_what_the_processor_orphaned(corpus: Path) -> None:
    """pydantic-ai#4728 / PR #6319: without the repair the processor's window is a C2 400; with
    it the request is valid, because the orphaned results were dropped without a word."""
    plain = {r.key: r for r in _run(corpus, "pydantic_ai:keep_last_no_repair")}
    repaired = {r.key: r for r in _run(corpus, "pydantic_ai:keep_last")}
    orphaned = [k for k, r in plain.items() if "orphan_result" in _violations(r)]
    assert orphaned
    for key in orphaned:
        assert "rule C2" in _failed(plain[key], "provider_valid")
        assert not _violations(repaired[key])
        assert not _failed(repaired[key], "provider_valid")
        assert len(_messages(repaired[key])) < len(_messages(plain[key]))


def test_langmem_orphans_parallel_results(corpus: Path) -> None:
    """langmem#126: a cut inside a parallel ring leaves the remaining results as orphans."""
    results = _run(corpus, "langchain_summarization:langmem_summarize")
    broken = [r for r in results if r.output is not None and "orphan_result" in _violations(r)]
    assert broken
    assert all("rule C2" in _failed(r, "provider_valid") for r in broken)


def test_summarization_middleware_summarizes_the_system_text_into_a_user_message(
    corpus: Path,
) -> None:
    """The middleware's summary is a HumanMessage; a system message in state is summarized."""
    results = _run(corpus, "langchain_summarization:summarization_middleware_keep_tokens")
    summarized = [
        r
        for r in results
        if any(str(m.get("content", "")).startswith("Here is a summary") for m in _messages(r))
    ]
    assert summarized
    for result in summarized:
        assert not _violations(result)  # it moves the cut to keep rings whole
        summary = next(m for m in _messages(result) if "summary" in str(m.get("content")))
        assert summary["role"] == "user"
        assert _failed(result, "system_kept")


def test_llama_index_buffer_starts_at_a_user_turn_and_drops_the_system_text(corpus: Path) -> None:
    """llama_index PR #16214: the window never starts with a tool message; system is trimmed too."""
    results = _run(corpus, "llama_index:chat_memory_buffer")
    for result in results:
        messages = _messages(result)
        assert messages[0]["role"] in {"system", "user"}
        assert "orphan_result" not in _violations(result)
    assert any(_failed(r, "system_kept") for r in results)


def test_llama_index_memory_keeps_only_the_tail_it_can_fit(corpus: Path) -> None:
    """Memory flushes the oldest messages (system included) to its blocks, none here."""
    results = _run(corpus, "llama_index:memory")
    assert any(_failed(r, "system_kept") for r in results)
    assert all("orphan_result" not in _violations(r) for r in results)


def test_semantic_kernel_reducers_keep_pairs_but_count_messages_only(corpus: Path) -> None:
    """SK 1.45 walks the cut over call/result messages (the #12708 fix): no orphans; it counts
    messages, so the budget is not kept."""
    for spec in ("semantic_kernel:truncation", "semantic_kernel:summarization"):
        results = _run(corpus, spec)
        assert all(not _violations(r) for r in results), spec
        assert any(_failed(r, "within_budget") for r in results), spec
