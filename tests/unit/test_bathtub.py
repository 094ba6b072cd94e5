"""The bathtub study's building blocks (benchmarks/bathtub.py): the hit-rate family has the
stated means, a plan's cost parts add up by hand, the valley finder."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.model.workload.workload import Bins

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bathtub():
    spec = importlib.util.spec_from_file_location("bathtub", REPO / "benchmarks" / "bathtub.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def paper(catalog):
    from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path

    return load_scenario(resolve_scenario_path("pdd-paper"), catalog)


def _with_hits(s, bins: Bins):
    return dataclasses.replace(s, workload=dataclasses.replace(s.workload, prefix_hit_rate=bins))


def test_the_family_moves_a_two_bin_mix_to_each_mean(bathtub, paper):
    """Hits uniform on [0, 0.5] and [0.5, 1], half each: mean 0.5. Raised to 0.75 the miss
    rates scale by 0.25 / 0.5 = 0.5: bins [0.5, 0.75] and [0.75, 1], mean 0.625 / 2 +
    0.875 / 2 = 0.75. Lowered to 0.3 the hits scale by 0.6: [0, 0.3] and [0.3, 0.6], mean
    0.15 / 2 + 0.45 / 2 = 0.3. The order is kept: the lowest hit stays the lowest."""
    s = _with_hits(paper, Bins((0.0, 0.5), (0.5, 1.0), (0.5, 0.5)))
    (m_hi, hi), (m_lo, lo) = bathtub.family(s, (0.75, 0.3))
    assert (m_hi, m_lo) == (0.75, 0.3)
    assert hi.workload.prefix_hit_rate.mean() == pytest.approx(0.75, abs=1e-9)
    assert lo.workload.prefix_hit_rate.mean() == pytest.approx(0.3, abs=1e-9)
    v_hi, _ = hi.workload.prefix_hit_rate.discretise(256)
    v_lo, _ = lo.workload.prefix_hit_rate.discretise(256)
    assert min(v_hi) >= 0.5 - 1e-12 and max(v_hi) <= 1.0 + 1e-12
    assert min(v_lo) >= -1e-12 and max(v_lo) <= 0.6 + 1e-12


def test_the_paper_family_spans_the_study(bathtub, paper):
    """pdd-paper's mix: 0.045 x 0.16 + 0.035 x 0.5 + 0.06 x 0.8 + 0.11 x 0.925 +
    0.75 x 0.97 = 0.90195; every member of the study's family lands on its mean."""
    assert paper.workload.prefix_hit_rate.mean() == pytest.approx(0.90195, abs=1e-9)
    for m, s in bathtub.family(paper, bathtub.MEANS):
        assert s.workload.prefix_hit_rate.mean() == pytest.approx(m, abs=1e-6)
    assert min(bathtub.MEANS) <= 0.3 and max(bathtub.MEANS) >= 0.97


def test_cost_parts_of_a_plan_by_hand(bathtub, paper, catalog):
    """5 prefill instances of 24 H100 at $3.99 = $478.80/h; 7 MD of 16 H200 at $4.9875 =
    $558.60/h; 2 lines at $8,155 a month / 730 h = $22.34/h."""
    plan = {
        "instances": [
            {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm",
             "gpus_per_instance": 24, "count": 5},
            {"role": "main_decode", "datacenter": "dc_b", "gpu": "h200_sxm",
             "gpus_per_instance": 16, "count": 7},
        ],
        "lines": [{"tier": "wave_10g", "count": 2}],
    }  # fmt: skip
    parts = bathtub.cost_parts_usd_per_hour(plan, paper, catalog)
    assert parts["prefill"] == pytest.approx(478.80)
    assert parts["main_decode"] == pytest.approx(558.60)
    assert parts["line"] == pytest.approx(2 * 8155 / 730)
    assert parts["relay_decode"] == 0.0


def test_interior_minimum(bathtub):
    xs = [0.3, 0.5, 0.7, 0.9]
    low, left, right = bathtub.interior_minimum(xs, [2.0, 1.5, 1.0, 1.2])
    assert low == 0.7 and left == pytest.approx(1.0) and right == pytest.approx(0.2)
    assert bathtub.interior_minimum(xs, [1.0, 1.5, 2.0, 3.0]) is None  # lowest at an end
    assert bathtub.interior_minimum(xs, [None, 2.0, 1.0, None]) is None  # too few points
    assert np.isclose(bathtub.interior_minimum(xs, [3.0, None, 1.0, 2.0])[1], 2.0)
