"""The vendor-neutral transcript: the model and its session file format.

* :mod:`reference_impl.transcript.model`: the frozen dataclasses (messages, parts, tools), the
  content digest and the conventions every shape relies on;
* :mod:`reference_impl.transcript.serialization`: the session file format (versioned JSON data),
  read with a path in every error.

Everything is importable from here, the path the README and the plug-in contract use
(``__all__`` is the documented surface; the ``x as x`` names are importable helpers).
"""

from __future__ import annotations

from reference_impl.transcript.model import (
    REASONING_ORIGINS as REASONING_ORIGINS,
)
from reference_impl.transcript.model import (
    ROLES as ROLES,
)
from reference_impl.transcript.model import (
    SHAPE_NAMES as SHAPE_NAMES,
)
from reference_impl.transcript.model import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    AttachmentPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningOrigin,
    ReasoningPart,
    Role,
    ShapeName,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
    message_digest,
)
from reference_impl.transcript.model import (
    ImageDetail as ImageDetail,
)
from reference_impl.transcript.model import (
    ImageSource as ImageSource,
)
from reference_impl.transcript.model import (
    params_from_mapping as params_from_mapping,
)
from reference_impl.transcript.serialization import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    json_type_name,
    transcript_from_dict,
    transcript_from_json,
    transcript_to_dict,
    transcript_to_json,
)
from reference_impl.transcript.serialization import (
    message_to_dict as message_to_dict,
)

__all__ = [
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "SUMMARY_CLOSE",
    "SUMMARY_OPEN",
    "AttachmentPart",
    "FilePart",
    "ImagePart",
    "Message",
    "Part",
    "ReasoningOrigin",
    "ReasoningPart",
    "Role",
    "ShapeName",
    "SummaryPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "Transcript",
    "canonical_json",
    "json_type_name",
    "message_digest",
    "transcript_from_dict",
    "transcript_from_json",
    "transcript_to_dict",
    "transcript_to_json",
]
