"""The batched prefill pool's two mechanisms found by the agreement campaign (issue #22,
point 2): a step's mean time over its compositions (E[max(compute, memory)], not the step
of the mean request), and the chance an arrival finds every instance busy (Erlang C at
the busy share, not the busy share itself), with the restart balance it implies.

Expectations are derived by hand or from the instance's own prefill of each class alone,
never from the mix's output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing import prefill_batch as pb
from pdd_plan.model.queueing import prefill_gate as gate
from pdd_plan.model.queueing import prefill_mix as pm
from pdd_plan.model.workload.workload import RequestClasses

# Short, mostly cached prompts (the weight read bounds their step) with a few long ones
# (compute-bound): the campaign's seed 33 in miniature, Llama-3.1-70B on 2 H200s.
INPUTS = np.array([1_000.0, 2_000.0, 8_192.0])
HITS = np.array([0.9, 0.95, 0.0])
WEIGHTS = np.array([0.6, 0.35, 0.05])


def _mix(catalog):
    inst = Instance(catalog.model("llama_3_1_70b"), catalog.gpus["h200_sxm"], 2)
    classes = RequestClasses(input_tokens=INPUTS, output_tokens=np.full(3, 200.0),
                             hit_rate=HITS, weight=WEIGHTS)  # fmt: skip
    budget = pb.budget_tokens(inst, 16_384)
    mix = pm.PrefillMix.build(inst, classes.uncached_tokens, classes.cached_tokens,
                              classes.weight, budget)  # fmt: skip
    return inst, classes, mix


def test_a_one_request_step_lasts_the_mean_of_the_requests_own_steps(catalog):
    inst, classes, mix = _mix(catalog)
    alone = np.asarray(inst.prefill_time_s(classes.uncached_tokens, classes.cached_tokens))
    by_hand = float(WEIGHTS @ alone)  # each request's own prefill, averaged
    at_mean = mix.mean_mix_step_s(mix.mean_chunk_tokens)
    assert at_mean < 0.9 * by_hand  # the mean request's step: the weight read alone
    # the mean over compositions: one chunk, drawn from the mix (the gamma law's 16
    # points carry the spread of the compute; within 3 % of the exact mean)
    assert mix.step_s(mix.mean_chunk_tokens) == pytest.approx(by_hand, rel=0.03)


def test_a_steps_mean_time_is_at_least_the_mean_compositions_and_grows_with_it(catalog):
    _, _, mix = _mix(catalog)
    n, budget = mix.mean_chunk_tokens, mix.budget_tokens
    sizes = [n, 2 * n, 4 * n, 0.5 * budget, budget]
    composed = [mix.step_s(b) for b in sizes]
    # E[max(C, M)] >= max(E[C], M) (Jensen: the step is convex in its compute)
    floors = [mix.mean_mix_step_s(b) for b in sizes]
    assert all(c >= f * (1 - 1e-9) for c, f in zip(composed, floors, strict=True))
    assert composed == sorted(composed)  # more tokens never step faster


def test_the_all_busy_chance_is_erlang_c_at_the_busy_share():
    # one instance: PASTA, the busy share itself
    assert gate.all_busy_prob(1, 0.37) == pytest.approx(0.37, rel=1e-12)
    # two instances each busy half the time: 1 erlang on 2 servers; Erlang B = 1/5,
    # C = B / (1 - u (1 - B)) = 0.2 / 0.6 = 1/3 (not u² = 1/4, not u = 1/2)
    assert gate.all_busy_prob(2, 0.5) == pytest.approx(1.0 / 3.0, rel=1e-12)
    assert gate.all_busy_prob(4, 0.0) == 0.0 and gate.all_busy_prob(4, 1.0) == 1.0


@pytest.mark.parametrize("servers", [1, 3, 6])
def test_the_operating_batch_balances_restarts_and_empty_takes(catalog, servers):
    """At the operating batch b, each empty take restarts an idle instance with one chunk
    and an arrival waits only when all are busy: n̄ P0 = (1 - π) b, with π the Erlang C
    of the busy share u = Λ S(b) / b and P0 over arrivals thinned by π / u."""
    _, _, mix = _mix(catalog)
    tokens_per_s = 0.6 * mix.budget_tokens / mix.step_s(mix.budget_tokens)
    b = mix.operating_tokens(tokens_per_s, servers)
    assert mix.mean_chunk_tokens < b < mix.budget_tokens  # an interior fixed point
    law = mix.step_law(tokens_per_s, b, servers)
    busy = tokens_per_s * law.mean_s / b
    waits = gate.all_busy_prob(servers, busy)
    rate = tokens_per_s * servers / mix.mean_tokens
    empty = law.empty_take_prob(rate * waits / busy)
    assert mix.mean_chunk_tokens * empty == pytest.approx((1 - waits) * b, rel=1e-3)
    if servers > 1:  # fewer arrivals wait than one instance's busy share says
        assert waits < busy and not math.isclose(waits, busy)
