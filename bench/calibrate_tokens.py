"""Compare local token counts with the usage providers reported in the public recordings.

Usage: ``python bench/calibrate_tokens.py [RECORDINGS_DIR]`` (default ``<repo>/../shared/recordings``).

For every recorded request with a 2xx answer that reports input usage, the request is parsed with
its shape, counted with ``counter_for(shape, model)``, and compared with ``prompt_tokens`` (Chat),
``input_tokens`` (Responses, Anthropic, count endpoints), ``usageMetadata.promptTokenCount``
(Gemini) or ``usage.inputTokens`` (Bedrock). Relative error is ``(local - reported) / reported``.
A recording that cannot be compared says why; nothing is adjusted to fit.
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.recordings import RecordedInteraction, iter_recordings
from reference_impl._openai_costs import is_harmony_model
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.tokens import counter_for, encoding_for_model

DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "recordings"
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


def calibrate(directory: Path) -> Iterator[Calibration]:
    for interaction in iter_recordings(directory):
        shape = interaction.shape
        reported = reported_input_tokens(interaction)
        if shape is None or reported is None or not isinstance(interaction.request_body, dict):
            continue
        if interaction.status is None or not 200 <= interaction.status < 300:
            continue
        name = str(Path(interaction.file).relative_to(directory))
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
        yield Calibration(
            name, interaction.index, shape, model, local, reported, counter.name, note, factor
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


def main(argv: list[str]) -> int:
    directory = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    if not directory.is_dir():
        print(f"no recordings at {directory} (../shared/recordings is absent)")
        return 0
    rows = list(calibrate(directory))
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
