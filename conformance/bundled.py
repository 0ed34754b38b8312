"""Where the built-in data folders (the scenario corpus, the cassettes) are found.

The repository's top-level ``scenarios/`` and ``cassettes/`` folders are the source. A wheel carries
a copy of each as package data under ``conformance/_data/<name>/`` (``setup.py`` copies them at build
time, nothing is duplicated in git), so an installed ctxconf finds them through
:mod:`importlib.resources`; a checkout (editable install, tests) finds the top-level folder itself.

Lookup order for a folder ``name``:

1. the environment variable given for it (``CTXCONF_SCENARIOS``, ``CTXCONF_CASSETTES``), when set;
2. the packaged copy, ``importlib.resources.files("conformance") / "_data" / name``;
3. the checkout's top-level ``name/`` folder, recognised by the ``pyproject.toml`` beside it.

A new built-in folder (``workloads/``, say) needs its name in ``BUNDLED_FOLDERS`` here and in
``setup.py`` (a wheel test checks the two agree) and a call ``find_bundled_folder("workloads",
env="CTXCONF_WORKLOADS")`` where it is read (raising the caller's own named error with
:func:`missing_folder_message` when it returns None).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Final

__all__ = ["BUNDLED_FOLDERS", "find_bundled_folder", "missing_folder_message"]

BUNDLED_FOLDERS: Final = ("scenarios", "cassettes")
"""The top-level folders a wheel carries under ``conformance/_data/`` (same list in setup.py)."""


def _packaged(name: str) -> Path | None:
    candidate = resources.files("conformance") / "_data" / name
    # A zipped install would give a Traversable that is not a Path; the harness walks folders with
    # pathlib, so only an unpacked install (what pip produces) counts.
    if isinstance(candidate, Path) and candidate.is_dir():
        return candidate
    return None


def _checkout(name: str) -> Path | None:
    root = Path(__file__).resolve().parent.parent
    candidate = root / name
    # The pyproject.toml beside it tells a checkout from an unrelated site-packages/<name> folder.
    if candidate.is_dir() and (root / "pyproject.toml").is_file():
        return candidate
    return None


def find_bundled_folder(name: str, *, env: str) -> Path | None:
    """The folder ``name`` by the lookup order above, or None when nothing provides it."""
    configured = os.environ.get(env)
    if configured:
        return Path(configured)
    return _packaged(name) or _checkout(name)


def missing_folder_message(name: str, *, env: str) -> str:
    """What a caller's named error says when :func:`find_bundled_folder` found nothing."""
    return (
        f"no built-in {name}/ folder in this install (looked for the conformance package's "
        f"_data/{name} and for a checkout's {name}/ beside its pyproject.toml); reinstall ctxconf "
        f"from a wheel, or set {env}=PATH to a copy of the repository's {name}/ folder"
    )
