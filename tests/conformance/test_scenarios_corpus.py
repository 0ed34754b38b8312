"""The scenario corpus: schema, coverage of the required topics, realistic budgets, and the format."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import REGISTRY
from conformance.cli import cli
from conformance.corpus_lint import corpus_problems
from conformance.engine import reference_counter, render_input
from conformance.errors import ScenarioError
from conformance.scenarios import (
    expand_message,
    expanded_chars,
    load_corpus,
    load_file,
    scenario_files,
    schema_errors,
    select,
    unknown_selectors,
)
from reference_impl.shapes import get_shape
from reference_impl.transcript import SHAPE_NAMES, transcript_from_dict

CORPUS = load_corpus()

# Every topic must be covered by at least one scenario tagged with it.
TOPICS = [
    "single-tool",
    "parallel-tools",
    "follow-up",
    "mid-ring-deletion",
    "summary",
    "unanswered-call",
    "orphan-result",
    "duplicate-id",
    "result-before-call",
    "interleaved",
    "text-between-results",
    "results-split",
    "reasoning-detached",
    "first-user-goal",
    "ledger",
    "error-results",
    "plain-turns",
    "refusal",
    "tool-schemas",
    "recent-rings",
    "attachments",
    "memory",
    "reasoning",
    "prompt-cache",
    "mistral",
    "ollama",
    "budget-sweep",
]


def test_at_least_forty_scenarios_with_unique_ids() -> None:
    ids = [s.id for s in CORPUS]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("topic", TOPICS)
def test_every_topic_is_covered(topic: str) -> None:
    assert any(topic in s.tags for s in CORPUS), f"no scenario tagged {topic!r}"


def test_parallel_rings_of_two_four_and_eight() -> None:
    widths = {len(m.tool_calls) for s in CORPUS for m in s.session.messages}
    assert {2, 4, 8} <= widths


def test_corpus_validates_clean() -> None:
    assert corpus_problems(CORPUS, known_checks=set(REGISTRY)) == []
    out = CliRunner().invoke(cli, ["scenarios", "validate"])
    assert out.exit_code == 0, out.output


def test_scenarios_list_names_every_scenario() -> None:
    out = CliRunner().invoke(cli, ["scenarios", "list"])
    assert out.exit_code == 0
    assert all(s.id in out.output for s in CORPUS)


TRIMMING = {
    "oldest_rings_first",
    "plain_turns_fifo",
    "summary_used",
    "tools_dropped",
    "middle_error_results_kept",
    "attachments_degraded_first",
}


@pytest.mark.parametrize(
    "scenario", [s for s in CORPUS if TRIMMING & set(s.expect.checks)], ids=lambda s: s.id
)
def test_budgets_force_the_step_they_test(scenario) -> None:  # type: ignore[no-untyped-def]
    """A scenario about trimming must be over budget in every shape, by the reference counter."""
    for shape in scenario.shapes:
        body = render_input(scenario, scenario.sessions()[-1], shape)
        counter = reference_counter(shape, scenario.model_for(shape))
        total = counter.count(get_shape(shape).parse_request(body)).total
        assert total > max(scenario.budget.for_shape(shape)), (shape, total)


def _write(tmp_path: Path, body: str, level: str = "must") -> Path:
    folder = tmp_path / level
    folder.mkdir(exist_ok=True)
    path = folder / "t.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_schema_error_names_file_and_json_path(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        version: 1
        scenarios:
          - id: x
            title: x
            session: [{role: wizard, text: hi}]
            budget: 10
            expect: {outcome: assembled}
        """,
    )
    with pytest.raises(ScenarioError, match=r"\$\.scenarios\[0\]\.session\[0\]\.role") as info:
        load_file(path)
    assert info.value.where == str(path)


_ONE = """\
    version: 1
    scenarios:
      - {id: x, title: %s, session: [{role: user, text: hi}], budget: 10,
         expect: {outcome: assembled}}
    """


def test_a_file_loaded_again_is_kept_until_it_changes(tmp_path: Path) -> None:
    path = _write(tmp_path, _ONE % "first")
    first = load_file(path)
    assert load_file(path) is first  # kept: parsed once
    path.write_text(textwrap.dedent(_ONE % "second and longer"))
    (changed,) = load_file(path)
    assert changed.title == "second and longer"


def test_a_file_that_failed_is_read_again(tmp_path: Path) -> None:
    path = _write(tmp_path, (_ONE % "x").replace("role: user", "role: wizard"))
    with pytest.raises(ScenarioError, match="role"):
        load_file(path)
    path.write_text(textwrap.dedent(_ONE % "x"))
    (fixed,) = load_file(path)
    assert fixed.id == "x"


def test_level_must_match_the_folder(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        version: 1
        scenarios:
          - {id: x, title: x, level: may, session: [{role: user, text: hi}], budget: 10,
             expect: {outcome: assembled}}
        """,
    )
    with pytest.raises(ScenarioError, match="lives in the 'must' folder"):
        load_file(path)


def test_validate_reports_unknown_checks_and_unrenderable_shapes(tmp_path: Path) -> None:
    _write(
        tmp_path,
        """\
        version: 1
        scenarios:
          - id: x
            title: x
            shapes: [openai-chat]
            session: [{role: tool, results: [{id: c1, text: r, is_error: true}]}]
            budget: 10
            expect: {outcome: refused, input: invalid, checks: [no_such_check]}
        """,
    )
    out = CliRunner().invoke(cli, ["scenarios", "validate", str(tmp_path)])
    assert out.exit_code == 1
    assert "unknown check 'no_such_check'" in out.output
    assert "x [openai-chat]: cannot be rendered" in out.output


def test_validate_reports_a_tool_whose_parameters_are_no_json_schema(tmp_path: Path) -> None:
    # A provider refuses such a tool: no case of the scenario would test context assembly.
    _write(
        tmp_path,
        """\
        version: 1
        scenarios:
          - id: odd-schema
            title: x
            shapes: [openai-chat]
            tools:
              - {name: f, parameters: {type: object, properties: {a: {type: string}}}}
              - {name: g, parameters: {type: object, required: [[a]]}}
            session: [{role: user, text: hi}]
            budget: 100
            expect: {outcome: either}
        """,
    )
    out = CliRunner().invoke(cli, ["scenarios", "validate", str(tmp_path)])
    assert out.exit_code == 1
    assert "odd-schema: tools[1] (g): parameters['required'][0] is not a valid JSON Schema" in (
        out.output
    )
    assert "tools[0]" not in out.output


def test_version_is_required() -> None:
    assert schema_errors({"scenarios": []})


texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)  # Cs: UTF-8-encodable


@settings(max_examples=60, deadline=None)
@given(
    text=texts,
    calls=st.lists(
        st.tuples(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), texts),
        max_size=3,
        unique_by=lambda c: c[0],
    ),
)
def test_compact_form_expands_to_the_transcript_model(
    text: str, calls: list[tuple[str, str]]
) -> None:
    compact = [
        {"role": "user", "text": text},
        {
            "role": "assistant",
            "text": "ok",
            "calls": [{"id": i, "name": "f", "args": {"q": a}} for i, a in calls],
        },
    ]
    if calls:
        compact.append({"role": "tool", "results": [{"id": i, "text": a} for i, a in calls]})
    transcript = transcript_from_dict({"messages": [expand_message(m) for m in compact]})
    assert transcript.messages[0].text == text
    assert [c.id for c in transcript.messages[1].tool_calls] == [i for i, _ in calls]
    if calls:
        assert [r.call_id for r in transcript.messages[2].tool_results] == [i for i, _ in calls]


def test_every_shape_is_used() -> None:
    assert {shape for s in CORPUS for shape in s.shapes} == set(SHAPE_NAMES)


def test_model_for_prefers_the_scenario_then_the_shared_default() -> None:
    from dataclasses import replace

    from conformance.scenarios import DEFAULT_MODELS

    scenario = CORPUS[0]
    plain = replace(scenario, models={})
    assert plain.model_for("gemini") == DEFAULT_MODELS["gemini"] == "gemini-2.5-flash"
    named = replace(scenario, models={"gemini": "gemini-2.5-pro"})
    assert named.model_for("gemini") == "gemini-2.5-pro"
    assert named.model_for("openai-chat") == DEFAULT_MODELS["openai-chat"]


def _with_budget(tmp_path: Path, budget: str, extra: str = "") -> Path:
    return _write(
        tmp_path,
        f"""\
        version: 1
        scenarios:
          - {{id: x, title: x, session: [{{role: user, text: hi}}], budget: {budget},
             expect: {{outcome: assembled}}{extra}}}
        """,
    )


@pytest.mark.parametrize(
    ("budget", "where", "message"),
    [
        ("{sweep: [1, 1000000, 1]}", "budget.sweep", "names 1,000,000 budgets; at most 200"),
        ("{sweep: [400, 100, 10]}", "budget.sweep", "400 is above 100"),
        (
            "{default: 10, per_shape: {gemini: {sweep: [1, 5000, 2]}}}",
            "budget.per_shape.gemini.sweep",
            "names 2,500 budgets",
        ),
        ("{default: {sweep: [1, 201, 1]}}", "budget.default.sweep", "names 201 budgets"),
    ],
)
def test_a_sweep_is_refused_at_load_when_it_runs_backwards_or_names_too_many_budgets(
    tmp_path: Path, budget: str, where: str, message: str
) -> None:
    """A typo in a sweep must not become millions of cases (it once ran the process out of
    memory while loading, with no message and no report)."""
    with pytest.raises(ScenarioError, match=re.escape(message)) as info:
        load_file(_with_budget(tmp_path, budget))
    assert f"$.scenarios[0].{where}:" in info.value.message


def test_a_sweep_of_exactly_the_bound_loads(tmp_path: Path) -> None:
    (scenario,) = load_file(_with_budget(tmp_path, "{sweep: [1, 200, 1]}"))
    assert scenario.budget.for_shape("gemini") == tuple(range(1, 201))


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ("{sweep: [10, 400, 0]}", "budget: sweep[2]: 0 is too small"),
        ("{sweep: [10, 400]}", "budget: sweep: needs at least 3 item(s), has 2"),
        ("{sweep: [10, 400, 5], step: 2}", "budget: unknown key 'step'"),
        ("{default: 10, per_shape: {gpt: 5}}", "budget: per_shape: 'gpt' is not one of"),
        ("{default: {sweep: [1, 2]}}", "budget: default.sweep: needs at least 3 item(s)"),
        ("{default: 5, per_shape: {gemini: {sweep: [1, a, 3]}}}", "sweep[1]: expected integer"),
        ("lots", "budget: expected integer or object, got string"),
        ("0", "budget: 0 is too small"),
    ],
)
def test_a_bad_budget_is_explained_by_the_form_it_comes_closest_to(
    tmp_path: Path, budget: str, message: str
) -> None:
    """Not by another form's missing key ("missing required key 'default'" for a sweep whose
    step is 0)."""
    with pytest.raises(ScenarioError) as info:
        load_file(_with_budget(tmp_path, budget))
    assert message in info.value.message
    assert "missing required key" not in info.value.message


@pytest.mark.parametrize(
    ("extra", "where", "message"),
    [
        (
            ", dialects: [mistrall], shapes: [openai-chat]",
            "dialects[0]",
            "unknown dialect 'mistrall'",
        ),
        (", dialects: [mistral]", "shapes", "'mistral' is a dialect of openai-chat"),
        (", dialects: [ollama], shapes: [gemini]", "shapes", "lists that shape alone"),
    ],
)
def test_a_dialect_is_checked_when_the_scenario_loads(
    tmp_path: Path, extra: str, where: str, message: str
) -> None:
    """Found at load (exit 2, the scenario's fault), not when the cases run, where it was
    reported as the plug-in raising ``ShapeError``."""
    with pytest.raises(ScenarioError, match=re.escape(message)) as info:
        load_file(_with_budget(tmp_path, "10", extra))
    assert f"$.scenarios[0].{where}:" in info.value.message


def test_a_scenario_with_a_gateway_dialect_alias_loads(tmp_path: Path) -> None:
    (scenario,) = load_file(
        _with_budget(tmp_path, "10", ", dialects: [azure-openai], shapes: [openai-chat]")
    )
    assert scenario.dialects == ("azure-openai",)


_ORPHAN = """\
    version: 1
    scenarios:
      - id: x
        title: x
        session:
          - {role: user, text: hi}
          %s
        budget: 1000
        expect: %s
        %s
    """


@pytest.mark.parametrize(
    ("session", "more", "where"),
    [
        ("- {role: tool, results: [{id: call_9, text: ok}]}", "", "session[1]"),
        (
            "- {role: assistant, text: sure}",
            "turns: [[{role: user, text: more}, {role: tool, results: [{id: c, text: ok}]}]]",
            "turns[0][1]",
        ),
    ],
)
def test_a_broken_session_must_be_declared_invalid(
    tmp_path: Path, session: str, more: str, where: str
) -> None:
    """Otherwise the plug-in that rightly refuses it is failed for refusing: the harness blamed
    the plug-in for the scenario's fault (``assembles_when_feasible``)."""
    path = _write(tmp_path, _ORPHAN % (session, "{outcome: assembled}", more))
    with pytest.raises(ScenarioError, match="breaks tool-call pairing \\(orphan_result") as info:
        load_file(path)
    assert f"$.scenarios[0].{where}:" in info.value.message
    assert "expect: {outcome: refused, input: invalid}" in info.value.message


@pytest.mark.parametrize(
    ("expect", "more"),
    [
        ("{outcome: refused, input: invalid}", ""),
        ("{outcome: assembled}", "config: {on_pairing_error: synthesize_error_results}"),
    ],
)
def test_a_broken_session_loads_when_it_says_so(tmp_path: Path, expect: str, more: str) -> None:
    path = _write(
        tmp_path, _ORPHAN % ("- {role: tool, results: [{id: call_9, text: ok}]}", expect, more)
    )
    (scenario,) = load_file(path)
    assert scenario.id == "x"


def test_a_pairing_rule_no_target_of_the_scenario_enforces_is_no_fault(tmp_path: Path) -> None:
    """A thinking block after its tool_use breaks Anthropic's A13, which Chat does not have: a
    Chat-only scenario holding it is valid input."""
    body = textwrap.dedent(
        """\
        version: 1
        scenarios:
          - id: x
            title: x
            shapes: [%s]
            tools: [{name: get_status, parameters: {type: object}}]
            session:
              - {role: user, text: "GOAL: check checkout."}
              - role: assistant
                parts:
                  - {kind: tool_call, id: toolu_1, name: get_status, arguments: '{}'}
                  - {kind: reasoning, origin: anthropic-messages, data: {type: thinking, thinking: t, signature: s}}
              - {role: tool, results: [{id: toolu_1, text: ok}]}
            budget: 8000
            expect: {outcome: assembled}
        """
    )
    (scenario,) = load_file(_write(tmp_path, body % "openai-chat"))
    assert scenario.shapes == ("openai-chat",)
    with pytest.raises(ScenarioError, match="reasoning_detached"):
        load_file(_write(tmp_path, body % "anthropic-messages"))


def test_texts_that_expand_past_the_bound_are_refused_before_they_are_built(
    tmp_path: Path,
) -> None:
    """A 20 KB string repeated 5,000 times and aliased in a second message would be 200 million
    characters: refused from its size, never built (a 1 MB file of this kind asked for 200 GB)."""
    big = "y" * 20_000
    path = _write(
        tmp_path,
        f"""\
        version: 1
        scenarios:
          - id: small
            title: small
            session: [{{role: user, text: {{repeat: "ok", times: 3}}}}]
            budget: 10
            expect: {{outcome: either}}
          - id: x
            title: x
            session:
              - {{role: user, text: {{repeat: &big "{big}", times: 5000}}}}
              - {{role: assistant, text: {{repeat: *big, times: 5000}}}}
            budget: 10
            expect: {{outcome: either}}
        """,
    )
    with pytest.raises(ScenarioError, match=r"\$\.scenarios\[1\]: the file's texts") as info:
        load_file(path)
    # 2 x (20,000 x 5,000 + 4,999 newlines) + every other string of the two scenarios (ids,
    # titles, roles, outcomes, the small text: 28 + 21 characters).
    assert "expand to 200,010,047 characters" in info.value.message
    assert "at most 67,108,864 in one file" in info.value.message


def test_expanded_chars_counts_repeats_joins_and_nested_values() -> None:
    assert expanded_chars({"repeat": "abc", "times": 4}) == 3 * 4 + 3  # three "\n" joins
    assert expanded_chars({"repeat": "ab", "times": 3, "join": ", "}) == 6 + 2 * 2
    assert expanded_chars([{"text": "hello"}, {"args": {"q": {"repeat": "x", "times": 5}}}]) == 14
    assert expanded_chars({"times": 3, "budget": 10}) == 0


@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")
def test_a_folder_walk_reads_regular_files_only(tmp_path: Path) -> None:
    """A pipe named like a scenario file in a folder is skipped: opening it waits for a writer
    that never comes (``scenarios validate`` hung). A folder named ``x.yaml`` is skipped too."""
    path = _write(tmp_path, _ONE % "real")
    os.mkfifo(path.parent / "pipe.yaml")
    (path.parent / "folder.yaml").mkdir()
    assert scenario_files(tmp_path) == [path]
    assert [s.title for s in load_corpus(tmp_path)] == ["real"]


def test_an_id_wins_over_a_tag_of_the_same_name_and_tag_prefix_names_the_tag() -> None:
    # "single-tool" is a scenario's id and also a tag of other scenarios: naming it runs that
    # scenario alone; "tag:single-tool" runs every scenario tagged so.
    tagged = {s.id for s in CORPUS if "single-tool" in s.tags}
    assert "single-tool" in {s.id for s in CORPUS}
    assert len(tagged) > 1
    assert [s.id for s in select(CORPUS, selectors=["single-tool"])] == ["single-tool"]
    assert {s.id for s in select(CORPUS, selectors=["tag:single-tool"])} == tagged
    assert unknown_selectors(CORPUS, ["single-tool", "tag:single-tool", "parallel-tools"]) == []


def test_unknown_selectors_are_named_with_the_closest_id_or_tag() -> None:
    assert unknown_selectors(CORPUS, ["singel-tool", "tag:nope-nothing-like-it"]) == [
        "'singel-tool' (did you mean 'single-tool'?)",
        "'tag:nope-nothing-like-it'",
    ]


def test_run_scenarios_repeats_add_up_and_a_mistyped_name_fails() -> None:
    both = CliRunner().invoke(
        cli,
        [
            "run",
            *("--scenarios", "single-tool", "--scenarios", "parallel-tools-2"),
            *("--shapes", "openai-chat", "--no-reports", "--format", "jsonl"),
        ],
    )
    assert both.exit_code == 0, both.output
    records = [json.loads(line) for line in both.stdout.splitlines()]
    ran = {r["scenario"] for r in records if r["type"] == "case"}
    assert ran == {"single-tool", "parallel-tools-2"}
    typo = CliRunner().invoke(
        cli, ["run", "--scenarios", "single-tool,singel-tool", "--no-reports"]
    )
    assert typo.exit_code == 2
    assert "'singel-tool' (did you mean 'single-tool'?) is neither a file or folder nor" in (
        typo.output
    )
