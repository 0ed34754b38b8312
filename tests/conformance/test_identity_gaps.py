"""The gap around each view message (the present, non-pinned session neighbours a summary stands
between), computed for every view message in two passes: the same answer as the definition, for
any links."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.identity import Link, _Gaps
from reference_impl.transcript import Message, TextPart, Transcript
from reference_impl.transcript.model import INSTRUCTION_ROLES

ROLES = ("system", "user", "assistant", "developer")


def _definition(session: Transcript, links: list[Link | None], index: int) -> tuple[int, int]:
    """The gap as the design notes define it, one view message at a time."""
    first = next(
        (i for i, m in enumerate(session.messages) if m.role == "user" and not m.has_tool_parts),
        None,
    )

    def pinned(s: int) -> bool:
        return session.messages[s].role in INSTRUCTION_ROLES or s == first

    before = [s for link in links[:index] if link for s in link.sources if not pinned(s)]
    after = [s for link in links[index + 1 :] if link for s in link.sources if not pinned(s)]
    return (max(before, default=-1), min(after, default=len(session.messages)))


@st.composite
def _session_and_links(draw: st.DrawFn) -> tuple[Transcript, list[Link | None]]:
    roles = draw(st.lists(st.sampled_from(ROLES), min_size=1, max_size=12))
    session = Transcript(tuple(Message(r, (TextPart(f"m{i}"),)) for i, r in enumerate(roles)))  # type: ignore[arg-type]
    indices = st.integers(0, len(roles) - 1)
    links: list[Link | None] = []
    for index in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["none", "new", "kept", "merged"]))
        if kind == "none":
            links.append(None)
        elif kind == "new":
            links.append(Link(index, "invented", None))
        elif kind == "kept":
            links.append(Link(index, "kept", draw(indices)))
        else:
            merged = tuple(sorted(draw(st.sets(indices, min_size=1, max_size=3))))
            links.append(Link(index, "merged", merged[0], merged))
    return session, links


@settings(max_examples=200, deadline=None)
@given(_session_and_links())
def test_each_gap_is_the_definitions(drawn: tuple[Transcript, list[Link | None]]) -> None:
    session, links = drawn
    gaps = _Gaps(session, links)
    for index in range(len(links)):
        assert gaps[index] == _definition(session, links, index)
