"""One ASGI ``http`` scope for tests that call an app (the emulator, the proxy) straight, with a
body sender they control (pieces, a client that leaves mid-body)."""

from __future__ import annotations

from typing import Any


def post_scope(
    path: str, headers: list[tuple[bytes, bytes]], *, server: str = "emulator.test"
) -> dict[str, Any]:
    """The scope of ``POST path`` with ``headers`` (lower-case names, as a server gives them)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "server": (server, 80),
        "client": ("127.0.0.1", 0),
    }
