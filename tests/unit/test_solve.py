"""solve: verified plans, price scaling, demand monotonicity, infeasibility, LP names."""

import dataclasses
import json

import pytest

from pdd_plan.api import solve_scenario
from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.evaluate import meets_sla, prepare
from pdd_plan.model.scenario import GpuOffer, Objective
from pdd_plan.plan.solve import solve

RESOLUTION = (4, 6, 10)


@pytest.fixture(scope="module")
def default(catalog):
    return load_scenario(resolve_scenario_path("default"), catalog)


def run(catalog, scenario, arch="pdd", time_limit_s=10.0):
    model = catalog.model_for(scenario)
    return solve(scenario, model, catalog.gpus, catalog.lines, arch, RESOLUTION, time_limit_s)


def min_cost(scenario, demand):
    return dataclasses.replace(scenario, objective=Objective("min_cost", demand_rps=demand))


def test_solved_plan_meets_the_sla_by_an_independent_evaluate(catalog, default):
    result = run(catalog, min_cost(default, 20.0), "cdc_pd")
    assert result.status == "optimal"
    setup = prepare(
        default, result.deployment, catalog.model_for(default), catalog.gpus, catalog.lines
    )  # the default resolution, not the solver's
    assert meets_sla(setup, 20.0)


def test_scaling_every_price_scales_the_optimal_cost(catalog, default):
    """Multiplying every GPU and line price by k multiplies the optimal cost by k."""
    k = 3.0
    base = min_cost(default, 20.0)
    dcs = tuple(
        dataclasses.replace(
            dc,
            gpus=tuple(
                dataclasses.replace(o, price_usd_per_gpu_hour=k * o.price_usd_per_gpu_hour)
                for o in dc.gpus
            ),
        )
        for dc in base.datacenters
    )
    prices = {t: k * catalog.lines[t].price_usd_per_month for t in base.wan.tiers}
    scaled = dataclasses.replace(
        base, datacenters=dcs, wan=dataclasses.replace(base.wan, tier_price_usd_per_month=prices)
    )
    a, b = run(catalog, base, "cdc_pd"), run(catalog, scaled, "cdc_pd")
    assert b.metrics.cost_usd_per_hour == pytest.approx(k * a.metrics.cost_usd_per_hour)


@pytest.mark.parametrize("arch", ["cdc_pd", "idc_pd"])
def test_more_demand_never_costs_less(catalog, default, arch):
    costs = [
        run(catalog, min_cost(default, d), arch).metrics.cost_usd_per_hour
        for d in (10.0, 20.0, 40.0)
    ]
    assert costs == sorted(costs)


def test_adding_a_gpu_type_never_costs_more(catalog, default):
    base = min_cost(default, 20.0)
    narrowed = dataclasses.replace(
        base,
        datacenters=(
            base.datacenters[0],
            dataclasses.replace(base.datacenters[1], gpus=(GpuOffer("h20_96g", 1.5, 512, ()),)),
        ),
    )
    wide = run(catalog, base, "cdc_pd").metrics.cost_usd_per_hour
    narrow = run(catalog, narrowed, "cdc_pd").metrics.cost_usd_per_hour
    assert wide <= narrow + 1e-9


@pytest.mark.slow
def test_a_robust_plan_meets_the_sla_under_every_hit_rate_distribution(catalog):
    """pdd-paper gives a `narrow` alternative to its skewed hit-rate mix: the plan meets
    the SLA under both, and costs no less than the plan for the skewed mix alone."""
    paper = load_scenario(resolve_scenario_path("pdd-paper"), catalog)
    narrow = paper.workload.hit_rate_alternatives["narrow"]
    plain = dataclasses.replace(
        paper, workload=dataclasses.replace(paper.workload, hit_rate_alternatives={})
    )
    model = catalog.model_for(paper)
    # pdd-paper's proof walks some 300 plans (13 s on an idle core): room for a busy machine
    robust, alone = run(catalog, paper, time_limit_s=120.0), run(catalog, plain, time_limit_s=120.0)
    assert robust.proven and alone.proven
    for hits in (None, narrow):
        setup = prepare(
            paper, robust.deployment, model, catalog.gpus, catalog.lines, RESOLUTION, hits
        )
        assert meets_sla(setup, paper.workload.arrival_rate_per_s)
    assert robust.metrics.cost_usd_per_hour >= alone.metrics.cost_usd_per_hour - 1e-9


def test_infeasible_when_nothing_fits(catalog, default):
    tiny = dataclasses.replace(
        default,
        datacenters=tuple(
            dataclasses.replace(dc, gpus=tuple(dataclasses.replace(o, max_gpus=4) for o in dc.gpus))
            for dc in default.datacenters
        ),
    )
    with pytest.raises(InfeasibleError) as err:
        run(catalog, tiny)
    assert "weights do not fit" in str(err.value)


@pytest.mark.slow
def test_cli_solve_json_equals_api_and_dumps_a_readable_lp(run_cli, tmp_path):
    result = run_cli("solve", "default", "--format", "json", "--dump-lp", "plan.lp")
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    api, _ = solve_scenario("default")
    for volatile in (cli, api):
        volatile["solver"].pop("wall_s")
    assert cli == json.loads(json.dumps(api))
    assert cli["status"] == "optimal" and cli["metrics"]["sla_met"]
    lp = (tmp_path / "plan.lp").read_text()
    assert "prefill_capacity_covers_its_demand" in lp and "line_capacity_covers_the_wan_bytes" in lp


@pytest.mark.slow
def test_cli_solve_infeasible_exits_3(run_cli, tmp_path):
    text = resolve_scenario_path("default").read_text().replace("max_gpus: 512", "max_gpus: 4")
    (tmp_path / "tiny.yaml").write_text(text)
    result = run_cli("solve", "tiny.yaml")
    assert result.returncode == 3 and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr


def test_compare_gives_every_architecture_in_the_shape_of_design(run_cli):
    result = run_cli("compare", "pdd-paper", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    archs = {a["architecture"]: a for a in data["architectures"]}
    assert set(archs) == {"pdd", "cdc_pd", "idc_pd"}
    for arch, entry in archs.items():
        assert entry["plan"]["architecture"] == arch and entry["metrics"]["sla_met"]
    # PDD's relay cuts the TTFT tail that CDC-PD's WAN transfer creates
    assert (
        archs["pdd"]["metrics"]["ttft_s"]["p99"] < 0.7 * archs["cdc_pd"]["metrics"]["ttft_s"]["p99"]
    )


def test_no_request_for_the_relay_still_solves(catalog, default):
    """Every hit rate above the highest threshold tried (0.95): no request takes the relay
    path, RLD gets no tokens (an unbounded capacity per instance); PDD still keeps its one
    relay instance, idle, and the plan meets the SLA."""
    from pdd_plan.model.workload.workload import Bins

    hits = Bins((0.96,), (0.99,), (1.0,))
    high = dataclasses.replace(
        default, workload=dataclasses.replace(default.workload, prefix_hit_rate=hits)
    )
    result = run(catalog, high)
    assert result.status == "optimal"
    relay = [g for g in result.deployment.instances if g.role == "relay_decode"]
    assert [g.count for g in relay] == [1]
    assert result.metrics.rld_token_share_frac == 0.0
