"""The README's adapters table is reproducible: with the extras installed the adapters run offline.

Each README row of "How popular trimmers score" is regenerated the way ``bench/adapters_table.py``
does it (``ctxconf run --impl X --shapes openai-chat --format jsonl --no-reports``, here in process)
and must equal the committed row. A change to the corpus, the checks or an adapter that moves a
score fails here until the README table is regenerated.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from paths import ROOT
from script_support import load_script

from conformance.cli import cli

pytestmark = pytest.mark.slow


BENCH = load_script("bench/adapters_table.py", "ctxconf_bench_adapters_table")


def _readme_rows() -> dict[str, str]:
    """README table rows keyed by the plug-in spec in their first cell."""
    rows: dict[str, str] = {}
    for line in (ROOT / "README.md").read_text("utf-8").splitlines():
        for plugin in BENCH.PLUGINS:
            if line.startswith(f"| {plugin.label} (`{plugin.spec}`) |"):
                rows[plugin.spec] = line
    return rows


def test_readme_and_adapters_page_carry_the_same_table() -> None:
    tables = []
    for target in BENCH.TARGETS:
        text = target.read_text("utf-8")
        start, end = text.index(BENCH.START), text.index(BENCH.END)
        tables.append(text[start:end])
    assert tables[0] == tables[1], "regenerate with `make adapters-table`"


def test_a_case_line_holding_a_unicode_line_separator_is_read_as_one_case() -> None:
    # A case line holds a plug-in's output as it printed it (ensure_ascii=False): U+2028, U+0085
    # or U+001C raw, where str.splitlines() ends a line too
    out = CliRunner().invoke(
        cli, ["run", "--scenarios", "single-tool", "--format", "jsonl", "--no-reports"]
    )
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.output.split("\n") if line.startswith("{")]
    cases = [line for line in lines if line["type"] == "case"]
    cases[0]["plugin_output"] = {"stdout": "one\u2028two\x85three\x1cfour"}
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    record = BENCH.parse(text)
    assert len(record.cases) == len(cases)
    assert record.footer


# Every row runs the whole corpus through one adapter (over a minute of CPU for the table):
# `make test-slow` and .ci/run run them, `make test` does not. One worker imports the libraries.
@pytest.mark.exhaustive
@pytest.mark.xdist_group("adapter-libraries")
@pytest.mark.parametrize("plugin", BENCH.PLUGINS, ids=[p.spec for p in BENCH.PLUGINS])
def test_readme_adapter_row_is_what_ctxconf_generates(plugin: Any) -> None:
    if not BENCH.installed(plugin):
        pytest.skip(f"{plugin.module} is not installed: pip install -e '.[adapters]'")
    committed = _readme_rows().get(plugin.spec)
    assert committed is not None, f"README has no adapters-table row for {plugin.spec}"
    out = CliRunner().invoke(cli, BENCH.command(plugin))
    assert out.exit_code in (0, 1), out.output
    record = BENCH.parse(out.output)
    assert record.footer, "the run printed no footer line"
    regenerated = BENCH.row(plugin, record)
    assert regenerated == committed, "regenerate with `make adapters-table`"
