"""Compare local token counts with the usage providers reported in the public recordings.

Usage: ``python bench/calibrate_tokens.py [RECORDINGS_DIR...]`` (default ``<repo>/../shared/recordings``
and ``<repo>/../shared/recordings-more``; ``$CTXCONF_SHARED`` points at another shared folder).

For every recorded request with a 2xx answer that reports input usage, the request is parsed with
its shape, counted with ``counter_for(shape, model)``, and compared with ``prompt_tokens`` (Chat),
``input_tokens`` (Responses, Anthropic, count endpoints), ``usageMetadata.promptTokenCount``
(Gemini) or ``usage.inputTokens`` (Bedrock). Relative error is ``(local - reported) / reported``.
A recording that cannot be compared says why; nothing is adjusted to fit.

**Out of sample.** The recordings are split in two halves by file (a stable hash of the file name,
so the requests of one recording stay together). On each half, one additive constant per group
(shape, model family, tools or not) is fitted: the median of ``reported - local`` there (the
request preamble the counter does not model, such as the Responses tool preamble). It is then
applied to the *other* half, and the median |error| is reported per group in sample and out of
sample, both ways round. The counter itself is not changed by this; the numbers say how well its
constants generalize and what a fitted preamble would buy.
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
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.tokens import counter_for, encoding_for_model
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
        for key in ("prompt_tokens", "input_tokens", "inputTokens"):
            if isinstance(usage.get(key), int):
                return int(usage[key])
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
        try:
            transcript = get_shape(shape).parse_request(interaction.request_body)
            local: int | None = counter.count(transcript).total
            note = _known_gap(shape, interaction)
        except (CtxconfError, ImportError) as exc:
            local, note = None, f"not compared: {exc}"
        if reported == 0:
            local, note = None, "not compared: the provider reported 0 input tokens (replay stub)"
        body = interaction.request_body
        tools = bool(body.get("tools") or body.get("toolConfig"))
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
    model = (row.model or "").lower().split("/")[-1]
    if row.shape in OPENAI_SHAPES:
        return "harmony" if is_harmony_model(row.model) else "chatml"
    for name in ("claude", "gemini", "nova", "llama", "mistral"):
        if name in model:
            return name
    return "other"


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


@dataclass(frozen=True)
class SplitResult:
    group: tuple[str, str, bool]
    fitted_on: int
    offset: float
    n_in: int
    in_sample: float | None
    n_out: int
    out_of_sample_raw: float | None
    out_of_sample: float | None


def _median_abs(values: list[float]) -> float | None:
    return statistics.median(abs(v) for v in values) if values else None


def split_half(rows: list[Calibration]) -> list[SplitResult]:
    """Fit one additive constant per group on one half, evaluate it on the other (both ways)."""
    usable = _comparable(rows)
    out: list[SplitResult] = []
    for key in sorted({group(r) for r in usable}):
        members = [r for r in usable if group(r) == key]
        for fit_half in (0, 1):
            fit = [r for r in members if half(r) == fit_half]
            test = [r for r in members if half(r) != fit_half]
            if not fit:
                continue
            offset = statistics.median((r.reported or 0) - (r.local or 0) for r in fit)
            in_sample = [
                ((r.local or 0) + offset - (r.reported or 0)) / (r.reported or 1) for r in fit
            ]
            raw = [((r.local or 0) - (r.reported or 0)) / (r.reported or 1) for r in test]
            fitted = [
                ((r.local or 0) + offset - (r.reported or 0)) / (r.reported or 1) for r in test
            ]
            out.append(
                SplitResult(
                    key,
                    fit_half,
                    offset,
                    len(fit),
                    _median_abs(in_sample),
                    len(test),
                    _median_abs(raw),
                    _median_abs(fitted),
                )
            )
    return out


def safety_shortfalls(rows: list[Calibration]) -> list[Calibration]:
    """Requests whose safe estimate (local x safety factor) is under the provider's count."""
    return [
        r
        for r in _comparable(rows)
        if r.safety_factor is not None and (r.local or 0) * r.safety_factor < (r.reported or 0)
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
        "\nSplit half (by file): an additive constant per (shape, family, tools) fitted on one "
        "half,\napplied to the other. in = fitted half; raw out = other half with the counter as "
        "is;\nfitted out = other half with the fitted constant."
    )
    print(
        f"  {'group':42} {'fit':>3} {'offset':>7} {'n':>3} {'in':>6} {'n':>3} {'raw out':>8} {'fitted out':>10}"
    )
    for result in split_half(rows):
        shape, fam, tools = result.group
        name = f"{shape}/{fam}/{'tools' if tools else 'no tools'}"
        print(
            f"  {name:42} {result.fitted_on:>3} {result.offset:>+7.0f} {result.n_in:>3} "
            f"{_pct(result.in_sample):>6} {result.n_out:>3} {_pct(result.out_of_sample_raw):>8} "
            f"{_pct(result.out_of_sample):>10}"
        )
    short = safety_shortfalls(rows)
    with_factor = [r for r in usable if r.safety_factor is not None]
    print(
        f"\nSafe estimate (local x safety factor) under the provider's count: {len(short)} of "
        f"{len(with_factor)} requests with a safety factor"
    )
    for row in short:
        print(
            f"  {row.file}#{row.interaction} {row.shape} local {row.local} x {row.safety_factor} < {row.reported}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
