"""The published economics of PDD against same-datacenter PD (pdd-system.md §7, [pub]).

Reference: a same-datacenter PD baseline of 88 H100 nodes (10 P of 4 nodes, 16 D of 3
nodes) against PDD with H100 P and RLD (10 x 4 + 3 nodes) and 16 MD of 2 H200 nodes, an
H200 node at 1.2-1.3x an H100 node and a 10 Gbit/s line at 0.35x: PDD's cost 3.5-7.1 %
lower, SLA goodput 27.8 % higher, BCR +32.4 % to +37.5 %.

Tolerances: the cost band is arithmetic on prices and must hold as published; goodput
and BCR come from the performance models, so they get +-10 points around the published
figure.

Not met, and not tuned (issue #23): with the decode KV settled by the arithmetic
(scenarios/pdd-paper.yaml `engine.kv_uncompressed_tokens: 128`: 0.297 GB a 64K request
against the published 23 GB / 80 = 0.29 GB), same-datacenter PD is prefill-bound and
serves 2.5x PDD's goodput (PDD -60 %, published +27.8 %). The published gain needs the
decode engine to keep about 49K of 66.5K tokens uncompressed (1.8 GB a request, 6x the
published KV), which contradicts the published KV figure. Those tests are strict
expected failures with this reason: if a model change meets them, they fail as passing.
At the far end of the plausible range (every token uncompressed) decode binds
same-datacenter PD and PDD serves more, the mechanism the paper describes.
"""

import dataclasses

import pytest

from pdd_plan.api import compare_architectures
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model.compute.attention import KvLayout
from pdd_plan.model.evaluate import evaluate, prepare

RESOLUTION = (1, 8, 16)
PUBLISHED_GOODPUT_GAIN = 0.278
PUBLISHED_BCR_GAIN = (0.324, 0.375)
MODEL_TOLERANCE = 0.10
NOT_MET = pytest.mark.xfail(
    strict=True,
    reason="published gain not met at the settled decode KV (module docstring): PDD -60 % "
    "goodput against same-datacenter PD at 0.297 GB a request",
)


@pytest.fixture(scope="module")
def paper(catalog):
    return load_scenario(resolve_scenario_path("pdd-paper"), catalog)


def _published(catalog, scenario):
    """Metrics of the published PDD and same-datacenter PD deployments."""
    out = {}
    for arch in ("pdd", "idc_pd"):
        plan = load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", scenario, catalog)
        setup = prepare(
            scenario, plan, catalog.model_for(scenario), catalog.gpus, catalog.lines, RESOLUTION
        )
        out[arch] = evaluate(setup)[0]
    return out


@pytest.fixture(scope="module")
def published(catalog, paper):
    return _published(catalog, paper)


@pytest.fixture(scope="module")
def uncompressed(catalog, paper):
    """The paper's scenario with every decode token kept uncompressed (2.38 GB a request):
    the plausible range's far end."""
    layout = KvLayout(None, "the range's far end (test)")
    engine = dataclasses.replace(paper.engine, kv_layout=layout)
    return dataclasses.replace(paper, engine=engine)


def test_published_pdd_costs_less_than_same_datacenter_pd(published):
    saving = 1 - published["pdd"].cost_usd_per_hour / published["idc_pd"].cost_usd_per_hour
    assert 0.035 <= saving <= 0.071


@NOT_MET
def test_published_pdd_serves_more_goodput(published):
    gain = published["pdd"].goodput_rps / published["idc_pd"].goodput_rps - 1
    assert gain == pytest.approx(PUBLISHED_GOODPUT_GAIN, abs=MODEL_TOLERANCE)


@NOT_MET
def test_published_pdd_has_the_published_bcr_gain(published):
    gain = published["pdd"].bcr_rps_per_usd_hour / published["idc_pd"].bcr_rps_per_usd_hour - 1
    low, high = PUBLISHED_BCR_GAIN
    assert low - MODEL_TOLERANCE <= gain <= high + MODEL_TOLERANCE


@NOT_MET
def test_same_datacenter_pd_is_decode_bound(catalog, paper, published):
    """The paper's baseline spends 48 of 88 nodes on decode: decode must bind there (at
    90 % of its goodput, below which the queues are finite)."""
    rate = 0.9 * published["idc_pd"].goodput_rps
    scenario = dataclasses.replace(
        paper, workload=dataclasses.replace(paper.workload, arrival_rate_per_s=rate)
    )
    plan = load_plan(scenarios_dir() / "plans" / "pdd-paper-idc_pd.yaml", scenario, catalog)
    setup = prepare(
        scenario, plan, catalog.model_for(scenario), catalog.gpus, catalog.lines, RESOLUTION
    )
    assert evaluate(setup)[0].binding_role == "decode"


@pytest.fixture(scope="module")
def compared(catalog):
    result = compare_architectures("pdd-paper", catalog, RESOLUTION)
    return {a["plan"]["architecture"]: a["metrics"] for a in result["architectures"] if a["plan"]}


@pytest.mark.slow
@NOT_MET
def test_compare_gives_pdd_a_higher_bcr_than_same_datacenter_pd(compared):
    """Each architecture optimised alone (issue #4): PDD's BCR beats IDC-PD's, by about
    the published margin."""
    gain = compared["pdd"]["bcr_rps_per_usd_hour"] / compared["idc_pd"]["bcr_rps_per_usd_hour"]
    low, high = PUBLISHED_BCR_GAIN
    assert 1 + low - MODEL_TOLERANCE <= gain <= 1 + high + MODEL_TOLERANCE


def test_at_the_ranges_far_end_decode_binds_and_pdd_serves_more(catalog, uncompressed):
    """The paper's mechanism, where it operates: with every decode token uncompressed a
    request holds 8x the settled KV, same-datacenter PD's H100 decode binds (HBM holds
    few requests), and PDD's H200 main decode serves more: the direction, not the
    published size (which the module docstring says is not met at the settled KV)."""
    at = _published(catalog, uncompressed)
    assert at["pdd"].goodput_rps > at["idc_pd"].goodput_rps
    rate = 0.9 * at["idc_pd"].goodput_rps
    scenario = dataclasses.replace(
        uncompressed,
        workload=dataclasses.replace(uncompressed.workload, arrival_rate_per_s=rate),
    )
    plan = load_plan(scenarios_dir() / "plans" / "pdd-paper-idc_pd.yaml", scenario, catalog)
    setup = prepare(
        scenario, plan, catalog.model_for(scenario), catalog.gpus, catalog.lines, RESOLUTION
    )
    assert evaluate(setup)[0].binding_role == "decode"
