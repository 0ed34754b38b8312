"""Where a plug-in raised: the innermost frame of its own code (its package), so an exception a
library raised points at the plug-in's line that called it; else the innermost frame."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import engine
from conformance.blame import code_home, raised_at
from conformance.protocol import MessageListAssembler

HELPERS = """
def tool_call_id(message):
    return message["tool_call_id"]
"""

PLUG = """
import json

from blamed import helpers


def raises(messages, budget):
    return [helpers.tool_call_id(m) for m in messages]


def bad_json(messages, budget):
    return json.loads("{")


class Assembler:
    shape = "openai-chat"

    def assemble(self, request):
        raise ValueError("no")
"""


@pytest.fixture
def blamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    package = tmp_path / "src" / "blamed"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", "utf-8")
    (package / "helpers.py").write_text(textwrap.dedent(HELPERS), "utf-8")
    (package / "plug.py").write_text(textwrap.dedent(PLUG), "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield package
    for name in ("blamed", "blamed.helpers", "blamed.plug"):
        sys.modules.pop(name, None)


def _raised(function: object, *args: object) -> BaseException:
    try:
        function(*args)  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - what the test inspects
        return exc
    raise AssertionError("it did not raise")


def test_the_innermost_frame_in_the_plugins_package_is_named(blamed: Path) -> None:
    from blamed import plug

    wrapped = MessageListAssembler(plug.raises)
    assert code_home(wrapped) == blamed.resolve()
    exc = _raised(plug.raises, [{"role": "user"}], 10)
    assert raised_at(exc, wrapped) == " (at blamed/helpers.py:3, in tool_call_id)"


def test_an_exception_a_library_raised_points_at_the_plugins_line(blamed: Path) -> None:
    from blamed import plug

    exc = _raised(plug.bad_json, [], 10)
    assert raised_at(exc, MessageListAssembler(plug.bad_json)) == (
        " (at blamed/plug.py:12, in bad_json)"
    )


def test_an_assembler_instance_owns_its_class_package(blamed: Path) -> None:
    from blamed import plug

    assembler = plug.Assembler()
    exc = _raised(assembler.assemble, None)
    assert raised_at(exc, assembler) == " (at blamed/plug.py:19, in assemble)"


def test_without_a_frame_of_the_plugins_own_the_innermost_frame_is_named() -> None:
    exc = _raised(json.loads, "{")
    where = raised_at(exc, object())  # builtins: no file to own
    assert where.startswith(" (at decoder.py:")
    assert where.endswith(", in raw_decode)")
    assert raised_at(ValueError("never raised"), object()) == ""


def test_a_plugin_defined_in_ctxconf_owns_its_module_not_the_harness() -> None:
    # A bundled adapter lives in conformance/: the harness's frames there are not its own.
    assert code_home(MessageListAssembler(engine.exception_text)) == Path(engine.__file__).resolve()
