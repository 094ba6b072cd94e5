"""Mixed GPU types within a decode role (issue #15 item 4, closed form): the router's split
by capacity at each group's TPOT-feasible batch, each group judged on its own share, the
one-group role unchanged, and the commands that refuse what they do not model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdd_plan.api import evaluate_plan
from pdd_plan.errors import InputError
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.decode_side import decode_side
from pdd_plan.model.evaluate import _prefill, prepare, snapshot
from pdd_plan.model.tpot_rows import tpot_rows

SCENARIO = """\
name: mixed
model: llama_3_1_70b
kv_dtype: fp8
weight_dtype: fp8
datacenters:
  - id: dc_a
    roles: [prefill, decode, relay_decode]
    gpus:
      - {gpu: h100_sxm, price_usd_per_gpu_hour: 3.0}
      - {gpu: h20_96g, price_usd_per_gpu_hour: 1.2}
  - id: dc_b
    roles: [main_decode]
    gpus:
      - {gpu: h200_sxm, price_usd_per_gpu_hour: 3.5}
      - {gpu: h20_96g, price_usd_per_gpu_hour: 1.2}
wan: {rtt_ms: 20, tiers: [wave_10g]}
workload:
  arrival_rate_per_s: 4
  input_tokens: {kind: fixed, value: 2000}
  output_tokens: {kind: fixed, value: 300}
  prefix_hit_rate: {kind: fixed, value: 0.5}
sla: {ttft_p90_s: 5, tpot_p90_ms: 60}
objective: {kind: max_bcr}
"""

IDC = """\
plan:
  architecture: idc_pd
  instances:
    - {role: prefill, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 2, count: 1}
%s
"""
H100_DECODE = (
    "    - {role: decode, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 2, count: 1}"
)
H20_DECODE = "    - {role: decode, datacenter: dc_a, gpu: h20_96g, gpus_per_instance: 2, count: 2}"
RESOLUTION = (1, 1, 1)


def _setup(catalog, tmp_path, plan_text, name="plan.yaml"):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / name).write_text(plan_text)
    s = load_scenario(tmp_path / "s.yaml", catalog)
    d = load_plan(tmp_path / name, s, catalog)
    return prepare(s, d, catalog.model_for(s), catalog.gpus, catalog.lines, RESOLUTION)


def test_a_one_group_role_is_the_single_pool_exactly(catalog, tmp_path):
    """One group: share 1, and the snapshot's decode figures are those of the single-pool
    primitives called directly (decode_side with no share, tpot_rows at the full rate)."""
    setup = _setup(catalog, tmp_path, IDC % H100_DECODE)
    assert setup.decode_shares_frac == (1.0,) and not setup.mixed
    rate = 2.0
    snap = snapshot(setup, rate)
    service, _, p_util = _prefill(setup, rate)
    side = decode_side(setup, rate, np.zeros(len(setup.classes)), p_util)
    assert snap.utilization_frac["decode"] == side.md.utilization_frac
    assert snap.decode_admission_wait_s == side.md_admission.wait.mean_s()
    rows = tpot_rows(setup, side, rate, service)
    assert snap.tpot_quantile_s(0.9) == rows.quantiles(rows.tpot_cdf, [0.9])[0]
    assert snap.decode_groups == ()


def test_the_split_follows_each_groups_capacity_at_its_tpot_batch(catalog, tmp_path):
    """share_i = n_i B_i / step_i(B_i), normalised; B_i the batch whose step reaches the
    60 ms TPOT limit (or HBM's) at the mean context 2,000 + 300 / 2 = 2,150 tokens. Each
    group then runs Little's law on its own share: B = rate x share / n x 300 x step, the
    step a request shares with the B others (model/decode/decode_pool.py): step(B + 1)."""
    setup = _setup(catalog, tmp_path, IDC % (H100_DECODE + "\n" + H20_DECODE))
    assert setup.mixed
    context = 2000 + 300 / 2
    caps = []
    for pool in setup.decode_groups:
        inst = pool.instance
        batch = min(inst.max_batch_for_tpot(0.060, context), inst.max_batch(context))
        assert pool.batch_limit == batch
        caps.append(pool.group.count * batch / float(inst.decode_step_s(batch, context)))
    expected = [c / sum(caps) for c in caps]
    assert setup.decode_shares_frac == pytest.approx(expected, rel=1e-12)
    rate = 3.0
    snap = snapshot(setup, rate)
    assert [g.gpu for g in snap.decode_groups] == ["h100_sxm", "h20_96g"]
    for g, pool, share in zip(snap.decode_groups, setup.decode_groups, expected, strict=True):
        assert g.share_frac == pytest.approx(share)
        step = float(pool.instance.decode_step_s(min(g.batch + 1.0, g.slots), context))
        little = rate * share / pool.group.count * 300 * step
        assert g.batch == pytest.approx(little, rel=2e-3)
        assert g.utilization_frac == pytest.approx(g.batch / g.slots)
    # the role reports its fullest group
    assert snap.utilization_frac["decode"] == max(g.utilization_frac for g in snap.decode_groups)


def test_the_roles_tpot_is_the_share_weighted_mixture(catalog, tmp_path):
    """Fixed lengths: each group's TPOT sits near its own step; the role's P50 lies
    between the two groups' steps and its CDF at any t is s1 F1(t) + s2 F2(t)."""
    setup = _setup(catalog, tmp_path, IDC % (H100_DECODE + "\n" + H20_DECODE))
    snap = snapshot(setup, 3.0)
    rows = snap.tpot_rows
    s1, s2 = setup.decode_shares_frac
    f1, f2 = rows.parts
    for t in (0.01, 0.03, 0.05):
        assert rows.tpot_cdf(t) == pytest.approx(s1 * f1.tpot_cdf(t) + s2 * f2.tpot_cdf(t))
    steps = sorted(float(p.mean_s.mean()) for p in rows.parts)
    assert steps[0] * 0.99 <= snap.tpot_s["p50"] <= steps[1] * 1.01


def test_a_plan_file_with_h200_and_h20_main_decode_evaluates(catalog, tmp_path):
    plan = """\
plan:
  architecture: cdc_pd
  instances:
    - {role: prefill, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 2, count: 1}
    - {role: main_decode, datacenter: dc_b, gpu: h200_sxm, gpus_per_instance: 1, count: 1}
    - {role: main_decode, datacenter: dc_b, gpu: h20_96g, gpus_per_instance: 2, count: 1}
  lines: [{tier: wave_10g, count: 1}]
"""
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "p.yaml").write_text(plan)
    out = evaluate_plan(tmp_path / "s.yaml", tmp_path / "p.yaml", catalog, RESOLUTION)
    roles = [(g["role"], g["gpu"]) for g in out["plan"]["instances"]]
    assert roles.count(("main_decode", "h200_sxm")) == 1
    assert roles.count(("main_decode", "h20_96g")) == 1
    # cost by hand: 2 H100 at $3, 1 H200 at $3.5, 2 H20 at $1.2, one 10G line
    line = catalog.lines["wave_10g"].price_usd_per_month / 730
    assert out["metrics"]["cost_usd_per_hour"] == pytest.approx(6 + 3.5 + 2.4 + line)
    assert out["metrics"]["goodput_rps"] > 0
    split = out["decode_split"]
    assert [g["gpu"] for g in split] == ["h200_sxm", "h20_96g"]
    assert sum(g["share_frac"] for g in split) == pytest.approx(1.0)
    # the result reads back as a plan file (its result keys skipped), the split too
    (tmp_path / "result.json").write_text(json.dumps(out))
    again = evaluate_plan(tmp_path / "s.yaml", tmp_path / "result.json", catalog, RESOLUTION)
    assert again["decode_split"] == split


@pytest.mark.parametrize(
    "extra, role",
    [
        ("    - {role: prefill, datacenter: dc_a, gpu: h20_96g, gpus_per_instance: 2, count: 1}",
         "prefill"),
    ],
)  # fmt: skip
def test_a_mixed_role_the_model_does_not_mix_is_refused(catalog, tmp_path, extra, role):
    with pytest.raises(InputError, match=f"2 instance groups for the {role} role"):
        _setup(catalog, tmp_path, IDC % (H100_DECODE + "\n" + extra))


@pytest.mark.slow
def test_simulate_refuses_a_mixed_plan_in_one_line(run_cli, tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "p.yaml").write_text(IDC % (H100_DECODE + "\n" + H20_DECODE))
    r = run_cli("simulate", "s.yaml", "p.yaml", "--requests", "2300")
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith("error: p.yaml: plan.instances: found 2 decode groups")
    assert "h20_96g" in lines[0] and "simulate" in lines[0]


def test_a_mixed_roles_sla_verdict_equals_its_searched_percentile(catalog, tmp_path):
    """The SLA check reads a mixed role's TPOT verdict without searching the percentile
    (MixedRows.quantile_at_most); it must answer as `quantiles(...) <= limit` does, at
    limits on, just beside and far from each percentile."""
    setup = _setup(catalog, tmp_path, IDC % (H100_DECODE + "\n" + H20_DECODE))
    rows = snapshot(setup, 3.0).tpot_rows
    assert len(rows.parts) == 2
    for cdf in (rows.tpot_cdf, rows.gap_cdf):
        for q in (0.5, 0.9, 0.99):
            r = rows.quantiles(cdf, [q])[0]
            for limit in (r, r * (1 - 1e-6), r * (1 + 1e-6), r * 0.5, r * 2, 0.0):
                assert rows.quantile_at_most(cdf, q, limit) == (r <= limit), (q, limit)
