"""``ctxconf record``: record SDK round trips into cassettes, against the emulator or live.

Without ``--live`` the requests go to the emulator in process; ``--base-url`` sends them to any
server instead (``ctxconf serve``, a gateway); ``--live`` reads the provider's key from the usual
environment variable and, without ``--base-url``, uses the provider's official endpoint. The
cassette says what answered: ``live`` only for an official endpoint, ``emulator:<profile>`` when
the answers say they are emulated, ``custom:<host>`` otherwise.

The default set is every probe and every scenario of the corpus in every shape (and gateway
dialect) it applies to, with exactly the requests ``ctxconf run`` sends for the reference
assembler: ``cassettes/<shape>/<scenario-id>[@<dialect>].yaml``. Re-recording rewrites only the
cassettes whose interactions changed. ``--prune`` removes cassettes that the recorded set no
longer produces (a renamed scenario, a shape a scenario dropped).

Re-record whenever the reference assembler's output structure or the corpus changes::

    ctxconf record --shape all --prune
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import click
import httpx
import openai

from conformance.commands._io import checked_input_limit, fail
from conformance.commands._options import comma_list
from conformance.errors import CredentialsError, EmulatorConfigError, ScenarioError
from conformance.providers.emulator import create_app
from conformance.scenarios import load_corpus, select
from conformance.traffic.cassette import ContentMode
from conformance.traffic.roundtrip import (
    Case,
    Target,
    model_of,
    record,
    recorded_against,
)
from conformance.traffic.roundtrip_cases import probe_cases, scenario_cases
from conformance.traffic.verdicts import default_cassette_root
from reference_impl.transcript import SHAPE_NAMES

__all__ = ["command"]


def _scenario_cases(
    selectors: tuple[str, ...], corpus: Path | None, shape: str, model: str | None
) -> list[Case]:
    try:
        scenarios = load_corpus(corpus)
    except ScenarioError as exc:
        fail(f"--corpus: {exc}")
    # Comma-separated like `run --scenarios a,b`, and repeatable.
    wanted = [name for s in selectors for name in comma_list(s)]
    chosen = select(scenarios, selectors=[s for s in wanted if s != "all"])
    if selectors and not chosen:
        fail(f"--scenarios {', '.join(selectors)}: no scenario has that id or tag")
    return scenario_cases(chosen, shape, model=model)


def _prune(folder: Path, shape: str, kept: set[Path]) -> list[Path]:
    """Cassettes in ``<folder>/<shape>/`` that this recording did not produce, deleted."""
    removed = [p for p in sorted((folder / shape).glob("*.yaml")) if p.resolve() not in kept]
    for path in removed:
        path.unlink()
    return removed


def _target(live: bool, base_url: str | None, shape: str, app_options: dict[str, object]) -> Target:
    if base_url is not None:
        return Target(root=base_url, live=live)
    if live:
        return Target.official(shape)
    try:
        app = create_app(**app_options)  # type: ignore[arg-type]
    except EmulatorConfigError as exc:
        fail(f"--profile: {exc.message}")
    return Target.emulator(app)


@click.command("record")
@click.option(
    "--shape", "shapes", multiple=True, required=True, type=click.Choice([*SHAPE_NAMES, "all"])
)
@click.option("--live", is_flag=True, help="Use the provider's key from the environment.")
@click.option("--base-url", help="Send to this server instead (http://127.0.0.1:8080).")
@click.option("--model", help="Model to record with (default: a small model per shape).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Cassette folder.")
@click.option(
    "--scenarios",
    "selectors",
    multiple=True,
    help="Scenario ids or tags, comma-separated (as for `run`) or repeated; 'all'.",
)
@click.option("--corpus", type=click.Path(exists=True, path_type=Path), help="Scenario folder.")
@click.option("--probes/--no-probes", default=True, show_default=True, help="Built-in probes.")
@click.option("--profile", "profiles", multiple=True, help="Emulator profile (repeatable).")
@click.option("--context-limit", type=click.IntRange(min=1), help="Emulator input-token limit.")
@click.option("--hash-content", is_flag=True, help="Store content strings as sha256 hashes.")
@click.option(
    "--prune",
    is_flag=True,
    help="Delete cassettes of the recorded shapes that this recording no longer produces.",
)
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
    prune: bool,
) -> None:
    """Send probes and scenarios through the real SDKs and write cassettes/<shape>/<id>.yaml.

    Without --scenarios: every probe and every scenario of the corpus."""
    if prune and (selectors or not probes):
        fail("--prune needs the full set: drop --scenarios and --no-probes")
    # read once, before the corpus and any request: the in-process emulator keeps it
    limit = checked_input_limit()
    folder = out if out is not None else default_cassette_root()
    try:  # checked before any request is sent, so no round trip is recorded and then lost
        for shape in SHAPE_NAMES if "all" in shapes else shapes:
            (folder / shape).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {folder}: cannot create the cassette folder ({exc.strerror or exc})")
    names = list(SHAPE_NAMES) if "all" in shapes else list(dict.fromkeys(shapes))
    options: dict[str, object] = {
        "profile": list(profiles) or None,
        "context_limit": context_limit,
        "input_limit": limit,
    }
    content = ContentMode.HASHED if hash_content else ContentMode.FULL
    for shape in names:
        cases = probe_cases(shape, model=model) if probes else []
        cases += _scenario_cases(selectors, corpus, shape, model)
        if not cases:
            click.echo(f"{shape}: nothing to record", err=True)
            continue
        target = _target(live, base_url, shape, options)
        try:
            written = record(cases, target, folder, content=content)
        except CredentialsError as exc:
            fail(exc.message)
        except (openai.APIConnectionError, anthropic.APIConnectionError, httpx.HTTPError) as exc:
            fail(f"{shape}: cannot reach {target.root}: {exc}")
        for item in written:
            if not item.changed:
                continue
            statuses = ",".join(str(e.status) for e in item.exchanges)
            against = recorded_against(target, shape, item.exchanges)
            model_used = model_of([e.case for e in item.exchanges])
            click.echo(f"{item.path}  {against}  {model_used}  status {statuses}")
            for exchange in item.exchanges:
                if exchange.parse_error is not None:  # recorded as it came; said once, here
                    click.echo(
                        f"ctxconf: warning: {item.path}: a {exchange.status} answer that does "
                        f"not parse as {shape}: {exchange.parse_error}",
                        err=True,
                    )
        removed = _prune(folder, shape, {w.path.resolve() for w in written}) if prune else []
        for path in removed:
            click.echo(f"{path}  removed (no longer recorded)")
        changed = sum(1 for w in written if w.changed)
        click.echo(
            f"{shape}: {len(written)} cassette(s), {changed} written, "
            f"{len(written) - changed} unchanged, {len(removed)} removed",
            err=True,
        )
