"""Build hook: the wheel carries the top-level data folders as package data.

``scenarios/`` and ``cassettes/`` stay where the design puts them (the repository's top level, the
source of truth, never duplicated in git); building a wheel copies each into
``conformance/_data/<name>/`` of the build tree, where an installed ctxconf finds it through
``importlib.resources`` (``conformance/bundled.py``). An editable install copies nothing and reads
the checkout's folders directly. ``MANIFEST.in`` puts the same folders into the sdist, so a wheel
built from the sdist carries them too. Everything else about the package is in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# The same list as conformance.bundled.BUNDLED_FOLDERS (the wheel test checks both).
BUNDLED_FOLDERS = ("scenarios", "cassettes")


class BuildWithBundledFolders(build_py):
    """``build_py`` plus a copy of each bundled folder into ``conformance/_data/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        here = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "conformance" / "_data"
        for name in BUNDLED_FOLDERS:
            source = here / name
            if not source.is_dir():
                raise SystemExit(f"setup.py: {source} is missing; a wheel without it has no {name}")
            destination = target / name
            if destination.exists():
                shutil.rmtree(destination)
            shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildWithBundledFolders})
