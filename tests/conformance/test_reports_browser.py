"""The HTML report in a real headless browser (Debian's chromium driven by Playwright).

A failing run of a real trimmer is rendered; the page is opened from file://, a failing matrix
cell is clicked, the case it links to must open with its marked-up message list, token bars
and (a budget sweep) chart, and the page must log no console error. A screenshot of the opened
case is saved under ``reports/browser/`` (a CI artifact; the path is printed).

Skipped, with the reason, where Playwright or a chromium binary is missing: ``.ci/run``
installs both (``apt-get install chromium``, the ``browser`` extra). ``CTXCONF_CHROMIUM`` names
another binary.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from paths import ROOT

from conformance.cli import cli

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SHOTS = ROOT / "reports" / "browser"
# Flags that work on this kind of machine (root, no GPU, no network).
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCENARIOS = "sweep-parallel-ring-mid-deletion,mid-ring-deletion,summary-replacement"


def _chromium() -> str:
    found = os.environ.get("CTXCONF_CHROMIUM") or shutil.which("chromium")
    found = found or shutil.which("chromium-browser")
    if not found:
        pytest.skip("no chromium binary (apt-get install chromium, or set CTXCONF_CHROMIUM)")
    return found


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    out = tmp_path_factory.mktemp("report")
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--impl",
            "conformance.adapters.langchain:trim_last",
            "--shapes",
            "openai-chat",
            "--scenarios",
            SCENARIOS,
            "--report-dir",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output  # trim_last breaks rings: a failing run
    return out / "report.html"


def test_a_failing_cell_opens_its_marked_up_case_without_console_errors(
    failing_report: Path,
) -> None:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[browser]')"
    )
    executable = _chromium()
    problems: list[str] = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / "failing-case.png"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})

            def on_console(message: Any) -> None:
                if message.type == "error":
                    problems.append(f"console: {message.text}")

            page.on("console", on_console)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.on(
                "request",
                lambda request: (
                    None
                    if request.url.startswith(("file:", "data:"))
                    else problems.append(f"loaded from outside: {request.url}")
                ),
            )
            page.goto(failing_report.as_uri())
            cell = page.locator("td.fail a").first
            target = str(cell.get_attribute("href"))
            assert target.startswith("#case-")
            cell.click()
            case = page.locator(f"details{target}")
            case.locator("table.msgs").wait_for(state="visible", timeout=15_000)
            assert case.get_attribute("open") is not None
            fates = case.locator("table.msgs .st").all_inner_texts()
            assert "dropped" in fates, fates  # trim_last drops from the front
            assert case.locator(".bars .bar").count() == 2  # session and view against the budget
            assert case.locator("svg.sweep circle").count() >= 2  # the sweep's budgets
            case.screenshot(path=str(shot))
            # Opening another case by its summary fills it too.
            closed = page.locator("details[data-case]:not([open])").first.get_attribute("id")
            other = page.locator(f"details#{closed}")
            other.locator("summary").click()
            other.locator(".body table, .body p").first.wait_for(state="visible", timeout=15_000)
        finally:
            browser.close()
    print(f"screenshot of the opened case: {shot}")
    assert shot.stat().st_size > 10_000
    assert problems == []
