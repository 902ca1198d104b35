"""The ns-3 side of the cross-check builds the fabric it claims (skipped without ns-3)."""

import importlib.util
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from fabricsim.ns3_model import Ns3Fabric, Ns3Flow, run

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("ns") is None,
                                 reason="ns-3 not installed (pip install -e '.[crosscheck]')")]

WIRE = 1502 / 1448


def _collide():
    flows = [Ns3Flow(0, 2, 5_000_000, 0.0, 0), Ns3Flow(1, 3, 5_000_000, 0.0, 0)]
    return run(Ns3Fabric(), flows, "pinned")


def test_pinned_flows_share_the_spine_they_are_given():
    # Two 5 MB flows pinned to spine0 share its 10 Gbit/s: 8 ms of payload each, times the
    # header overhead. Routed over both spines they would take half that.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:
        times = ex.submit(_collide).result(timeout=600)
    assert np.allclose(times, 2 * 5e6 * 8 / 10e9 * WIRE, rtol=0.03)
