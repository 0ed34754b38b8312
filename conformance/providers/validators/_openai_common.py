"""What OpenAI's Chat Completions and Responses endpoints type alike (C0 and R0 read it).

The tool list (each endpoint's own tool form), ``tool_choice`` (a mode string, or an object naming
its ``type``), ``parallel_tool_calls`` and the sampling knobs are one set of OpenAI request
parameters on both endpoints; null stands for a parameter not given.
"""

from __future__ import annotations

from conformance.providers.validators._types import (
    OPT_BOOLEAN,
    OPT_NUMBER,
    STRING,
    Spec,
    arr,
    obj,
)

__all__ = ["tool_and_sampling_fields"]


def tool_and_sampling_fields(tool: Spec) -> dict[str, Spec]:
    """The fields both endpoints type alike, in their request order; ``tool`` is the endpoint's
    tool form."""
    return {
        "tools": arr(tool, also=("null",)),
        "tool_choice": obj({"type": STRING}, required=("type",), also=("string", "null")),
        "parallel_tool_calls": OPT_BOOLEAN,
        "temperature": OPT_NUMBER,
        "top_p": OPT_NUMBER,
    }
