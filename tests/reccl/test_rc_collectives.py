"""Collectives across real processes over loopback: bit-exact against the reference."""

import time

import numpy as np
import pytest

from reccl import CommOptions, ReCCLError, TransportOptions
from reccl.ops import reference_all_reduce, reference_ring
from reccl.spawn import RankError, loopback_layout, run_ranks

DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8", "complex64",
          "bool"]


def data(rank, dtype, n):
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.random(n) < 0.5
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(n) * 3).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return rng.integers(1, 5, n).astype(dt)


def all_collectives(comm, n):
    out = {}
    for dt in DTYPES:
        x = data(comm.rank, dt, n)
        ops = ["sum", "prod", "min", "max"] + ([] if dt == "bool" else ["avg"])
        for op in ops:
            out[("all_reduce", dt, op)] = comm.all_reduce(x, op)
        for algorithm in ("ring", "tree"):
            out[("all_reduce", dt, algorithm)] = comm.all_reduce(x, "sum", algorithm=algorithm)
        out[("reduce_scatter", dt)] = comm.reduce_scatter(np.tile(x, comm.size), "sum")
        out[("reduce", dt)] = comm.reduce(x, "max", root=1)
        out[("all_gather", dt)] = comm.all_gather(x)
        out[("broadcast", dt)] = comm.broadcast(x, root=comm.size - 1)
    p, r = comm.size, comm.rank
    rows = np.arange(p * 3 * 2, dtype=np.int64).reshape(p * 3, 2) + 1000 * r
    out["a2a_equal"] = comm.all_to_all(rows)
    splits = [(r + j) % 3 for j in range(p)]
    uneven = np.arange(sum(splits) * 2, dtype=np.float32).reshape(-1, 2) + 100 * r
    out["a2a_uneven"] = comm.all_to_all(uneven, send_splits=splits, return_splits=True)
    if r == 0:
        comm.send_array(np.arange(5, dtype=np.int16), 1, tag=7)
    if r == 1:
        out["recv"] = comm.recv_array(0, tag=7)
    comm.barrier()
    return out


def check_all(res, p, n):
    for dt in DTYPES:
        xs = [data(r, dt, n) for r in range(p)]
        ops = ["sum", "prod", "min", "max"] + ([] if dt == "bool" else ["avg"])
        for op in ops:
            ref = reference_all_reduce(xs, op)  # auto: the tree for these small inputs
            for r in range(p):
                got = res[r][("all_reduce", dt, op)]
                assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), (dt, op, r)
        for algorithm in ("ring", "tree"):
            ref = reference_all_reduce(xs, "sum", algorithm)
            for r in range(p):
                assert res[r][("all_reduce", dt, algorithm)].tobytes() == ref.tobytes()
        tiled = [np.tile(x, p) for x in xs]
        ref = reference_ring(tiled, "sum", shift=1)
        for r in range(p):
            assert res[r][("reduce_scatter", dt)].tobytes() == ref[r * n:(r + 1) * n].tobytes()
            assert res[r][("all_gather", dt)].tobytes() == np.stack(xs).tobytes()
            assert res[r][("broadcast", dt)].tobytes() == xs[p - 1].tobytes()
        assert res[1][("reduce", dt)].tobytes() == reference_ring(xs, "max").tobytes()
        assert all(res[r][("reduce", dt)] is None for r in range(p) if r != 1)
    for r in range(p):
        got = res[r]["a2a_equal"]
        want = np.concatenate([(np.arange(p * 6).reshape(p * 3, 2) + 1000 * s)[3 * r:3 * r + 3]
                               for s in range(p)])
        assert np.array_equal(got, want)
        arr, counts = res[r]["a2a_uneven"]
        assert counts == [(s + r) % 3 for s in range(p)]
        want = []
        for s in range(p):
            sp = [(s + j) % 3 for j in range(p)]
            src = np.arange(sum(sp) * 2, dtype=np.float32).reshape(-1, 2) + 100 * s
            off = sum(sp[:r])
            want.append(src[off:off + sp[r]])
        assert np.array_equal(arr, np.concatenate(want))
    assert res[1]["recv"].tolist() == [0, 1, 2, 3, 4] and res[1]["recv"].dtype == np.int16


def test_tree_and_ring_orders_differ_so_the_reference_must_follow_the_algorithm():
    xs = [data(r, "float32", 1537) for r in range(4)]
    ring, tree = reference_all_reduce(xs, "sum", "ring"), reference_all_reduce(xs, "sum", "tree")
    assert ring.tobytes() != tree.tobytes()  # float addition is not associative
    assert np.allclose(ring, tree, atol=1e-5)
    assert reference_all_reduce(xs, "sum").tobytes() == tree.tobytes()  # auto: small -> tree
    big = [data(r, "float32", 10_000) for r in range(4)]
    assert reference_all_reduce(big, "sum").tobytes() == reference_ring(big, "sum").tobytes()


@pytest.mark.parametrize("hosts,per_host,rails", [(1, 3, 1), (2, 2, 2)],
                         ids=["3-ranks-one-host", "2-hosts-2-ranks-2-nics"])
def test_every_collective_every_dtype_bit_exact(hosts, per_host, rails):
    layout = loopback_layout(hosts, per_host, rails)
    n = 1537  # odd: uneven ring segments
    res = run_ranks(all_collectives, layout, (n,), timeout=180)
    check_all(res, len(layout), n)


def big_all_reduce_with_cut(comm, n, cut_rank, rail, silent):
    x = data(comm.rank, "float32", n)
    first = comm.all_reduce(x)
    if comm.rank == cut_rank:
        comm.set_link(rail, False, silent=silent)
    second = comm.all_reduce(x)
    if silent and comm.rank == cut_rank:
        time.sleep(2.5)  # the peer waits meanwhile: silence on the cut rail (1 s) is noticed
    third = comm.all_reduce(x, "max")
    kinds = [(e.kind, e.detail) for e in comm.events()]
    return first, second, third, kinds, comm.stats()


@pytest.mark.parametrize("silent", [False, True], ids=["link-state", "timeout"])
def test_all_reduce_survives_a_nic_failure_bit_exact(silent):
    layout = loopback_layout(2, 1, 2)
    n = 300_000
    res = run_ranks(big_all_reduce_with_cut, layout, (n, 0, 1, silent), timeout=120)
    xs = [data(r, "float32", n) for r in range(2)]
    ref, ref_max = reference_ring(xs, "sum"), reference_ring(xs, "max")
    for r in range(2):
        first, second, third, kinds, _ = res[r]
        assert first.tobytes() == second.tobytes() == ref.tobytes()
        assert third.tobytes() == ref_max.tobytes()
    kinds = {r: [k for k, _ in res[r][3]] for r in range(2)}
    details = [d for r in range(2) for k, d in res[r][3] if k == "channel_down"]
    if not silent:
        assert "channel_down" in kinds[0] and "failover" in kinds[0]
        assert "channel_down" in kinds[1]  # told by the notice
        assert any("link down on rank 0 nic1" in d for d in details)
    else:  # silent while the peer was heard on the other rail, on one side or both
        assert any("silent for" in d and "heard on channel 0" in d for d in details), details
    for r in range(2):
        cut = [c for c in res[r][4] if c["channel"] == 1][0]
        assert not cut["alive"] and cut["failures"] == 1


def relay_job(comm, n):
    if comm.rank == 0:
        comm.set_link(0, False)
        comm.set_link(1, False)
    x = data(comm.rank, "float64", n)
    y = comm.all_reduce(x)
    return y, comm.counters()


def test_rank_without_nics_relays_through_same_host_peer():
    layout = loopback_layout(2, 2, 2)  # ranks 0,1 on host0; 2,3 on host1
    n = 50_000
    res = run_ranks(relay_job, layout, (n,), timeout=120)
    ref = reference_ring([data(r, "float64", n) for r in range(4)], "sum")
    assert all(res[r][0].tobytes() == ref.tobytes() for r in range(4))
    assert res[1][1]["relayed"] > 0


def no_path_job(comm):
    comm.all_reduce(np.ones(10))
    if comm.rank == 0:
        comm.set_link(0, False)
    comm.all_reduce(np.ones(10_000))


SHORT_NO_PATH = CommOptions(transport=TransportOptions(no_path_timeout=1.0))


def test_every_path_down_gives_a_clean_error():
    layout = loopback_layout(2, 1, 1)
    res = run_ranks(no_path_job, layout, timeout=60, allow_errors=True, options=SHORT_NO_PATH)
    assert "ReCCLError" in res[0] and "no path left to rank 1" in res[0]
    assert "rank 0 nic0 127.1.0.1" in res[0]
    assert "ReCCLError" in res[1]


def one_collective_more(comm):
    x = np.ones(1 << 18, dtype=np.float32)
    for _ in range(2 + comm.rank):  # rank 1 runs one all_reduce more than rank 0
        comm.all_reduce(x)


def test_ranks_out_of_step_get_an_error_that_says_so():
    res = run_ranks(one_collective_more, loopback_layout(2, 1, 2), timeout=60,
                    allow_errors=True)
    # rank 1's extra all_reduce meets rank 0's closing barrier (an empty message)
    assert "got 0 elements, expected 131072" in res[1], res[1]
    assert "every rank must call the same collectives" in res[1]


def fail_stop_job(comm):
    comm.all_reduce(np.ones(10))
    if comm.rank == 0:
        comm.set_link(1, False)
    comm.all_reduce(np.ones(100_000))


def test_fail_stop_mode_aborts_where_failover_continues():
    layout = loopback_layout(2, 1, 2)
    res = run_ranks(fail_stop_job, layout, options=CommOptions(fail_stop=True), timeout=60,
                    allow_errors=True)
    assert "fail-stop" in res[0] and "nic1" in res[0]
    ok = run_ranks(fail_stop_job, layout, timeout=60)
    assert ok == {0: None, 1: None}


def bad_args(comm):
    errs = []
    for call in (lambda: comm.all_reduce(np.ones(3), "median"),
                 lambda: comm.all_reduce(np.ones(3, bool), "avg"),
                 lambda: comm.reduce_scatter(np.ones(5)),
                 lambda: comm.all_to_all(np.ones(5)),
                 lambda: comm.all_to_all(np.ones(4), send_splits=[3, 3]),
                 lambda: comm.broadcast(np.ones(3), root=9),
                 lambda: comm.all_reduce([1, 2, 3]),
                 lambda: comm.send_array(np.ones(2), comm.rank)):
        try:
            call()
            errs.append(None)
        except ReCCLError as e:
            errs.append(str(e))
    y = comm.all_reduce(np.arange(4.0))  # still usable afterwards
    return errs, y


def test_bad_arguments_give_precise_errors_and_leave_the_communicator_usable():
    res = run_ranks(bad_args, loopback_layout(1, 2, 1), timeout=60)
    errs, y = res[0]
    assert all(errs), errs
    assert "unknown reduction op 'median'" in errs[0]
    assert "'avg' is not defined for dtype bool" in errs[1]
    assert "multiple of the world size 2" in errs[2]
    assert "do not split equally" in errs[3] and "send_splits [3, 3]" in errs[4]
    assert "root 9 outside world size 2" in errs[5] and "expected a numpy.ndarray" in errs[6]
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_rank_errors_are_reported_not_hidden():
    with pytest.raises(RankError, match="rank 0"):
        run_ranks(no_path_job, loopback_layout(2, 1, 1), timeout=60, options=SHORT_NO_PATH)


def test_single_rank_world_and_a_bad_nic_address():
    from reccl import Communicator
    from reccl.store import StoreServer

    srv = StoreServer("127.0.0.1:0", secret=b"s3")
    try:
        with pytest.raises(ReCCLError, match="cannot use nic1 address '10.254.254.254'"):
            Communicator(0, 1, srv.address, nics=["127.0.0.1", "10.254.254.254"], group="bad",
                         secret="s3")
        with Communicator(0, 1, srv.address, group="one", secret="s3") as comm:
            x = np.arange(6, dtype=np.float32)
            assert comm.all_reduce(x, "avg").tolist() == x.tolist()
            assert comm.all_gather(x).shape == (1, 6)
            assert comm.reduce_scatter(x).tolist() == x.tolist()
            assert comm.broadcast(x).tolist() == x.tolist()
            assert comm.all_to_all(x).tolist() == x.tolist()
            comm.barrier()
        with pytest.raises(ReCCLError, match="rank 3 outside world size 2"):
            Communicator(3, 2, srv.address, secret="s3")
    finally:
        srv.close()
