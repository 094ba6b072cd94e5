"""The plan over a load curve (issue #26 item 3), on a small scenario that plans in under a
second: the SLA holds in every period at the counts the schedule runs (checked with the
model directly) and one instance fewer of any role would not; a 4:1 curve costs less than
sizing for the peak, and the saving is the arithmetic of the schedule's own counts and the
catalog's prices; a flat curve costs what the single-rate plan costs; the reserved base
follows the price ratio."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.evaluate import meets_sla, prepare
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.plan.ceilings import line_within_cap
from pdd_plan.plan.role_cap import roles_within_cap
from pdd_plan.plan.schedule import period_scenario, plan_schedule
from pdd_plan.stages.solving.schedule_service import schedule_scenario

TINY = Path(__file__).resolve().parents[1] / "sweep" / "tiny.yaml"
# six-hour periods: a 4:1 day (10 req/s at night, 40 in the afternoon)
DAY = ((0, 10.0), (6, 20.0), (12, 40.0), (18, 20.0))


def curve_file(tmp_path, rates=DAY, costs=None) -> Path:  # six-hour periods
    data = yaml.safe_load(TINY.read_text())
    del data["workload"]["arrival_rate_per_s"]
    data["workload"]["load_curve"] = [
        {"start_h": h, "duration_h": 6, "arrival_rate_per_s": r} for h, r in rates
    ]
    if costs:
        data["costs"] = costs
    path = tmp_path / "curve.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def catalog():
    return Catalog()


@pytest.fixture(scope="module")
def day(tmp_path_factory, catalog):
    path = curve_file(tmp_path_factory.mktemp("day"))
    s = load_scenario(path, catalog)
    result = plan_schedule(s, catalog.model_for(s), catalog.gpus, catalog.lines)
    answer, files = schedule_scenario(path, catalog=catalog)
    return s, result, answer, files


def holds(s, deployment, catalog) -> bool:
    """The single-rate rule at the period's rate: SLA under every mix, GPU roles and line
    within the utilisation cap."""
    rate, cap = s.workload.arrival_rate_per_s, s.policy.utilization_cap_frac
    setups = [prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines)]
    x = setups[0]
    return meets_sla(x, rate) and roles_within_cap(x, rate, cap) and line_within_cap(x, rate, cap)


@pytest.mark.slow  # a schedule and a single-rate solve: 1-12 s
def test_every_period_meets_the_sla_and_one_instance_fewer_would_not(day, catalog):
    s, r, answer, _ = day
    assert r.status == "optimal"
    assert all(row["sla_met"] for row in answer["schedule"])
    for period, d in zip(r.curve.periods, r.deployments, strict=True):
        ps = period_scenario(s, period)
        assert holds(ps, d, catalog)
        for i, g in enumerate(d.instances):
            if g.count > 1:
                fewer = dataclasses.replace(g, count=g.count - 1)
                less = dataclasses.replace(d, instances=(*d.instances[:i], fewer,
                                                         *d.instances[i + 1:]))  # fmt: skip
                assert not holds(ps, less, catalog), (period, g)
    for row in answer["schedule"]:  # what runs covers what is needed
        for role in row["roles"]:
            assert role["reserved"] + role["on_demand"] + role["spot"] >= role["needed"]


@pytest.mark.slow  # a schedule and a single-rate solve: 1-12 s
def test_the_saving_is_the_hand_arithmetic_of_counts_and_prices(day, catalog):
    s, r, answer, _ = day
    frac = s.costs.capacity_classes.reserved_price_frac  # 0.6, no spot
    price = {(dc.id, o.gpu): o.price_usd_per_gpu_hour for dc in s.datacenters for o in dc.gpus}
    hours = [p["duration_h"] for p in answer["schedule"]]
    cycle = 0.0
    for h, row in zip(hours, answer["schedule"], strict=True):
        for g in row["roles"]:
            per_instance = g["gpus_per_instance"] * price[g["datacenter"], g["gpu"]]
            cycle += h * per_instance * (frac * g["reserved"] + g["on_demand"])
    lines = {x["tier"]: x["count"] for x in answer["plan"]["lines"]}
    cycle += sum(hours) * sum(k * catalog.lines[t].price_usd_per_month / HOURS_PER_MONTH
                              for t, k in lines.items())  # fmt: skip
    month = cycle * HOURS_PER_MONTH / sum(hours)
    assert answer["cost"]["per_month_usd"] == pytest.approx(month, rel=1e-9)
    base = answer["baseline"]
    peak = base["plan"]
    assert base["peak_rate_per_s"] == 40.0
    gpus = sum(g["count"] * g["gpus_per_instance"] * price[g["datacenter"], g["gpu"]]
               for g in peak["instances"])  # fmt: skip
    peak_lines = sum(x["count"] * catalog.lines[x["tier"]].price_usd_per_month / HOURS_PER_MONTH
                     for x in peak["lines"])  # fmt: skip
    reserved_month = (frac * gpus + peak_lines) * HOURS_PER_MONTH
    assert base["per_month_usd"]["all_reserved"] == pytest.approx(reserved_month, rel=1e-9)
    saved = base["savings_per_month_usd"]["all_reserved"]
    assert saved == pytest.approx(reserved_month - month, rel=1e-9)
    assert saved > 0  # the 4:1 day costs less than the peak's plan all day
    assert base["savings_frac"]["all_on_demand"] > base["savings_frac"]["all_reserved"]


@pytest.mark.slow  # a schedule and a single-rate solve: 1-12 s
def test_each_role_reserves_what_is_needed_in_more_than_r_of_the_hours(day):
    s, r, _, _ = day
    ratio = s.costs.capacity_classes.reserved_price_frac
    hours = [p.hours for p in r.curve.periods]
    for role in r.roles:
        share = [
            sum(h for n, h in zip(role.needs, hours, strict=True) if n >= j) / sum(hours)
            for j in range(1, max(role.needs) + 2)
        ]
        reserved = role.split.reserved
        assert all(x > ratio for x in share[:reserved]), (role.role, share)
        assert all(x <= ratio for x in share[reserved:]), (role.role, share)


@pytest.mark.slow  # a schedule and a single-rate solve: 1-12 s
@pytest.mark.parametrize("rate", [5.0, 20.0, 40.0])
def test_a_flat_curve_costs_what_the_single_rate_plan_costs(tmp_path, catalog, rate):
    """All hours alike: every instance is reserved, so the schedule costs the single-rate
    min-cost plan at reserved prices; at equal prices in every class, exactly its cost."""
    flat = tuple((h, rate) for h, _ in DAY)
    answer, _ = schedule_scenario(curve_file(tmp_path, flat), catalog=catalog)
    base = answer["baseline"]
    hourly = answer["cost"]["mean_usd_per_hour"]
    assert hourly == pytest.approx(base["usd_per_hour"]["all_reserved"], rel=1e-9)
    same = {"capacity_classes": {"reserved": {"price_frac": 1.0}}}
    answer, _ = schedule_scenario(curve_file(tmp_path, flat, same), catalog=catalog)
    single = load_scenario(curve_file(tmp_path, flat, same), catalog)
    from pdd_plan.api import solve_scenario

    solved, _ = solve_scenario(_single_rate_file(tmp_path, rate), catalog=catalog, time_limit_s=30)
    assert single.workload.arrival_rate_per_s == rate
    assert answer["cost"]["mean_usd_per_hour"] == pytest.approx(
        solved["metrics"]["cost_usd_per_hour"], rel=1e-9
    )


def _single_rate_file(tmp_path, rate: float) -> Path:
    data = yaml.safe_load(TINY.read_text())
    data["workload"]["arrival_rate_per_s"] = rate
    data["objective"] = {"kind": "min_cost"}
    path = tmp_path / "single.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.slow  # a schedule and a single-rate solve: 1-12 s
def test_spot_takes_the_top_up_within_its_share(tmp_path, catalog):
    costs = {"capacity_classes": {"spot": {"price_frac": 0.3, "max_share_frac": 0.5}}}
    answer, _ = schedule_scenario(curve_file(tmp_path, costs=costs), catalog=catalog)
    plain, _ = schedule_scenario(curve_file(tmp_path), catalog=catalog)
    assert answer["cost"]["per_month_usd"] < plain["cost"]["per_month_usd"]
    assert answer["cost"]["split_per_month_usd"]["spot"] > 0
    for row in answer["schedule"]:
        for g in row["roles"]:
            running = g["reserved"] + g["on_demand"] + g["spot"]
            assert g["spot"] <= 0.5 * running + 1e-9


def test_a_scenario_without_a_curve_is_refused(catalog):
    with pytest.raises(InputError) as caught:
        schedule_scenario(TINY, catalog=catalog)
    assert caught.value.problems[0].key_path == "workload.load_curve"


@pytest.mark.slow  # the schedule's bounds and the busiest period's solve: about 2 s
def test_no_schedule_names_the_busiest_periods_shortfall_in_strict_json(tmp_path, catalog):
    import json

    answer, files = schedule_scenario(curve_file(tmp_path, ((0, 10.0), (6, 400.0))),
                                      catalog=catalog)  # fmt: skip
    assert files is None and answer["status"] == "infeasible"
    assert "the busiest (400 req/s) alone" in answer["reason"]
    json.dumps(answer, allow_nan=False)  # no Infinity in the bound


def test_a_class_discounts_the_rental_and_power_is_paid_in_full(catalog):
    from pdd_plan.model.capacity_classes import SpotTerms
    from pdd_plan.model.setup import power_usd_per_gpu_hour
    from pdd_plan.plan.schedule import _prices
    from pdd_plan.plan.space import Choice

    s = load_scenario(TINY, catalog)
    classes = dataclasses.replace(s.costs.capacity_classes, spot=SpotTerms(price_frac=0.3))
    s = dataclasses.replace(s, costs=dataclasses.replace(s.costs, include_power=True,
                                                         capacity_classes=classes))  # fmt: skip
    power = 2 * power_usd_per_gpu_hour(s, catalog.gpus["h100_sxm"], "dc_a")
    rental = 2 * s.datacenters[0].gpus[0].price_usd_per_gpu_hour
    choice = Choice("prefill", "dc_a", "h100_sxm", 2, rental + power, 1, 10)
    p = _prices(choice, s, catalog.gpus)
    assert p.on_demand_usd_per_hour == pytest.approx(rental + power)
    assert p.reserved_usd_per_hour == pytest.approx(0.6 * rental + power)
    assert p.spot_usd_per_hour == pytest.approx(0.3 * rental + power)
