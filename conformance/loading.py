"""Find a plug-in: ``reference``, ``module:attr``, or a name in the ``ctxconf.assemblers`` group.

What a spec may resolve to:

* an :class:`~conformance.protocol.Assembler` instance (one shape),
* a class with a ``shape`` class attribute and an ``assemble`` method (instantiated without
  arguments),
* a list/tuple of assemblers (one per shape they speak),
* a plain function ``f(messages, budget) -> messages``, wrapped for ``impl_shape``
  (``openai-chat`` unless told otherwise).

Every failure is a :class:`PluginLoadError` that says what was wrong and what to type instead.
The plug-in's own code that runs while it loads (its module's import, its class's constructor,
its ``shape`` attribute) runs guarded: an exception, ``sys.exit``, ``os._exit`` (in this process)
or a load that takes longer than :data:`LOAD_TIMEOUT` seconds is a :class:`PluginLoadError` naming
the spec, never a traceback, a silent exit with the plug-in's status (``sys.exit(0)`` at import
made ``ctxconf run`` exit 0 with no report) or a hang. Ctrl-C still aborts. What it prints
while it loads (a banner, a warning ``print``ed at import) goes to standard error, file
descriptor 1 included, never into the command's own output (``--format jsonl`` stays JSON).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import FrameType, ModuleType, TracebackType
from typing import Any, Final, NoReturn, TypeVar

from conformance.errors import PluginLoadError
from conformance.protocol import FUNCTION_KEYWORDS, Assembler, MessageListAssembler
from reference_impl.transcript import SHAPE_NAMES
from reference_impl.wording import with_article

__all__ = [
    "ENTRY_POINT_GROUP",
    "LOAD_TIMEOUT",
    "REQUIRES_ATTR",
    "Plugin",
    "load_plugin",
    "requires",
]

ENTRY_POINT_GROUP: Final = "ctxconf.assemblers"
LOAD_TIMEOUT: Final = 120.0
"""Seconds a plug-in may take to load (import, instantiate) before the load is interrupted: a
heavy framework imports in seconds; a module that waits on a network server or loops forever at
import would otherwise leave ``ctxconf`` hanging before it printed anything."""


REQUIRES_ATTR: Final = "__ctxconf_requires__"
"""The attribute (``(hint, modules)``) that says what a plug-in needs to run (:func:`requires`)."""

_T = TypeVar("_T")


def requires(hint: str, *modules: str) -> Callable[[_T], _T]:
    """Mark a plug-in (a function, a class or an instance) as needing ``modules`` to run, an
    optional extra's, which it imports when called: loading it checks that they import, so a
    missing extra is one load error saying ``hint`` (what to install), exit status 2, rather
    than the same error in every case."""

    def mark(plugin: _T) -> _T:
        setattr(plugin, REQUIRES_ATTR, (hint, modules))
        return plugin

    return mark


def _missing_requirement(target: object) -> str | None:
    """The hint of a plug-in marked by :func:`requires` whose modules do not all import."""
    found = getattr(target, REQUIRES_ATTR, None)
    if not isinstance(found, tuple) or len(found) != 2:
        return None
    hint, modules = found
    try:
        with warnings.catch_warnings():  # only whether it imports: its warnings are its own
            warnings.simplefilter("ignore")
            for module in modules if isinstance(modules, tuple) else ():
                importlib.import_module(str(module))
    except ImportError:
        return str(hint)
    return None


@dataclass(frozen=True, slots=True)
class Plugin:
    """A loaded plug-in: its name, the spec it came from, and one assembler per shape it speaks."""

    name: str
    spec: str
    assemblers: Mapping[str, Assembler]

    @property
    def shapes(self) -> tuple[str, ...]:
        """The shapes the plug-in speaks, in catalog order."""
        return tuple(s for s in SHAPE_NAMES if s in self.assemblers)


def load_plugin(
    spec: str, *, impl_shape: str | None = None, timeout: float | None = LOAD_TIMEOUT
) -> Plugin:
    """Resolve ``spec`` to a :class:`Plugin`; a :class:`PluginLoadError` otherwise (``timeout``:
    seconds the load may take, ``None`` for no limit; in the main thread only)."""
    if impl_shape is not None and impl_shape not in SHAPE_NAMES:
        raise PluginLoadError(
            f"--impl-shape {impl_shape!r} is not a shape; use one of {', '.join(SHAPE_NAMES)}"
        )
    if spec == "reference":
        # Imported only when asked for: loading a third-party plug-in stays light.
        from conformance.reference_plugin import reference_assemblers  # noqa: PLC0415

        return Plugin("reference", spec, reference_assemblers())
    with _guarded(spec, timeout):
        target = _import_attr(spec) if ":" in spec else _from_entry_point(spec)
        missing = _missing_requirement(target)
        if missing is not None:
            raise PluginLoadError(f"{spec}: {missing}")
        assemblers = _as_assemblers(target, spec, impl_shape)
    return Plugin(spec, spec, assemblers)


class _LoadTimedOut(BaseException):
    """Raised in the main thread by the load's alarm (a BaseException: the plug-in's own
    ``except Exception`` must not swallow it)."""


class _ExitCalled(BaseException):
    """Raised instead of ending the process when the plug-in calls ``os._exit`` while it loads."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _plugin_frame(tb: TracebackType | None) -> str:
    """`` (at file.py:line)`` of the innermost frame outside ctxconf, or nothing."""
    found = ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if f"{os.sep}conformance{os.sep}" not in filename and "importlib" not in filename:
            found = f" (at {Path(filename).name}:{tb.tb_lineno})"
        tb = tb.tb_next
    return found


def _exception_text(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not hide the failure
        message = "(its message cannot be shown)"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """``sys.stdout`` and file descriptor 1 sent to standard error while the plug-in loads: what
    its import prints must not land in the command's output (``--format jsonl``)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved: int | None = None
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no fd 1 or 2 to speak of: sys.stdout alone is redirected
        if saved is not None:
            os.close(saved)
            saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def _guarded(spec: str, timeout: float | None) -> Iterator[None]:
    """Run the plug-in's loading code so that whatever it does ends as a PluginLoadError."""
    pid = os.getpid()
    real_exit = os._exit

    def exit_guard(status: int) -> NoReturn:
        if os.getpid() != pid:  # a process the plug-in forked: its exit is its own
            real_exit(status)
        raise _ExitCalled(status)

    def alarm(_signum: int, _frame: FrameType | None) -> None:
        raise _LoadTimedOut

    main = threading.current_thread() is threading.main_thread()
    timed = timeout is not None and main
    previous: Any = None
    interrupted = False  # a real Ctrl-C (SIGINT), not a KeyboardInterrupt the plug-in raised

    def ctrl_c(_signum: int, _frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        raise KeyboardInterrupt

    previous_int: Any = signal.signal(signal.SIGINT, ctrl_c) if main else None
    if timed:
        assert timeout is not None
        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    os._exit = exit_guard
    try:
        with _stdout_to_stderr():
            yield
    except PluginLoadError:
        raise
    except KeyboardInterrupt as exc:
        if interrupted or not main:
            raise
        raise PluginLoadError(
            f"loading {spec!r} raised KeyboardInterrupt{_plugin_frame(exc.__traceback__)} "
            "without a Ctrl-C"
        ) from None
    except _LoadTimedOut:
        raise PluginLoadError(
            f"loading {spec!r} took longer than {timeout:g}s (its import or constructor waits or "
            "loops); it was interrupted"
        ) from None
    except _ExitCalled as exc:
        raise PluginLoadError(
            f"loading {spec!r} called os._exit({exc.status}){_plugin_frame(exc.__traceback__)}; "
            "a plug-in must not end the process"
        ) from None
    except SystemExit as exc:
        raise PluginLoadError(
            f"loading {spec!r} called sys.exit({exc.code!r}){_plugin_frame(exc.__traceback__)}; "
            "a plug-in must not end the process"
        ) from None
    except BaseException as exc:  # the plug-in's own code: named, never a traceback
        raise PluginLoadError(
            f"loading {spec!r} raised {_exception_text(exc)}{_plugin_frame(exc.__traceback__)}"
        ) from exc
    finally:
        os._exit = real_exit
        if main:  # None: a handler not set from Python, which cannot be put back as it was
            signal.signal(signal.SIGINT, previous_int or signal.default_int_handler)
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _own_names(target: object) -> list[str]:
    """The public names ``target`` defines: of a module, those not imported into it (``Any``,
    ``annotations``, another module), which a hint listing them would only bury."""
    names = [n for n in dir(target) if not n.startswith("_")]
    if not isinstance(target, ModuleType):
        return names
    own: list[str] = []
    for name in names:
        value = getattr(target, name, None)
        if isinstance(value, ModuleType) or name == "annotations":
            continue
        home = getattr(value, "__module__", target.__name__)
        if callable(value) and home != target.__name__:
            continue  # a function or class imported from elsewhere
        own.append(name)
    return own


def _import_attr(spec: str) -> object:
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise PluginLoadError(
            f"{spec!r} is not of the form module:attr; type for example mypkg.ctx:assemble"
        )
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        dotted = module_name.removesuffix(".py").replace("\\", "/").strip("/").replace("/", ".")
        raise PluginLoadError(
            f"{module_name!r} is a file path; --impl takes a module's dotted name, with its "
            f"folder on PYTHONPATH: for example PYTHONPATH=. ctxconf run --impl {dotted}:{attr_path}"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        raise PluginLoadError(
            f"cannot import module {module_name!r} (no module named {missing!r}); check that "
            f"its folder is on PYTHONPATH (PYTHONPATH=src ctxconf run ...) or install it into "
            f"this environment with `pip install -e .`"
        ) from None
    except Exception as exc:  # the plug-in's own import crashed; say so, not a traceback
        raise PluginLoadError(
            f"importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    target: object = module
    walked = module_name
    for attr in attr_path.split("."):
        if not hasattr(target, attr):
            names = _own_names(target)
            close = difflib.get_close_matches(attr, names, n=3)
            hint = (
                f"did you mean {', '.join(f'{module_name}:{n}' for n in close)}?"
                if close
                else f"it defines: {', '.join(names[:12]) or 'nothing public'}"
            )
            raise PluginLoadError(f"{walked!r} has no attribute {attr!r}; {hint}")
        target = getattr(target, attr)
        walked = f"{walked}.{attr}"
    return target


def _from_entry_point(name: str) -> object:
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name not in found and (name.endswith(".py") or "/" in name or "\\" in name):
        # A file path without ``:attr`` is no entry-point name either: say what to type.
        dotted = name.removesuffix(".py").replace("\\", "/").strip("/").replace("/", ".")
        raise PluginLoadError(
            f"{name!r} is a file path; --impl takes a module's dotted name and the function or "
            f"class in it, with its folder on PYTHONPATH: for example PYTHONPATH=. ctxconf run "
            f"--impl {dotted}:assemble"
        )
    if name not in found:
        known = sorted({"reference", *found})
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise PluginLoadError(
            f"no assembler named {name!r} in the {ENTRY_POINT_GROUP!r} entry points; {hint}"
            f"known: {', '.join(known)}; or pass module:attr (for example mypkg.ctx:assemble)"
        )
    try:
        loaded: object = found[name].load()
    except Exception as exc:  # a broken third-party package must not give a traceback
        raise PluginLoadError(
            f"entry point {name!r} ({found[name].value}) failed to load: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return loaded


def _shape_of(obj: object, spec: str) -> str:
    shape = getattr(obj, "shape", None)
    if not isinstance(shape, str) or shape not in SHAPE_NAMES:
        raise PluginLoadError(
            f"{spec}: assembler {type(obj).__name__} declares shape {shape!r}; set the class attribute "
            f"`shape` to one of {', '.join(SHAPE_NAMES)}"
        )
    assert isinstance(shape, str)
    return shape


def _as_assemblers(target: object, spec: str, impl_shape: str | None) -> dict[str, Assembler]:
    if inspect.isclass(target):
        if not callable(getattr(target, "assemble", None)):
            raise PluginLoadError(
                f"{spec} is a class without an assemble(request) method; implement "
                f"conformance.protocol.Assembler or point at a function f(messages, budget)"
            )
        try:
            target = target()
        except TypeError as exc:
            raise PluginLoadError(
                f"{spec}: cannot instantiate {getattr(target, '__name__', target)!s} without arguments ({exc}); "
                f"point --impl at a ready instance instead"
            ) from exc
    if isinstance(target, Sequence) and not isinstance(target, str | bytes):
        out: dict[str, Assembler] = {}
        for item in target:
            out.update(_as_assemblers(item, spec, impl_shape))
        if not out:
            raise PluginLoadError(f"{spec} is an empty list; expected assemblers")
        return out
    if callable(getattr(target, "assemble", None)):
        shape = _shape_of(target, spec)
        if impl_shape is not None and impl_shape != shape:
            raise PluginLoadError(
                f"{spec} declares shape {shape!r} but --impl-shape is {impl_shape!r}; "
                f"drop --impl-shape (it is for plain message functions)"
            )
        assert isinstance(target, Assembler)
        return {shape: target}
    if callable(target):
        _check_message_function(target, spec)
        shape = impl_shape or "openai-chat"
        return {shape: MessageListAssembler(target, shape)}
    raise PluginLoadError(
        f"{spec} is {with_article(type(target).__name__)}, not an assembler; point --impl at a "
        "function f(messages, budget) -> messages or an object with shape and assemble(request)"
    )


def _check_message_function(function: Any, spec: str) -> None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    # The keyword form may require its keywords (``*, tools, dialect`` without defaults): the
    # wrapper always passes the ones it declares.
    declared = {
        name: None
        for name, parameter in signature.parameters.items()
        if name in FUNCTION_KEYWORDS
        and parameter.kind
        in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    try:
        signature.bind([], 0, **declared)
    except TypeError:
        raise PluginLoadError(
            f"{spec} has signature {signature}; a plain function must accept "
            f"(messages: list[dict], budget: int)"
        ) from None
