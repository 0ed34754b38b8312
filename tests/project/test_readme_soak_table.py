"""The README's long-run table is reproducible: every row is what ``bench/soak_table.py`` generates.

Each row reruns ``ctxconf soak`` for its plug-in and workload (60 turns, seed 0, offline) the way
the script does, in a subprocess, and must equal the committed row. A change to the soak driver,
the checks, the counters or an adapter that moves a number fails here until the table is
regenerated with ``make soak-table``.
"""

from __future__ import annotations

import pytest
from paths import ROOT
from script_support import load_script

pytestmark = pytest.mark.slow

BENCH = load_script("bench/soak_table.py", "ctxconf_bench_soak_table")
CASES = [(plugin, workload) for plugin in BENCH.plugins() for workload in BENCH.WORKLOADS]


def _readme_table() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    start, end = text.index(BENCH.BEGIN), text.index(BENCH.END)
    return [line for line in text[start + len(BENCH.BEGIN) : end].splitlines() if line.strip()]


def test_readme_table_has_a_row_per_plugin_and_workload_in_order() -> None:
    lines = _readme_table()
    cells = [line.split(" | ")[:2] for line in lines[2:]]
    assert cells == [[f"| `{p}`", w] for p, w in CASES], "regenerate with `make soak-table`"


# 51 soak runs of 60 turns (minutes of CPU): `make test-slow` and .ci/run run them.
@pytest.mark.exhaustive
@pytest.mark.parametrize(("plugin", "workload"), CASES, ids=[f"{p}-{w}" for p, w in CASES])
def test_readme_soak_row_is_what_ctxconf_generates(plugin: str, workload: str) -> None:
    committed = next(
        (line for line in _readme_table() if line.startswith(f"| `{plugin}` | {workload} |")), None
    )
    assert committed is not None, f"README has no soak-table row for {plugin} / {workload}"
    result = BENCH.soak(plugin, workload, BENCH.TURNS, 0)
    if isinstance(result, str) and "pip install" in result:  # its optional extra is missing
        pytest.skip(f"{plugin}: {result}")
    assert BENCH.row(plugin, workload, result, BENCH.TURNS) == committed, (
        "regenerate with `make soak-table`"
    )
