"""``ctxconf proxy --mode observe``: a record folder that cannot be made is refused at start-up
(exit 2), not found out exchange by exchange while the proxy records nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import invoke

from conformance.errors import ProxyConfigError
from conformance.providers.proxy import create_proxy_app


@pytest.mark.timeout(60)  # before: the proxy started listening and never returned
def test_an_uncreatable_record_folder_is_refused_before_listening(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", "utf-8")
    folder = blocker / "observed"
    code, out, err = invoke(
        ["proxy", "--upstream", "http://127.0.0.1:9", "--mode", "observe", "--record-dir",
         str(folder), "--listen", "127.0.0.1:0"]
    )  # fmt: skip
    assert code == 2
    assert f"--record-dir: cannot create {folder}" in err
    assert "listening" not in out


def test_the_record_folder_is_made_when_the_app_is(tmp_path: Path) -> None:
    folder = tmp_path / "observed" / "today"
    create_proxy_app("http://127.0.0.1:9", mode="observe", record_dir=str(folder))
    assert folder.is_dir()
    (tmp_path / "a-file").write_text("", "utf-8")
    with pytest.raises(ProxyConfigError, match="cannot create") as caught:
        create_proxy_app(
            "http://127.0.0.1:9", mode="observe", record_dir=str(tmp_path / "a-file" / "x")
        )
    assert caught.value.where == "record_dir"


@pytest.mark.timeout(60)  # unchecked, the proxy would start listening and never return
def test_an_input_limit_that_is_not_a_size_is_named_before_listening(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # it was "--CTXCONF-MAX-INPUT-BYTES: ...", as if an option were meant
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
    code, out, err = invoke(
        ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]
    )
    assert code == 2
    assert err == (
        "ctxconf: error: $CTXCONF_MAX_INPUT_BYTES='lots' is not a size "
        "(examples: 1000000, 500kB, 64MiB, none)\n"
    )
    assert "listening" not in out
