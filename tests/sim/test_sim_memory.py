"""Issue #10 item 24: the simulator's memory per request is bounded.

The decode engine takes its arrival and handoff events a chunk at a time and keeps its
per-request state and step segments in flat arrays, so a run's peak memory grows by a
fixed number of bytes per request (docs/guarantees.md: at most `BOUND_BYTES_PER_REQUEST`),
not by the Python objects of every request. Feeding the events in chunks must not change the run.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.sim import decode_stage as sim_run
from pdd_plan.sim.entry import load_setup
from pdd_plan.sim.measure import measure
from pdd_plan.sim.result import metrics_json
from pdd_plan.sim.run import SimConfig, simulate

REPO = Path(__file__).resolve().parents[2]
PLANS = REPO / "scenarios" / "plans"

# the documented bound on peak traced memory per simulated request (the slope between two
# run sizes; fixed costs such as the step tables cancel out)
BOUND_BYTES_PER_REQUEST = 450


@pytest.fixture(scope="module")
def pdd_setup(catalog):
    return load_setup("pdd-paper", PLANS / "pdd-paper-pdd.yaml", catalog)


def _peak_bytes(setup, requests: int) -> int:
    """Peak traced memory of one run, its statistics and its JSON metrics."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        run = simulate(setup, SimConfig(requests, seed=1))
        metrics_json(run, measure(run))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_peak_memory_per_request_stays_under_the_bound(pdd_setup, monkeypatch):
    # small chunks, so that both sizes run many of them: the slope is the per-request
    # cost, not the heap of one chunk of events
    monkeypatch.setattr(sim_run, "FEED_EVENTS", 1024)
    small, large = 5_000, 20_000
    slope = (_peak_bytes(pdd_setup, large) - _peak_bytes(pdd_setup, small)) / (large - small)
    # measured 410 (numpy columns of the trace and the decode state, the step segments);
    # before the flat arrays, the same runs grew by 842 bytes a request (the heap
    # of every arrival event, a tuple per step segment, dicts and lists of Python numbers)
    assert 0 < slope < BOUND_BYTES_PER_REQUEST, f"{slope:.0f} bytes per request"


def _trace_arrays(run) -> dict[str, np.ndarray]:
    tr = run.trace
    names = ("local_instance", "local_first_s", "local_last_s", "local_tokens",
             "main_instance", "main_first_s", "main_last_s", "main_tokens", "overflowed",
             "largest_gap_s")  # fmt: skip
    out = {name: np.asarray(getattr(tr, name)) for name in names}
    for role, segments in run.segments.items():
        for i, seg in enumerate(segments):
            for c, column in enumerate(seg):
                out[f"{role}/{i}/{c}"] = np.asarray(column)
    return out


def test_events_fed_in_chunks_run_exactly_as_all_at_once(pdd_setup, monkeypatch):
    """The heap orders events by (time, push number); a chunk's events carry the number
    they would have had pushed all at once, so any chunk size gives the same run."""
    config = SimConfig(3_000, seed=3)
    monkeypatch.setattr(sim_run, "FEED_EVENTS", 10**9)  # every event in one chunk
    whole = _trace_arrays(simulate(pdd_setup, config))
    monkeypatch.setattr(sim_run, "FEED_EVENTS", 97)  # many chunks, cut at odd places
    chunked = _trace_arrays(simulate(pdd_setup, config))
    assert whole.keys() == chunked.keys()
    for name, values in whole.items():
        np.testing.assert_array_equal(chunked[name], values, err_msg=name)
    assert (whole["main_tokens"] > 0).any() and (whole["local_tokens"] > 0).any()
