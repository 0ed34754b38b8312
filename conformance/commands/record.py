"""``ctxconf record``: record SDK round trips into cassettes, against the emulator or live.

Without ``--live`` the requests go to the emulator in process; ``--base-url`` sends them to any
server instead (``ctxconf serve``, a gateway); ``--live`` reads the provider's key from the usual
environment variable and, without ``--base-url``, uses the provider's official endpoint. The
cassette says what answered: ``live`` only for an official endpoint, ``emulator:<profile>`` when
the answers say they are emulated, ``custom:<host>`` otherwise.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import click
import httpx
import openai

from conformance.cassettes import ContentMode
from conformance.commands._io import EXIT_BAD_INPUT
from conformance.providers.emulator import EmulatorConfigError, create_app
from conformance.recorded_verdicts import default_cassette_root
from conformance.roundtrip import (
    DEFAULT_MODELS,
    Case,
    CredentialsError,
    Target,
    record,
    recorded_against,
)
from conformance.roundtrip_cases import probe_cases, scenario_cases
from conformance.scenarios import ScenarioError, load_corpus, select
from reference_impl.transcript import SHAPE_NAMES

__all__ = ["command"]


def _fail(what: str) -> None:
    click.echo(f"ctxconf: error: {what}", err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def _scenario_cases(
    selectors: tuple[str, ...], corpus: Path | None, shape: str, model: str | None
) -> list[Case]:
    try:
        scenarios = load_corpus(corpus)
    except ScenarioError as exc:
        _fail(f"--corpus: {exc}")
        return []
    chosen = select(scenarios, selectors=[s for s in selectors if s != "all"])
    if not selectors:
        chosen = tuple(s for s in chosen if s.cassette)
    return scenario_cases(chosen, shape, model=model)


def _target(live: bool, base_url: str | None, shape: str, app_options: dict[str, object]) -> Target:
    if base_url is not None:
        return Target(root=base_url, live=live)
    if live:
        return Target.official(shape)
    try:
        app = create_app(**app_options)  # type: ignore[arg-type]
    except EmulatorConfigError as exc:
        _fail(f"--profile: {exc.message}")
    return Target.emulator(app)


@click.command("record")
@click.option(
    "--shape", "shapes", multiple=True, required=True, type=click.Choice([*SHAPE_NAMES, "all"])
)
@click.option("--live", is_flag=True, help="Use the provider's key from the environment.")
@click.option("--base-url", help="Send to this server instead (http://127.0.0.1:8080).")
@click.option("--model", help="Model to record with (default: a small model per shape).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Cassette folder.")
@click.option("--scenarios", "selectors", multiple=True, help="Scenario ids or tags ('all').")
@click.option("--corpus", type=click.Path(exists=True, path_type=Path), help="Scenario folder.")
@click.option("--probes/--no-probes", default=True, show_default=True, help="Built-in probes.")
@click.option("--profile", "profiles", multiple=True, help="Emulator profile (repeatable).")
@click.option("--context-limit", type=click.IntRange(min=1), help="Emulator input-token limit.")
@click.option("--hash-content", is_flag=True, help="Store content strings as sha256 hashes.")
def command(  # noqa: PLR0917 - click passes each option as a parameter
    shapes: tuple[str, ...],
    live: bool,
    base_url: str | None,
    model: str | None,
    out: Path | None,
    selectors: tuple[str, ...],
    corpus: Path | None,
    probes: bool,
    profiles: tuple[str, ...],
    context_limit: int | None,
    hash_content: bool,
) -> None:
    """Send probes and scenarios through the real SDKs and write cassettes/<shape>/<id>.yaml."""
    folder = out if out is not None else default_cassette_root()
    names = list(SHAPE_NAMES) if "all" in shapes else list(dict.fromkeys(shapes))
    options: dict[str, object] = {"profile": list(profiles) or None, "context_limit": context_limit}
    content = ContentMode.HASHED if hash_content else ContentMode.FULL
    for shape in names:
        cases = probe_cases(shape, model=model) if probes else []
        # Without --scenarios: the scenarios that declare a cassette (``cassette: true``).
        cases += _scenario_cases(selectors, corpus, shape, model)
        if not cases:
            click.echo(f"{shape}: nothing to record", err=True)
            continue
        target = _target(live, base_url, shape, options)
        try:
            written = record(cases, target, folder, content=content)
        except CredentialsError as exc:
            _fail(exc.message)
            return
        except (openai.APIConnectionError, anthropic.APIConnectionError, httpx.HTTPError) as exc:
            _fail(f"{shape}: cannot reach {target.root}: {exc}")
            return
        for path, exchanges in written:
            statuses = ",".join(str(e.status) for e in exchanges)
            against = recorded_against(target, shape, exchanges)
            model_used = model or DEFAULT_MODELS[shape]
            click.echo(f"{path}  {against}  {model_used}  status {statuses}")
