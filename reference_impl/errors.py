"""Every error a caller of ``reference_impl`` can cause, in one tree.

::

    CtxconfError                         base; carries ``code`` and ``where``
    ├── TranscriptError (ValueError)     a transcript or session file that is not well formed
    │   └── SessionFileError             a session file that cannot be read (JSON/YAML, schema)
    ├── ShapeError (ValueError)          wire bodies of a provider shape
    │   ├── ParseError                   a body that is not of the declared shape (with a path)
    │   └── UnsupportedPartError         a part the target shape cannot carry (never dropped silently)
    ├── TokenCountError                  a counter that cannot produce a number
    ├── SummaryError                     a summarizer that failed or timed out (the assembler
    │                                    counts it and escalates)
    ├── ConfigError (ValueError)         an AssemblyConfig that is unknown, mistyped or impossible
    └── ContextAssemblyError             assembly refused (fail closed); ``code`` says why

Each error mixes in the builtin a caller would naturally catch, says what was wrong and where
(message index, part index, id, JSON path), and, where it can, what to do instead.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "ContextAssemblyError",
    "CtxconfError",
    "ParseError",
    "SessionFileError",
    "ShapeError",
    "SummaryError",
    "TokenCountError",
    "TranscriptError",
    "UnsupportedPartError",
]


class CtxconfError(Exception):
    """Base of every error raised on purpose by this project.

    A subclass names its ``code`` in its header (``class ConfigError(CtxconfError,
    code="config_invalid")``); an instance may carry a more specific one (``code=`` below).
    """

    code: str = "ctxconf_error"

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, where: str | None = None, code: str | None = None) -> None:
        self.message = message
        self.where = where
        if code is not None:
            self.code = code
        super().__init__(f"{where}: {message}" if where else message)


class TranscriptError(CtxconfError, ValueError, code="transcript_invalid"):
    """A transcript that is not well formed (wrong types, bad role for a part, duplicate ids)."""


class SessionFileError(TranscriptError, code="session_file_invalid"):
    """A session file that cannot be read: not JSON/YAML, wrong schema or version."""


class ShapeError(CtxconfError, ValueError, code="shape_error"):
    """A problem with a wire body of one provider shape."""


class ParseError(ShapeError, code="parse_error"):
    """A body that is not of the declared shape. ``where`` is a JSON path such as ``messages[3].role``."""


class UnsupportedPartError(ShapeError, code="unsupported_part"):
    """A transcript part that the target shape cannot carry. Nothing is dropped silently."""


class TokenCountError(CtxconfError, code="token_count_error"):
    """A counter could not produce a number (unknown encoding, provider count API failed)."""


class SummaryError(CtxconfError, code="context_assembly_summary_failed"):
    """A summarizer failed or timed out; the assembler counts it and escalates."""


class ConfigError(CtxconfError, ValueError, code="config_invalid"):
    """An AssemblyConfig key that is unknown, of the wrong type, or an impossible value."""


class ContextAssemblyError(CtxconfError, code="context_assembly_error"):
    """Assembly refused to produce a request (fail closed).

    ``code`` is one of the ``context_assembly_*`` codes, for example
    ``context_assembly_pairing_error`` or ``context_assembly_prefix_over_budget``.
    ``details`` carries machine-readable specifics (violations, bucket sizes); never message content.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        where: str | None = None,
        details: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, where=where, code=code)
        self.details: dict[str, object] = dict(details or {})
