"""Start-up stays cheap: reading cassettes needs no vcrpy (only recording and replay import it),
prometheus_client is imported when the first metrics are made, not with ``reference_impl``, and
auditing requests never imports the assembler (the package imports its names on first use)."""

from __future__ import annotations

import subprocess
import sys

import yaml
from paths import CASSETTES, ROOT
from vcr.request import Request as VcrRequest

from conformance.traffic.skeleton import StoredRequest, request_skeleton


def _imported_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(','.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(out.stdout.strip().split(","))


def test_reading_cassettes_does_not_import_vcrpy_or_prometheus() -> None:
    loaded = _imported_after(
        "import reference_impl, conformance.traffic.cassette, conformance.traffic.verdicts\n"
        "import conformance.traffic.audit"
    )
    assert "vcr" not in loaded
    assert "prometheus_client" not in loaded
    assert "conformance.traffic.verdicts" in loaded


def test_auditing_requests_does_not_import_the_assembler() -> None:
    loaded = _imported_after("import conformance.traffic.audit, conformance.commands.audit")
    assert "conformance.traffic.audit" in loaded
    assert not loaded & {"reference_impl.assembler", "reference_impl.incremental"}
    assert not {name for name in loaded if name.startswith("reference_impl.steps")}


def test_metrics_import_prometheus_when_first_made() -> None:
    loaded = _imported_after(
        "from reference_impl.metrics import AssemblyMetrics\nAssemblyMetrics()"
    )
    assert "prometheus_client" in loaded


def test_stored_requests_have_the_skeleton_vcrpy_requests_have() -> None:
    cassettes = sorted(CASSETTES.rglob("*.yaml"))
    assert cassettes
    compared = 0
    for path in cassettes[:40]:
        document = yaml.safe_load(path.read_text("utf-8"))
        for item in document.get("interactions", []):
            ours = request_skeleton(StoredRequest.from_dict(item["request"]))
            theirs = request_skeleton(VcrRequest._from_dict(item["request"]))
            assert ours == theirs, path
            compared += 1
    assert compared >= 40
