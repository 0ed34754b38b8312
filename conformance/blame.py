"""Where in a plug-in an exception was raised, for the one line an ``error`` case gives it.

``the plug-in raised KeyError: 'tool_call_id'`` says what, not where: a plug-in's author then
reruns the case under a debugger to find the line. :func:`raised_at` names the innermost frame of
the traceback that lies in the plug-in's own code (the package its assembler is defined in), so
an exception raised inside a library the plug-in called (``json``, a tokenizer, ctxconf's own
shapes) points at the plug-in's line that called it; with no such frame (a plug-in defined in a
module the traceback never enters), the innermost frame. Load errors name theirs before the
plug-in's object exists: the innermost frame outside ctxconf and importlib
(:mod:`conformance.loading`).
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from types import TracebackType

from conformance.protocol import MessageListAssembler

__all__ = ["WRAPS_ATTR", "code_home", "raised_at"]

WRAPS_ATTR = "_ctxconf_wraps"
"""An instance attribute a harness wrapper around a plug-in's assembler sets to the assembler it
wraps, so an exception is placed in the plug-in's code rather than in the wrapper's module."""

# A plug-in defined in ctxconf itself (the bundled adapters) owns its module, not the package.
_HARNESS_PACKAGES = ("conformance", "reference_impl")


def code_home(plugin: object) -> Path | None:
    """The plug-in's own code: the folder of the top-level package its assembler is defined in
    (the assembler's own module file when that is a top-level module, or when the package is
    ctxconf's), or ``None`` when it cannot be told (a builtin, a module without a file)."""
    for _ in range(8):  # the harness's own wrappers (the soak's turn capture) say what they wrap
        inner = inspect.getattr_static(plugin, WRAPS_ATTR, None)
        if inner is None:
            break
        plugin = inner
    target = plugin.function if isinstance(plugin, MessageListAssembler) else plugin
    module_name = getattr(target, "__module__", None)
    if not isinstance(module_name, str):
        module_name = getattr(type(target), "__module__", None)
    if not isinstance(module_name, str):
        return None
    top = module_name.partition(".")[0]
    owner = sys.modules.get(module_name if top in _HARNESS_PACKAGES else top)
    file = getattr(owner, "__file__", None)
    if not isinstance(file, str):
        return None
    path = Path(file).resolve()
    return path.parent if hasattr(owner, "__path__") else path


def raised_at(exc: BaseException, plugin: object) -> str:
    """`` (at pkg/module.py:12, in function)``: the innermost frame of ``exc``'s traceback in
    ``plugin``'s own code (:func:`code_home`), else its innermost frame; ``""`` without one."""
    home = code_home(plugin)
    innermost: tuple[Path, int, str] | None = None
    own: tuple[Path, int, str] | None = None
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frame = (Path(code.co_filename), tb.tb_lineno, code.co_name)
        innermost = frame
        if home is not None and _inside(frame[0], home):
            own = frame
        tb = tb.tb_next
    chosen = own or innermost
    if chosen is None:
        return ""
    path, line, function = chosen
    return f" (at {_shown(path, home if chosen is own else None)}:{line}, in {function})"


def _inside(path: Path, home: Path) -> bool:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a broken link, a loop: not the plug-in's file then
        return False
    return resolved == home or resolved.is_relative_to(home)


def _shown(path: Path, home: Path | None) -> str:
    """A short name: relative to the folder holding the plug-in's package (``teamctx/bad.py``),
    else the file's name (``<string>`` and the like as they are)."""
    if home is not None and home.is_dir():
        try:
            return path.resolve().relative_to(home.parent).as_posix()
        except ValueError:
            pass
    return path.name or os.fspath(path)
