"""explain: binding limits, what relaxing them is worth, and the elastic diagnosis."""

import json
import math

import pytest

from pdd_plan.api import explain_scenario
from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.plan import elastic as el
from pdd_plan.plan import solve as sv
from pdd_plan.plan.explain import explain

RESOLUTION = (4, 6, 10)
FIXED_POLICY = (
    "  rld_hit_threshold: auto\n  handoff: auto",
    "  rld_hit_threshold: 0.9\n  handoff: catch_up",
)
MIN_COST_40 = ("objective: {kind: max_bcr}", "objective: {kind: min_cost, demand_rps: 40}")
H100 = "      - {gpu: h100_sxm, max_gpus: 512}"
H200_8 = "{gpu: h200_sxm, price_usd_per_gpu_hour: 3.0, max_gpus: %d, gpus_per_instance: [8]}"
# The default scenario with one routing policy (one MILP per solve), edited per test:
VARIANTS = {
    # dc_a has 32 H200 in 8-GPU instances: prefill needs at least 3 instances (a bound of
    # the search) and relay decode 1, so every plan uses all 32 (DeepSeek-V4-Pro runs DP
    # attention + EP on one node: its one KV head would be held 8 times under TP8)
    "availability": [MIN_COST_40, (H100, "      - " + H200_8 % 32)],
    # at most four 1 Gbit/s lines: the line carries less than the GPUs could
    "line": [("tiers: [wave_10g, wave_100g]", "tiers: [wave_1g]\n  max_lines: 4")],
    # dc_a has only 24 H200 in 8-GPU instances: enough for prefill or for relay decode,
    # not for both (so no role alone lacks a candidate: the MILP's limits decide)
    "short": [MIN_COST_40, (H100, "      - " + H200_8 % 24)],
}


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explain")
    base = resolve_scenario_path("default").read_text().replace(*FIXED_POLICY)
    out = {}
    for name, edits in VARIANTS.items():
        text = base.replace("name: default", f"name: {name}")
        for old, new in edits:
            assert old in text
            text = text.replace(old, new)
        out[name] = folder / f"{name}.yaml"
        out[name].write_text(text)
    return out


@pytest.fixture(scope="module")
def scenarios(paths, catalog):
    return {name: load_scenario(path, catalog) for name, path in paths.items()}


def run(catalog, scenario):
    model = catalog.model_for(scenario)
    return explain(scenario, model, catalog.gpus, catalog.lines, "pdd", RESOLUTION, 10.0)


@pytest.fixture(scope="module")
def availability(catalog, scenarios):
    return run(catalog, scenarios["availability"])


@pytest.fixture(scope="module")
def line(catalog, scenarios):
    return run(catalog, scenarios["line"])


@pytest.mark.slow
def test_a_small_availability_binds(availability):
    name = "h200_sxm_in_dc_a_within_availability"
    assert name in availability["binding"]
    limit = next(c for c in availability["constraints"] if c["constraint"] == name)
    assert limit["slack"] == 0 and limit["unit"] == "GPUs" and limit["binding"]
    used = sum(
        g["gpus_per_instance"] * g["count"]
        for g in availability["plan"]["instances"]
        if (g["gpu"], g["datacenter"]) == ("h200_sxm", "dc_a")
    )
    assert used == 32
    others = [c for c in availability["constraints"] if c["family"] in ("line", "availability")]
    assert [c["constraint"] for c in others if c["binding"]] == [name]


def test_a_binding_availability_is_relaxed_by_a_gpu_then_an_instance(availability):
    name = "h200_sxm_in_dc_a_within_availability"
    relaxed = [r for r in availability["relaxations"] if r["constraint"] == name]
    assert [r["relaxation"] for r in relaxed] == [
        "one more h200_sxm in dc_a",
        "8 more h200_sxm in dc_a (one more instance)",  # one GPU more changed nothing
    ]
    before = availability["metrics"]["cost_usd_per_hour"]
    for r in relaxed:
        assert r["status"] == "optimal" and r["metric"] == "cost_usd_per_hour"
        assert r["before"] == before
        assert r["change"] == pytest.approx(r["after"] - before)
        assert r["improvement"] == pytest.approx(before - r["after"])  # min cost: less is better
    assert relaxed[0]["plan_changes"] == [] and relaxed[0]["after"] == pytest.approx(before)


def test_relaxing_a_binding_availability_never_raises_the_cost(availability):
    """A property of `solve` (the plan of the tighter scenario is still allowed), checked
    through explain's re-solves."""
    name = "h200_sxm_in_dc_a_within_availability"
    before = availability["metrics"]["cost_usd_per_hour"]
    for r in availability["relaxations"]:
        if r["constraint"] == name:
            assert r["after"] <= before + 1e-9, r


@pytest.mark.slow
def test_a_looser_sla_is_always_tried(availability, line):
    for result in (availability, line):
        sla = [r for r in result["relaxations"] if r["constraint"] == "sla"]
        assert len(sla) == 1 and sla[0]["relaxation"] == "TTFT and TPOT limits x1.2"


def test_the_line_binds_and_more_line_is_worth_bcr(line):
    assert "line_capacity_covers_the_wan_bytes" in line["binding"]
    assert "lines_within_the_allowed_count" in line["binding"]
    assert line["roles"]["binding_role"] == "wan_line"  # evaluate agrees
    worth = {r["constraint"]: r for r in line["relaxations"]}
    more = worth["lines_within_the_allowed_count"]
    assert more["metric"] == "bcr_rps_per_usd_hour" and more["improvement"] > 0
    assert "line wave_1g: 4 -> 5" in more["plan_changes"]
    tier = worth["line_capacity_covers_the_wan_bytes"]
    assert tier["relaxation"] == "the next line tier offered (wave_10g)"
    assert tier["improvement"] > 0


def test_pruned_candidates_carry_their_reason(line):
    assert line["pruned_candidates"]
    assert all(c["reason"] for c in line["pruned_candidates"])
    assert {"prefill_dc_a_h100_sxm_x1", "prefill_dc_a_h100_sxm_x8"} <= {
        c["candidate"] for c in line["pruned_candidates"]
    }  # DeepSeek-V4-Pro's weights need more than 8 H100


def shortfall_by_hand(catalog, scenario):
    """GPUs of dc_a's H200 that prefill and relay decode need at 40 req/s by the MILP's
    capacities: each role ceil(its requests/s / one 8-GPU instance's capacity at the
    utilisation cap) instances of 8 GPUs."""
    model = catalog.model_for(scenario)
    policy = sv._policies(scenario, "pdd")[0]
    cap = scenario.policy.utilization_cap_frac
    _, _, demands, _, usable = el.milp_inputs(
        scenario, model, catalog.gpus, "pdd", policy, cap, RESOLUTION
    )
    gpus = 0
    for role in ("prefill", "relay_decode"):
        (one,) = [c for c in usable if c.role == role]
        assert (one.datacenter, one.gpu, one.gpus_per_instance) == ("dc_a", "h200_sxm", 8)
        gpus += 8 * math.ceil(demands[role].share * 40.0 / one.capacity_rps)
    return gpus


def test_the_elastic_resolve_names_the_limit_and_the_shortfall(catalog, scenarios):
    scenario = scenarios["short"]
    model = catalog.model_for(scenario)
    found = el.why_infeasible(scenario, model, catalog.gpus, catalog.lines, "pdd", [], RESOLUTION)
    (short,) = found.shortfalls
    assert short.constraint == "h200_sxm_in_dc_a_within_availability"
    assert short.needs == shortfall_by_hand(catalog, scenario) and short.limit == 24
    # the message gives what the cheapest verified plan needs once the limit is raised
    with pytest.raises(InfeasibleError) as err:
        run(catalog, scenario)
    message = str(err.value)
    assert "\n" not in message and message.count("needs") == 1
    needs = int(message.split("h200_sxm in dc_a: needs ")[1].split(" GPUs, 24 available")[0])
    assert 24 < needs <= short.needs and needs % 8 == 0


@pytest.mark.slow
@pytest.mark.parametrize("command", ["solve", "explain"])
def test_cli_infeasible_exits_3_with_one_line(run_cli, paths, command):
    # the PDD plan is short of H200 (solve alone would choose an architecture that fits)
    result = run_cli(command, str(paths["short"]), "--architecture", "pdd")
    assert result.returncode == 3
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "h200_sxm in dc_a: needs" in lines[0] and "24 available" in lines[0]


@pytest.mark.slow
def test_cli_explain_json_equals_the_api(run_cli, paths):
    result = run_cli("explain", str(paths["line"]), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(json.dumps(explain_scenario(paths["line"])))


@pytest.mark.slow
def test_cli_explain_prints_tables(run_cli, paths):
    result = run_cli("explain", str(paths["line"]))
    assert result.returncode == 0, result.stderr
    for heading in ("Limits of the MILP at the plan", "What relaxing", "Pruned candidates"):
        assert heading in result.stdout
