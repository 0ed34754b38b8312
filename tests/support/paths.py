"""The repository's folders, one home for every test: ``from paths import ROOT, CASSETTES``.

``tests/support`` is on ``sys.path`` (``pythonpath`` in pyproject.toml), like the other support
modules; a test never derives these from its own ``__file__``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "CASSETTES",
    "DOCS",
    "EXAMPLES",
    "RECORDINGS",
    "RECORDINGS_MORE",
    "ROOT",
    "SHARED",
]

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
# The read-only shared folder next to the repository; CTXCONF_SHARED points elsewhere (a git
# worktree under another directory runs the same tests with CTXCONF_SHARED=/path/to/shared).
SHARED = Path(os.environ.get("CTXCONF_SHARED") or ROOT / ".." / "shared")
RECORDINGS = SHARED / "recordings"
RECORDINGS_MORE = SHARED / "recordings-more"
