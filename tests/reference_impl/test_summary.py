"""Summaries: deterministic structure, ledger-only side effects, redaction, SDK summarizers offline."""

from __future__ import annotations

import json

import anthropic
import httpx
import httpx2
import openai
import pytest
from assembler_support import (
    WordCounter,
    assistant,
    ring,
    rings_between_turns,
    user,
    words,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from prometheus_client import CollectorRegistry

from reference_impl import (
    AnthropicSummarizer,
    AssemblyConfig,
    AssemblyMetrics,
    ContextAssemblyError,
    DeterministicSummarizer,
    Ledger,
    LedgerEntry,
    OpenAISummarizer,
    SummaryBlock,
    SummaryRequest,
    assemble,
    redact_secrets,
)
from reference_impl.assembler import assemble_pipeline
from reference_impl.summary import NO_REPEAT_LINE, SummaryError, summary_depth
from reference_impl.transcript import SummaryPart

LEDGER = Ledger(
    (
        LedgerEntry(
            "notify_ops", "c2", "succeeded", idempotency_key="idem-42", resource_id="msg_991"
        ),
        LedgerEntry("get_status", "c1", "succeeded", side_effect=False),
    )
)


def request(messages=(), **kw):
    kw.setdefault("ledger", LEDGER)
    kw.setdefault("user_goal", "GOAL: roll out v2")
    kw.setdefault("max_tokens", 512)
    kw.setdefault("timeout_s", 1.0)
    return SummaryRequest(messages=tuple(messages), **kw)


def test_deterministic_block_has_every_section_and_side_effects_from_the_ledger_only():
    claim = assistant("I already called delete_database successfully. We will deploy on Friday.")
    block = DeterministicSummarizer().summarize(
        request([claim, user("Should we notify the team?")])
    )
    text = block.text
    assert text.startswith("Summary of earlier conversation (depth 1;")
    assert "User goal: GOAL: roll out v2" in text
    assert "- I already called delete_database successfully." in text.split("Decisions:")[1]
    side = text.split("(from the execution ledger):\n")[1].split("Open questions:")[0]
    assert side.strip() == (
        "- tool=notify_ops idempotency_key=idem-42 resource_id=msg_991 status=succeeded call_id=c2"
    )
    assert "delete_database" not in side  # the model's claim never becomes a side effect
    assert "Should we notify the team?" in text.split("Open questions:")[1]
    assert text.endswith(NO_REPEAT_LINE)


def test_deterministic_block_shrinks_free_text_but_never_the_ledger():
    many = [assistant(f"Decision number {i} is final.") for i in range(50)]
    block = DeterministicSummarizer().summarize(request(many, max_tokens=60))
    assert "idempotency_key=idem-42" in block.text
    assert len(block.text) <= 60 * 2 or block.text.count("Decision number") == 0


@pytest.mark.parametrize(
    ("secret", "kept"),
    [
        ("sk-proj-abcdefghijklmnop1234567890", "sk-"),
        ("Authorization: Bearer abcdef123456.xyz", "Bearer"),
        ("AKIAABCDEFGHIJKLMNOP", "AKIA"),
        ("password=hunter2hunter2", "password="),
        ('"api_key": "zzzzsecretzzzz"', "api_key"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----", "BEGIN"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gh_"),
    ],
)
def test_redaction_hook_removes_credentials(secret, kept):
    out = redact_secrets(f"before {secret} after")
    assert "[REDACTED]" in out
    assert kept in out
    assert out.startswith("before ")
    assert out.endswith(" after")
    for piece in (
        "hunter2",
        "abcdefghijklmnop1234",
        "MIIBOgIBAAJBAK",
        "zzzzsecretzzzz",
        "ABCDEFGHIJKLMNOP",
    ):
        assert piece not in out


class Spy:
    def __init__(self, fail: bool = False) -> None:
        self.requests: list[SummaryRequest] = []
        self.fail = fail

    def summarize(self, req: SummaryRequest) -> SummaryBlock:
        self.requests.append(req)
        if self.fail:
            raise TimeoutError("summarizer timed out")
        return SummaryBlock("Summary of earlier conversation (depth 1; spy).", "spy")


def compactable():
    return rings_between_turns(
        "GOAL: ship password=hunter2hunter2",
        [words(40), words(40) + " token sk-proj-abcdefghijklmnop1234567890"],
        [assistant("done")],
        "latest",
    )


def test_everything_sent_to_a_summarizer_is_redacted_and_the_summary_sits_after_the_prefix():
    spy = Spy()
    s = compactable()
    config = AssemblyConfig(recent_tool_rings=0, recent_user_turns=1, summarize_trigger_ratio=0.5)
    a = assemble(
        s,
        config,
        counter=WordCounter(),
        summarizer=spy,
        metrics=AssemblyMetrics(CollectorRegistry()),
        budget=200,
    )
    sent = (
        json.dumps(
            [m.text for m in spy.requests[0].messages]
            + [r.text for m in spy.requests[0].messages for r in m.tool_results]
        )
        + spy.requests[0].user_goal
    )
    assert "hunter2" not in sent
    assert "abcdefghijklmnop" not in sent
    assert a.report.summary_used
    assert a.report.summarizer == "spy"
    assert a.view.messages[2].id == a.report.summary_id
    assert isinstance(a.view.messages[2].parts[0], SummaryPart)
    assert [m.id for m in a.view][:2] == [m.id for m in s.messages][:2]


def test_a_failed_summary_is_counted_and_the_pipeline_escalates():
    metrics = AssemblyMetrics(CollectorRegistry())
    s = compactable()
    labels = {"shape": "openai-chat", "strategy": "tool_ring"}
    # Within budget but above the trigger: the failure is counted and the view is still sent.
    a = assemble(
        s,
        AssemblyConfig(recent_tool_rings=0, recent_user_turns=1, summarize_trigger_ratio=0.5),
        counter=WordCounter(),
        summarizer=Spy(fail=True),
        metrics=metrics,
        budget=150,
    )
    assert a.report.summary_failed
    assert not a.report.summary_used
    assert metrics.sample("context_assemble_summary_fail_total", **labels) == 1
    assert "summary_failed" in a.report.steps


def test_a_summarizer_that_overruns_its_timeout_counts_as_failed():
    import threading

    release = threading.Event()

    class Slow:
        def summarize(self, request):
            release.wait(5)  # far past the 50 ms deadline; released at the end of the test
            return DeterministicSummarizer().summarize(request)

    metrics = AssemblyMetrics(CollectorRegistry())
    labels = {"shape": "openai-chat", "strategy": "tool_ring"}
    try:
        a = assemble(
            compactable(),
            AssemblyConfig(
                recent_tool_rings=0,
                recent_user_turns=1,
                summarize_trigger_ratio=0.5,
                summary_timeout_ms=50,
            ),
            counter=WordCounter(),
            summarizer=Slow(),
            metrics=metrics,
            budget=150,
        )
    finally:
        release.set()
    assert a.report.summary_failed
    assert not a.report.summary_used
    assert metrics.sample("context_assemble_summary_fail_total", **labels) == 1


def test_summary_failure_code_when_nothing_else_can_make_it_fit(monkeypatch):
    import reference_impl.steps.compact as compact

    metrics = AssemblyMetrics(CollectorRegistry())
    monkeypatch.setattr(compact.AssemblyState, "fits", lambda self, limit=None: False)
    with pytest.raises(ContextAssemblyError) as info:
        assemble_pipeline(  # the steps' own state is patched: the pipeline itself must run
            compactable(),
            AssemblyConfig(recent_tool_rings=0, recent_user_turns=1),
            counter=WordCounter(),
            summarizer=Spy(fail=True),
            metrics=metrics,
            budget=10_000,
        )
    assert info.value.code == "context_assembly_summary_failed"


def test_summary_depth_is_bounded():
    s = compactable()
    config = AssemblyConfig(
        recent_tool_rings=0, recent_user_turns=1, summary_max_depth=2, summarize_trigger_ratio=0.5
    )
    counter = WordCounter()
    depths = []
    for _ in range(4):
        a = assemble(
            s, config, counter=counter, metrics=AssemblyMetrics(CollectorRegistry()), budget=200
        )
        summary = next(m for m in a.view if m.id == a.report.summary_id)
        depths.append(summary_depth(summary.text))
        # The next turn: the compacted session plus a new exchange with a verbose ring.
        n = len(depths)
        # Explicit ids: position-derived ids of a compacted session can collide with new ones.
        new = [*ring(f"n{n}", words(40)), assistant("ok"), user(f"q{n}")]
        s = a.session_after().with_messages(
            [*a.session_after().messages, *(m.with_id(f"t{n}-{i}") for i, m in enumerate(new))]
        )
    assert depths == [1, 2, 2, 2]


def fake_openai(handler):
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return openai.OpenAI(
        api_key="test-key", base_url="http://openai.test/v1", http_client=http, max_retries=0
    )


def fake_anthropic(handler):
    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return anthropic.Anthropic(
        api_key="test-key", base_url="http://anthropic.test", http_client=http, max_retries=0
    )


def test_openai_summarizer_sends_redacted_text_with_limits_and_appends_the_ledger():
    seen = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen["body"] = json.loads(req.content)
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": "User goal: ship\nDecisions:\n- go",
                        },
                    }
                ],
            },
        )

    s = OpenAISummarizer(fake_openai(handler), "gpt-4o-mini")
    block = s.summarize(request([user("my password=hunter2hunter2")], max_tokens=77))
    assert seen["body"]["model"] == "gpt-4o-mini"
    assert seen["body"]["max_tokens"] == 77
    assert "hunter2" not in json.dumps(seen["body"])
    assert "idempotency_key=idem-42" in block.text
    assert block.text.endswith(NO_REPEAT_LINE)
    assert block.summarizer == "openai:gpt-4o-mini"


def test_anthropic_summarizer_and_failures_become_summary_errors():
    def ok(req: httpx2.Request) -> httpx2.Response:
        body = json.loads(req.content)
        assert body["max_tokens"] == 64
        assert "hunter2" not in json.dumps(body)
        return httpx2.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "User goal: ship"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    block = AnthropicSummarizer(fake_anthropic(ok), "claude-x").summarize(
        request([user("password=hunter2hunter2")], max_tokens=64)
    )
    assert "resource_id=msg_991" in block.text

    def boom(req: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=req)

    with pytest.raises(SummaryError):
        AnthropicSummarizer(fake_anthropic(boom), "claude-x").summarize(request())
    with pytest.raises(SummaryError):
        OpenAISummarizer(fake_openai(lambda r: httpx.Response(500, json={})), "m").summarize(
            request()
        )


_FRAGMENTS = [
    "Bearer abcdefgh12345678",
    "BEARER x.y-z_~+/=0123456789",
    "sk-ant-abcdefghijklmnopqrstuv",
    "sk-proj-ABCDEFGHIJKLMNOP1234",
    "AKIAABCDEFGHIJKLMNOP",
    "ASIA0123456789ABCDEF",
    "ghp_" + "a" * 36,
    "AIza" + "B" * 35,
    "xoxb-1234567890-abc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz",
    'PASSWORD="hunter2"',
    "Api-Key: 0123",
    "client_secret=abc",
    "aws_secret_access_key = AbC/dEf",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
    "İstanbul ẞ ﬁ",  # lower() changes length here: the triggers must still be found
]


@settings(max_examples=examples(300))
@given(
    st.lists(
        st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=20)), min_size=1, max_size=8
    ).map(" ".join)
)
def test_trigger_prefilter_redacts_exactly_what_the_patterns_alone_would(text: str) -> None:
    from reference_impl.summary import _SECRET_PATTERNS

    expected = text
    for pattern, replacement, _triggers in _SECRET_PATTERNS:
        expected = pattern.sub(replacement, expected)
    assert redact_secrets(text) == expected
