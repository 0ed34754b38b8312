"""Exit statuses, the one way a command fails on bad input (one line, exit status 2), and reading
user files for commands (errors name the file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import yaml

from conformance.providers.repeated_keys import first_copies
from reference_impl.documents import (
    DocumentLimitError,
    DuplicateKeyError,
    NonFiniteNumberError,
    json_problem,
    load_json_strict,
    load_yaml_strict,
    loads_json,
    max_input_bytes,
    non_finite_number,
    read_input_text,
)
from reference_impl.errors import CtxconfError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FINDING",
    "EXIT_REFUSED",
    "checked_input_limit",
    "describe_error",
    "fail",
    "fail_input",
    "or_fail_input",
    "read_document",
    "read_request_document",
]

_V = TypeVar("_V")
_T = TypeVar("_T")

EXIT_FINDING = 1
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3


def fail(what: str) -> NoReturn:
    """Print ``ctxconf: error: what`` on stderr and exit with status 2 (bad input or option)."""
    click.echo(f"ctxconf: error: {what}", err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def checked_input_limit() -> int | None:
    """The input limit (``$CTXCONF_MAX_INPUT_BYTES``; ``None``: no limit), read once at the
    start of a command that serves or runs the emulator or the proxy (``serve``, ``proxy``,
    ``record``, ``diff``), which hand it to the app: a value that is not a size is exit status
    2 before any request, named (``ctxconf: error: $CTXCONF_MAX_INPUT_BYTES='lots' is not a
    size (examples: ...)``), where every request would have been a 500."""
    try:
        return max_input_bytes()
    except DocumentLimitError as exc:
        fail(str(exc))


def fail_input(path: str | Path, what: str) -> NoReturn:
    """Print ``ctxconf: error: FILE: what`` on stderr and exit with status 2."""
    fail(f"{path}: {what}")


def or_fail_input(
    path: str | Path,
    build: Callable[[_V], _T],
    value: _V,
    *,
    what: str = "",
    errors: type[CtxconfError] = CtxconfError,
) -> _T:
    """``build(value)`` for the file ``path`` (what was read from it, or is made for it); an
    ``errors`` exception is exit 2 naming the file (``what`` goes before the error's words)."""
    try:
        return build(value)
    except errors as exc:
        fail_input(path, what + describe_error(exc))


def read_document(path: str | Path, *, read_non_finite: bool = False) -> Any:
    """Read a JSON or YAML file (by content, not extension); ``-`` reads standard input.

    Every limit of :mod:`reference_impl.documents` applies (size, YAML aliases, depth). NaN and
    Infinity (JSON ``NaN``, YAML ``.nan``), which JSON does not have, are exit 2 naming where,
    unless ``read_non_finite``: they are then read as floats, for a caller that judges them
    (``validate``: a provider's parser refuses such a body)."""
    return _parse_document(path, _document_text(path), read_non_finite=read_non_finite)


def read_request_document(path: str | Path) -> tuple[Any, Any | None]:
    """:func:`read_document` of a request body to judge (NaN and Infinity read as floats), where
    a JSON key given twice is no input error but a body with two readings: the body as Python
    reads it (the last copy kept), and the body keeping the first copy, ``None`` when no key
    repeats (:mod:`conformance.providers.repeated_keys`). YAML is read as ever: a key given twice
    is exit 2, as no provider reads YAML."""
    text = _document_text(path)
    first = first_copies(text, read_non_finite=True)
    if first is None:
        return _parse_document(path, text, read_non_finite=True), None
    # read as JSON keeping the first copies, so JSON keeping the last (the same parser)
    return loads_json(text, parse_constant=float), first


def _document_text(path: str | Path) -> str:
    try:
        return read_input_text(path)
    except DocumentLimitError as exc:
        fail_input(path, str(exc))
    except FileNotFoundError:
        fail_input(path, "no such file")
    except IsADirectoryError:
        fail_input(path, "is a directory, expected a file")
    except UnicodeDecodeError as exc:
        fail_input(path, f"not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        fail_input(path, exc.strerror or str(exc))


def _parse_document(path: str | Path, text: str, *, read_non_finite: bool) -> Any:
    try:
        return load_json_strict(text, read_non_finite=read_non_finite)
    except (DuplicateKeyError, DocumentLimitError) as exc:
        fail_input(path, f"JSON {exc}")
    except NonFiniteNumberError as exc:  # JSON but for the number: YAML would read it as text
        fail_input(path, f"line {exc.lineno}: not valid JSON ({json_problem(exc)})")
    except json.JSONDecodeError as json_exc:
        return _read_yaml(path, text, json_exc, read_non_finite=read_non_finite)


def _read_yaml(
    path: str | Path, text: str, json_exc: json.JSONDecodeError, *, read_non_finite: bool
) -> Any:
    try:
        value = load_yaml_strict(text)
    except DocumentLimitError as exc:
        said = str(exc)  # "YAML aliases expand ..." names YAML already
        fail_input(path, said if said.startswith("YAML") else f"YAML {said}")
    except yaml.YAMLError as yaml_exc:
        mark = getattr(yaml_exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(yaml_exc, "problem", None)
        if problem and str(problem).startswith("duplicate key"):
            fail_input(path, f"YAML{where}: {problem}")
        detail = f": {problem}" if problem else ""
        fail_input(path, f"neither JSON ({json_exc.msg}) nor YAML{where}{detail}")
    if not isinstance(value, dict | list):
        fail_input(
            path,
            f"not a JSON or YAML document (JSON: {json_exc.msg} at line {json_exc.lineno})",
        )
    found = None if read_non_finite else non_finite_number(value)
    if found is not None:
        fail_input(path, f"YAML holds {found}")
    return value


def describe_error(exc: CtxconfError) -> str:
    """``where: message`` (the message alone when the error has no place)."""
    return f"{exc.where}: {exc.message}" if exc.where else exc.message
