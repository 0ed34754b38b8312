"""The pytest plug-in, run through ``pytester``: items per scenario x shape x budget, -k, markers, xdist.

The assemblers and scenarios live in the pytester folder, so the expected item counts follow from
this file alone (not from the built-in corpus, which other work changes).
"""

from __future__ import annotations

import os
import textwrap

import pytest

# Imported here so that pytester's in-process runs (which restore sys.modules after each run) reuse
# them instead of importing the engine, tokenizers and validators again for every run.
import conformance.adapters._budget
import conformance.checks
import conformance.engine
import conformance.loading
import conformance.providers.validation
import conformance.traffic.verdicts  # noqa: F401

pytest_plugins = ["pytester"]

FAKES = '''
from conformance.adapters._budget import count_chat_messages


def keep_all(messages, budget):
    """Sends the session unchanged, or refuses when it does not fit: valid at must level (the
    budget is must)."""
    from conformance.protocol import Refusal

    if count_chat_messages(messages) > budget:
        raise Refusal("does not fit")
    return messages


def drop_system(messages, budget):
    """Valid and within budget, but drops the system message: a should failure only."""
    return [m for m in messages if m["role"] != "system"]


def exits(messages, budget):
    """Ends its process, as a plug-in calling sys.exit in a library or a segfault would."""
    import os

    os._exit(3)


def hangs(messages, budget):
    import time

    time.sleep(3600)


def talks(messages, budget):
    """Prints, and says which process it ran in."""
    import os, sys

    print(f"assembling in process {os.getpid()}")
    print("a warning from the plug-in", file=sys.stderr)
    return messages


def cut_oldest_two(messages, budget):
    """Over budget: drops the two oldest non-system messages, whatever they are (the seeded bug)."""
    if count_chat_messages(messages) <= budget:
        return messages
    head = [m for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    return head + rest[2:]
'''

SESSION = """
    tools: [{name: get_status, description: "Read the rollout status"}]
    session:
      - {role: system, text: "You are deploy-bot."}
      - {role: user, text: "GOAL: roll out checkout v2."}
      - {role: assistant, calls: [{id: call_a1, name: get_status, args: {service: checkout}}]}
      - {role: tool, results: [{id: call_a1, text: "checkout v1 healthy, 12/12 pods"}]}
      - {role: user, text: "Next step?"}
"""


def _scenario(sid: str, budget: str) -> str:
    return (
        f"  - id: {sid}\n    title: {sid}\n    shapes: [openai-chat]\n"
        + textwrap.indent(textwrap.dedent(SESSION).strip(), "    ")
        + f"\n    budget: {budget}\n    expect: {{outcome: either}}\n"
    )


@pytest.fixture
def corpus(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(ptfakes=FAKES)
    pytester.syspathinsert()
    (pytester.path / "corpus" / "must").mkdir(parents=True)
    (pytester.path / "corpus" / "should").mkdir()
    must = "version: 1\nscenarios:\n" + _scenario("pt-roomy", "4000")
    must += _scenario("pt-tight", "{sweep: [40, 50, 10]}")
    (pytester.path / "corpus" / "must" / "cases.yaml").write_text(must)
    should = "version: 1\nscenarios:\n" + _scenario("pt-policy", "4000")
    (pytester.path / "corpus" / "should" / "cases.yaml").write_text(should)
    return pytester


# The subprocesses do not read this project's pytest options: leave out langsmith's plug-in (seconds
# of imports in every process, unused) as pyproject.toml does.
NO_LANGSMITH = ("-p", "no:langsmith_plugin")


def _args(impl: str, *extra: str) -> list[str]:
    return [
        f"--ctxconf-impl=ptfakes:{impl}",
        "--ctxconf-scenarios=corpus",
        "-p",
        "no:cacheprovider",
        *extra,
    ]


def test_passing_items_one_per_scenario_shape_and_budget(corpus: pytest.Pytester) -> None:
    result = corpus.runpytest(*_args("keep_all", "--ctxconf-level=must", "-v"))
    # pt-roomy at 4000, pt-tight at 40 and 50; the should scenario is above --ctxconf-level.
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*ctxconf::must::pt-roomy[[]openai-chat@4000[]] PASSED*",
            "*ctxconf::must::pt-tight[[]openai-chat@40[]] PASSED*",
            "*ctxconf::must::pt-tight[[]openai-chat@50[]] PASSED*",
        ]
    )


def test_the_terminal_counts_the_items_and_names_them_whole(corpus: pytest.Pytester) -> None:
    """The items are announced as collected ("collected 0 items / 6 deselected / -6 selected"
    before), and the summary shows each node id as it is (pytest 9 reads parameters from a
    trailing bracket: a level after it was shown as ``...@4000]::must]``)."""
    result = corpus.runpytest(*_args("keep_all", "-k", "roomy", "-rA"))
    result.assert_outcomes(passed=2, deselected=6)
    text = result.stdout.str()
    assert "collected 8 items / 6 deselected / 2 selected" in text
    summary = [line for line in text.splitlines() if line.startswith("PASSED ")]
    assert summary == [
        "PASSED ctxconf::must::pt-roomy[openai-chat@4000]",
        "PASSED ctxconf::should::pt-roomy[openai-chat@4000]",
    ]


def test_failing_items_carry_the_check_failure(corpus: pytest.Pytester) -> None:
    result = corpus.runpytest(*_args("cut_oldest_two", "--ctxconf-level=must"))
    result.assert_outcomes(passed=1, failed=2)
    text = result.stdout.str()
    # The orphaned result is rejected by OpenAI's rule C2; the message says where it came from.
    assert "pt-tight[openai-chat@40]: must checks fail" in text
    assert "provider_valid (must, fail)" in text
    assert "rule C2" in text
    assert "provenance" in text
    assert "cases.yaml" in text
    assert "Traceback" not in text


def test_k_selects_by_scenario_id_and_m_by_level(corpus: pytest.Pytester) -> None:
    # 8 items: a must:: and a should:: item for pt-roomy, pt-tight@40, pt-tight@50, pt-policy.
    by_k = corpus.runpytest(*_args("cut_oldest_two", "-k", "roomy"))
    by_k.assert_outcomes(passed=2, deselected=6)
    by_budget = corpus.runpytest(*_args("cut_oldest_two", "-k", "tight and 50"))
    by_budget.assert_outcomes(failed=1, xfailed=1, deselected=6)  # should is not gated
    by_marker = corpus.runpytest(*_args("keep_all", "--strict-markers", "-m", "ctxconf_should"))
    # keep_all sends what fits and refuses the rest: every should check passes in the 4 items.
    by_marker.assert_outcomes(passed=4, deselected=4)


def test_k_and_m_select_check_levels_and_scenario_levels(corpus: pytest.Pytester) -> None:
    # -k must: the must checks of every case, the should scenario's included.
    must_checks = corpus.runpytest(*_args("keep_all", "-k", "must", "-v"))
    must_checks.assert_outcomes(passed=4, deselected=4)
    must_checks.stdout.fnmatch_lines(["*ctxconf::must::pt-policy[[]openai-chat@4000[]] PASSED*"])
    by_marker = corpus.runpytest(*_args("keep_all", "--strict-markers", "-m", "ctxconf_must"))
    by_marker.assert_outcomes(passed=4, deselected=4)
    scenario = corpus.runpytest(
        *_args("keep_all", "--strict-markers", "-m", "ctxconf_scenario(level='should')")
    )
    scenario.assert_outcomes(passed=2, deselected=6)


def test_the_gate_is_must_by_default_and_should_with_strict(corpus: pytest.Pytester) -> None:
    """As ``ctxconf run``: a should failure does not fail the session unless strict."""
    lenient = corpus.runpytest(*_args("drop_system", "-k", "policy", "-rx"))
    lenient.assert_outcomes(passed=1, xfailed=1, deselected=6)
    assert lenient.ret == pytest.ExitCode.OK
    assert "not gated (should without --ctxconf-strict)" in lenient.stdout.str()
    assert "system_kept (should, fail)" in lenient.stdout.str()
    strict = corpus.runpytest(*_args("drop_system", "-k", "policy", "--ctxconf-strict"))
    strict.assert_outcomes(passed=1, failed=1, deselected=6)
    assert "system_kept (should, fail)" in strict.stdout.str()


@pytest.mark.slow
def test_xdist_workers_collect_the_same_items(corpus: pytest.Pytester) -> None:
    result = corpus.runpytest_subprocess(
        *_args("cut_oldest_two", "--ctxconf-level=must", "-n", "2"), *NO_LANGSMITH
    )
    result.assert_outcomes(passed=1, failed=2)
    assert "provider_valid (must, fail)" in result.stdout.str()


def test_bad_impl_is_a_usage_error(corpus: pytest.Pytester) -> None:
    result = corpus.runpytest(*_args("no_such_function"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*has no attribute 'no_such_function'*"])


def test_an_empty_scenarios_value_is_a_usage_error_not_the_current_folder(
    corpus: pytest.Pytester,
) -> None:
    # Path("") is the current folder: the empty value walked it (a virtualenv's YAML included).
    result = corpus.runpytest("--ctxconf-impl=ptfakes:keep_all", "--ctxconf-scenarios=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ctxconf-scenarios '' names nothing*"])


def test_idle_without_the_option_and_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_light="""
        import sys

        def test_light(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("ctxconf")
            assert "conformance.engine" not in sys.modules
            assert "reference_impl" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *NO_LANGSMITH)
    result.assert_outcomes(passed=1)


def test_a_plugin_that_ends_its_process_fails_its_case_and_the_session_goes_on(
    corpus: pytest.Pytester,
) -> None:
    result = corpus.runpytest(*_args("exits", "--ctxconf-level=must", "-rN"))  # no summary
    # Each case's must item fails with the cause; the worker is replaced for the next case.
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    assert text.count("the plug-in ended the worker process with exit status 3") == 3
    assert "Traceback" not in text


@pytest.mark.timeout(60)
def test_a_plugin_that_hangs_is_killed_at_the_timeout(corpus: pytest.Pytester) -> None:
    result = corpus.runpytest(
        *_args("hangs", "--ctxconf-level=must", "--ctxconf-timeout=0.5", "-k", "roomy")
    )
    result.assert_outcomes(failed=1, deselected=2)
    assert "timed out after 0.5s; the worker process was killed and replaced" in result.stdout.str()


def test_what_the_plugin_prints_is_shown_with_its_item_from_another_process(
    corpus: pytest.Pytester,
) -> None:
    result = corpus.runpytest(*_args("talks", "--ctxconf-level=must", "-k", "roomy", "-rA"))
    result.assert_outcomes(passed=1, deselected=2)
    text = result.stdout.str()
    assert "Captured plug-in stdout call" in text
    assert "Captured plug-in stderr call" in text
    assert "a warning from the plug-in" in text
    ran_in = int(text.split("assembling in process ")[1].split()[0])
    assert ran_in != os.getpid()  # pytester runs pytest in this process: the plug-in did not


def test_in_process_runs_the_plugin_in_the_pytest_process(corpus: pytest.Pytester) -> None:
    result = corpus.runpytest(
        *_args("talks", "--ctxconf-level=must", "-k", "roomy", "--ctxconf-in-process", "-s")
    )
    result.assert_outcomes(passed=1, deselected=2)
    assert f"assembling in process {os.getpid()}" in result.stdout.str()
