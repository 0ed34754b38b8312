"""Local counts against the usage providers reported in ../shared/recordings (calibration).

* OpenAI shapes: the median relative error is within 3% (issue 2, "Must hold").
* Estimate shapes: the family overheads in ``reference_impl/tokens/_estimate_constants.py`` are
  the fit on half ``FIT_HALF`` of the recordings (never on the test half).
* Anthropic estimate: the safe estimate (point x safety factor) covers the reported count of every
  request without a documented hidden input (tool search ``tool_reference``, server tools).
"""

from __future__ import annotations

import statistics
from types import ModuleType

import pytest
from paths import RECORDINGS, RECORDINGS_MORE
from script_support import load_script

pytestmark = pytest.mark.recordings

if not RECORDINGS.is_dir():
    pytest.skip(
        "../shared/recordings is absent: calibration needs the public recordings next to the repo",
        allow_module_level=True,
    )


def _bench() -> ModuleType:
    return load_script("bench/calibrate_tokens.py", "calibrate_tokens")


@pytest.fixture(scope="module")
def rows():  # type: ignore[no-untyped-def]
    return list(_bench().calibrate(RECORDINGS))


def test_every_recording_with_usage_is_compared(rows) -> None:  # type: ignore[no-untyped-def]
    assert rows, "no recording with reported usage was found"
    for row in rows:
        assert row.local is not None or row.note.startswith("not compared"), row


def test_openai_median_error_within_3_percent(rows) -> None:  # type: ignore[no-untyped-def]
    # Issue 2 must-hold. Only requests to non-OpenAI models (other tokenizers) are left out;
    # reasoning requests with an unpublished hidden system message stay in the sample.
    errors = _bench().openai_median_sample(rows)
    assert len(errors) >= 5
    assert statistics.median(errors) <= 0.03, sorted(errors)


def test_openai_growth_of_a_request_is_counted_where_a_hidden_preamble_cancels(rows) -> None:  # type: ignore[no-untyped-def]
    # gpt-5-mini with tools carries a hidden system message of unpublished size; the growth from
    # one request to the next (a call and its result, harmony format) must still be close.
    bench = _bench()
    pairs = [
        (a, b)
        for a, b in bench.request_growth(rows)
        if b.shape in bench.OPENAI_SHAPES and not b.note.startswith("not an OpenAI model")
    ]
    assert pairs, "expected a reasoning request with tools that grows between interactions"
    for earlier, later in pairs:
        local = later.local - earlier.local
        reported = later.reported - earlier.reported
        assert abs(local - reported) <= max(3, 0.05 * reported), (earlier, later)


def test_anthropic_safe_estimate_covers_the_reported_count(rows) -> None:  # type: ignore[no-untyped-def]
    anthropic = [r for r in rows if r.shape == "anthropic-messages" and r.local is not None]
    assert len(anthropic) >= 3
    for row in anthropic:
        if not row.note:  # nothing hidden server-side beyond the fitted tool-use prompt
            assert row.safe >= row.reported, row


@pytest.fixture(scope="module")
def all_rows():  # type: ignore[no-untyped-def]
    bench = _bench()
    folders = [d for d in (RECORDINGS, RECORDINGS_MORE) if d.is_dir()]
    return [row for folder in folders for row in bench.calibrate(folder)]


def test_family_overheads_are_the_fit_on_the_fit_half(all_rows) -> None:  # type: ignore[no-untyped-def]
    # make calibrate's default folders; the catalog must be re-fitted when the recordings change.
    if not RECORDINGS_MORE.is_dir():
        pytest.skip("../shared/recordings-more is absent: the catalog was fitted on both folders")
    assert _bench().catalog_drift(all_rows) == []


def test_fitted_claude_tools_overhead_generalizes(all_rows) -> None:  # type: ignore[no-untyped-def]
    # Claude with tools: the hidden tool-use prompt is the error; fitted on half 0 it must bring
    # half 1 within 10% (the shipped counter), where the content alone is off by ~80%.
    if not RECORDINGS_MORE.is_dir():
        pytest.skip("../shared/recordings-more is absent")
    results = [
        r
        for r in _bench().split_half(all_rows)
        if r.group == ("anthropic-messages", "claude", True) and r.fitted_on == 0
    ]
    assert results
    assert results[0].n_out >= 5
    assert results[0].out_of_sample_raw is not None
    assert results[0].out_of_sample_raw <= 0.10, results[0]
