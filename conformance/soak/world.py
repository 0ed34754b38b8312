"""The simulated world of a soak run: a deterministic model, fake tools and the execution ledger.

:class:`World` plays the model from a :class:`~conformance.soak.workload.Workload`. Each turn it
reads the request the plug-in assembled and answers with one assistant message: parallel tool
calls (drawn by weight from the catalogue, ``fan_out`` of them), or, when the task's tool rounds
are used up, a short text answer after which the user gives the next task. The harness side of
the world executes the calls with deterministic fake tools (result sizes from the workload's
ranges, errors at ``error_rate``) and records every call in the execution-layer ledger (tool,
call id, idempotency key, resource id, status), as a real platform does from tool metadata.

**Repeated side effects.** Before planning new work the model looks for each side effect that
succeeded earlier: when neither its resource id nor its idempotency key is visible anywhere in
the request, the model no longer knows it happened, and does it again (same tool, same
arguments). That is the failure the design warns about (an e-mail sent twice); the harness counts
each such call as a repeat.

Every draw comes from a ``random.Random`` seeded by (seed, turn), so the same seed gives the same
run for the same plug-in, and two plug-ins see the same draws turn for turn as long as they do not
make the model repeat something.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from typing import Final, TypeVar

from conformance.soak.workload import SizeRange, ToolProfile, Workload
from reference_impl.errors import CtxconfError
from reference_impl.ledger import LedgerEntry
from reference_impl.shapes import get_shape
from reference_impl.steps import needs_alternation
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)

__all__ = ["SideEffect", "TurnPlan", "World"]

_CHARS_PER_TOKEN: Final = 4  # a rough target for generated text; the counter measures the truth
_WORDS: Final = [
    "request",
    "upstream",
    "timeout",
    "retry",
    "replica",
    "queue",
    "shard",
    "commit",
    "cache",
    "latency",
    "merchant",
    "order",
    "invoice",
    "refund",
    "ticket",
    "patch",
    "branch",
    "config",
    "rollout",
    "window",
    "budget",
    "cluster",
    "node",
    "pod",
    "lease",
    "token",
    "header",
    "payload",
    "schema",
    "index",
    "worker",
    "backlog",
    "checksum",
    "quorum",
]
_LEVELS: Final = ("INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG")


@dataclass(frozen=True, slots=True)
class SideEffect:
    """A side effect that succeeded: the facts that tell the model it happened."""

    tool: str
    arguments: str
    idempotency_key: str
    resource_id: str
    turn: int


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What one turn added to the session, and what the model did."""

    messages: tuple[Message, ...]
    repeated: tuple[SideEffect, ...] = ()
    """Side effects the model did again because their facts were not in the request."""
    calls: int = 0
    side_effect_calls: int = 0


def _draw(rng: random.Random, size: SizeRange) -> int:
    return rng.randint(size.low, size.high)


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(count))


_Attachment = TypeVar("_Attachment", ImagePart, FilePart)
_PNG: Final = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
"""A 1x1 PNG: an image a shape that takes no URL gets inline."""
_PDF: Final = base64.b64encode(
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
).decode("ascii")
"""A one-page PDF: a file a shape that takes no file id or URL gets inline."""


def _result_text(rng: random.Random, tool: ToolProfile, target: str, tokens: int) -> str:
    """Fake tool output of about ``tokens`` tokens in the tool's style."""
    budget = max(1, tokens) * _CHARS_PER_TOKEN
    lines: list[str] = []
    used = 0
    while used < budget:
        if tool.style == "log":
            line = (
                f"2026-12-01T0{rng.randint(0, 9)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z "
                f"{target} {rng.choice(_LEVELS)} req={rng.getrandbits(32):08x} "
                f"latency_ms={rng.randint(3, 2400)} {_words(rng, 4)}"
            )
        elif tool.style == "json":
            line = canonical_json(
                {
                    "id": f"{target}-{rng.randint(100, 999)}",
                    "value": rng.randint(0, 10_000),
                    "state": rng.choice(_WORDS),
                    "note": _words(rng, 3),
                }
            )
        elif tool.style == "code":
            line = (
                f"    {rng.choice(_WORDS)}_{rng.randint(1, 99)} = "
                f"{rng.choice(_WORDS)}({rng.choice(_WORDS)}, {rng.randint(0, 9)})  # {_words(rng, 3)}"
            )
        else:
            line = _words(rng, 12).capitalize() + "."
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


@dataclass(slots=True)
class World:
    """The model, the user and the tools of one soak run (see the module docstring)."""

    workload: Workload
    seed: int
    shape: str
    ledger: list[LedgerEntry] = field(default_factory=list)
    done: list[SideEffect] = field(default_factory=list)
    task: int = 0
    rounds_left: int = 0
    calls: int = 0
    pending_interjection: str = ""
    _by_key: dict[str, SideEffect] = field(default_factory=dict)

    def rng(self, turn: int, purpose: str) -> random.Random:
        """The draws of one purpose at one turn (a string seed: stable across processes)."""
        return random.Random(f"{self.seed}:{turn}:{purpose}")  # noqa: S311 - a simulation, not crypto

    # ------------------------------------------------------------------------------ opening

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The tool schemas offered to the model."""
        specs = []
        for tool in self.workload.tools:
            properties: dict[str, object] = {tool.argument: {"type": "string"}}
            required = [tool.argument]
            if tool.side_effect:
                properties["idempotency_key"] = {"type": "string"}
                required.append("idempotency_key")
            schema = {"type": "object", "properties": properties, "required": required}
            specs.append(
                ToolSpec(
                    tool.name,
                    tool.description or tool.name,
                    canonical_json(schema),
                    side_effect=tool.side_effect,
                )
            )
        return tuple(specs)

    def opening(self) -> tuple[Message, ...]:
        """System text, then the user's goal with the first task."""
        self.rounds_left = _draw(self.rng(0, "rounds"), self.workload.behaviour.rounds_per_task)
        first = f"{self.workload.goal}\n\n{self._task_text(0)}"
        return (
            Message("system", (TextPart(self.workload.system),)),
            Message("user", (TextPart(first),)),
        )

    def _task_text(self, number: int) -> str:
        tasks = self.workload.tasks
        return f"Task {number + 1}: {tasks[number % len(tasks)]}"

    # -------------------------------------------------------------------------------- a turn

    def forgotten(self, request_text: str) -> list[SideEffect]:
        """Side effects whose resource id and idempotency key are both absent from the request."""
        return [
            se
            for se in self.done
            if se.resource_id not in request_text and se.idempotency_key not in request_text
        ]

    def play(self, turn: int, request_text: str) -> TurnPlan:
        """The model's answer to the request of ``turn`` and everything it leads to."""
        forgotten = self.forgotten(request_text)
        if forgotten:
            return self._repeat(forgotten[0])
        if self.rounds_left > 0:
            self.rounds_left -= 1
            return self._tool_round(turn)
        return self._answer(turn)

    def _result_name(self, tool: str) -> str | None:
        """The tool's name on its result where the shape carries one (not Responses)."""
        return tool if get_shape(self.shape).capabilities.tool_result_names else None

    def _call_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls:06d}"

    def _repeat(self, effect: SideEffect) -> TurnPlan:
        call = ToolCallPart(self._call_id(), effect.tool, effect.arguments)
        tool = next(t for t in self.workload.tools if t.name == effect.tool)
        text = f"{tool.name} ok (again): resource_id={effect.resource_id} idempotency_key={effect.idempotency_key}"
        self.ledger.append(
            LedgerEntry(tool.name, call.id, "succeeded", effect.idempotency_key, effect.resource_id)
        )
        messages = (
            Message("assistant", (call,)),
            Message(
                "tool",
                (ToolResultPart(call.id, (TextPart(text),), name=self._result_name(tool.name)),),
            ),
        )
        return TurnPlan(messages, repeated=(effect,), calls=1, side_effect_calls=1)

    def _tool_round(self, turn: int) -> TurnPlan:
        behaviour = self.workload.behaviour
        rng = self.rng(turn, "calls")
        count = _draw(rng, behaviour.fan_out)
        weights = [t.weight for t in self.workload.tools]
        chosen = rng.choices(self.workload.tools, weights=weights, k=count)
        calls: list[ToolCallPart] = []
        results: list[ToolResultPart] = []
        side_effects = 0
        for k, tool in enumerate(chosen):
            target = rng.choice(tool.targets)
            arguments: dict[str, str] = {tool.argument: target}
            key = f"idem-{self.seed % 10_000:04d}-{turn:05d}-{k}"
            if tool.side_effect:
                arguments["idempotency_key"] = key
                side_effects += 1
            call = ToolCallPart(self._call_id(), tool.name, canonical_json(arguments))
            calls.append(call)
            failed = rng.random() < behaviour.error_rate
            results.append(
                self._execute(rng, turn, tool, call, target=target, key=key, failed=failed)
            )
        messages: list[Message] = [
            Message("assistant", tuple(calls)),
            Message("tool", tuple(results)),
        ]
        messages.extend(self._interjection(turn))
        return TurnPlan(tuple(messages), calls=count, side_effect_calls=side_effects)

    def _execute(
        self,
        rng: random.Random,
        turn: int,
        tool: ToolProfile,
        call: ToolCallPart,
        *,
        target: str,
        key: str,
        failed: bool,
    ) -> ToolResultPart:
        if failed:
            text = f"error: {tool.name} could not reach {target} (upstream timeout after 30 s)"
            if tool.side_effect:
                self.ledger.append(LedgerEntry(tool.name, call.id, "failed", key))
            # A shape without an error flag on results (openai-chat) says so in the text only.
            flag = get_shape(self.shape).capabilities.tool_result_errors
            return ToolResultPart(
                call.id, (TextPart(text),), is_error=flag, name=self._result_name(tool.name)
            )
        tokens = _draw(rng, tool.result_tokens)
        if not tool.side_effect:
            text = _result_text(rng, tool, target, tokens)
            return ToolResultPart(call.id, (TextPart(text),), name=self._result_name(tool.name))
        resource = f"{tool.resource_prefix}_{self.seed % 10_000:04d}{turn:05d}{len(self.done):04d}"
        effect = SideEffect(tool.name, call.arguments, key, resource, turn)
        self.done.append(effect)
        self._by_key[key] = effect
        self.ledger.append(LedgerEntry(tool.name, call.id, "succeeded", key, resource))
        detail = _result_text(rng, tool, target, max(0, tokens - 20))
        text = f"{tool.name} ok: {tool.argument}={target} resource_id={resource} idempotency_key={key}\n{detail}"
        return ToolResultPart(call.id, (TextPart(text),), name=self._result_name(tool.name))

    def _interjection(self, turn: int) -> tuple[Message, ...]:
        behaviour = self.workload.behaviour
        rng = self.rng(turn, "user")
        if not self.workload.interjections or rng.random() >= behaviour.interjection_rate:
            return ()
        text = rng.choice(self.workload.interjections)
        if needs_alternation(self.shape):
            # A user text right after tool results would be a second user turn in a row there:
            # the user says it with the next task instead.
            self.pending_interjection = text
            return ()
        return (Message("user", (TextPart(text), *self._attachments(turn))),)

    def attachment_kinds(self) -> tuple[str, ...]:
        """The attachment kinds a user turn of this run can carry: the workload's (a rate above
        zero) that the shape carries, images before files."""
        behaviour = self.workload.behaviour
        carried = get_shape(self.shape).capabilities.user_attachments
        rates = (("image", behaviour.image_rate), ("file", behaviour.file_rate))
        return tuple(kind for kind, rate in rates if rate > 0 and kind in carried)

    def attachment(self, kind: str, turn: int) -> ImagePart | FilePart:
        """The attachment of ``kind`` a user pastes at ``turn``: an image by URL, a PDF by file id
        (their size is unknown to any counter, as in production), or, where the shape cannot
        send that (Gemini takes no provider file id, Bedrock no URL), the first of a URL and
        inline bytes that it can."""
        stem = f"{self.seed % 10_000:04d}{turn:05d}"
        if kind == "image":
            url = f"https://assets.example.invalid/screens/{stem}.png"
            images = (ImagePart("url", url, "image/png"), ImagePart("base64", _PNG, "image/png"))
            return self._sendable(images)
        files = (
            FilePart("file_id", f"file-{stem}", "application/pdf", f"ci-{turn}.pdf"),
            FilePart(
                "url", f"https://assets.example.invalid/ci/{stem}.pdf", "application/pdf", None
            ),
            FilePart("base64", _PDF, "application/pdf", f"ci-{turn}.pdf"),
        )
        return self._sendable(files)

    def _sendable(self, choices: tuple[_Attachment, ...]) -> _Attachment:
        """The first of ``choices`` the run's shape can send in a user turn (the last when none)."""
        adapter = get_shape(self.shape)
        for part in choices:
            probe = Transcript((Message("user", (TextPart("(attachment)"), part)),))
            try:
                adapter.render_request(probe)
            except CtxconfError:
                continue
            return part
        return choices[-1]

    def _attachments(self, turn: int) -> tuple[ImagePart | FilePart, ...]:
        behaviour = self.workload.behaviour
        rng = self.rng(turn, "attachments")
        kinds = self.attachment_kinds()
        out: list[ImagePart | FilePart] = []
        if rng.random() < behaviour.image_rate and "image" in kinds:
            out.append(self.attachment("image", turn))
        if rng.random() < behaviour.file_rate and "file" in kinds:
            out.append(self.attachment("file", turn))
        return tuple(out)

    def _answer(self, turn: int) -> TurnPlan:
        rng = self.rng(turn, "answer")
        tokens = _draw(rng, self.workload.behaviour.answer_tokens)
        answer = f"Done with task {self.task + 1}. " + _result_text(
            rng,
            ToolProfile("answer", "", False, 1, "text", "", ("",), "", SizeRange(0, 0)),
            "",
            tokens,
        ).replace("\n", " ")
        self.task += 1
        self.rounds_left = _draw(self.rng(turn, "rounds"), self.workload.behaviour.rounds_per_task)
        text = self._task_text(self.task)
        if self.pending_interjection:
            text = f"{self.pending_interjection}\n\n{text}"
            self.pending_interjection = ""
        user = Message("user", (TextPart(text), *self._attachments(turn)))
        return TurnPlan((Message("assistant", (TextPart(answer),)), user))
