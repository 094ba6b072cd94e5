"""Goodput properties: a tighter SLA never raises it; one more instance never lowers it."""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model.evaluate import goodput_rps, prepare
from pdd_plan.model.scenario import Sla

CATALOG = Catalog()
PAPER = load_scenario(resolve_scenario_path("pdd-paper"), CATALOG)
RESOLUTION = (1, 6, 8)


def goodput(scenario, deployment) -> float:
    model = CATALOG.model(scenario.model)
    setup = prepare(scenario, deployment, model, CATALOG.gpus, CATALOG.lines, RESOLUTION)
    return goodput_rps(setup, rel_tol=1e-3)


def plan(arch):
    return load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", PAPER, CATALOG)


@settings(max_examples=8, deadline=None)
@given(
    arch=st.sampled_from(["pdd", "cdc_pd", "idc_pd"]),
    ttft_factor=st.floats(0.05, 1.0),
    tpot_factor=st.floats(0.6, 1.0),
)
def test_tighter_sla_never_raises_goodput(arch, ttft_factor, tpot_factor):
    loose = goodput(PAPER, plan(arch))
    tight_sla = Sla({90.0: 10.0 * ttft_factor}, {90.0: 0.05 * tpot_factor})
    tight = goodput(dataclasses.replace(PAPER, sla=tight_sla), plan(arch))
    assert tight <= loose * (1 + 1e-3)


@settings(max_examples=8, deadline=None)
@given(
    arch=st.sampled_from(["pdd", "cdc_pd", "idc_pd"]),
    which=st.integers(0, 2),
    extra=st.integers(1, 4),
)
def test_adding_instances_never_lowers_goodput(arch, which, extra):
    base = plan(arch)
    groups = list(base.instances)
    k = which % len(groups)
    groups[k] = dataclasses.replace(groups[k], count=groups[k].count + extra)
    bigger = dataclasses.replace(base, instances=tuple(groups))
    assert goodput(PAPER, bigger) >= goodput(PAPER, base) * (1 - 1e-3)
