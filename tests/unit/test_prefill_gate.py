"""What batching adds to a prefill wait (model/prefill_gate.py), by hand, and the pool's
prefill part of TTFT against the simulator's batched pool on a heavy-tailed mix."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model import prefill_batch as pb
from pdd_plan.model import prefill_gate as gate
from pdd_plan.model.queueing import WaitModel
from pdd_plan.model.roofline import Instance
from pdd_plan.model.workload import RequestClasses
from pdd_plan.sim.prefill import ChunkTable, batched_pool


def test_feedback_amplifies_the_step_variance_by_hand():
    """Stationary AR(1): innovation 0.001 s², feedback 0.6: 0.001 / (1 - 0.36)."""
    law = gate.StepLaw(0.1, 0.001, 0.6, 0.05, 2.0)
    assert law.variance_s2() == pytest.approx(0.001 / 0.64, rel=1e-12)
    assert gate.StepLaw(0.1, 0.001, 0.0, 0.05, 2.0).variance_s2() == pytest.approx(0.001)


def test_the_step_variance_is_bounded_by_its_range():
    """L in [0.05, 0.2] with mean 0.1: at most (0.2 - 0.1)(0.1 - 0.05) = 0.005 (Bhatia-
    Davis); none at full steps or at one chunk."""
    assert gate.StepLaw(0.1, 1.0, 0.9, 0.05, 0.2).variance_s2() == pytest.approx(0.005)
    assert gate.StepLaw(0.2, 1.0, 0.9, 0.05, 0.2).variance_s2() == 0.0
    assert gate.StepLaw(0.05, 1.0, 0.9, 0.05, 0.2).variance_s2() == 0.0


def test_length_biased_moments_of_an_exponential_step():
    """Variance = mean² is the exponential: E[L²]/E[L] = 2 S, E[L³]/E[L] = 6 S²."""
    s = 0.3
    first, second = gate.StepLaw(s, s * s, 0.0, 0.0, 100.0).biased_moments()
    assert first == pytest.approx(2 * s)
    assert second == pytest.approx(6 * s * s)


@pytest.mark.parametrize("servers", [1, 2, 4])
def test_the_gate_alone_is_a_uniform_residual_of_the_gap(servers):
    """Fixed steps of 0.2 s, nobody else: a request that finds all busy (chance 0.5)
    waits a uniform part of the gap 0.2 / c between takes: mean 0.5 x 0.1 / c, second
    moment 0.5 x (0.2 / c)² / 3."""
    law = gate.StepLaw(0.2, 0.0, 0.0, 0.05, 1.0)
    mean, second = gate.added_moments(law, servers, 0.5, 0.0, 0.01, 1e-4)
    assert mean == pytest.approx(0.5 * 0.1 / servers)
    assert second == pytest.approx(0.5 * (0.2 / servers) ** 2 / 3)


def test_the_co_batched_others_by_hand():
    """One instance, fixed steps of 0.2 s, all busy; others at 10 /s, each adding 0.01 s.
    Residual R uniform on [0, 0.2]; others X: Poisson(10 x 0.2 = 2) x 0.01 s.
    E[R + X] = 0.1 + 0.02; E[(R + X)²] = 0.2²/3 + 2 x 0.1 x 0.02 + (0.02² + 2 x 0.01²)."""
    law = gate.StepLaw(0.2, 0.0, 0.0, 0.05, 1.0)
    mean, second = gate.added_moments(law, 1, 1.0, 10.0, 0.01, 1e-4)
    assert mean == pytest.approx(0.12)
    assert second == pytest.approx(0.04 / 3 + 0.004 + 0.0004 + 0.0002)


def test_two_moments_set_the_wait_model():
    """Mean 0.1 s, second moment 0.05 s²: p = 2 x 0.01 / 0.05 = 0.4, rate 2 x 0.1 / 0.05
    = 4 /s, so P(W > t) = 0.4 e^(-4t); a wait varying less is an exponential of its mean;
    a longer full-step (Allen-Cunneen) wait is kept."""
    w = gate.gated_or_queued(WaitModel.none(), 0.1, 0.05)
    assert w.prob_wait == pytest.approx(0.4) and w.decay_rate_per_s == pytest.approx(4.0)
    assert w.tail(0.5) == pytest.approx(0.4 * np.exp(-2.0))
    flat = gate.gated_or_queued(WaitModel.none(), 0.1, 0.01)
    assert flat.prob_wait == 1.0 and flat.mean_s() == pytest.approx(0.1)
    queued = WaitModel(0.9, 0.9 / 0.3)
    assert gate.gated_or_queued(queued, 0.1, 0.05) is queued


def test_the_pools_tail_follows_the_simulator_on_a_heavy_tailed_mix(catalog):
    """Nine short prompts in ten and one long one (2,000 and 60,000 uncached tokens) on
    two one-GPU instances at 80 % of full-step capacity: the prefill part of TTFT
    (wait + own steps) at P90 and P99 within 20 % of the simulator's batched pool (10,000
    Poisson arrivals, the first 1,000 dropped): closed 27.8 and 58.0 s against 32.1 and
    49.7 s simulated. The pool's wait before (Allen-Cunneen at full-step cost plus the
    co-batched share's mean) was 41 % and 94 % high here."""
    inst = Instance(catalog.model("qwen3_32b"), catalog.gpus["h200_sxm"], 1)
    classes = RequestClasses(
        input_tokens=np.array([2000.0, 60000.0]),
        output_tokens=np.full(2, 100.0),
        hit_rate=np.zeros(2),
        weight=np.array([0.9, 0.1]),
    )
    budget = 65536
    mix = pb.prefill_mix(inst, classes, budget)
    rate, servers = 0.8 * 2 * mix.capacity_rps(), 2
    p = pb.pool(mix, rate, servers, 1.0, "prefill")
    rng = np.random.default_rng(7)
    n = 10_000
    k = rng.choice(2, n, p=[0.9, 0.1])
    arrival_s = np.cumsum(rng.exponential(1.0 / rate, n))
    new, cached = classes.uncached_tokens[k], classes.cached_tokens[k]
    table = ChunkTable(inst, budget, 60000.0)
    run = batched_pool(arrival_s, new, cached, servers, budget, table.step_s)
    sim = np.quantile((run.end_s - arrival_s)[n // 10 :], [0.9, 0.99])
    draw = rng.random(2_000_000)
    kk = np.where(draw < 0.9, 0, 1)
    waits = np.where(rng.random(len(kk)) < p.wait.prob_wait,
                     rng.exponential(1.0 / p.wait.decay_rate_per_s, len(kk)), 0.0)  # fmt: skip
    closed = np.quantile(p.service_s[kk] + waits, [0.9, 0.99])
    assert closed == pytest.approx(sim, rel=0.2), (closed, sim)
