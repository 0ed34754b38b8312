"""Audit a folder of recorded traffic on a Dask cluster: the ``ctxconf audit`` report, made by many
workers (the optional ``distributed`` extra: ``pip install 'ctxconf[distributed]'``).

An audit is a map over recordings: each row depends on its own line or interaction alone
(``conformance.traffic.audit.audit_lines``). Here one task judges one file on whichever
worker the scheduler picks, the worker reads the file itself (only paths travel, so the files must
be reachable from every worker: a shared filesystem, or the same local disk for a local cluster),
and the driver writes each file's rows in the order ``ctxconf audit`` walks the folder. The report
is byte for byte the one ``ctxconf audit PATH --format jsonl`` prints (``--all`` with
``show_all=True``)::

    from dask.distributed import Client, LocalCluster
    from conformance.distributed_audit import write_report

    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1") as cluster:
        with Client(cluster) as client:
            totals = write_report(["logs/"], "audit.jsonl", client)

At company scale, put one file (or a slice of lines of a large one, with ``audit_lines``' ``start``)
in each task and point the client at a real scheduler; nothing else changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.traffic.audit import audit_file, recording_files

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["audit_file_report", "report_lines", "write_report"]


def audit_file_report(
    path: str, show_all: bool = False, context_limit: int | None = None
) -> tuple[str, dict[str, int]]:
    """One file's part of the report (its JSON lines) and its totals by verdict (a task);
    ``context_limit`` as ``ctxconf audit --context-limit`` takes it."""
    lines: list[str] = []
    counts: Counter[str] = Counter()
    for row in audit_file(path, context_limit=context_limit):
        counts[row.outcome] += 1
        if show_all or row.is_finding:
            lines.append(row.to_json() + "\n")
    return "".join(lines), dict(counts)


def report_lines(
    paths: Iterable[str | Path],
    client: Client,
    *,
    show_all: bool = False,
    window: int = 64,
    context_limit: int | None = None,
) -> Iterator[tuple[str, dict[str, int]]]:
    """Each file's report text and totals, in ``ctxconf audit``'s file order, computed on the
    cluster with at most ``window`` files in flight (the driver's memory stays bounded)."""
    pending: list[Any] = []
    for path in recording_files(paths):
        pending.append(
            client.submit(audit_file_report, str(path), show_all, context_limit, pure=False)
        )
        if len(pending) >= window:
            yield pending.pop(0).result()
    for future in pending:
        yield future.result()


def write_report(
    paths: Iterable[str | Path],
    out: str | Path,
    client: Client,
    *,
    show_all: bool = False,
    context_limit: int | None = None,
) -> dict[str, int]:
    """Write the JSON-lines report for ``paths`` to ``out``; return the totals by verdict."""
    totals: Counter[str] = Counter()
    with Path(out).open("w", encoding="utf-8") as stream:
        lines = report_lines(paths, client, show_all=show_all, context_limit=context_limit)
        for text, counts in lines:
            stream.write(text)
            totals.update(counts)
    return dict(totals)
