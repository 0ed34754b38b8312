"""Workloads: the declarative description of a simulated agent that ``ctxconf soak`` plays.

A workload file (YAML, format version :data:`WORKLOAD_FORMAT_VERSION`, validated by
``conformance/schemas/workload.schema.json``) names the system text and the user's goal, the
window the agent runs in (context tokens, output reserve, safety margin: the input budget is what
is left), the knobs handed to the plug-in (``config``, in ``AssemblyConfig`` key names), the tool
catalogue (side-effect flag, result-size range, result style, weight), the behaviour (parallel
fan-out, tool rounds per task, error rate, user interjections, images and files) and the user's
tasks. The built-in workloads live in ``scenarios/workloads/`` beside the scenario corpus (the
scenario loader skips that folder; ``ctxconf scenarios validate`` validates it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from conformance.errors import ScenarioError, WorkloadError
from conformance.scenarios import (
    DEFAULT_MODELS,
    WORKLOADS_FOLDER,
    default_corpus_path,
    json_path,
    read_yaml_file,
    schema_violations,
)
from reference_impl.config import AssemblyConfig
from reference_impl.errors import CtxconfError

__all__ = [
    "WORKLOAD_FORMAT_VERSION",
    "Behaviour",
    "SizeRange",
    "ToolProfile",
    "Workload",
    "builtin_workloads",
    "builtin_workloads_path",
    "load_workload",
    "resolve_workload",
    "workload_files",
]

WORKLOAD_FORMAT_VERSION: Final = 1
_SCHEMA_PATH: Final = Path(__file__).parent.parent / "schemas" / "workload.schema.json"


@dataclass(frozen=True, slots=True)
class SizeRange:
    """An inclusive integer range; draws are uniform."""

    low: int
    high: int


@dataclass(frozen=True, slots=True)
class ToolProfile:
    """One tool of the catalogue and how its fake results look."""

    name: str
    description: str
    side_effect: bool
    weight: float
    style: str
    argument: str
    targets: tuple[str, ...]
    resource_prefix: str
    result_tokens: SizeRange


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How the simulated model and user act."""

    fan_out: SizeRange = SizeRange(1, 1)
    rounds_per_task: SizeRange = SizeRange(1, 3)
    error_rate: float = 0.0
    interjection_rate: float = 0.0
    image_rate: float = 0.0
    file_rate: float = 0.0
    answer_tokens: SizeRange = SizeRange(20, 80)


@dataclass(frozen=True, slots=True)
class Workload:
    """A loaded workload (see the module docstring)."""

    id: str
    title: str
    source: str
    system: str
    goal: str
    context_tokens: int
    output_reserve_tokens: int
    safety_margin_tokens: int
    tools: tuple[ToolProfile, ...]
    tasks: tuple[str, ...]
    behaviour: Behaviour = Behaviour()
    interjections: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    shape: str = "openai-chat"
    models: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def budget(self) -> int:
        """The input-token budget: context minus output reserve minus safety margin."""
        return self.context_tokens - self.output_reserve_tokens - self.safety_margin_tokens

    def model_for(self, shape: str) -> str:
        """The model named for ``shape``, else the scenario corpus's default model."""
        return self.models.get(shape, DEFAULT_MODELS[shape])

    def plugin_config(self) -> dict[str, Any]:
        """The knobs handed to the plug-in: the workload's ``config`` with the window filled in."""
        window = {
            "model_input_limit": self.context_tokens,
            "output_reserve_tokens": self.output_reserve_tokens,
            "safety_margin_tokens": self.safety_margin_tokens,
        }
        return {**window, **dict(self.config)}


MAX_TOKENS_DRAWN: Final = 1_000_000
"""The most tokens a workload may draw for one tool result or answer (the largest context windows):
more only makes the simulated session gigabytes long before the first turn is judged."""
MAX_FAN_OUT: Final = 128
"""The most parallel tool calls one simulated turn may make (the providers' tool-count limit)."""
MAX_ROUNDS_PER_TASK: Final = 1000


def _range(raw: Mapping[str, Any] | None, default: SizeRange, where: str, most: int) -> SizeRange:
    if raw is None:
        return default
    low, high = int(raw["min"]), int(raw["max"])
    if low > high:
        raise WorkloadError(f"min {low} is above max {high}", where=where)
    if high > most:
        raise WorkloadError(f"max {high:,} is over the limit of {most:,}", where=where)
    return SizeRange(low, high)


def _tool(raw: Mapping[str, Any], where: str) -> ToolProfile:
    side_effect = bool(raw.get("side_effect", False))
    name = str(raw["name"])
    return ToolProfile(
        name=name,
        description=str(raw.get("description", "")),
        side_effect=side_effect,
        weight=float(raw.get("weight", 1.0)),
        style=str(raw.get("style", "json" if side_effect else "log")),
        argument=str(raw.get("argument", "target")),
        targets=tuple(str(t) for t in raw.get("targets", ("alpha", "beta", "gamma"))),
        resource_prefix=str(raw.get("resource_prefix", "res")),
        result_tokens=_range(
            raw["result_tokens"], SizeRange(0, 0), f"{where}.result_tokens", MAX_TOKENS_DRAWN
        ),
    )


def _from_document(document: Mapping[str, Any], source: str) -> Workload:
    where = f"{source}: $"
    window = document["window"]
    behaviour_raw = document.get("behaviour", {})
    defaults = Behaviour()
    behaviour = Behaviour(
        fan_out=_range(
            behaviour_raw.get("fan_out"),
            defaults.fan_out,
            f"{where}.behaviour.fan_out",
            MAX_FAN_OUT,
        ),
        rounds_per_task=_range(
            behaviour_raw.get("rounds_per_task"),
            defaults.rounds_per_task,
            f"{where}.behaviour.rounds_per_task",
            MAX_ROUNDS_PER_TASK,
        ),
        error_rate=float(behaviour_raw.get("error_rate", 0.0)),
        interjection_rate=float(behaviour_raw.get("interjection_rate", 0.0)),
        image_rate=float(behaviour_raw.get("image_rate", 0.0)),
        file_rate=float(behaviour_raw.get("file_rate", 0.0)),
        answer_tokens=_range(
            behaviour_raw.get("answer_tokens"),
            defaults.answer_tokens,
            f"{where}.behaviour.answer_tokens",
            MAX_TOKENS_DRAWN,
        ),
    )
    if behaviour.fan_out.low < 1:
        raise WorkloadError("fan_out.min must be at least 1", where=f"{where}.behaviour.fan_out")
    tools = tuple(_tool(t, f"{where}.tools[{i}]") for i, t in enumerate(document["tools"]))
    names = [t.name for t in tools]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise WorkloadError(f"tool {duplicate!r} is listed twice", where=f"{where}.tools")
    workload = Workload(
        id=str(document["id"]),
        title=str(document["title"]),
        source=source,
        system=str(document["system"]).strip(),
        goal=str(document["goal"]).strip(),
        context_tokens=int(window["context_tokens"]),
        output_reserve_tokens=int(window["output_reserve_tokens"]),
        safety_margin_tokens=int(window.get("safety_margin_tokens", 0)),
        tools=tools,
        tasks=tuple(str(t).strip() for t in document["tasks"]),
        behaviour=behaviour,
        interjections=tuple(str(t).strip() for t in document.get("interjections", ())),
        config=dict(document.get("config", {})),
        shape=str(document.get("shape", "openai-chat")),
        models={str(k): str(v) for k, v in document.get("models", {}).items()},
        notes=str(document.get("notes", "")).strip(),
    )
    if workload.budget < 500:
        raise WorkloadError(
            f"the window leaves an input budget of {workload.budget} tokens (context minus "
            "output reserve minus safety margin); at least 500 are needed",
            where=f"{where}.window",
        )
    try:
        AssemblyConfig.from_mapping(workload.plugin_config())
    except CtxconfError as exc:
        raise WorkloadError(f"config: {exc.message}", where=f"{where}.config") from None
    return workload


def load_workload(path: Path) -> Workload:
    """One workload file; a :class:`WorkloadError` naming the file and JSON path when unusable."""
    document = read_yaml_file(path, WorkloadError, "a workload file")
    errors = schema_violations(_SCHEMA_PATH, document)
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise WorkloadError(
            f"{json_path(first.absolute_path)}: {first.message}{more}", where=str(path)
        )
    return _from_document(document, str(path))


def builtin_workloads_path() -> Path:
    """The built-in workloads: ``workloads/`` in the built-in scenario corpus (found like the
    corpus, so a wheel carries them: :mod:`conformance.bundled`)."""
    try:
        return default_corpus_path() / WORKLOADS_FOLDER
    except ScenarioError as exc:
        raise WorkloadError(exc.message, where="workloads") from None


def workload_files(root: Path) -> list[Path]:
    """``root`` itself when it is a file, else its ``*.yaml`` files, sorted."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise WorkloadError("no such file or folder", where=str(root))
    return sorted(p for p in root.iterdir() if p.suffix in {".yaml", ".yml"})


def builtin_workloads() -> tuple[Workload, ...]:
    """Every built-in workload, in file-name order."""
    return tuple(load_workload(p) for p in workload_files(builtin_workloads_path()))


def resolve_workload(spec: str) -> Workload:
    """A workload by file path, or by the id of a built-in one."""
    path = Path(spec)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        return load_workload(path)
    known = {w.id: w for w in builtin_workloads()}
    if spec in known:
        return known[spec]
    raise WorkloadError(
        f"no built-in workload {spec!r}; known: {', '.join(sorted(known))}, or pass a YAML file",
        where="--workload",
    )
