"""MD's decode-side cache as an LRU curve, routing on MD's side, and the feedback: hand
values of the curve, the old rule kept where MD's cache is unlimited, and on the paper's
deployment WAN load and relay utilisation rising as the cache shrinks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model import decode_cache as dc
from pdd_plan.model import routing as rt
from pdd_plan.model.deployment import RoutingPolicy
from pdd_plan.model.evaluate import snapshot
from pdd_plan.model.scenario import PrefixReuse, ShortOutputCutoff
from pdd_plan.model.setup import prepare
from pdd_plan.model.workload.workload import RequestClasses

RESOLUTION = (1, 10, 24)
CURVE = PrefixReuse((1e6, 4e6, 16e6, 64e6), (0.15, 0.48, 0.90, 1.0), 10.0)


@pytest.fixture(scope="module")
def paper(catalog):
    return load_scenario(resolve_scenario_path("pdd-paper"), catalog)


@pytest.fixture(scope="module")
def paper_plan(catalog, paper):
    return load_plan(scenarios_dir() / "plans" / "pdd-paper-pdd.yaml", paper, catalog)


def _with_capacity(scenario, capacity):
    policy = dataclasses.replace(scenario.policy, decode_cache_capacity_tokens=capacity)
    return dataclasses.replace(scenario, policy=policy)


def test_the_measured_curve_by_hand():
    # 2e6 is halfway between 1e6 and 4e6 in log capacity: 0.15 + (0.48 - 0.15) / 2
    assert dc.curve_resident_frac(CURVE, 2e6, 10.0) == pytest.approx(0.315)
    # at twice the rate the same cache spans half the time: 4e6 at 20/s reads 2e6 at 10/s
    assert dc.curve_resident_frac(CURVE, 4e6, 20.0) == pytest.approx(0.315)
    assert dc.curve_resident_frac(CURVE, 16e6, 10.0) == pytest.approx(0.90)
    assert dc.curve_resident_frac(CURVE, 1e12, 10.0) == 1.0  # above the last point
    # below the first point nothing whole is held: 0 (at 10/s, and 1e6 at 40/s reads 2.5e5)
    assert dc.curve_resident_frac(CURVE, 0.5e6, 10.0) == 0.0
    assert dc.curve_resident_frac(CURVE, 1e6, 40.0) == 0.0
    assert dc.curve_resident_frac(CURVE, 1e6, 10.0) == pytest.approx(0.15)


def test_the_parametric_default_at_hand_computed_points():
    rate, mean_in = 50.0, 65536.0
    median_capacity = rate * mean_in * 300.0  # tokens arriving over the median interval
    assert dc.parametric_resident_frac(median_capacity, rate, mean_in) == pytest.approx(0.5)
    # one sigma (a factor e) more capacity: Phi(1) = 0.841345
    one_sigma = dc.parametric_resident_frac(median_capacity * math.e, rate, mean_in)
    assert one_sigma == pytest.approx(0.841345, abs=1e-6)
    assert dc.resident_frac(None, rate, mean_in) == 1.0  # unlimited: every prefix held
    assert dc.resident_frac(2e6, 10.0, 1.0, CURVE) == pytest.approx(0.315)  # the curve wins


def test_split_keeps_the_weights_and_marks_residency():
    c = RequestClasses(np.array([100.0, 200.0]), np.array([5.0, 6.0]), np.array([0.5, 0.9]),
                       np.array([0.25, 0.75]))  # fmt: skip
    split, resident = dc.split_resident(c, 0.8)
    assert split.weight == pytest.approx([0.2, 0.6, 0.05, 0.15])
    assert list(resident) == [1, 1, 0, 0]
    assert dc.split_resident(c, 1.0)[0] is c  # unsplit: no more classes than needed


def test_routing_reads_md_side_bytes(catalog):
    """Fixed input and MD holding P's prefix: the old rule (P's hit < threshold relays).
    A request whose prefix MD lacks ships its whole prompt and is relayed, whatever P's
    hit rate."""
    model = catalog.model("deepseek_v4_pro")
    n_in = 65536.0
    hits = np.array([0.5, 0.94, 0.96, 0.99])
    c = RequestClasses(np.full(4, n_in), np.full(4, 300.0), hits, np.full(4, 0.25))
    policy = RoutingPolicy(rld_hit_threshold=0.95)
    held = rt.route("pdd", c, policy, ShortOutputCutoff(), model, "fp8", 1.0)
    assert list(held.path) == [rt.RELAY, rt.RELAY, rt.DIRECT, rt.DIRECT]
    lacked = rt.route("pdd", c, policy, ShortOutputCutoff(), model, "fp8", np.zeros(4))
    assert list(lacked.path) == [rt.RELAY] * 4
    whole = rt.kv_payload_bytes(model, "fp8", n_in, n_in)
    assert lacked.wan_payload_bytes == pytest.approx(np.full(4, whole))


def test_the_feedback_smaller_md_cache_more_wan_and_relay(catalog, paper, paper_plan):
    """The paper's deployment, fixed plan: as MD's cache shrinks, more requests lack
    their prefix on MD, ship it whole and are relayed. Capacities around the parametric
    median (50/s x 65,536 tokens x 300 s = 9.8e8 tokens) scaled so the line still copes."""
    model = catalog.model_for(paper)
    wan, relay_util, relayed = [], [], []
    for capacity in (None, 3e10, 1.5e10, 1e10, 7e9):
        setup = prepare(_with_capacity(paper, capacity), paper_plan, model, catalog.gpus,
                        catalog.lines, RESOLUTION)  # fmt: skip
        snap = snapshot(setup, paper.workload.arrival_rate_per_s)
        wan.append(snap.wan_mean_bits_per_s)
        relay_util.append(snap.utilization_frac["relay_decode"])
        relayed.append(float(setup.classes.weight[setup.routes.path == rt.RELAY].sum()))
    assert all(b > a for a, b in zip(wan, wan[1:], strict=False)), wan
    assert all(b > a for a, b in zip(relay_util, relay_util[1:], strict=False)), relay_util
    assert all(b > a for a, b in zip(relayed, relayed[1:], strict=False)), relayed
    # by hand at 7e9 tokens: p = Phi(ln(7e9 / (50 x 65,536)) - ln 300) = Phi(1.963) = 0.975;
    # the non-resident 2.5 % all relay (their whole prompt is past the 0.95 threshold)
    p = 0.5 * math.erfc(-(math.log(7e9 / (50 * 65536)) - math.log(300)) / math.sqrt(2))
    assert relayed[-1] == pytest.approx(relayed[0] + (1 - p) * (1 - relayed[0]), abs=1e-9)


def test_three_way_split_after_a_cut_off_turn():
    c = RequestClasses(np.array([1000.0]), np.array([5.0]), np.array([0.9]), np.array([1.0]))
    split, resident, extra = dc.split_md_view(c, 0.8, 0.1, 250.0)
    # resident after an ordinary turn 0.8 x 0.9, after a cut-off turn 0.8 x 0.1, not 0.2
    assert split.weight == pytest.approx([0.72, 0.08, 0.2])
    assert list(resident) == [1, 1, 0] and list(extra) == [0, 250, 0]
    held = rt.route("cdc_pd", split, RoutingPolicy(), ShortOutputCutoff(), _model_stub(), "fp8",
                    resident, md_extra_missing_tokens=extra)  # fmt: skip
    # MD lacks 100 tokens, 100 + 250, and all 1,000
    assert list(held.wan_payload_bytes) == [100.0, 350.0, 1000.0]


def _model_stub():
    """A model whose shipped KV is 1 byte per token with nothing fixed."""

    class Stub:
        def kv_bytes_per_token(self, dtype):
            return 1.0

        def shipped_bytes_per_token(self, dtype):
            return 1.0

        def kv_bytes(self, total, dtype):
            return np.asarray(total, float)

    return Stub()


@pytest.mark.parametrize("capacity, cutoff", [(None, True), (1e10, False), (7e9, True)])
def test_simulator_draws_agree_with_the_closed_form_split(catalog, paper, paper_plan, capacity,
                                                          cutoff):  # fmt: skip
    """The simulator's own mechanism (Bernoulli residency, a previous turn cut off with the
    run's cut-off share, its added tokens drawn from the run's cut-off requests) against
    the closed form's split: mean WAN bytes and relayed share over 40,000 requests."""
    from pdd_plan.sim.run import _routes
    from pdd_plan.sim.sampling import draw_requests

    s = _with_capacity(paper, capacity)
    s = dataclasses.replace(s, policy=dataclasses.replace(
        s.policy, short_output_cutoff=ShortOutputCutoff(cutoff)))  # fmt: skip
    plan = dataclasses.replace(paper_plan, policy=dataclasses.replace(
        paper_plan.policy, short_output_cutoff=cutoff))  # fmt: skip
    setup = prepare(s, plan, catalog.model_for(s), catalog.gpus, catalog.lines)
    c, r = setup.classes, setup.routes
    rate = s.workload.arrival_rate_per_s
    req = draw_requests(s.workload, rate, 40_000, np.random.default_rng(1))
    drawn = _routes(setup, req, rate, seed=1)
    assert drawn.wan_payload_bytes.mean() == pytest.approx(c.mean(r.wan_payload_bytes), rel=0.03)
    relayed = float(c.weight[r.path == rt.RELAY].sum())
    assert (drawn.path == rt.RELAY).mean() == pytest.approx(relayed, abs=0.01)
