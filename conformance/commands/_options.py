"""The options several commands share, declared once, and the checks of what they name.

``run``, ``fuzz`` and ``soak`` drive a plug-in (:func:`plugin_options`, :func:`load_impl`,
:func:`timeout_option`); ``run`` and ``fuzz`` choose among its shapes (:func:`shapes_option`,
:func:`chosen_shapes`), ``fuzz`` and ``soak`` take a :func:`seed_option` and a number of tries
(:func:`count_option`, like ``run --jobs``); ``proxy`` waits a :func:`seconds_option`; the
commands that read or write a body name its shape (:data:`SHAPE_CHOICE`) and print in a
:func:`format_option`; ``--scenarios`` and ``--shapes`` are comma-separated (:func:`comma_list`).
A bad value is one line on stderr and exit status 2 (:func:`conformance.commands._io.fail`).

The engine and the plug-in loader are imported when an option needs them, so the commands that
only name a shape (``count``, ``convert``, ``inspect``, ``assemble``) stay light.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from conformance.commands._io import describe_error, fail
from reference_impl.errors import CtxconfError
from reference_impl.transcript import SHAPE_NAMES

if TYPE_CHECKING:
    from conformance.loading import Plugin

__all__ = [
    "SHAPE_CHOICE",
    "chosen_shapes",
    "comma_list",
    "count_option",
    "file_option",
    "format_option",
    "load_impl",
    "plugin_options",
    "seconds_option",
    "seed_option",
    "shapes_option",
    "timeout_option",
]

_F = TypeVar("_F", bound=Callable[..., Any])

SHAPE_CHOICE = click.Choice(list(SHAPE_NAMES))
"""A wire shape (``--shape``, ``--from``, ``--impl-shape``)."""


def plugin_options(function: _F) -> _F:
    """``--impl`` (the plug-in) and ``--impl-shape`` (the shape of a plain message function)."""
    impl_shape = click.option(
        "--impl-shape",
        type=SHAPE_CHOICE,
        default=None,
        help="Shape of a plain f(messages, budget) function (default openai-chat).",
    )
    impl = click.option(
        "--impl",
        default="reference",
        show_default=True,
        help="Plug-in: 'reference', module:attr, or a name in the ctxconf.assemblers entry points.",
    )
    return impl(impl_shape(function))


def load_impl(impl: str, impl_shape: str | None) -> Plugin:
    """The plug-in ``--impl``/``--impl-shape`` name; exit 2 saying why when it cannot be loaded."""
    from conformance.loading import load_plugin  # noqa: PLC0415 - see the module docstring

    try:
        return load_plugin(impl, impl_shape=impl_shape)
    except CtxconfError as exc:
        fail(describe_error(exc))


def seconds_option(default: float, help_text: str) -> Callable[[_F], _F]:
    """``--timeout``: a wait in seconds, from 0.01 to an hour."""
    return click.option(
        "--timeout",
        type=click.FloatRange(0.01, 3600),
        default=default,
        show_default=True,
        help=help_text,
    )


def timeout_option(unit: str, *, note: str = "") -> Callable[[_F], _F]:
    """``--timeout``: seconds one plug-in call may take before the ``unit`` (a case, a turn) is
    an error; ``note`` adds what else happens then."""
    from conformance.engine import DEFAULT_TIMEOUT  # noqa: PLC0415 - see the module docstring

    return seconds_option(
        DEFAULT_TIMEOUT, f"Seconds one plug-in call may take before the {unit} is an error{note}."
    )


def count_option(
    flag: str, default: int, help_text: str, *, most: int = 100_000
) -> Callable[[_F], _F]:
    """A whole number of things to do (cases, turns, workers), from 1 to ``most``."""
    return click.option(
        flag, type=click.IntRange(1, most), default=default, show_default=True, help=help_text
    )


def comma_list(value: str) -> tuple[str, ...]:
    """The names in a comma-separated option value, stripped, empty ones left out."""
    return tuple(s.strip() for s in value.split(",") if s.strip())


def shapes_option(verb: str, everything: str) -> Callable[[_F], _F]:
    """``--shapes``: comma-separated shapes to ``verb`` (default ``everything``)."""
    return click.option(
        "--shapes", default=None, help=f"Comma-separated shapes to {verb} (default: {everything})."
    )


def chosen_shapes(value: str | None, plugin: Plugin, impl: str) -> tuple[str, ...] | None:
    """The shapes ``--shapes`` names (None: all the plug-in speaks); exit 2 for an unknown shape
    or when the plug-in speaks none of them."""
    if value is None:
        return None
    names = comma_list(value)
    if not names:
        fail(f"--shapes {value!r} names no shape; choose from {', '.join(SHAPE_NAMES)}")
    unknown = [n for n in names if n not in SHAPE_NAMES]
    if unknown:
        fail(f"--shapes: unknown shape {unknown[0]!r}; choose from {', '.join(SHAPE_NAMES)}")
    if not set(names) & set(plugin.shapes):
        fail(f"--shapes {value}: the plug-in {impl!r} speaks only {', '.join(plugin.shapes)}")
    return names


def seed_option(default: int | None, help_text: str) -> Callable[[_F], _F]:
    """``--seed``: a 32-bit seed, so that a run can be repeated."""
    return click.option(
        "--seed",
        type=click.IntRange(0, 2**32 - 1),
        default=default,
        show_default=default is not None,
        help=help_text,
    )


def file_option(
    flag: str, dest: str, help_text: str, *, default: Path | None = None
) -> Callable[[_F], _F]:
    """An option naming a file (not a folder) to read or write."""
    return click.option(
        flag,
        dest,
        type=click.Path(dir_okay=False, path_type=Path),
        default=default,
        show_default=default is not None,
        help=help_text,
    )


def format_option(*choices: str) -> Callable[[_F], _F]:
    """``--format`` (the parameter ``fmt``): one of ``choices``, the first by default."""
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default=choices[0], show_default=True
    )
