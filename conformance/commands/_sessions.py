"""Loading a session or request body for a command: transcript files and bodies of any shape.

Errors are one line naming the file and what is wrong (exit status 2, via ``_io.fail_input``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.commands._io import describe_error, fail_input, or_fail_input, read_document
from reference_impl.errors import ShapeError
from reference_impl.shapes import get_shape
from reference_impl.transcript import SCHEMA_NAME, Transcript, transcript_from_dict
from reference_impl.wording import with_article

__all__ = ["is_transcript_document", "load_request", "load_session"]


def is_transcript_document(document: object) -> bool:
    """A ctxconf transcript file (``format: ctxconf.transcript``) rather than a provider body."""
    return isinstance(document, Mapping) and document.get("format") == SCHEMA_NAME


def load_request(path: str | Path, shape: str) -> Transcript:
    """Parse a request body of ``shape``; a transcript file is accepted as well."""
    document: Any = read_document(path)
    if is_transcript_document(document):
        return _transcript(path, document)
    if not isinstance(document, Mapping):
        fail_input(
            path, f"not {with_article(shape)} request body: expected a JSON object at the top"
        )
    try:
        adapter = get_shape(shape)
    except ShapeError as exc:
        fail_input(path, describe_error(exc))
    except ImportError as exc:
        fail_input(path, f"the {shape} shape is not available in this build ({exc})")
    return or_fail_input(
        path, adapter.parse_request, document, what=f"not {with_article(shape)} request body: "
    )


def load_session(
    path: str | Path, shape: str | None, *, shape_option: str = "--shape"
) -> Transcript:
    """A transcript file, or (with ``shape``) a request body of that shape.

    ``shape_option`` is the option that names the body's shape in the calling command (the hint
    must say what to type: ``assemble`` uses ``--from``)."""
    if shape is not None:
        return load_request(path, shape)
    document: Any = read_document(path)
    if not is_transcript_document(document):
        fail_input(
            path,
            f'not a transcript file (expected "format": "{SCHEMA_NAME}"); '
            f"for a provider request body, pass {shape_option} S",
        )
    return _transcript(path, document)


def _transcript(path: str | Path, document: object) -> Transcript:
    return or_fail_input(path, transcript_from_dict, document, what="not a valid transcript: ")
