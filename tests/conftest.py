"""Loads the hypothesis profile (``ci`` unless ``$HYPOTHESIS_PROFILE`` names another) before any
test module builds its settings; see ``tests/support/hypothesis_support.py``."""

from __future__ import annotations

from hypothesis import settings
from hypothesis_support import PROFILE

settings.load_profile(PROFILE)
