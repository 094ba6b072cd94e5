"""The short-output cut-off with its published meaning (pdd-system.md §5): selected by
P-side uncached input bytes per output token, finished beside prefill, shipping nothing
over the line; and the scenario keys of the cut-off and of MD's LRU curve."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model import routing as rt
from pdd_plan.model.evaluate import snapshot
from pdd_plan.model.scenario import ShortOutputCutoff
from pdd_plan.model.setup import prepare
from pdd_plan.sim.run import SimConfig, simulate

RESOLUTION = (1, 10, 24)
# the paper scenario's published mixes (scenarios/pdd-paper.yaml, pdd-system.md §3)
HIT_BINS = ((0.02, 0.30, 0.045), (0.30, 0.70, 0.035), (0.70, 0.90, 0.06), (0.90, 0.95, 0.11),
            (0.95, 0.99, 0.75))  # fmt: skip
PROMPT_TOKENS = 65536


@pytest.fixture(scope="module")
def paper(catalog):
    return load_scenario(resolve_scenario_path("pdd-paper"), catalog)


def _cutoff_on(catalog, scenario, threshold=None):
    policy = dataclasses.replace(
        scenario.policy, short_output_cutoff=ShortOutputCutoff(True, threshold)
    )
    s = dataclasses.replace(scenario, policy=policy)
    plan = load_plan(scenarios_dir() / "plans" / "pdd-paper-pdd.yaml", s, catalog)
    plan = dataclasses.replace(
        plan, policy=dataclasses.replace(plan.policy, short_output_cutoff=True)
    )
    return s, plan


def _output_cdf(x):
    """P(output <= x): uniform in [1, 100) 30 %, [100, 500) 41.7 %, [500, 5576) 28.3 %."""
    x = np.asarray(x, float)
    return (np.clip(0.30 * (x - 1) / 99, 0, 0.30) + np.clip(0.417 * (x - 100) / 400, 0, 0.417)
            + np.clip(0.283 * (x - 500) / 5076, 0, 0.283))  # fmt: skip


def test_default_threshold_is_the_line_against_the_decode(paper):
    """0.12 Gbit/s per connection = 15 MB/s; the TPOT limit 50 ms: 750 kB per output token
    (a transfer of more lasts longer than decoding the whole output on RLD)."""
    assert rt.resolved_cutoff(paper).min_uncached_bytes_per_output_token == pytest.approx(750e3)


def test_cutoff_share_on_the_paper_workload_by_hand(catalog, paper):
    """Integrated over the published bins: a request at hit h ships b (1 - h) 65,536 + f
    bytes (b bytes per token, f the parts that do not grow), cut off when its output is at
    most that / 750 kB. The default gives about 10 %, not the interview's 3-4 %: 30 % of
    the paper's outputs are under 100 tokens and every prompt is 64K (see the report)."""
    model = catalog.model_for(paper)
    per_token = model.shipped_bytes_per_token("fp8")
    fixed = float(rt.kv_payload_bytes(model, "fp8", 0.0, float(PROMPT_TOKENS)))
    hand = 0.0
    for low, high, share in HIT_BINS:
        h = low + (high - low) * (np.arange(4000) + 0.5) / 4000
        shipped = per_token * PROMPT_TOKENS * (1 - h) + fixed
        hand += share * float(_output_cdf(shipped / 750e3).mean())
    s, plan = _cutoff_on(catalog, paper)
    setup = prepare(s, plan, model, catalog.gpus, catalog.lines, RESOLUTION)
    local = setup.routes.path == rt.LOCAL
    assert float(setup.classes.weight[local].sum()) == pytest.approx(hand, abs=0.005)
    assert 0.09 < hand < 0.11


def test_cutoff_requests_ship_nothing_and_the_next_turn_pays(catalog, paper):
    """Closed form: cut-off classes go LOCAL with no WAN bytes (RDMA to RLD only). A share
    s of the others (next turns of cut-off conversations) lack on MD, besides their own
    uncached tokens u, what a cut-off turn added: E[u + output] over the cut-off classes.
    Mean bytes by hand from the unsplit classes: sum over kept classes of
    w [(1 - s) B(u) + s B(min(input, u + E[u + output]))], B the bytes of so many tokens.
    The line carries less: each cut-off skips a transfer's fixed part (4.0 MB of windowed
    and recurrent state on this model) and adds only its output's KV to the next turn's
    (at most 388 tokens x 4,474 B = 1.7 MB)."""
    model = catalog.model_for(paper)
    s, plan = _cutoff_on(catalog, paper)
    setup = prepare(s, plan, model, catalog.gpus, catalog.lines, RESOLUTION)
    local = setup.routes.path == rt.LOCAL
    assert np.all(setup.routes.wan_payload_bytes[local] == 0)
    assert np.all(setup.routes.rdma_payload_bytes[local] > 0)
    plain = load_plan(scenarios_dir() / "plans" / "pdd-paper-pdd.yaml", paper, catalog)
    off = prepare(paper, plain, model, catalog.gpus, catalog.lines, RESOLUTION)
    c, own = off.classes, off.routes.wan_payload_bytes  # unsplit: MD holds every prefix
    cut = rt.cutoff_mask("pdd", c, plan.policy, rt.resolved_cutoff(s), model, "fp8")
    share = float(c.weight[cut].sum())
    added = float(np.average((c.uncached_tokens + c.output_tokens)[cut], weights=c.weight[cut]))
    lacking = np.minimum(c.input_tokens, c.uncached_tokens + added)
    after_cut = rt.kv_payload_bytes(model, "fp8", lacking, c.input_tokens)
    mean_bytes = float(np.dot(c.weight[~cut], (1 - share) * own[~cut] + share * after_cut[~cut]))
    rate = paper.workload.arrival_rate_per_s
    on_snap, off_snap = snapshot(setup, rate), snapshot(off, rate)
    assert on_snap.wan_mean_bits_per_s == pytest.approx(rate * 8 * mean_bytes, rel=1e-9)
    assert on_snap.wan_mean_bits_per_s < off_snap.wan_mean_bits_per_s


def test_the_simulator_ships_nothing_for_cut_off_requests(catalog, paper):
    s, plan = _cutoff_on(catalog, paper)
    setup = prepare(s, plan, catalog.model_for(s), catalog.gpus, catalog.lines)
    tr = simulate(setup, SimConfig(400, seed=5)).trace
    local = tr.path == rt.LOCAL
    assert 0.05 < local.mean() < 0.2  # about the closed form's 10 %
    assert np.all(tr.wan_payload_bytes[local] == 0)
    assert np.all(tr.main_tokens[local] == 0)  # decoded wholly beside prefill
    assert np.array_equal(tr.local_tokens[local], tr.requests.output_tokens[local].astype(int))


# ---- scenario keys -----------------------------------------------------------------------
def _scenario(tmp_path, policy=None, workload=None):
    data = yaml.safe_load(resolve_scenario_path("pdd-paper").read_text())
    data.pop("plan", None)
    data["policy"].update(policy or {})
    data["workload"].update(workload or {})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_prefix_reuse_and_cutoff_threshold_are_read(tmp_path, catalog):
    path = _scenario(
        tmp_path,
        {"short_output_cutoff": {"enabled": True, "min_uncached_bytes_per_output_token": 2e5}},
        {"prefix_reuse": {"capacity_tokens": [1.0e6, 4.0e6], "resident_frac": [0.2, 0.9],
                          "at_arrival_rate_per_s": 10}},
    )  # fmt: skip
    s = load_scenario(path, catalog)
    assert s.policy.short_output_cutoff == ShortOutputCutoff(True, 2e5)
    assert s.workload.prefix_reuse.capacity_tokens == (1e6, 4e6)
    assert s.workload.prefix_reuse.resident_frac == (0.2, 0.9)
    assert s.workload.prefix_reuse.at_arrival_rate_per_s == 10


@pytest.mark.parametrize(
    "policy, workload, key_path, expected",
    [
        ({"short_output_cutoff": {"enabled": True, "max_output_tokens": 500}}, {},
         "policy.short_output_cutoff.max_output_tokens", "min_uncached_bytes_per_output_token"),
        ({}, {"prefix_reuse": {"capacity_tokens": [4e6, 1e6], "resident_frac": [0.2, 0.9],
                               "at_arrival_rate_per_s": 10}},
         "workload.prefix_reuse.capacity_tokens[1]", "ascending"),
        ({}, {"prefix_reuse": {"capacity_tokens": [1e6, 4e6], "resident_frac": [0.9, 0.2],
                               "at_arrival_rate_per_s": 10}},
         "workload.prefix_reuse.resident_frac[1]", "non-decreasing"),
        ({}, {"prefix_reuse": {"capacity_tokens": [1e6, 4e6], "resident_frac": [0.2, 1.5],
                               "at_arrival_rate_per_s": 10}},
         "workload.prefix_reuse.resident_frac[1]", "<= 1"),
        ({}, {"prefix_reuse": {"capacity_tokens": [1e6], "resident_frac": [0.2, 0.5],
                               "at_arrival_rate_per_s": 10}},
         "workload.prefix_reuse.resident_frac", "as long as capacity_tokens"),
        ({}, {"prefix_reuse": {"capacity_tokens": [1e6], "resident_frac": [0.2],
                               "at_arrival_rate": 10}},
         "workload.prefix_reuse.at_arrival_rate", "at_arrival_rate_per_s"),
    ],
)  # fmt: skip
def test_bad_keys_one_line_each(tmp_path, catalog, policy, workload, key_path, expected):
    path = _scenario(tmp_path, policy, workload)
    with pytest.raises(InputError) as err:
        load_scenario(path, catalog)
    first = err.value.problems[0]  # a misspelt required key also reports the key missing
    assert first.key_path == key_path, str(err.value)
    assert expected in f"{first.expected} {first.hint}", str(err.value)
