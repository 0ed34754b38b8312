"""One module per ``ctxconf`` command; each exposes ``command: click.Command``."""
