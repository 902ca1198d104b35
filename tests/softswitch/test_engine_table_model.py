"""Table lookup against a brute-force reference model (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from softswitch.engine import Lpm, SwitchError, Ternary
from softswitch.engine.tables import ActionSpec, KeySpec, Table

W = 8


def table(kind: str) -> Table:
    t = Table("C.t", [KeySpec("k", kind, W), KeySpec("e", "exact", 2)], [ActionSpec("C.a", (("v", 16),))], size=10_000)
    t.bind({"C.a": lambda *a: None})
    return t


lpm_entries = st.lists(
    st.tuples(st.integers(0, W), st.integers(0, 255), st.integers(0, 3), st.integers(0, 999)), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(lpm_entries, st.lists(st.tuples(st.integers(0, 255), st.integers(0, 3)), min_size=1, max_size=20))
def test_lpm_matches_longest_prefix_model(entries, probes):
    t = table("lpm")
    model = {}
    for plen, value, e, v in entries:
        mask = (0xFF << (W - plen)) & 0xFF
        key = (value & mask, plen, e)
        try:
            t.add([Lpm(value & mask, plen), e], "a", [v])
        except SwitchError as exc:
            assert exc.code == "ALREADY_EXISTS" and key in model
            continue
        model[key] = v
    for k, e in probes:
        hits = [(plen, v) for (val, plen, ee), v in model.items()
                if ee == e and k & ((0xFF << (W - plen)) & 0xFF) == val]
        want = max(hits)[1] if hits else None
        got = t.lookup((k, e))
        assert (got.args[0] if got else None) == want


tern_entries = st.lists(
    st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 3), st.integers(1, 50)), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(tern_entries, st.lists(st.tuples(st.integers(0, 255), st.integers(0, 3)), min_size=1, max_size=20))
def test_ternary_matches_highest_priority_then_oldest(entries, probes):
    t = table("ternary")
    model = []
    for i, (value, mask, e, prio) in enumerate(entries):
        try:
            t.add([Ternary(value & mask, mask), e], "a", [i], priority=prio)
        except SwitchError as exc:
            assert exc.code == "ALREADY_EXISTS"
            continue
        model.append((prio, -i, value & mask, mask, e))
    for k, e in probes:
        hits = [(prio, neg_i) for prio, neg_i, val, mask, ee in model if ee == e and k & mask == val]
        want = -max(hits)[1] if hits else None
        got = t.lookup((k, e))
        assert (got.args[0] if got else None) == want
    # deleting everything leaves an empty, working table
    for h in list(t.entries):
        t.delete(h)
    assert all(t.lookup((k, e)) is None for k, e in probes)
