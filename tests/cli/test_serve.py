"""``ctxconf serve`` in a separate process answers the official SDKs over loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import anthropic
import openai
import pytest
from click.testing import CliRunner
from paths import ROOT

from conformance.cli import cli

pytestmark = pytest.mark.slow

_WAIT_S = 30.0


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """Start ``ctxconf serve --port 0`` on 127.0.0.1; yield its URL; always terminate it."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from conformance.cli import main; main()",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--profile",
            "anthropic-2024-strict-alternation",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    first_line: list[str] = []
    reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=_WAIT_S)
    try:
        if not first_line or "http://127.0.0.1:" not in first_line[0]:
            process.kill()
            _, err = process.communicate(timeout=5)
            pytest.fail(f"ctxconf serve did not start: {first_line!r} {err[-2000:]}")
        yield first_line[0].strip().rsplit(" ", 1)[-1]
    finally:
        process.terminate()
        try:
            process.communicate(timeout=10)  # also closes the pipes
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=5)


def test_openai_sdk_talks_to_ctxconf_serve(served: str) -> None:
    client = openai.OpenAI(base_url=f"{served}/v1", api_key="test", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi [emulator: call f x2]"}]
    )
    completion = raw.parse()
    assert raw.headers["x-ctxconf-provenance"] == "emulated"
    assert len(completion.choices[0].message.tool_calls or []) == 2


def test_anthropic_sdk_gets_the_served_profile_A9(served: str) -> None:
    client = anthropic.Anthropic(base_url=served, api_key="test", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        )
    assert caught.value.response.headers["x-ctxconf-rule"] == "A9"
    ok = client.messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "a"}]
    )
    assert ok.content[0].type == "text"


def test_sdk_streaming_helpers_read_event_streams_over_loopback(served: str) -> None:
    """stream=True gets an event stream the SDK helpers accumulate."""
    chat = openai.OpenAI(base_url=f"{served}/v1", api_key="test", max_retries=0)
    chunks = chat.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hi [emulator: say streamed over loopback]"}],
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed over loopback"
    with chat.responses.stream(model="gpt-4o-mini", input="hi [emulator: say a b c]") as stream:
        assert stream.get_final_response().output_text == "a b c"
    claude = anthropic.Anthropic(base_url=served, api_key="test", max_retries=0)
    with claude.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi [emulator: say streamed too]"}],
    ) as message_stream:
        final = message_stream.get_final_message()
    assert final.content[0].type == "text"
    assert final.content[0].text == "streamed too"


@pytest.mark.timeout(30)  # unchecked, the command serves (and waits) instead of failing
def test_a_bad_input_limit_is_named_before_serving() -> None:
    # the emulator reads the limit for each request: unchecked, every request was a 500
    result = CliRunner().invoke(
        cli, ["serve", "--port", "0"], env={"CTXCONF_MAX_INPUT_BYTES": "lots"}
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "ctxconf: error: $CTXCONF_MAX_INPUT_BYTES='lots' is not a size "
        "(examples: 1000000, 500kB, 64MiB, none)\n"
    )
    assert "listening" not in result.stdout
