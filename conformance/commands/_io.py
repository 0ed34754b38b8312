"""Reading user files for commands: one-line errors naming the file, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from reference_impl._documents import (
    DocumentLimitError,
    DuplicateKeyError,
    load_json_strict,
    load_yaml_strict,
    read_input_text,
)
from reference_impl.errors import CtxconfError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FINDING", "EXIT_REFUSED", "fail_input", "read_document"]

EXIT_FINDING = 1
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3


def fail_input(path: str | Path, what: str) -> NoReturn:
    """Print ``ctxconf: error: FILE: what`` on stderr and exit with status 2."""
    click.echo(f"ctxconf: error: {path}: {what}", err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def read_document(path: str | Path) -> Any:
    """Read a JSON or YAML file (by content, not extension); ``-`` reads standard input.

    Every limit of :mod:`reference_impl._documents` applies (size, YAML aliases, depth)."""
    try:
        text = read_input_text(path)
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
    try:
        return load_json_strict(text)
    except (DuplicateKeyError, DocumentLimitError) as exc:
        fail_input(path, f"JSON {exc}")
    except json.JSONDecodeError as json_exc:
        try:
            value = load_yaml_strict(text)
        except DocumentLimitError as exc:
            fail_input(path, f"YAML {exc}")
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
        return value


def describe_error(exc: CtxconfError) -> str:
    return f"{exc.where}: {exc.message}" if exc.where else exc.message
