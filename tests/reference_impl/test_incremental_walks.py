"""The C-speed walks of the incremental path (``reference_impl.incremental``) against the
unit-by-unit loops they replace: the newest-first fill (``_take_newest``), the dropped ids
(``_without``), the slice of ids a report holds without copying (``IdSlice``) and the positions
an index holds, sliced from ints made once (``_positions``)."""

from __future__ import annotations

import functools
import pickle

from hypothesis import given
from hypothesis import strategies as st

from reference_impl import incremental
from reference_impl.assembler import IdSlice
from reference_impl.incremental import _positions, _take_newest, _take_resumed, _without


@st.composite
def walks(draw):
    # long enough to cross the doubling chunks (32, 64, 128 ...) of _take_newest; the bulk
    # drawn from a seeded Random, the sizes and the room by hypothesis
    rng = draw(st.randoms(use_true_random=False))
    n = draw(st.integers(0, 300))
    positions = sorted(rng.sample(range(2 * n + 10), n))
    stop = draw(st.integers(0, n))
    skip = set(rng.sample(positions, min(n, draw(st.integers(0, 4)))))
    costs = {p: rng.randint(0, 40) for p in positions}
    share = draw(st.sampled_from([0.0, 0.5, 0.95, 1.0]))  # of the costs already counted
    known = {p for p in positions if rng.random() < share}
    room = draw(st.integers(-5, 20 * n + 5))
    return positions, stop, skip, costs, known, room


def unit_by_unit(positions, stop, skip, costs, known, room):
    """The loop ``_take_newest`` replaces: newest first, skip, count what is reached."""
    taken, used, counted = [], 0, []
    for k in range(stop - 1, -1, -1):
        p = positions[k]
        if p in skip:
            continue
        if p not in known:
            counted.append(p)
        if used + costs[p] <= room:
            used += costs[p]
            taken.append(p)
            continue
        return taken, k, used, costs[p], counted
    return taken, None, used, 0, counted


def walk_newest(case, ahead, block=None):
    """``_take_newest`` over ``case`` with a ``count(run, room)`` that counts the first ``ahead``
    units of each run in one go: what the walk returns, and the positions counted in order. With
    ``block`` (``lo, hi``), ``_take_resumed`` from the block ``positions[lo:hi]`` (counted, its
    sum known)."""
    positions, stop, skip, costs, known, room = case
    counted: list[int] = []

    def count(run, _room):
        counted.extend(run[:ahead])
        return [costs[p] for p in run[:ahead]]

    walk = functools.partial(
        _take_newest if block is None else _take_resumed,
        positions,
        stop,
        skip=skip,
        room=room,
        known=lambda chunk: [costs[p] if p in known else None for p in chunk],
        count=count,
    )
    if block is None:
        return walk(), counted
    lo, hi = block
    return walk(block=(lo, hi, sum(costs[p] for p in positions[lo:hi]))), counted


@given(walks())
def test_the_newest_first_walk_equals_the_unit_by_unit_loop(case):
    got, counted = walk_newest(case, 1)
    want = unit_by_unit(*case)
    assert (*got, counted) == want  # same units taken, same stop, and only the reached counted


@given(walks(), st.integers(1, 50))
def test_counting_runs_ahead_changes_nothing_the_walk_decides(case, ahead):
    # count(run, room) may count more than the first unit of a run (in one go): the walk takes
    # the units as a unit-by-unit walk meets them, so what it decides is the same
    got, counted = walk_newest(case, ahead)
    want = unit_by_unit(*case)
    assert got == want[:4]
    assert set(want[4]) <= set(counted)  # every unit reached was counted
    assert len(counted) == len(set(counted))  # and none twice


@given(walks(), st.data())
def test_a_walk_resumed_from_a_known_block_equals_the_unit_by_unit_loop(case, data):
    # an earlier turn's block: positions[lo:hi] all counted, their costs summed (the skipped
    # ones too); the walk after it, over it (whole, or cut at its old end) and before it
    positions, stop, skip, costs, known, room = case
    if stop == 0:
        return
    hi = data.draw(st.integers(1, stop), label="hi")
    lo = data.draw(st.integers(0, hi - 1), label="lo")
    case = (positions, stop, skip, costs, known | set(positions[lo:hi]), room)
    got, counted = walk_newest(case, 1, (lo, hi))
    assert (*got, counted) == unit_by_unit(*case)  # the same decision, only the reached counted


@given(
    st.lists(st.integers(0, 500), unique=True, max_size=200).map(sorted),
    st.data(),
)
def test_the_dropped_ids_are_the_slice_less_the_skipped(positions, data):
    stop = data.draw(st.integers(0, len(positions)))
    skip = set(data.draw(st.lists(st.integers(0, 500), max_size=5)))
    ids = [f"id{p}" for p in positions]
    got = _without(positions, tuple(ids), stop, skip)
    assert got == tuple(i for p, i in zip(positions[:stop], ids, strict=False) if p not in skip)


def test_an_id_slice_is_the_tuple_of_its_ids():
    ids = tuple(f"m{i}" for i in range(10))
    part = IdSlice(ids, 2, 6)
    want = ("m2", "m3", "m4", "m5")
    assert part == want
    assert want == part
    assert part == IdSlice(ids[1:], 1, 5)
    assert part != list(want)  # a tuple's equality: never equal to a list
    assert part != ("m2", "m3", "m4")
    assert hash(part) == hash(want)
    assert len(part) == 4
    assert list(part) == list(want)
    assert (part[0], part[3], part[-1]) == ("m2", "m5", "m5")
    assert part[1:3] == ("m3", "m4")
    assert repr(part) == repr(want)
    assert pickle.loads(pickle.dumps(part)) == want
    assert "m4" in part
    assert "m6" not in part
    assert not IdSlice(ids, 5, 5)
    assert IdSlice(ids, 8, 3) == ()
    try:
        part[4]
    except IndexError:
        pass
    else:
        raise AssertionError("an index past the end must raise")


def test_a_resumed_walk_reads_what_changed_not_the_block():
    # 1,000 units kept by the last turn, 5 new ones after them, a room that drops the oldest
    # 20 of the block: the walk reads the new ones and the block's old end, not the block
    positions = list(range(1005))
    costs = dict.fromkeys(positions, 10)
    read: list[int] = []

    def known(chunk):
        read.extend(chunk)
        return [costs[p] for p in chunk]

    def count(run, _room):
        raise AssertionError("every unit here is counted")

    room = 10 * (1005 - 20)
    got = _take_resumed(
        positions,
        1005,
        skip={3, 500},
        room=room,
        known=known,
        count=count,
        block=(0, 1000, 10 * 1000),
    )
    want = unit_by_unit(positions, 1005, {3, 500}, costs, set(positions), room)
    assert got == want[:4]
    assert len(read) < 100  # the new units, the skipped ones' costs, the chunk that is cut


def test_a_block_cut_at_its_oldest_unit_or_far_into_it_is_cut_as_the_walk_cuts_it():
    positions = list(range(1000))
    costs = {p: 1 + p % 7 for p in positions}
    everything = set(positions)
    whole = sum(costs.values())
    for room in (
        whole - costs[0],  # only the oldest unit goes
        whole - costs[0] - 1,  # the oldest two
        whole // 3,  # hundreds of units, across chunks of 32, 64, 128 ...
        0,  # all of them
        -1,  # not even nothing fits
    ):
        case = (positions, 1000, set(), costs, everything, room)
        assert walk_newest(case, 1, (0, 1000))[0] == unit_by_unit(*case)[:4], room


@given(st.integers(0, 3000), st.integers(0, 3000))
def test_positions_are_the_range_they_stand_for(lo: int, width: int) -> None:
    """Within the ints made once, beyond them (the list grown), and past its limit (a range)."""
    assert list(_positions(lo, lo + width)) == list(range(lo, lo + width))


def test_positions_grow_by_replacing_the_list_and_stop_at_the_limit(monkeypatch) -> None:
    monkeypatch.setattr(incremental, "_NATURALS", list(range(8)))
    monkeypatch.setattr(incremental, "_NATURALS_MAX", 100)
    before = incremental._NATURALS
    assert list(_positions(5, 20)) == list(range(5, 20))
    grown = incremental._NATURALS
    assert grown is not before
    assert before == list(range(8))
    assert grown == list(range(len(grown)))
    assert 20 <= len(grown) <= 100
    assert _positions(90, 130) == range(90, 130)  # past the limit: made as needed
    assert list(_positions(0, 100)) == list(range(100))
    assert len(incremental._NATURALS) == 100


@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=40),
    st.lists(st.lists(st.integers(0, 39), max_size=30), max_size=4),
)
def test_reach_notes_each_unit_once_however_often_it_is_given(costs, calls) -> None:
    # _Index.reach: the units a step needed, for tokens_before; a position given twice, in one
    # call or in two, is noted (and its cost summed) once
    index = incremental._Index()
    index.costs = list(costs)
    index.reached = bytearray(len(costs))
    seen: set[int] = set()
    for positions in calls:
        given_now = [p for p in positions if p < len(costs)]
        index.reach(given_now)
        seen.update(given_now)
        assert index.counted_units == len(seen)
        assert index.counted_cost == sum(costs[p] for p in seen)
        assert [p for p, flag in enumerate(index.reached) if flag] == sorted(seen)
