"""Each package's errors live in its ``errors`` module and stand in the tree its docstring draws."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

from reference_impl.errors import CtxconfError

# Optional extras: their third-party libraries may be absent.
_SKIPPED = ("conformance.adapters.",)


def _import_every_module(package: str) -> None:
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if not info.name.startswith(_SKIPPED):
            importlib.import_module(info.name)


def _descendants(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_descendants(sub)}
    return found


@pytest.mark.parametrize("package", ["reference_impl", "conformance"])
def test_every_ctxconf_error_is_in_the_errors_module_and_its_tree(package: str) -> None:
    _import_every_module(package)
    errors = importlib.import_module(f"{package}.errors")
    own = [c for c in _descendants(CtxconfError) if c.__module__.partition(".")[0] == package]
    assert own, f"no error class found in {package}"
    elsewhere = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in own if c.__module__ != errors.__name__
    )
    assert not elsewhere, f"defined outside {errors.__name__}: {elsewhere}"
    tree = errors.__doc__ or ""
    undrawn = sorted(c.__name__ for c in own if not re.search(rf"── {c.__name__}\b", tree))
    assert not undrawn, f"not drawn in the tree of {errors.__name__}'s docstring: {undrawn}"


@pytest.mark.parametrize("package", ["reference_impl", "conformance"])
def test_every_error_class_of_the_errors_module_is_exported(package: str) -> None:
    errors = importlib.import_module(f"{package}.errors")
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, Exception)
        and value.__module__ == errors.__name__
    }
    assert defined <= set(errors.__all__), sorted(defined - set(errors.__all__))
