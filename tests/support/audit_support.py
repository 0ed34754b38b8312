"""The request bodies the traffic tests log or send: one the rules accept, one they refuse.

Imported by the tests of ``ctxconf audit`` (``tests/cli/``), of its Dask recipe and of the
validating proxy.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["GOOD", "ORPHAN", "URL", "messages_twice"]

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


def messages_twice(first: dict[str, Any], last: dict[str, Any]) -> str:
    """The JSON text of a body that gives ``messages`` twice: ``first``'s, then ``last``'s.
    Python's parser reads the last copy; another server's may read the first."""
    return (
        f'{{"model": {json.dumps(last["model"])}, "messages": {json.dumps(first["messages"])}, '
        f'"messages": {json.dumps(last["messages"])}}}'
    )
