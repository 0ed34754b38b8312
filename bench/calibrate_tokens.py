"""Compare local token counts with the usage providers reported in the public recordings.

Usage: ``python bench/calibrate_tokens.py [RECORDINGS_DIR...]`` (default ``<repo>/../shared/recordings``
and ``<repo>/../shared/recordings-more``; ``$CTXCONF_SHARED`` points at another shared folder).

For every recorded request with a 2xx answer that reports input usage, the request is parsed with
its shape, counted with ``counter_for(shape, model)``, and compared with ``prompt_tokens`` (Chat),
``input_tokens`` (Responses, Anthropic, count endpoints), ``usageMetadata.promptTokenCount``
(Gemini) or ``usage.inputTokens`` (Bedrock). Relative error is ``(local - reported) / reported``.
A recording that cannot be compared says why; nothing is adjusted to fit.

**Two numbers per request.** ``local`` is the point estimate: the OpenAI counters as they are, and
the estimate counters (Anthropic, Gemini, Bedrock) at ``safety_factor=1.0``, i.e. the content's
tiktoken count plus the family overhead of ``reference_impl/tokens/_estimate_constants.py``.
``safe`` is what ``counter_for`` gives by default (content x safety factor + family overhead);
the assembler budgets with it. Anthropic and Bedrock report cached input apart from
``input_tokens``; the cache reads and writes are added back, since they are input the request sent.

**Out of sample.** The recordings are split in two halves by file (a stable hash of the file name,
so the requests of one recording stay together). On one half, one additive constant per fit key
is fitted: the median of ``reported - content`` (content = the point estimate without the family
overhead). The fit key is (family, tools or not) for the estimate shapes, whose constants are
shared across shapes in ``_estimate_constants``, and (shape, family, tools) for the OpenAI shapes,
whose counters carry no fitted constant (there the column says what one would buy). The constants
are applied to the *other* half, and the median |error| is reported per (shape, family, tools) in
sample and out of sample, both ways round. The shipped family overheads must equal the fit on
``FIT_HALF`` (the bench and the calibration tests check it): half 1 is never fitted on.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import statistics
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.traffic.reading import RecordedInteraction, iter_recordings
from reference_impl.config import AssemblyConfig
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.tokens import counter_for, encoding_for_model
from reference_impl.tokens._estimate_constants import (
    ESTIMATE_OVERHEADS,
    FIT_HALF,
    estimate_family,
)
from reference_impl.tokens._openai_costs import is_harmony_model

SHARED = Path(
    os.environ.get("CTXCONF_SHARED") or Path(__file__).resolve().parents[1] / ".." / "shared"
)
DEFAULT_DIR = SHARED / "recordings"
DEFAULT_DIRS = (SHARED / "recordings", SHARED / "recordings-more")
OPENAI_SHAPES = ("openai-chat", "openai-responses")


@dataclass(frozen=True)
class Calibration:
    file: str
    interaction: int
    shape: str
    model: str | None
    local: int | None
    reported: int | None
    counter: str
    note: str = ""
    safety_factor: float | None = None
    tools: bool = False
    safe: int | None = None
    """The default counter's count (point estimate x safety factor for the estimate shapes)."""
    overhead: int = 0
    """The fitted family overhead inside ``local`` (0 for the OpenAI shapes)."""

    @property
    def content(self) -> int | None:
        """The point estimate without the fitted family overhead (what a fit starts from)."""
        return None if self.local is None else self.local - self.overhead

    @property
    def error(self) -> float | None:
        if self.local is None or not self.reported:
            return None
        return (self.local - self.reported) / self.reported


def reported_input_tokens(interaction: RecordedInteraction) -> int | None:
    """The provider's input usage from the recorded response, whatever the shape calls it."""
    body = interaction.response_body
    if not isinstance(body, dict):
        return None
    usage: Any = body.get("usage")
    if isinstance(usage, dict):
        if isinstance(usage.get("prompt_tokens"), int):  # Chat: cached tokens are included
            return int(usage["prompt_tokens"])
        for key in ("input_tokens", "inputTokens"):
            if isinstance(usage.get(key), int):
                # Anthropic and Bedrock count cache reads and writes apart from input_tokens
                # (Responses' input_tokens includes its cached tokens and has no such keys).
                cached = sum(
                    int(usage[k])
                    for k in (
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                        "cacheReadInputTokens",
                        "cacheWriteInputTokens",
                    )
                    if isinstance(usage.get(k), int)
                )
                return int(usage[key]) + cached
    meta = body.get("usageMetadata")
    if isinstance(meta, dict) and isinstance(meta.get("promptTokenCount"), int):
        return int(meta["promptTokenCount"])
    if isinstance(body.get("input_tokens"), int):  # count endpoints
        return int(body["input_tokens"])
    return None


def _model(interaction: RecordedInteraction) -> str | None:
    body = interaction.request_body
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])
    # Gemini and Bedrock carry the model in the URL: .../models/<m>:generateContent, /model/<m>/converse
    url = interaction.url
    for marker, stop in (("/models/", ":"), ("/model/", "/")):
        if marker in url:
            return url.split(marker, 1)[1].split(stop, 1)[0]
    return None


def _known_gap(shape: str, interaction: RecordedInteraction) -> str:
    """Documented reasons why a provider count exceeds what the request carries."""
    body = interaction.request_body if isinstance(interaction.request_body, dict) else {}
    has_tools = bool(body.get("tools") or body.get("toolConfig"))
    text = str(body)
    if shape == "anthropic-messages" and "tool_reference" in text:
        return (
            "tool search: a tool_reference block loads a tool definition server-side (hidden input)"
        )
    if shape in OPENAI_SHAPES and encoding_for_model(_model(interaction)).reason.startswith(
        "unknown"
    ):
        return "not an OpenAI model: its tokenizer and chat template are not tiktoken's; left out of the median"
    if shape in OPENAI_SHAPES and has_tools and is_harmony_model(_model(interaction)):
        return (
            "reasoning model with tools: the hosted system message that comes with tools has no "
            "published size and is not counted (kept in the median; see growth below)"
        )
    if shape == "bedrock-converse" and has_tools:
        return "tools present: the model's tool prompt template is hidden input"
    if shape == "openai-responses" and isinstance(body.get("input"), list):
        kinds = {i.get("type") for i in body["input"] if isinstance(i, dict)}
        if "reasoning" in kinds:
            return "reasoning items: their encrypted content is counted by the API, not by us"
    return ""


def _scrubbed(interaction: RecordedInteraction) -> bool:
    """Ruby VCR's filter_sensitive_data rewrites bodies (``<MASSIVE_TEXT>``...): not what was sent."""
    text = interaction.raw_request_text or ""
    return "<MASSIVE_TEXT>" in text


def calibrate(directory: Path) -> Iterator[Calibration]:
    for interaction in iter_recordings(directory):
        shape = interaction.shape
        reported = reported_input_tokens(interaction)
        if shape is None or reported is None or not isinstance(interaction.request_body, dict):
            continue
        if interaction.status is None or not 200 <= interaction.status < 300:
            continue
        if interaction.judged_body is not interaction.request_body:
            continue  # Bedrock count-tokens wraps its request: not compared here
        name = f"{directory.name}/{Path(interaction.file).relative_to(directory)}"
        if _scrubbed(interaction):
            yield Calibration(
                name,
                interaction.index,
                shape,
                _model(interaction),
                None,
                reported,
                "-",
                "not compared: the recorder replaced request text with placeholders",
            )
            continue
        model = _model(interaction)
        counter = counter_for(shape, model)
        factor = getattr(counter, "safety_factor", None)
        point = counter if factor is None else counter_for(shape, model, safety_factor=1.0)
        local: int | None = None
        safe: int | None = None
        overhead = 0
        tools = False
        try:
            transcript = get_shape(shape).parse_request(interaction.request_body)
            counted = point.count(transcript)
            local = counted.total
            safe = counter.count(transcript).total
            overhead = counted.overhead if factor is not None else 0
            tools = bool(transcript.tools)
            note = _known_gap(shape, interaction)
        except (CtxconfError, ImportError) as exc:
            note = f"not compared: {exc}"
        if reported == 0:
            local, note = None, "not compared: the provider reported 0 input tokens (replay stub)"
        yield Calibration(
            name,
            interaction.index,
            shape,
            model,
            local,
            reported,
            counter.name,
            note,
            factor,
            tools,
            safe,
            overhead,
        )


def openai_median_sample(rows: list[Calibration]) -> list[float]:
    """|relative error| of OpenAI-shape requests to OpenAI models (other models use other tokenizers)."""
    return [
        abs(r.error)
        for r in rows
        if r.shape in OPENAI_SHAPES
        and r.error is not None
        and not r.note.startswith("not an OpenAI model")
    ]


def request_growth(rows: list[Calibration]) -> Iterator[tuple[Calibration, Calibration]]:
    """Consecutive compared requests of one recording whose later one carries a hidden-input note:
    the difference of their counts leaves out whatever hidden input both share."""
    for earlier, later in itertools.pairwise(rows):
        if (
            earlier.file == later.file
            and earlier.model == later.model
            and later.note
            and earlier.local is not None
            and later.local is not None
            and earlier.reported
            and later.reported
        ):
            yield earlier, later


def family(row: Calibration) -> str:
    """A coarse model family for grouping: gpt-5 / o-series (harmony), gpt-4*, claude, gemini..."""
    if row.shape in OPENAI_SHAPES:
        return "harmony" if is_harmony_model(row.model) else "chatml"
    return estimate_family(row.shape, row.model)


def group(row: Calibration) -> tuple[str, str, bool]:
    return row.shape, family(row), row.tools


def half(row: Calibration) -> int:
    """0 or 1, stable per file."""
    return hashlib.sha256(row.file.encode()).digest()[0] % 2


def _comparable(rows: Iterable[Calibration]) -> list[Calibration]:
    return [
        r
        for r in rows
        if r.local is not None and r.reported and not r.note.startswith("not an OpenAI model")
    ]


FitKey = tuple[str, str, bool]


def fit_key(row: Calibration) -> FitKey:
    """What one fitted constant is shared by: (family, tools) across the estimate shapes (the
    catalog's key), (shape, family, tools) for the OpenAI shapes."""
    shape = row.shape if row.shape in OPENAI_SHAPES else "estimate"
    return shape, family(row), row.tools


def fit_overheads(rows: Iterable[Calibration], fit_half: int) -> dict[FitKey, int]:
    """Per fit key, the median of ``reported - content`` over the requests of ``fit_half`` only."""
    gaps: dict[FitKey, list[int]] = {}
    for r in _comparable(rows):
        if half(r) == fit_half:
            gaps.setdefault(fit_key(r), []).append((r.reported or 0) - (r.content or 0))
    return {key: round(statistics.median(values)) for key, values in sorted(gaps.items())}


def catalog_drift(rows: list[Calibration]) -> list[tuple[str, bool, int, int]]:
    """(family, tools, shipped, fitted on FIT_HALF) where ``_estimate_constants`` differs from the
    fit; empty when the catalog is the half-``FIT_HALF`` fit."""
    fitted = fit_overheads(rows, FIT_HALF)
    drift = []
    for (shape, fam, tools), value in fitted.items():
        if shape != "estimate":
            continue
        found = ESTIMATE_OVERHEADS.get(fam)
        shipped = 0 if found is None else (found.with_tools if tools else found.request)
        if shipped != value:
            drift.append((fam, tools, shipped, value))
    return drift


@dataclass(frozen=True)
class SplitResult:
    group: tuple[str, str, bool]
    fitted_on: int
    offset: int
    n_in: int
    in_sample: float | None
    n_out: int
    out_of_sample_raw: float | None
    """The other half with the counter as shipped (catalog constants)."""
    out_of_sample: float | None
    """The other half with the constant fitted on ``fitted_on``."""


def _median_abs(values: list[float]) -> float | None:
    return statistics.median(abs(v) for v in values) if values else None


def _errors(members: Iterable[Calibration], offset: int | None) -> list[float]:
    """Relative errors of ``content + offset`` (``offset`` None: the shipped point estimate)."""
    out = []
    for r in members:
        local = (r.local or 0) if offset is None else (r.content or 0) + offset
        out.append((local - (r.reported or 0)) / (r.reported or 1))
    return out


def split_half(rows: list[Calibration]) -> list[SplitResult]:
    """Fit the constants on one half, evaluate them on the other (both ways), per group."""
    usable = _comparable(rows)
    fits = {h: fit_overheads(usable, h) for h in (0, 1)}
    out: list[SplitResult] = []
    for key in sorted({group(r) for r in usable}):
        members = [r for r in usable if group(r) == key]
        for fit_half in (0, 1):
            fit = [r for r in members if half(r) == fit_half]
            test = [r for r in members if half(r) != fit_half]
            if not fit:
                continue
            offset = fits[fit_half][fit_key(fit[0])]
            out.append(
                SplitResult(
                    key,
                    fit_half,
                    offset,
                    len(fit),
                    _median_abs(_errors(fit, offset)),
                    len(test),
                    _median_abs(_errors(test, None)),
                    _median_abs(_errors(test, offset)),
                )
            )
    return out


def safety_shortfalls(rows: list[Calibration]) -> list[Calibration]:
    """Requests whose safe estimate (the default counter's count) is under the provider's count."""
    return [
        r
        for r in _comparable(rows)
        if r.safe is not None and r.safety_factor is not None and r.safe < (r.reported or 0)
    ]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def main(argv: list[str]) -> int:
    directories = [Path(a) for a in argv[1:]] or [d for d in DEFAULT_DIRS if d.is_dir()]
    if not directories or not all(d.is_dir() for d in directories):
        print(
            f"no recordings at {', '.join(map(str, directories or DEFAULT_DIRS))} (../shared is absent)"
        )
        return 0
    rows = [row for directory in directories for row in calibrate(directory)]
    print(
        f"{'recording':58} {'shape':18} {'model':22} {'local':>6} {'usage':>6} {'error':>7}  counter"
    )
    for row in rows:
        error = "-" if row.error is None else f"{row.error:+.1%}"
        local = "-" if row.local is None else str(row.local)
        print(
            f"{row.file + '#' + str(row.interaction):58} {row.shape:18} {row.model or '-':22} "
            f"{local:>6} {row.reported or '-':>6} {error:>7}  {row.counter}"
            + (f"  [{row.note}]" if row.note else "")
        )
    growth = list(request_growth(rows))
    if growth:
        print("\nGrowth between consecutive requests of one recording (a hidden preamble cancels):")
        for earlier, later in growth:
            grew = (later.local or 0) - (earlier.local or 0)
            billed = (later.reported or 0) - (earlier.reported or 0)
            print(
                f"  {later.file}#{earlier.interaction}->#{later.interaction}: "
                f"local +{grew}, usage +{billed} ({grew - billed:+d} tokens)"
            )
    openai_errors = openai_median_sample(rows)
    if openai_errors:
        print(
            f"OpenAI shapes: median |error| {statistics.median(openai_errors):.2%} "
            f"over {len(openai_errors)} requests (excluded: other tokenizers, "
            f"{sum(1 for r in rows if r.note.startswith('not an OpenAI model'))} requests)"
        )
    print(
        "\nMedian |error| per folder (the counter's constants were calibrated on recordings/ only,"
        " so\nrecordings-more/ is out of sample for them), OpenAI shapes, OpenAI models:"
    )
    for folder in sorted({r.file.split("/", 1)[0] for r in rows}):
        errors = openai_median_sample([r for r in rows if r.file.startswith(folder + "/")])
        print(f"  {folder:18} {_pct(_median_abs(errors)):>7} over {len(errors)}")
    print("\nMedian |error| per shape (all compared requests, current constants):")
    usable = _comparable(rows)
    for shape in sorted({r.shape for r in usable}):
        errors = [r.error for r in usable if r.shape == shape and r.error is not None]
        print(f"  {shape:18} {_pct(_median_abs(errors)):>7} over {len(errors)}")
    print(
        "\nSplit half (by file): one additive constant per fit key fitted on one half, applied to"
        "\nthe other. in = fitted half; shipped out = other half with the counter as shipped;"
        "\nfitted out = other half with the constant fitted on the first half. A group of n < 5"
        "\nis too small to judge."
    )
    print(
        f"  {'group':42} {'fit':>3} {'offset':>7} {'n':>3} {'in':>6} {'n':>3} "
        f"{'shipped out':>11} {'fitted out':>10}"
    )
    for result in split_half(rows):
        shape, fam, tools = result.group
        name = f"{shape}/{fam}/{'tools' if tools else 'no tools'}"
        print(
            f"  {name:42} {result.fitted_on:>3} {result.offset:>+7d} {result.n_in:>3} "
            f"{_pct(result.in_sample):>6} {result.n_out:>3} {_pct(result.out_of_sample_raw):>11} "
            f"{_pct(result.out_of_sample):>10}"
        )
    drift = catalog_drift(rows)
    print(
        f"\nFamily overheads in reference_impl/tokens/_estimate_constants.py vs the fit on half "
        f"{FIT_HALF}: " + ("equal" if not drift else "DIFFERENT")
    )
    for fam, tools, shipped, fitted in drift:
        print(f"  {fam} {'with_tools' if tools else 'request'}: shipped {shipped}, fitted {fitted}")
    short = safety_shortfalls(rows)
    with_factor = [r for r in usable if r.safety_factor is not None]
    print(
        f"\nSafe estimate (the default counter: content x safety factor + overhead) under the "
        f"provider's count: "
        f"{len(short)} of {len(with_factor)} requests with a safety factor"
    )
    margin = AssemblyConfig().safety_margin_tokens
    for row in sorted(short, key=lambda r: (r.safe or 0) - (r.reported or 0)):
        gap = (row.reported or 0) - (row.safe or 0)
        print(
            f"  {row.file}#{row.interaction} {row.shape} safe {row.safe} (x{row.safety_factor}) "
            f"< {row.reported}: {gap} tokens short "
            f"({'within' if gap <= margin else 'BEYOND'} the default safety_margin_tokens {margin})"
            + (f"  [{row.note}]" if row.note else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
