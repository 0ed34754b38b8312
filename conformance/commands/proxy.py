"""``ctxconf proxy --upstream URL``: the validating proxy (:mod:`conformance.providers.proxy`).

Point an SDK's base URL at the proxy as at the provider (``http://127.0.0.1:8787/v1`` for
OpenAI, ``http://127.0.0.1:8787`` for Anthropic). ``--mode enforce`` (the default) answers what
our rules reject with that provider's error and forwards the rest; ``--mode observe`` forwards
everything and writes a cassette per judged exchange under ``--record-dir``, our verdict beside
the provider's answer, for ``ctxconf diff ours:DIR DIR``. The first line on standard output
names the address (``--listen 127.0.0.1:0`` picks a free port).
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from conformance.commands._io import checked_input_limit, fail
from conformance.commands._options import seconds_option
from conformance.commands._serving import listening, run_server
from conformance.errors import ProxyConfigError, UpstreamBrokeError
from conformance.providers.proxy import DEFAULT_TIMEOUT_S, create_proxy_app

__all__ = ["command"]


def _listen_address(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT`` or ``:PORT`` (loopback)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        fail(f"--listen {value!r}: expected HOST:PORT (for example 127.0.0.1:8787)")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


class _OneLineBreaks(logging.Filter):
    """uvicorn logs an app that raised mid-answer with its traceback; a stream the upstream broke
    is a known condition, so it is one named line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, UpstreamBrokeError):
            record.msg, record.args, record.exc_info = "ctxconf proxy: %s", (exc.message,), None
        return True


@click.command("proxy")
@click.option("--upstream", required=True, help="Provider, gateway or emulator root URL.")
@click.option(
    "--mode",
    type=click.Choice(["enforce", "observe"]),
    default="enforce",
    show_default=True,
    help="enforce: refuse what our rules reject; observe: forward all, record verdicts.",
)
@click.option(
    "--listen",
    default="127.0.0.1:8787",
    show_default=True,
    help="HOST:PORT to listen on (port 0 picks a free one).",
)
@click.option(
    "--record-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="observe: where the cassettes go (<dir>/<shape>/...yaml).",
)
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    help="Catalog profile to judge by (repeatable); each applies to its shape.",
)
@seconds_option(DEFAULT_TIMEOUT_S, "Seconds to wait for the upstream (connect, and between bytes).")
def command(  # noqa: PLR0917 - click passes each option as a parameter
    upstream: str,
    mode: str,
    listen: str,
    record_dir: Path | None,
    profiles: tuple[str, ...],
    timeout: float,
) -> None:
    """Forward provider traffic to UPSTREAM, judging each request by the rule catalog."""
    if mode == "observe" and record_dir is None:
        fail("--mode observe needs --record-dir (where the verdicts and answers are written)")
    if mode == "enforce" and record_dir is not None:
        fail("--record-dir applies to --mode observe only")
    limit = checked_input_limit()
    try:
        app = create_proxy_app(
            upstream,
            mode="observe" if mode == "observe" else "enforce",
            profiles=profiles,
            record_dir=str(record_dir) if record_dir is not None else None,
            timeout=timeout,
            input_limit=limit,
        )
    except ProxyConfigError as exc:
        fail(f"--{(exc.where or 'upstream').replace('_', '-')}: {exc.message}")
    host, port = _listen_address(listen)
    with listening(host, port, option="--listen: ") as (sock, url):
        click.echo(f"ctxconf proxy listening on {url} ({mode}; upstream {upstream})")
        logging.getLogger("uvicorn.error").addFilter(_OneLineBreaks())
        # The upstream's own date and server fields pass through; uvicorn adds none of its own.
        run_server(app, sock, lifespan="on", server_header=False, date_header=False)
