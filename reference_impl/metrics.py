"""Prometheus metrics of the assembler, with the names the issue fixes.

Every ``AssemblyMetrics`` owns its own ``CollectorRegistry`` (tests stay isolated); the process-wide
default instance registers in prometheus_client's global registry, lazily, on first use. Labels are
the shape and the strategy (``middle_delete_unit``), plus a refusal ``code`` or a pairing
``outcome`` where that is the point; never anything taken from message content.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # imported when the first metrics are made, not with reference_impl
    from prometheus_client import CollectorRegistry

__all__ = ["AssemblyMetrics", "default_metrics"]

TOKEN_BUCKETS: Final = (256, 1024, 4096, 16_384, 32_768, 65_536, 131_072, 262_144, 1_048_576)
SECONDS_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
_LABELS: Final = ("shape", "strategy")


class AssemblyMetrics:
    """The seven assembler metrics in one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram  # noqa: PLC0415 - lazy

        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.tokens = Histogram(
            "context_assemble_tokens",
            "Input tokens of each assembled request (the view).",
            _LABELS,
            buckets=TOKEN_BUCKETS,
            registry=r,
        )
        self.dropped_rings = Counter(
            "context_assemble_dropped_rings_total",
            "Tool rings dropped whole (or replaced by a summary) from the middle.",
            _LABELS,
            registry=r,
        )
        self.summaries = Counter(
            "context_assemble_summary_total",
            "Summaries that replaced the middle.",
            _LABELS,
            registry=r,
        )
        self.summary_failures = Counter(
            "context_assemble_summary_fail_total",
            "Summarizer calls that failed or timed out (the pipeline escalated).",
            _LABELS,
            registry=r,
        )
        self.pairing_errors = Counter(
            "context_assemble_pairing_error_total",
            "Sessions with broken tool pairing: outcome=rejected, or outcome=repaired per "
            "synthesized error result.",
            (*_LABELS, "outcome"),
            registry=r,
        )
        self.rejects = Counter(
            "context_assemble_reject_total",
            "Assemblies refused (fail closed), by code.",
            (*_LABELS, "code"),
            registry=r,
        )
        self.seconds = Histogram(
            "context_assemble_seconds",
            "Wall time of one assembly.",
            _LABELS,
            buckets=SECONDS_BUCKETS,
            registry=r,
        )

    def sample(self, name: str, **labels: str) -> float:
        """The current value of one sample (for tests and debugging); 0 when absent."""
        value = self.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


_default: AssemblyMetrics | None = None
_default_lock = threading.Lock()


def default_metrics() -> AssemblyMetrics:
    """The process-wide instance, registered in the global registry on first use."""
    global _default  # noqa: PLW0603 - one lazily created process-wide instance
    with _default_lock:
        if _default is None:
            from prometheus_client import REGISTRY  # noqa: PLC0415 - lazy, as above

            _default = AssemblyMetrics(REGISTRY)
        return _default
