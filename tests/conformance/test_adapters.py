"""The ready adapters, run offline through the engine: the harness finds what users report upstream.

Each failure class is recognized twice: by the harness's check (``provider_valid`` with the
provider rule id, ``system_kept``...) and independently here, by validating the returned messages
with ``rings.validate`` and looking at where they came from in the session. The scenarios live in
this file (not the built-in corpus) so the budgets that trigger each class stay put; the classes
are those of ``shared/design/peers.md``: langchain#33245 (orphan results at the start after
``strategy="last"``), unanswered calls at the end after ``strategy="first"``, litellm#10696 /
#4931 (non-contiguous trimming, system messages merged, only trailing tool messages protected).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import run_events
from conformance.events import CaseFinished, CaseResult
from conformance.identity import map_view
from conformance.loading import load_plugin
from conformance.scenarios import load_corpus
from reference_impl.rings import validate
from reference_impl.shapes import get_shape

_CHAT = get_shape("openai-chat")

# A ring in the middle, then a user turn: trimming from either end must cut through the ring at
# some budget of the sweep.
RING_THEN_USER = """
  - id: ring-then-user
    title: a ring between the goal and the latest user turn
    shapes: [openai-chat]
    tools: [{name: get_status}]
    session:
      - {role: system, text: "You are deploy-bot."}
      - {role: user, text: "GOAL: roll out checkout v2."}
      - role: assistant
        text: "Checking the rollout status first."
        calls: [{id: call_n1, name: get_status, args: {services: {repeat: "checkout payments search", times: 6}}}]
      - {role: tool, results: [{id: call_n1, text: {repeat: "healthy 12/12 pods", times: 4}}]}
      - {role: user, text: "Next?"}
    budget: {sweep: [30, 200, 10]}
    expect: {outcome: either}
"""

# Two system messages, and the session ends with a ring (litellm keeps trailing tool messages).
TRAILING_RING = """
  - id: trailing-ring
    title: two system texts, an older ring, and a ring at the very end
    shapes: [openai-chat]
    tools: [{name: get_status}]
    session:
      - {role: system, text: "You are deploy-bot."}
      - {role: system, text: "Never deploy on Fridays."}
      - {role: user, text: "GOAL: roll out checkout v2."}
      - {role: assistant, calls: [{id: call_t1, name: get_status, args: {}}]}
      - {role: tool, results: [{id: call_t1, text: {repeat: "status line ok;", times: 60}}]}
      - {role: user, text: "And payments?"}
      - {role: assistant, text: "Checking.", calls: [{id: call_t2, name: get_status, args: {}}]}
      - {role: tool, results: [{id: call_t2, text: {repeat: "status line ok;", times: 60}}]}
    budget: {sweep: [100, 400, 50]}
    expect: {outcome: either}
"""


# The adapters' libraries cost seconds of CPU each to import (litellm the most): every test that
# imports them shares one xdist worker (`--dist loadgroup`), so each is imported once.
pytestmark = pytest.mark.xdist_group("adapter-libraries")

_EXTRA = {"langchain_core": "langchain", "litellm": "litellm"}


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        extra = _EXTRA.get(module, module)
        pytest.skip(f"{module} is not installed; install the extra: pip install -e '.[{extra}]'")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("adapters") / "must"
    root.mkdir()
    (root / "cases.yaml").write_text(f"version: 1\nscenarios:{RING_THEN_USER}{TRAILING_RING}")
    return root.parent


def _run(spec: str, corpus: Path, scenario: str) -> list[CaseResult]:
    plugin = load_plugin(spec)
    scenarios = [s for s in load_corpus(corpus) if s.id == scenario]
    # litellm's first import takes several seconds on a busy machine; do not let it time out.
    events = run_events(plugin, scenarios, level="may", timeout=120)
    return [e.result for e in events if isinstance(e, CaseFinished)]


def _messages(body: Any) -> list[dict[str, Any]]:
    return list(body["messages"])


def _kinds(result: CaseResult) -> list[tuple[str, int]]:
    assert result.output is not None
    view = _CHAT.parse_request(result.output)
    return [(v.kind, v.message_index) for v in validate(view)]


def _failed(result: CaseResult, check: str) -> str:
    """The failure title of ``check`` in ``result`` ('' when it passed or did not run)."""
    found = [c for c in result.checks if c.id == check and c.status == "fail"]
    return found[0].title if found else ""


def _kept_sources(result: CaseResult) -> list[int]:
    assert result.input is not None
    assert result.output is not None
    session = _CHAT.parse_request(result.input)
    view = _CHAT.parse_request(result.output)
    identity = map_view(session, view)
    return [link.source for link in identity.links if link.source is not None]


def _with_output(results: Sequence[CaseResult]) -> list[CaseResult]:
    return [r for r in results if r.status != "pass" and r.output is not None]


# ---------------------------------------------------------------------------------- langchain


def test_langchain_trim_last_leaves_orphan_results_at_the_start(corpus: Path) -> None:
    """langchain#33245: strategy='last' can return ToolMessages first, without their AIMessage."""
    _needs("langchain_core")
    results = _run("conformance.adapters.langchain:trim_last", corpus, "ring-then-user")
    leading = []
    for result in _with_output(results):
        messages = _messages(result.output)
        first = next((i for i, m in enumerate(messages) if m["role"] != "system"), None)
        if first is None:  # trimmed down to the system text
            continue
        if messages[first]["role"] == "tool" and ("orphan_result", first) in _kinds(result):
            leading.append(result)
    assert leading, "expected an orphan tool result right after the system text at some budget"
    assert all("rule C2" in _failed(r, "provider_valid") for r in leading)


def test_langchain_trim_first_leaves_the_last_call_unanswered(corpus: Path) -> None:
    """strategy='first' has no guard for a trailing assistant tool call (C1)."""
    _needs("langchain_core")
    results = _run("conformance.adapters.langchain:trim_first", corpus, "ring-then-user")
    trailing = []
    for result in _with_output(results):
        messages = _messages(result.output)
        last = len(messages) - 1
        if last < 0:  # trimmed down to nothing
            continue
        if messages[last].get("tool_calls") and ("unanswered_call", last) in _kinds(result):
            trailing.append(result)
    assert trailing, "expected an unanswered assistant tool call at the end at some budget"
    assert all("rule C1" in _failed(r, "provider_valid") for r in trailing)


def test_langchain_start_on_human_fixes_only_the_leading_edge(corpus: Path) -> None:
    """The docstring's advice (start_on='human') removes leading orphans, nothing more."""
    _needs("langchain_core")
    results = _run(
        "conformance.adapters.langchain:trim_last_start_on_human", corpus, "ring-then-user"
    )
    assert results
    for result in _with_output(results):
        messages = [m for m in _messages(result.output) if m["role"] != "system"]
        assert not messages or messages[0]["role"] == "user", result.key
        assert "rule C2" not in _failed(result, "provider_valid"), result.key


# ------------------------------------------------------------------------------------ litellm


def test_litellm_trims_non_contiguously_and_orphans_a_middle_result(corpus: Path) -> None:
    """A message that does not fit is skipped and older ones are still tried (litellm#10696)."""
    _needs("litellm")
    results = _run("conformance.adapters.litellm:trim_messages", corpus, "ring-then-user")
    gaps = []
    for result in _with_output(results):
        kept = sorted(s for s in _kept_sources(result) if s > 0)
        if kept and kept != list(range(kept[0], kept[0] + len(kept))):
            gaps.append(result)
    assert gaps, "expected a view that keeps an older message after skipping a newer one"
    orphaned = [r for r in gaps if any(k == "orphan_result" for k, _ in _kinds(r))]
    assert orphaned
    assert all("rule C2" in _failed(r, "provider_valid") for r in orphaned)


def test_litellm_merges_system_texts_and_protects_only_trailing_tool_messages(
    corpus: Path,
) -> None:
    """System messages come back merged into one; a trailing ring is kept, an older one is cut."""
    _needs("litellm")
    results = _run("conformance.adapters.litellm:trim_messages", corpus, "trailing-ring")
    merged = []
    for result in _with_output(results):
        messages = _messages(result.output)
        systems = [m for m in messages if m["role"] == "system"]
        if len(systems) == 1 and "\n" in str(systems[0]["content"]):
            merged.append(result)
    assert merged, "expected the two system texts merged into one message"
    # The merged text is both session system texts, whole and in order, joined by a newline: a
    # faithful merge, not an invention or an altered pin (identity maps it back to both).
    assert not any(_failed(r, "nothing_invented") or _failed(r, "pins_unaltered") for r in merged)

    protected_but_broken = []
    for result in _with_output(results):
        messages = _messages(result.output)
        tail_ids = [c["id"] for c in messages[-2].get("tool_calls") or []]
        trailing_intact = tail_ids == ["call_t2"] and messages[-1].get("tool_call_id") == "call_t2"
        if trailing_intact and ("orphan_result", 1) in _kinds(result):
            protected_but_broken.append(result)
    assert protected_but_broken, (
        "expected the trailing ring intact while the older ring is orphaned"
    )
    assert all("rule C2" in _failed(r, "provider_valid") for r in protected_but_broken)
    # Trailing tool messages are appended without being counted: over budget at every budget.
    assert all(_failed(r, "within_budget") for r in _with_output(results))
