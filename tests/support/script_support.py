"""A script of the repository (``tools/``, ``bench/``) loaded as a module, for the tests of it.

The scripts are not packages: each is loaded from its file under ``name`` (registered in
``sys.modules``, so dataclasses and pickling inside it work).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from paths import ROOT

__all__ = ["load_script"]


def load_script(relative: str, name: str) -> ModuleType:
    """The module of the script at ``ROOT / relative``, loaded as ``name``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
