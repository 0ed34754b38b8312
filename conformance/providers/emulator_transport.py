"""Reaching the emulator: in process (an httpx/httpx2 transport) or on loopback (uvicorn).

The official ``openai`` 3.x and ``anthropic`` 2.x SDKs speak ``httpx2``; Gemini round trips are
plain ``httpx`` and Bedrock's go through boto3, which hands its signed requests to ``httpx``. Both
libraries' ``MockTransport`` is patched by vcrpy, so a round trip through :func:`httpx2_transport`
is recorded exactly like one over the network, without a port. :func:`serving` runs the same app with uvicorn on ``127.0.0.1`` for clients in other
processes or languages (and for the live code path pointed at the emulator).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator, MutableMapping
from typing import Any, Final

import httpx
import httpx2
import uvicorn
from starlette.types import ASGIApp

from conformance.errors import ServerStartError

__all__ = [
    "call_app",
    "httpx2_transport",
    "httpx_transport",
    "is_loopback",
    "listening_socket",
    "serving",
]

_START_TIMEOUT_S: Final = 10.0
_BACKLOG: Final = 2048  # uvicorn's default


_Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
"""An ASGI app's answer: status, raw headers, body."""


def _scope(
    method: str, url: httpx.URL | httpx2.URL, headers: list[tuple[bytes, bytes]]
) -> dict[str, Any]:
    """The ASGI ``http`` scope of one request. Header names are lower case, as the ASGI spec
    requires and a server hands them over (httpx keeps them as sent, ``Content-Encoding``), so
    the app finds ``content-encoding`` and ``content-length`` in process as it does over HTTP."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": url.scheme or "http",
        "path": url.path,
        "raw_path": url.raw_path.split(b"?")[0],
        "query_string": url.query,
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in headers],
        "server": (url.host or "emulator", url.port or 80),
        "client": ("127.0.0.1", 0),
    }


async def _call(app: ASGIApp, scope: dict[str, Any], body: bytes) -> _Answer:
    sent = False
    status = 500
    response_headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, response_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, response_headers, b"".join(chunks)


def call_app(
    app: ASGIApp,
    method: str,
    url: httpx.URL | httpx2.URL,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
) -> _Answer:
    """One request through the ASGI app, synchronously (a fresh event loop per call)."""
    return asyncio.run(_call(app, _scope(method, url, headers), body))


def _answer(app: ASGIApp, request: httpx.Request | httpx2.Request) -> _Answer:
    """``app``'s answer to an ``httpx`` or ``httpx2`` request (the two share this surface)."""
    return call_app(app, request.method, request.url, list(request.headers.raw), request.read())


def httpx2_transport(app: ASGIApp) -> httpx2.MockTransport:
    """A transport for the ``openai``/``anthropic`` SDKs' ``httpx2.Client`` that runs ``app``."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        status, headers, content = _answer(app, request)
        return httpx2.Response(status, headers=headers, content=content)

    return httpx2.MockTransport(handle)


def httpx_transport(app: ASGIApp) -> httpx.MockTransport:
    """The same for a plain ``httpx.Client`` (Gemini and Bedrock round trips)."""

    def handle(request: httpx.Request) -> httpx.Response:
        status, headers, content = _answer(app, request)
        return httpx.Response(status, headers=headers, content=content)

    return httpx.MockTransport(handle)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address, or ``localhost``) is this machine's loopback."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (IPv6 when the host has a colon; port 0 picks a
    free one), for uvicorn to serve on; ``OSError`` as ``bind`` raises it, the socket closed.
    It listens at once, so a client that connects as soon as the address is printed waits in
    the backlog until uvicorn accepts, instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.contextmanager
def serving(
    app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0, lifespan: bool = False
) -> Iterator[str]:
    """Run ``app`` with uvicorn in a thread; yields its base URL; always stops it. ``lifespan``
    runs the app's start-up and shutdown events (the proxy opens its upstream client there)."""
    sock = listening_socket(host, port)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on" if lifespan else "off", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_TIMEOUT_S
    try:
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise ServerStartError(f"the emulator did not start on {host}:{bound_port}")
            time.sleep(0.01)
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=_START_TIMEOUT_S)
        sock.close()
