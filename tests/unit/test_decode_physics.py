"""Decode, relay and handoff physics (issue #11): slots from KV bytes, the slot wait,
relay occupancy by Little's law with overflow, the handoff's parts, TPOT and gap spread.
Each expectation is derived by hand or from a published figure, not from the code."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model import routing as rt
from pdd_plan.model.decode.decode_admission import (
    admission_wait,
    merge_waits,
    reserved_tokens,
    slots_per_instance,
    support_max,
)
from pdd_plan.model.decode.handoff import (
    DEFAULT_ENGINE_FIXED_S,
    PUBLISHED_HANDOFF_RTT_S,
    PUBLISHED_HANDOFF_TOKENS,
    PUBLISHED_RECOMPUTE_HANDOFF_S,
    Handoff,
    catch_up_extra_tokens,
)
from pdd_plan.model.evaluate import prepare, snapshot
from pdd_plan.model.queueing.queueing import WaitModel
from pdd_plan.model.workload.workload import Bins, Fixed, TruncatedLognormal

RESOLUTION = (1, 10, 24)


@pytest.fixture(scope="module")
def paper(catalog):
    return load_scenario(resolve_scenario_path("pdd-paper"), catalog)


# the paper scenario at the top of its decode KV range (the whole context uncompressed,
# 2.4 GB a request): decode holds few requests, so slots bind before the TPOT cap
OWN_LAYOUT, ALL_UNCOMPRESSED = "kv_uncompressed_tokens: 128", "kv_uncompressed_tokens: all"


@pytest.fixture(scope="module")
def paper_hbm_bound(catalog, tmp_path_factory):
    text = resolve_scenario_path("pdd-paper").read_text()
    assert OWN_LAYOUT in text
    path = tmp_path_factory.mktemp("paper") / "paper.yaml"
    path.write_text(text.replace(OWN_LAYOUT, ALL_UNCOMPRESSED))
    return load_scenario(path, catalog)


def _setup(catalog, scenario, arch, resolution=RESOLUTION, **policy):
    plan = load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", scenario, catalog)
    if policy:
        plan = dataclasses.replace(plan, policy=dataclasses.replace(plan.policy, **policy))
    model = catalog.model_for(scenario)
    return prepare(scenario, plan, model, catalog.gpus, catalog.lines, resolution)


def test_slots_are_the_kv_room_over_a_request_s_whole_context(catalog, paper):
    """One class of 65,536 + 1,000 tokens: K = the requests of 66,536 tokens that fit HBM
    (roofline max_batch counts the same bytes), unless the count cap is lower."""
    inst = _setup(catalog, paper, "idc_pd").decode.instance
    reserve = reserved_tokens(np.array([65_536.0]), np.array([1_000.0]), None)
    assert slots_per_instance(inst, reserve, np.array([1.0]), 10**9) == inst.max_batch(66_536)
    assert slots_per_instance(inst, reserve, np.array([1.0]), 7) == 7


def test_reserving_the_maximum_output_admits_fewer(catalog, paper):
    inst = _setup(catalog, paper, "idc_pd").decode.instance
    own = reserved_tokens(np.array([65_536.0]), np.array([1_000.0]), None)
    most = reserved_tokens(np.array([65_536.0]), np.array([1_000.0]), 5_576.0)
    k_own = slots_per_instance(inst, own, np.array([1.0]), 10**9)
    k_most = slots_per_instance(inst, most, np.array([1.0]), 10**9)
    assert k_most == inst.max_batch(65_536 + 5_576) < k_own


def test_support_max_is_the_upper_edge():
    assert support_max(Fixed(7.0)) == 7.0
    assert support_max(Bins((1, 100), (100, 5576), (0.5, 0.5))) == 5576
    assert support_max(TruncatedLognormal(1.0, 8192.0, 400.0, 1.2)) == 8192.0


def test_slot_wait_is_erlang_c_for_exponential_service():
    """M/M/c (cv2 = 1 both ways): P(wait) = Erlang-C. c = 2, a = 1: C = 1/3 (textbook);
    mean wait C / (c mu - lambda) = (1/3) / (2 - 1) with mu = 1/s, lambda = 1/s."""
    service = np.array([0.5, 1.5])  # mean 1 s, cv2 0.25; arrivals cv2 1.75: z = 1
    exp_like = admission_wait(1.0, service, np.array([0.5, 0.5]), 2, 1.75, "t")
    assert exp_like.wait.prob_wait == pytest.approx(1 / 3, rel=1e-9)  # z = (1.75 + 0.25)/2 = 1
    assert exp_like.wait.mean_s() == pytest.approx(1 / 3, rel=1e-9)


def test_slot_wait_vanishes_as_load_vanishes():
    waits = [
        admission_wait(rate, np.array([30.0]), np.array([1.0]), 1920, 1.0, "t").wait.mean_s()
        for rate in (0.01, 1.0, 30.0, 60.0, 63.0)
    ]
    assert waits[0] < 1e-12
    assert all(a <= b + 1e-15 for a, b in zip(waits, waits[1:], strict=False))
    assert waits[-1] > 0.01  # 63 req/s x 30 s = 1,890 of 1,920 slots busy


def test_merged_waits_keep_the_mean_and_the_chance_of_waiting():
    a, b = WaitModel(0.2, 10.0), WaitModel(0.5, 2.0)  # means 0.02 s and 0.25 s
    m = merge_waits(a, b)
    assert m.mean_s() == pytest.approx(0.27)
    assert m.prob_wait == pytest.approx(1 - 0.8 * 0.5)
    assert merge_waits(WaitModel.none(), b) == b


def test_published_handoff_constant_rederived_from_the_roofline(catalog, paper):
    """305.2 ms (100-token recompute handoff) = RTT 30 ms + half an idle MD step + the extend
    step of 100 tokens at batch 1 + the fixed engine cost."""
    md = _setup(catalog, paper, "pdd").decode.instance
    step = float(md.decode_step_s(1, 65_536))
    extend = float(md.extend_decode_s(1, PUBLISHED_HANDOFF_TOKENS, 65_536 + 100))
    fixed = PUBLISHED_RECOMPUTE_HANDOFF_S - PUBLISHED_HANDOFF_RTT_S - step / 2 - extend
    assert pytest.approx(fixed, abs=1e-3) == DEFAULT_ENGINE_FIXED_S


def test_catch_up_tokens_are_handoff_and_stop_trip_over_relay_step():
    """MD's 20 ms extend lets at most one of RLD's 30 ms tokens through: caught up at once,
    RLD hears the stop one way (15 ms) after the handoff: (295.6 + 15) / 30 tokens."""
    h = Handoff(0.030, 0.2356, 0.0, 0.010, np.array([0.020]), 0.015, 0.020)
    assert catch_up_extra_tokens(h, 0.030)[0] == pytest.approx(0.3106 / 0.030)


def test_one_shot_gap_is_the_handoff_and_stays_under_half_a_second(catalog, paper):
    """Published: a one-shot dip under 0.5 s for 1K-token outputs. The handoff is the RTT +
    fixed cost + half an MD step + the extend step: at least 0.1 s, at most 0.5 s here."""
    setup = _setup(catalog, paper, "pdd", handoff="one_shot")
    snap = snapshot(setup, 30.0)
    parts = snap.handoff_s
    total = sum(parts.values())
    assert parts["message_s"] == pytest.approx(0.030)
    assert parts["engine_fixed_s"] == pytest.approx(DEFAULT_ENGINE_FIXED_S)
    assert 0.1 < total < 0.5
    assert snap.max_gap_s == pytest.approx(total, rel=0.1)


def test_catch_up_relays_more_tokens_than_one_shot_by_the_handoff(catalog, paper):
    one = snapshot(_setup(catalog, paper, "pdd", handoff="one_shot"), 30.0)
    catch = snapshot(_setup(catalog, paper, "pdd", handoff="catch_up"), 30.0)
    assert catch.rld_token_share_frac > one.rld_token_share_frac
    assert catch.max_gap_s < one.max_gap_s  # no visible stall


def test_relay_occupancy_is_littles_law_and_overflow_is_zero_below_capacity(catalog, paper):
    """At a low rate RLD's batch = (relayed requests/s) x (mean hold) per instance, a hold
    being the WAN transfer + the handoff (catch-up), short outputs finishing first; and
    nothing overflows."""
    from pdd_plan.model.decode_side import decode_side

    setup = _setup(catalog, paper, "pdd", handoff="catch_up")
    c = setup.classes
    wan = np.full(len(c), 2.0)
    side = decode_side(setup, 5.0, wan, 0.1)
    rl = side.relay
    relay = setup.routes.path == rt.RELAY
    hold = np.minimum(2.0 + side.handoff.total_s, c.output_tokens * rl.step_s)
    by_hand = 5.0 * float(np.dot(c.weight[relay], hold[relay])) / setup.relay.group.count
    assert rl.batch == pytest.approx(by_hand, rel=0.05)
    assert rl.overflow_frac < 1e-9


def test_relay_overflows_when_offered_more_than_its_slots(catalog, paper_hbm_bound):
    """A WAN transfer of 400 s: relayed requests hold RLD for their whole output. Offered
    a = rate x E[hold] erlangs to c slots, a loss system turns away at least 1 - c/a of
    them, and the pool never carries more than its slots."""
    from pdd_plan.model.decode_side import decode_side

    setup = _setup(catalog, paper_hbm_bound, "pdd")
    c = setup.classes
    side = decode_side(setup, 20.0, np.full(len(c), 400.0), 0.1)
    rl = side.relay
    relay = setup.routes.path == rt.RELAY
    offered = 20.0 * float(np.dot(c.weight[relay], c.output_tokens[relay])) * rl.step_s
    slots = rl.slots * setup.relay.group.count
    assert offered > slots
    assert rl.overflow_frac >= 1 - slots / offered - 0.01
    assert rl.batch <= rl.slots + 1e-9
    assert snapshot_ok(setup)


def snapshot_ok(setup) -> bool:
    return np.isfinite(snapshot(setup, 20.0).ttft_s["p90"])


def test_tpot_percentiles_spread_where_the_batch_varies(catalog):
    """The default scenario's decode step depends on its batch: its TPOT percentiles are no
    longer one number (the issue's 42.8 / 42.8 / 42.8 ms)."""
    s = load_scenario(resolve_scenario_path("default"), catalog)
    plan = load_plan(
        scenarios_dir().parent / "benchmarks" / "agreement" / "default-pdd.yaml", s, catalog
    )
    setup = prepare(s, plan, catalog.model_for(s), catalog.gpus, catalog.lines)
    t = snapshot(setup, 16.0).tpot_s
    assert t["p50"] < t["p90"] < t["p99"]
    assert t["p99"] / t["p50"] > 1.0


def test_colocated_largest_gap_is_a_prefill_pause(catalog, paper):
    """On a colocated instance a prefill pauses decoding: the largest gap a request sees is
    a step + a prefill (tenths of a second at 64K), not one step (tens of ms)."""
    plan = load_plan(
        scenarios_dir().parent / "benchmarks" / "agreement" / "paper-colocated.yaml",
        paper,
        catalog,
    )
    setup = prepare(paper, plan, catalog.model_for(paper), catalog.gpus, catalog.lines, RESOLUTION)
    snap = snapshot(setup, 60.0)
    prefill = np.asarray(
        setup.prefill.instance.prefill_time_s(
            setup.classes.uncached_tokens, setup.classes.cached_tokens
        )
    )
    assert snap.largest_gap_s["p90"] > float(np.median(prefill))
    assert snap.tpot_s["p99"] > snap.tpot_s["p50"]


def _paper_with_engine_keys(tmp_path, extra: str):
    text = resolve_scenario_path("pdd-paper").read_text().replace(OWN_LAYOUT, ALL_UNCOMPRESSED)
    anchor = "engine:\n"
    assert anchor in text
    path = tmp_path / "paper.yaml"
    path.write_text(text.replace(anchor, anchor + extra, 1))
    return path


def test_scenario_sets_the_handoff_cost_and_the_reservation(catalog, tmp_path):
    """engine.handoff_fixed_ms (with its source) replaces the published default in the
    handoff; engine.reserve_max_output makes MD reserve 5,576 output tokens: fewer slots."""
    from pdd_plan.model.decode_side import decode_side

    extra = (
        "  handoff_fixed_ms: 100\n  handoff_fixed_source: 'our bench'\n  reserve_max_output: true\n"
    )
    s = load_scenario(_paper_with_engine_keys(tmp_path, extra), catalog)
    assert s.engine.handoff_fixed_s == pytest.approx(0.1)
    assert s.engine.reserve_max_output is True
    mine = _setup(catalog, s, "pdd")
    base = _setup(catalog, load_scenario(_paper_with_engine_keys(tmp_path, ""), catalog), "pdd")
    assert snapshot(mine, 20.0).handoff_s["engine_fixed_s"] == pytest.approx(0.1)
    zero = np.zeros(len(mine.classes))
    assert decode_side(mine, 20.0, zero, 0.1).md_slots < decode_side(base, 20.0, zero, 0.1).md_slots


def test_a_handoff_cost_without_its_source_is_refused(catalog, tmp_path):
    from pdd_plan.errors import InputError

    path = _paper_with_engine_keys(tmp_path, "  handoff_fixed_ms: 100\n")
    with pytest.raises(InputError, match="handoff_fixed_source"):
        load_scenario(path, catalog)


def test_colocated_requests_queue_at_their_own_instance(catalog, paper):
    """A colocated request decodes where it was prefilled: each instance is its own queue
    of K slots at 1/n of the arrivals, which waits longer than one pool of n x K slots at
    the same load (pooling shortens waits)."""
    from pdd_plan.model.decode_side import decode_side

    plan = load_plan(
        scenarios_dir().parent / "benchmarks" / "agreement" / "paper-colocated.yaml",
        paper,
        catalog,
    )
    setup = prepare(paper, plan, catalog.model_for(paper), catalog.gpus, catalog.lines, RESOLUTION)
    c, n = setup.classes, setup.decode.group.count
    assert n > 1
    side = decode_side(setup, 100.0, np.zeros(len(c)), 0.3)
    service = side.md_tokens * side.md_step_s
    pooled = admission_wait(100.0, service, side.md_weights, n * side.md_slots, 1.0, "pooled")
    assert side.md_admission.servers == side.md_slots
    assert side.md_admission.wait.mean_s() >= pooled.wait.mean_s()


def test_slot_wait_far_below_saturation_is_finite():
    """20,000 slots at 70 % load: beta = 0.3 sqrt(20,000) = 42, where the Halfin-Whitt
    density underflows; the chance of waiting is then ~0, never a division by zero."""
    far = admission_wait(14_000.0, np.array([1.0]), np.array([1.0]), 20_000, 0.5, "t")
    assert 0.0 <= far.wait.prob_wait < 1e-12
    near = admission_wait(99_900.0, np.array([1.0]), np.array([1.0]), 100_000, 0.5, "t")
    assert 0.0 < near.wait.prob_wait < 1.0  # z = 0.25 < 1: less waiting than M/M/c
