"""Hypothesis profiles for the suite, and :func:`examples` to size the slow properties.

* ``ci`` (the default): derandomized (the same examples on every run, so a red test is red on
  every machine and a green one never turns red by luck), no example database, no deadline and
  no ``too_slow`` health check (both measure the machine, not the code: a loaded 2-core CI box
  tripped them), and the slow properties sized down by :func:`examples` so ``make test`` stays
  within its few minutes.
* ``nightly``: random seeds (printed on failure with the blob to reproduce it) and five times
  the examples of the slow properties: ``HYPOTHESIS_PROFILE=nightly make unit`` (``make nightly``).
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "examples"]

_RELAXED: Final = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=_RELAXED,
)
settings.register_profile(
    "nightly",
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=_RELAXED,
)
PROFILE: Final = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_SCALE: Final = {"ci": 0.2, "nightly": 5.0}


def examples(full: int) -> int:
    """How many examples a slow property draws under the current profile (``full`` is its
    nightly-size fifth: the number it was written with)."""
    return max(10, int(full * _SCALE.get(PROFILE, 1.0)))
