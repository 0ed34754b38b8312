"""Serving an ASGI app from the command line (``serve``, ``proxy``): the socket on HOST:PORT,
its address as the first line of output, and uvicorn on it until interrupted.

A host that is not loopback is a warning; a port that cannot be bound is one line and exit
status 2 (:func:`conformance.commands._io.fail`).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import click
import uvicorn

from conformance.commands._io import fail
from conformance.providers.emulator_transport import is_loopback, listening_socket

__all__ = ["listening", "run_server"]


@contextlib.contextmanager
def listening(host: str, port: int, *, option: str = "") -> Iterator[tuple[socket.socket, str]]:
    """A socket listening on ``host:port`` and its URL (``http://[::1]:8080``), closed on exit;
    ``option`` (``"--listen: "``) goes before the error when the port cannot be bound."""
    if not is_loopback(host):
        click.echo(f"ctxconf: warning: listening on {host}, not loopback", err=True)
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        fail(f"{option}cannot listen on {host}:{port}: {exc.strerror}")
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    try:
        yield sock, f"http://{shown}:{sock.getsockname()[1]}"
    finally:
        sock.close()


def run_server(app: Any, sock: socket.socket, **options: Any) -> None:
    """uvicorn serving ``app`` on ``sock`` (warnings only in its log) until it is stopped;
    ``options`` are uvicorn's (``lifespan``, ``server_header``, ...)."""
    uvicorn.Server(uvicorn.Config(app, log_level="warning", **options)).run(sockets=[sock])
