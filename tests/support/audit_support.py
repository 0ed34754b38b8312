"""The request bodies the traffic tests log or send: one the rules accept, one they refuse.

Imported by the tests of ``ctxconf audit`` (``tests/cli/``), of its Dask recipe and of the
validating proxy.
"""

from __future__ import annotations

__all__ = ["GOOD", "ORPHAN", "URL"]

URL = "https://api.openai.com/v1/chat/completions"
GOOD = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
ORPHAN = {
    "model": "gpt-4o",
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_x", "content": "orphan"},
    ],
}
"""A tool result that answers no call (C2)."""
