"""The replay of a schedule (issue #26 item 4): instances that join and leave a pool at
given times (each stage's `windows`), arrivals whose rate steps, and a period replayed
from its boundary with the new instances arriving a lag late."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdd_plan.sim.prefill import batched_pool, fcfs_pool
from pdd_plan.sim.replay import Boundary, windows
from pdd_plan.sim.sampling import stepped_arrivals_s


def test_fcfs_instances_join_and_leave_at_their_windows():
    # one-second services arriving every 0.1 s; instance 1 joins at 2 s, instance 0 takes
    # nothing new from 3 s: before 2 s all on instance 0, after 3 s all on instance 1
    arrivals = np.arange(0, 5, 0.5)
    run = fcfs_pool(arrivals, np.full(len(arrivals), 1.0), 2, [(0.0, 3.0), (2.0, math.inf)])
    assert all(i == 0 for i, s in zip(run.instance, run.start_s, strict=True) if s < 2.0)
    assert all(i == 1 for i, s in zip(run.instance, run.start_s, strict=True) if s >= 3.0)
    # what instance 0 started before 3 s it finishes; no start of it at or after 3 s
    assert max(s for i, s in zip(run.instance, run.start_s, strict=True) if i == 0) < 3.0
    assert np.all(run.start_s >= arrivals)


def test_fcfs_without_windows_is_unchanged():
    arrivals = np.array([0.0, 0.1, 0.2, 5.0])
    service = np.array([1.0, 1.0, 1.0, 1.0])
    plain = fcfs_pool(arrivals, service, 2)
    open_ = fcfs_pool(arrivals, service, 2, [(0.0, math.inf)] * 2)
    assert np.array_equal(plain.start_s, open_.start_s)
    assert list(plain.start_s) == [0.0, 0.1, 1.0, 5.0]  # the third waits for the first


def test_batched_instances_join_and_leave_at_their_windows():
    arrivals = np.arange(0, 6, 0.25)
    n = len(arrivals)
    run = batched_pool(arrivals, np.full(n, 100.0), np.zeros(n), 2, 1000,
                       lambda chunks: 0.6, [(0.0, 3.0), (2.0, math.inf)])  # fmt: skip
    started = list(zip(run.instance, run.start_s, strict=True))
    assert all(i == 0 for i, s in started if s < 2.0)
    assert all(i == 1 for i, s in started if s >= 3.0)
    assert not np.isnan(run.end_s).any()  # every request prefilled


def test_stepped_arrivals_follow_the_rate_steps():
    # unit-rate arrivals at 1, 2, ..., 40: 10 req/s for 2 s (20 arrivals), then 2 req/s
    unit = np.arange(1.0, 41.0)
    t = stepped_arrivals_s(unit, ((0.0, 10.0), (2.0, 2.0)))
    assert np.allclose(t[:20], unit[:20] / 10)
    assert np.allclose(t[20:], 2.0 + (unit[20:] - 20) / 2)


def test_windows_grow_late_and_shrink_at_the_boundary():
    b = Boundary({"prefill": 2, "main_decode": 3}, {"prefill": 4, "main_decode": 1}, 10, 20)
    w = windows(b, 100.0, 600.0)
    assert w["prefill"] == ((0.0, math.inf),) * 2 + ((700.0, math.inf),) * 2
    assert w["main_decode"] == ((0.0, math.inf),) + ((0.0, 100.0),) * 2
    ahead = windows(b, 100.0, 600.0, ahead=True)
    assert ahead["prefill"][2:] == ((100.0, math.inf),) * 2


@pytest.mark.slow  # three boundary replays of a small scenario: about 6 s
def test_a_late_instance_costs_ttft_and_ordering_ahead_restores_it(tmp_path):
    """At a boundary where a role grows, its new instances arriving late make TTFT worse
    than with no lag; ordered a lag ahead, they serve from the boundary again."""
    from pathlib import Path

    import yaml

    from pdd_plan.stages.solving.schedule_replay import replay_schedule

    tiny = Path(__file__).resolve().parents[1] / "sweep" / "tiny.yaml"
    data = yaml.safe_load(tiny.read_text())
    data["workload"]["load_curve"] = [
        {"start_h": 0, "duration_h": 1, "arrival_rate_per_s": 6},
        {"start_h": 1, "duration_h": 1, "arrival_rate_per_s": 24},
    ]
    data["architectures"] = ["cdc_pd"]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    runs = {
        name: replay_schedule(tmp_path / "s.yaml", lag_s=lag, settle_s=60, ahead=ahead)
        for name, lag, ahead in (("none", 0.0, False), ("late", 300.0, False),
                                 ("ahead", 300.0, True))
    }  # fmt: skip
    grown = runs["none"]["replay"]["periods"][1]
    assert any(grown["counts_after"][r] > grown["counts_before"][r] for r in grown["counts_after"])
    p90 = {k: v["replay"]["periods"][1]["ttft_s"]["p90"] for k, v in runs.items()}
    assert p90["late"] > p90["none"] and p90["ahead"] < p90["late"]
    assert runs["ahead"]["replay"]["order_ahead_usd_per_month"] > 0
    assert runs["none"]["replay"]["sla_met_periods"] == 2
