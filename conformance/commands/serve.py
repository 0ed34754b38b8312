"""``ctxconf serve``: the provider emulator behind uvicorn, for clients in any language.

Point an SDK's base URL at it (``http://127.0.0.1:PORT/v1`` for OpenAI, ``http://127.0.0.1:PORT``
for Anthropic). Every answer says ``x-ctxconf-provenance: emulated``. ``--port 0`` picks a free
port; the first line on standard output names the address either way.
"""

from __future__ import annotations

import click

from conformance.commands._io import checked_input_limit, fail
from conformance.commands._serving import listening, run_server
from conformance.errors import EmulatorConfigError
from conformance.providers.emulator import create_app

__all__ = ["command"]


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    help="Catalog profile (repeatable); each applies to its shape, others use their default.",
)
@click.option("--context-limit", type=click.IntRange(min=1), help="Input-token limit per request.")
def command(host: str, port: int, profiles: tuple[str, ...], context_limit: int | None) -> None:
    """Run the provider emulator (OpenAI, Anthropic, Gemini, Bedrock routes) on HOST:PORT."""
    limit = checked_input_limit()
    try:
        app = create_app(
            profile=list(profiles) or None, context_limit=context_limit, input_limit=limit
        )
    except EmulatorConfigError as exc:
        fail(f"--profile: {exc.message}")
    with listening(host, port) as (sock, url):
        click.echo(f"ctxconf emulator listening on {url}", nl=True)
        run_server(app, sock, lifespan="off")
