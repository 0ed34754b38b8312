"""Issue 6: "with the extras installed, the adapters run offline and the README table is reproducible".

Each README row of "How popular trimmers score" is regenerated the way ``bench/adapters_table.py``
does it (``ctxconf run --impl X --shapes openai-chat --format jsonl --no-reports``, here in process)
and must equal the committed row. A change to the corpus, the checks or an adapter that moves a
score fails here until the README table is regenerated.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from conformance.cli import cli

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "ctxconf_bench_adapters_table", ROOT / "bench" / "adapters_table.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def _readme_rows() -> dict[str, str]:
    """README table rows keyed by the plug-in spec in their first cell."""
    rows: dict[str, str] = {}
    for line in (ROOT / "README.md").read_text("utf-8").splitlines():
        for spec, _, label in BENCH.PLUGINS:
            if line.startswith(f"| {label} (`{spec}`) |"):
                rows[spec] = line
    return rows


@pytest.mark.parametrize(
    ("spec", "extra", "label"), BENCH.PLUGINS, ids=[p[0] for p in BENCH.PLUGINS]
)
def test_readme_adapter_row_is_what_ctxconf_generates(spec: str, extra: str, label: str) -> None:
    if extra and importlib.util.find_spec(extra) is None:
        pytest.skip(f"the {extra} extra is not installed: pip install -e '.[langchain,litellm]'")
    committed = _readme_rows().get(spec)
    assert committed is not None, f"README has no adapters-table row for {spec}"
    out = CliRunner().invoke(
        cli,
        [
            "run",
            "--impl",
            spec,
            "--shapes",
            BENCH.SHAPE,
            "--format",
            "jsonl",
            "--no-reports",
            "--timeout",
            "120",
        ],
    )
    assert out.exit_code in (0, 1), out.output
    jsonl = "\n".join(line for line in out.output.splitlines() if line.startswith("{"))
    assert json.loads(jsonl.splitlines()[-1])["type"] == "footer"
    regenerated = BENCH.row(label, spec, BENCH._parse(jsonl + "\n"))
    assert regenerated == committed, "regenerate with `python bench/adapters_table.py`"
