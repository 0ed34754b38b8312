"""The Dask recipe (``conformance.distributed_audit``) writes the report ``ctxconf audit`` prints,
byte for byte, from a local cluster of two worker processes on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_support import GOOD, ORPHAN, URL
from click.testing import CliRunner

from conformance.cli import cli

distributed = pytest.importorskip(
    "distributed", reason="the Dask recipe needs the extra: pip install 'ctxconf[distributed]'"
)


def _folder(root: Path) -> Path:
    logs = root / "logs"
    (logs / "eu").mkdir(parents=True)
    for n, name in enumerate(["a.jsonl", "eu/b.jsonl", "eu/c.jsonl", "d.jsonl"]):
        lines = [
            json.dumps({"url": URL, "body": ORPHAN if (n + i) % 5 == 0 else GOOD})
            for i in range(40)
        ]
        lines.insert(7, "{broken")
        (logs / name).write_text("\n".join(lines) + "\n", "utf-8")
    (logs / "eu" / "bad.yaml").write_text("interactions: [", "utf-8")
    return logs


def test_a_two_worker_local_cluster_writes_the_same_report(tmp_path: Path) -> None:
    from conformance.distributed_audit import write_report

    logs = _folder(tmp_path)
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",  # any free port: two clusters may run side by side
    )
    try:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            findings = write_report([logs], tmp_path / "findings.jsonl", client)
            everything = write_report([logs], tmp_path / "all.jsonl", client, show_all=True)
            windowed = write_report(
                [logs], tmp_path / "window.jsonl", client, show_all=True, context_limit=5
            )
    finally:
        cluster.close()
    for out, args in (
        ("findings.jsonl", []),
        ("all.jsonl", ["--all"]),
        ("window.jsonl", ["--all", "--context-limit", "5"]),  # every request over 5 tokens
    ):
        single = CliRunner().invoke(cli, ["audit", str(logs), "--format", "jsonl", *args])
        assert single.exit_code == 5, single.output
        assert (tmp_path / out).read_bytes() == single.stdout.encode("utf-8")
    assert findings == everything
    assert everything == {"accept": 128, "reject": 32, "unreadable": 5}
    assert windowed == {"reject": 160, "unreadable": 5}
