"""The decode-side cache tier as a priced decision (issue #12 item 3, and "solve responds
by buying cache, relay or line, stated in explain").

A two-datacenter 32B case (TINY below, 2 req/s): with no decode-side cache every request
ships its whole prefix, about 2 x 4,533 tokens x 262,144 B x 8 = 19.0 Gbit/s, two 10G
lines at least. The cache is a total on the main-decode side: 1 TB holds 1e12 / 262,144 =
3.81 M tokens, 420 s of the 9,066 tokens/s inflow, so under the default reuse curve
(lognormal, median 300 s, sigma 1) Phi(ln(420 / 300)) = 63 % of prefixes stay resident,
and 2 TB keeps 85 %. Each expectation below is derived from those figures and the
catalog's prices, not from what the code printed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import pytest
import yaml

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.plan.cache_response import cache_response, cost_parts
from pdd_plan.plan.solve import solve
from pdd_plan.report.bom_items import bill

# a two-datacenter case that solves in seconds (the hardening tests' tiny scenario)
TINY = {
    "name": "tiny",
    "model": "qwen3_32b",
    "datacenters": [
        {"id": "dc_a", "roles": ["prefill", "relay_decode", "decode", "colocated"],
         "gpus": [{"gpu": "h100_sxm", "max_gpus": 64, "gpus_per_instance": [1, 2]}]},
        {"id": "dc_b", "roles": ["main_decode"],
         "gpus": [{"gpu": "l40s", "max_gpus": 64, "gpus_per_instance": [2]}]},
    ],
    "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "max_lines": 4},
    "workload": {
        "arrival_rate_per_s": 2,
        "input_tokens": {"kind": "lognormal", "median": 4000, "sigma": 0.5, "low": 256,
                         "high": 16384},
        "output_tokens": {"kind": "lognormal", "median": 200, "sigma": 0.5, "low": 8,
                          "high": 1024},
        "prefix_hit_rate": {"kind": "bins", "bins": [
            {"low": 0.0, "high": 0.3, "share": 0.05}, {"low": 0.3, "high": 0.7, "share": 0.05},
            {"low": 0.7, "high": 0.9, "share": 0.1}, {"low": 0.9, "high": 0.99, "share": 0.8}]},
    },
    "sla": {"ttft_p90_s": 5, "tpot_p90_ms": 100},
    "objective": {"kind": "min_cost"},
}  # fmt: skip
RESOLUTION = (4, 6, 12)
TIME_LIMIT_S = 60.0
HOURS_PER_MONTH = 730.0
# qwen3_32b: 64 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes (bf16)
KV_BYTES_PER_TOKEN = 64 * 8 * 128 * 2 * 2


def _scenario(tmp_path, sizes, name="cache"):
    data = copy.deepcopy(TINY)
    data["policy"] = {"decode_cache": {"tiers": ["dram"], "tb_total": sizes}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path, load_scenario(path, Catalog())


def _priced(s, usd_per_tb_month: float):
    options = dataclasses.replace(s.policy.decode_cache, price_usd_per_tb_month=(usd_per_tb_month,))
    return dataclasses.replace(s, policy=dataclasses.replace(s.policy, decode_cache=options))


def _solve(s):
    cat = Catalog()
    return solve(s, cat.model_for(s), cat.gpus, cat.lines, "pdd", RESOLUTION, TIME_LIMIT_S)


def _lines(deployment) -> int:
    return sum(line.count for line in deployment.lines)


@pytest.fixture(scope="module")
def no_cache(tmp_path_factory):
    """The best plan when the scenario offers no cache tier (0 TB only)."""
    _, s = _scenario(tmp_path_factory.mktemp("none"), [0])
    return _solve(s)


def test_the_model_s_kv_bytes_are_the_hand_figure():
    cat = Catalog()
    assert cat.model("qwen3_32b").kv_bytes_per_token("bf16") == KV_BYTES_PER_TOKEN


@pytest.mark.slow
def test_without_a_cache_the_line_carries_every_prefix(no_cache):
    # 2 req/s x E[input] (lognormal median 4,000, sigma 0.5: mean 4,000 e^0.125 = 4,533)
    # x 262,144 B x 8 bits: 19.0 Gbit/s, more than one 10G line can carry
    bits = 2 * 4000 * math.exp(0.5**2 / 2) * KV_BYTES_PER_TOKEN * 8
    assert no_cache.status == "optimal"
    assert _lines(no_cache.deployment) >= math.ceil(bits / 10e9)
    assert no_cache.deployment.decode_cache.tb == 0


@pytest.mark.slow
def test_a_cheap_tier_is_bought_and_saves_line_and_relay(tmp_path, no_cache):
    _, s = _scenario(tmp_path, [0, 1, 2])
    # the catalog's DRAM price, $486/TB-month: 1 TB costs 486 / 730 = $0.67/h, 2 TB $1.33/h,
    # below the 10G line ($724/month = $0.99/h) and the H100 relay ($3.99/h) that a
    # resident share of 63-85 % saves
    result = _solve(s)
    bought = result.deployment.decode_cache
    assert bought.tier == "dram" and bought.tb > 0
    assert _lines(result.deployment) < _lines(no_cache.deployment)
    # the zero option is among those offered, so the optimum can only be cheaper
    assert result.metrics.cost_usd_per_hour < no_cache.metrics.cost_usd_per_hour


@pytest.mark.slow
def test_a_dear_tier_is_not_bought(tmp_path, no_cache):
    _, s = _scenario(tmp_path, [0, 1, 2])
    # 1 TB priced above the whole no-cache plan: any plan with a cache
    # costs more than that plan, so the optimum buys none and is that plan's cost
    dear = no_cache.metrics.cost_usd_per_hour * HOURS_PER_MONTH * 1.01
    result = _solve(_priced(s, dear))
    assert result.deployment.decode_cache.tb == 0
    assert result.metrics.cost_usd_per_hour == pytest.approx(no_cache.metrics.cost_usd_per_hour)
    assert _lines(result.deployment) == _lines(no_cache.deployment)


@pytest.mark.slow
def test_the_bom_total_is_the_answer_with_the_cache_row(tmp_path):
    _, s = _scenario(tmp_path, [0, 1, 2])
    cat = Catalog()
    result = _solve(s)
    d = result.deployment
    b = bill(plan_json(d), s, cat)
    # independently: catalog rental per GPU, line price per month / 730, and the plan's TB
    # x the catalog's DRAM price per TB-month / 730
    gpus = sum(g.gpus * cat.gpus[g.gpu].rental_usd_per_gpu_hour for g in d.instances)
    lines = sum(x.count * cat.lines[x.tier].price_usd_per_month for x in d.lines) / 730
    cache = d.decode_cache.tb * cat.cache_tiers["dram"].price_usd_per_tb_month
    expected = gpus + lines + cache / 730
    assert b.total_hourly_usd == pytest.approx(expected)
    assert result.metrics.cost_usd_per_hour == pytest.approx(expected)
    row = next(r for r in b.rows if r["kind"] == "decode_cache")
    assert row["units"] == pytest.approx(d.decode_cache.tb)
    assert row["price_source"] == "hitech_nemix_ddr5_kit" and row["flag"] == "assumed"
    bought = next(r for r in b.rows if r["kind"] == "cache_purchase")
    assert bought["purchase_usd"] == pytest.approx(row["units"] * 17508)


@pytest.mark.slow
def test_plan_json_with_a_cache_round_trips_through_evaluate(tmp_path, run_cli):
    path, s = _scenario(tmp_path, [0, 1, 2])
    result = _solve(s)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": plan_json(result.deployment)}))
    back = load_plan(plan, s, Catalog())
    assert back == result.deployment
    out = run_cli("evaluate", str(path), str(plan), "--format", "json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["plan"]["decode_cache"] == plan_json(result.deployment)["decode_cache"]
    assert got["metrics"]["cost_usd_per_hour"] == pytest.approx(result.metrics.cost_usd_per_hour)
    shown = run_cli("evaluate", str(path), str(plan))
    tb = result.deployment.decode_cache.tb
    assert f"decode-side cache: {tb:g} TB of dram for the main-decode instances" in shown.stdout


def test_explain_states_what_a_smaller_cache_is_traded_for(tmp_path, no_cache):
    _, s = _scenario(tmp_path, [0, 1])
    cat = Catalog()
    result = _solve(s)
    assert result.deployment.decode_cache.tb == 1  # the only size offered besides none
    response = cache_response(s, result, _solve, cat.gpus, cat.lines)
    assert response["alternative"] == "no cache tier"
    change = response["change_usd_per_hour"]
    # the plan without the cache is the no-cache solve: the parts differ by its costs
    theirs = cost_parts(s, no_cache.deployment, cat.gpus, cat.lines)
    assert sum(theirs.values()) == pytest.approx(no_cache.metrics.cost_usd_per_hour)
    assert change["cache"] == pytest.approx(-486 / 730)  # 1 TB x $486/month
    assert change["line"] + change["relay"] > 0  # what it buys instead: line and relay
    assert "cache -0.67 $/h" in response["sentence"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy, expected",
    [
        ({"decode_cache": {"tiers": ["dran"]}}, "policy.decode_cache.tiers[0]"),
        ({"decode_cache": {"tiers": ["dram"]}, "decode_cache_capacity_tokens": 1e6},
         "policy.decode_cache"),
        ({"decode_cache": {"tiers": ["dram"], "tb_total": [1, 1]}},
         "policy.decode_cache.tb_total[1]"),
    ],
)  # fmt: skip
def test_bad_cache_options_are_one_line_errors(tmp_path, run_cli, policy, expected):
    data = copy.deepcopy(TINY)
    data["policy"] = policy
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    out = run_cli("scenario", "validate", str(path))
    assert out.returncode == 2
    assert expected in out.stderr and "Traceback" not in out.stderr


def test_the_resolved_scenario_keeps_the_cache_options(tmp_path):
    from pdd_plan.report.resolved import scenario_json

    _, s = _scenario(tmp_path, [0, 2, 1])
    written = tmp_path / "scenario.json"
    written.write_text(json.dumps(scenario_json(s)))
    again = load_scenario(written, Catalog())
    # the sizes come back sorted, at the catalog's price: the same options
    assert again.policy.decode_cache == s.policy.decode_cache
    assert again.policy.decode_cache.tb_total == (0.0, 1.0, 2.0)


def test_a_cache_tier_without_a_known_source_is_refused(tmp_path):
    import shutil

    from pdd_plan.errors import InputError

    root = tmp_path / "catalog"
    shutil.copytree(Catalog().root, root)
    text = (root / "cache_tiers.yaml").read_text()
    (root / "cache_tiers.yaml").write_text(text.replace("aws_ebs_gp3_pricing", "aws_ebs_gp9"))
    with pytest.raises(InputError) as err:
        _ = Catalog(root).cache_tiers
    assert "tiers[1].price_usd_per_tb_month.source" in str(err.value)
    assert "aws_ebs_gp3_pricing" in str(err.value)  # did you mean


def test_the_digest_covers_the_cache_tiers_only_where_the_scenario_prices_a_cache(tmp_path):
    import shutil

    from pdd_plan.loaders.catalog_digest import catalog_digest
    from pdd_plan.report.bom import header_facts

    root = tmp_path / "catalog"
    shutil.copytree(Catalog().root, root)
    before = {c: catalog_digest(root, "qwen3_32b", c) for c in (False, True)}
    path = root / "cache_tiers.yaml"
    path.write_text(path.read_text().replace("value: 486,", "value: 487,"))
    after = {c: catalog_digest(root, "qwen3_32b", c) for c in (False, True)}
    assert after[False] == before[False] and after[True] != before[True]
    _, s = _scenario(tmp_path, [0, 1])
    facts = dict(header_facts(s, Catalog(), "pdd"))
    assert "lines.yaml, cache_tiers.yaml, gpus/" in facts["catalog_files"]


@pytest.mark.slow
def test_cli_explain_prints_the_cache_response(tmp_path, run_cli):
    path, _ = _scenario(tmp_path, [0, 1])
    out = run_cli("explain", str(path), "--architecture", "pdd", "--time-limit", "60")
    assert out.returncode == 0, out.stderr
    # options 0 and 1 TB: the plan buys 1 TB (test above), the alternative is none
    text = " ".join(out.stdout.split())
    assert "Decode-side cache: with a smaller cache (no cache tier instead of 1 TB dram)" in text


@pytest.mark.slow
def test_the_simulator_reads_the_plan_s_cache(tmp_path):
    """A plan's cache tier sets the simulator's MD residency as it sets the closed form's:
    1 TB keeps 63 % of prefixes, 2 TB 85 % (module doc), so the same plan ships more over
    the WAN with 1 TB, in both, and the two agree (were the tier ignored, the simulator
    would read the scenario's unlimited cache and ship a fraction of it). A resident
    request ships its uncached part (mean hit 0.869: 13 %), a non-resident one all of it:
    (0.37 + 0.63 x 0.13) / (0.15 + 0.85 x 0.13) = 0.45 / 0.26 = 1.7 times the bytes."""
    from pdd_plan.model.caches.cache_tier import CacheBuy
    from pdd_plan.model.evaluate import prepare, snapshot
    from pdd_plan.sim.entry import simulate_plan

    path, s = _scenario(tmp_path, [0, 1, 2])
    cat = Catalog()
    base = _solve(s).deployment
    wan = {}
    for tb in (1.0, 2.0):
        policy = dataclasses.replace(base.policy, decode_cache=CacheBuy("dram", tb, 486.0))
        d = dataclasses.replace(base, policy=policy, lines=(dataclasses.replace(
            base.lines[0], count=2),))  # fmt: skip
        plan = tmp_path / f"plan_{tb:g}.json"
        plan.write_text(json.dumps({"plan": plan_json(d)}))
        simulated, _ = simulate_plan(path, plan, 3000, catalog=cat)
        setup = prepare(s, d, cat.model_for(s), cat.gpus, cat.lines)
        closed = snapshot(setup, s.workload.arrival_rate_per_s).wan_mean_bits_per_s / 1e9
        wan[tb] = (simulated["wan"]["mean_gbit_per_s"], closed)
        assert wan[tb][0] == pytest.approx(closed, rel=0.08)
    assert wan[1.0][0] > 1.3 * wan[2.0][0] and wan[1.0][1] > 1.3 * wan[2.0][1]


@pytest.mark.slow
def test_a_datacenter_budget_counts_the_cache(tmp_path):
    """dc_b's budget of $4.80/h: its two 2 x L40S main-decode instances cost $4.00/h, so 2
    TB of DRAM ($1.33/h) would break it and 1 TB ($0.67/h) fits: the plan's spend in dc_b,
    cache included, stays within the budget."""
    data = copy.deepcopy(TINY)
    data["policy"] = {"decode_cache": {"tiers": ["dram"], "tb_total": [0, 1, 2]}}
    data["datacenters"][1]["budget_usd_per_hour"] = 4.80
    path = tmp_path / "budget.yaml"
    path.write_text(yaml.safe_dump(data))
    cat = Catalog()
    s = load_scenario(path, cat)
    d = _solve(s).deployment
    gpus = sum(g.gpus * cat.gpus[g.gpu].rental_usd_per_gpu_hour for g in d.instances
               if g.datacenter == "dc_b")  # fmt: skip
    cache = d.decode_cache.tb * cat.cache_tiers["dram"].price_usd_per_tb_month / 730
    assert gpus + cache <= 4.80 + 1e-9
