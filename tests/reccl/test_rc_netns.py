"""ReCCL across network namespaces with several NICs per host (root): real veths, real
netlink link events, tc shaping. Each test builds its own testbed and removes it."""

import os
import pickle
import secrets
import sys

import numpy as np
import pytest

from reccl.launch import HostSpec, launch
from reccl.netns import Testbed
from reccl.ops import reference_ring

pytestmark = pytest.mark.root
JOB = os.path.join(os.path.dirname(__file__), "rc_ns_job.py")
sys.path.insert(0, os.path.dirname(__file__))
from rc_ns_job import COLLECTIVES, rank_data  # noqa: E402


@pytest.fixture
def testbed_factory():
    made = []

    def make(hosts, rails=2, ranks_per_host=1):
        tb = Testbed(f"rc{secrets.token_hex(2)}", hosts, rails, ranks_per_host=ranks_per_host)
        made.append(tb)
        return tb.create()

    yield make
    for tb in made:
        tb.destroy()


def run_job(tb, scenario, seed, tmp_path, timeout=120, env=None):
    hosts = []
    for h in range(tb.hosts):
        for slot in range(tb.ranks_per_host):
            hosts.append(HostSpec(f"h{h}", tuple(tb.nics(h, slot)), tb.ns(h)))
    e = {"RC_HOSTS": str(tb.hosts), **(env or {})}
    codes = launch(hosts, 1, [sys.executable, JOB, str(tmp_path), scenario, str(seed)],
                   env=e, timeout=timeout)
    out = {}
    for r in range(len(hosts)):
        with open(tmp_path / f"rank{r}.pkl", "rb") as f:
            out[r] = pickle.load(f)
    return codes, out


def expected(name, xs, r):
    p = len(xs)
    if name == "all_reduce":
        return reference_ring(xs, "sum")
    if name == "reduce_scatter":
        n = xs[0].size // p
        return reference_ring(xs, "sum", shift=1)[r * n:(r + 1) * n]
    if name == "all_gather":
        return np.stack(xs)
    if name == "broadcast":
        return xs[p - 1]
    if name == "reduce":
        return reference_ring(xs, "sum") if r == 0 else None
    n = xs[0].size // p
    return np.concatenate([x[r * n:(r + 1) * n] for x in xs])


def assert_exact(got, want, what):
    if want is None:
        assert got is None, what
    else:
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), what


@pytest.mark.parametrize("seed", [1, 2])
def test_links_cut_at_random_points_of_every_collective(testbed_factory, tmp_path, seed):
    tb = testbed_factory(3)
    codes, out = run_job(tb, "cuts", seed, tmp_path)
    assert codes == [0, 0, 0], [o["error"] for o in out.values()]
    xs = [rank_data(r, 240_000, seed) for r in range(3)]
    for r in range(3):
        assert out[r]["error"] is None
        for name in COLLECTIVES:
            assert_exact(out[r]["results"][name], expected(name, xs, r), (name, r))
    downs = [e for o in out.values() for e in o["events"] if e[1] == "channel_down"]
    assert any("link down" in e[4] for e in downs)  # seen through netlink, not a timeout


def test_one_way_loss_and_reordering(testbed_factory, tmp_path):
    tb = testbed_factory(2)
    kinds = {tb.impair(0, 0), tb.impair(1, 1)}
    codes, out = run_job(tb, "impaired", 3, tmp_path)
    assert codes == [0, 0]
    xs = [rank_data(r, 300_000, 3) for r in range(2)]
    for r in range(2):
        for i in range(3):
            assert_exact(out[r]["results"][f"all_reduce{i}"], reference_ring(xs, "sum"), i)
    if kinds == {"htb"}:
        # segments in a quarter of the sequence space went through the slow queue: reordered,
        # and dropped when it overflowed (how often depends on the machine's speed, so only
        # the delay is certain)
        assert tb.delayed(0, 0) + tb.delayed(1, 1) > 0
    else:
        assert tb.dropped(0, 0) + tb.dropped(1, 1) > 0  # netem's 3 % loss did drop segments


def test_compute_gaps_and_a_stopped_rank_cause_no_failover(testbed_factory, tmp_path):
    tb = testbed_factory(2)
    codes, out = run_job(tb, "idle_stall", 10, tmp_path)
    assert codes == [0, 0], [o["error"] for o in out.values()]
    xs = [rank_data(r, 250_000, 10) for r in range(2)]
    for r in range(2):
        for name, got in out[r]["results"].items():
            assert_exact(got, reference_ring(xs, "sum"), (name, r))
        assert out[r]["events"] == []  # no channel died, nothing to announce
    assert out[0]["stall_wait"] >= 2.5  # rank 0 did wait for its stopped peer


def test_double_one_way_failure_each_side_detects_one_and_is_told_the_other(testbed_factory,
                                                                           tmp_path):
    tb = testbed_factory(2, rails=3)
    codes, out = run_job(tb, "oneway", 9, tmp_path)
    assert codes == [0, 0], [o["error"] for o in out.values()]
    xs = [rank_data(r, 300_000, 9) for r in range(2)]
    for r in range(2):
        for name, got in out[r]["results"].items():
            assert_exact(got, reference_ring(xs, "sum"), (name, r))
        assert out[r]["alive"] == [False, False, True], out[r]["events"]
    silent = [e[4] for o in out.values() for e in o["events"]
              if e[1] == "channel_down" and "silent for" in e[4]]
    assert silent  # found by the liveness rule, not by carrier


def test_a_slower_rail_gets_a_lower_weight_and_carries_less(testbed_factory, tmp_path):
    tb = testbed_factory(2)
    for h in range(2):
        tb.rate_limit(h, 0, "160mbit")
        tb.rate_limit(h, 1, "16mbit")
    codes, out = run_job(tb, "weights", 8, tmp_path)
    assert codes == [0, 0]
    xs = [rank_data(r, 400_000, 8) for r in range(2)]
    for r in range(2):
        for i in range(2):
            assert_exact(out[r]["results"][f"all_reduce{i}"], reference_ring(xs, "sum"), i)
        ch = {c["channel"]: c for c in out[r]["stats"]}
        assert ch[0]["bytes_acked"] > 1.5 * ch[1]["bytes_acked"], ch
        assert ch[1]["weight"] < 0.8 and ch[0]["weight"] == 1.0, ch


def test_flapping_link(testbed_factory, tmp_path):
    tb = testbed_factory(2)
    codes, out = run_job(tb, "flap", 4, tmp_path)
    assert codes == [0, 0]
    xs = [rank_data(r, 100_000, 4) for r in range(2)]
    ref = reference_ring(xs, "sum")
    for r in range(2):
        res = out[r]["results"]
        assert len(res) >= 3
        for v in res.values():
            assert_exact(v, ref, r)
    kinds = [e[1] for e in out[0]["events"]]
    assert kinds.count("channel_down") >= 2 and "channel_up" in kinds
    holds = [float(e[4].split("after ")[1].split(" s")[0]) for e in out[0]["events"]
             if e[1] == "channel_up"]
    assert holds and max(holds) >= 2 * min(holds)  # back-off: the hold-down doubled


def test_rank_with_all_nics_down_relays_through_same_host_peer(testbed_factory, tmp_path):
    tb = testbed_factory(2, rails=2, ranks_per_host=2)
    codes, out = run_job(tb, "relay", 5, tmp_path)
    assert codes == [0, 0, 0, 0], [o["error"] for o in out.values()]
    xs = [rank_data(r, 240_000, 5) for r in range(4)]
    for r in range(4):
        assert_exact(out[r]["results"]["all_reduce"], reference_ring(xs, "sum"), r)
        assert_exact(out[r]["results"]["all_to_all"], expected("all_to_all", xs, r), r)
    assert out[1]["counters"]["relayed"] > 0


def test_every_path_down_fails_cleanly_in_bounded_time(testbed_factory, tmp_path):
    tb = testbed_factory(2)
    codes, out = run_job(tb, "nopath", 6, tmp_path, timeout=60)
    err = out[0]["error"]
    assert err and "no path left to rank 1" in err
    assert tb.ip(0, 0) in err and tb.ip(0, 1) in err  # names the paths
    assert out[0]["elapsed"] < 5.0  # carrier loss + the no-path timeout (2 s), not a hang
    # Rank 1 sees no carrier change and hears nothing: a slow peer, until its watchdog
    err = out[1]["error"]
    assert err and "timeout after 4.0 s waiting for message" in err and "from rank 0" in err
    assert "last heard" in err and tb.ip(1, 1) in err


def test_junk_and_unauthenticated_connections_are_refused_and_counted(testbed_factory,
                                                                     tmp_path):
    tb = testbed_factory(2)
    codes, out = run_job(tb, "junk", 7, tmp_path)
    assert codes == [0, 0]
    xs = [rank_data(r, 240_000, 7) for r in range(2)]
    for r in range(2):
        for i in range(3):
            assert_exact(out[r]["results"][f"all_reduce{i}"], reference_ring(xs, "sum"), i)
        c = out[r]["counters"]
        assert c["auth_failed"] >= 5, c  # every kind of junk, at least once
        assert c["links_accepted"] + c["links_connected"] == 2
