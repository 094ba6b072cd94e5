"""Infeasibility names the shortfall for every kind of limit (issue #14, item 2): the WAN
connection pool and the line tiers allowed (ceilings checked before any search), power,
budget and GPU availability (the elastic MILP), each with the figures needed and
available, worked out by hand here; `--format json` still answers on stdout (exit 3)."""

from __future__ import annotations

import json

import pytest
import yaml

from pdd_plan.plan import ceilings
from pdd_plan.plan.shortfalls import tried_summary

LLAMA_KV_BYTES_PER_TOKEN = 327_680  # 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B (bf16)
JUMBO_FRAME = (9000 - 52) / (9000 + 38)  # payload per wire byte: MTU 9000, IP+TCP, Ethernet


def cross_dc(**over) -> dict:
    """A CDC-PD scenario of Llama-3.1-70B whose every request ships its whole prompt's KV
    (hit rate 0, fixed lengths): bits per request = tokens x KV bytes x 8."""
    data = {
        "name": "cross",
        "model": "llama_3_1_70b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill"], "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]},
            {"id": "dc_b", "roles": ["main_decode"], "gpus": [{"gpu": "h200_sxm", "max_gpus": 64}]},
        ],
        "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "per_connection_gbit_per_s": 1.0,
                "connection_pool_size": 64, "max_lines": 4},
        "workload": {
            "arrival_rate_per_s": 2,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 100},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 60, "tpot_p90_ms": 100},
        "architectures": ["cdc_pd"],
    }  # fmt: skip
    for key, value in over.items():
        section, _, name = key.partition("__")
        data[section] = {**data[section], name: value} if name else value
    return data


def one_dc(**dc) -> dict:
    """IDC-PD of Qwen3-32B on H100 in one datacenter: no WAN, only GPU limits."""
    center = {"id": "dc_a", "roles": ["prefill", "decode"],
              "gpus": [{"gpu": "h100_sxm", "gpus_per_instance": [1]}], **dc}  # fmt: skip
    return {
        "name": "one",
        "model": "qwen3_32b",
        "datacenters": [center],
        "workload": {
            "arrival_rate_per_s": 20,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 200},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 5, "tpot_p90_ms": 100},
        "architectures": ["idc_pd"],
    }


def infeasible(run_cli, tmp_path, data: dict, *extra: str) -> dict:
    """Solve with --format json: exit 3, one error line, a JSON answer on stdout."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    result = run_cli("solve", "s.yaml", "--format", "json", "--time-limit", "10", *extra)
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    assert answer["status"] == "infeasible" and answer["plan"] is None
    assert answer["reason"] in lines[0]
    return answer


def the(answer: dict, kind: str) -> dict:
    found = [s for s in answer["shortfalls"] if kind in s["limit"] or s.get("kind") == kind]
    assert found, answer
    return found[0]


@pytest.mark.slow
def test_a_small_connection_pool_is_named_with_its_figures(run_cli, tmp_path):
    # 2 req/s x 4000 tokens x 327,680 B x 8 = 20.97 Gbit/s; 4 connections x 1 Gbit/s = 4
    answer = infeasible(run_cli, tmp_path, cross_dc(wan__connection_pool_size=4))
    pool = the(answer, "connection pool")
    assert pool["needs"] == pytest.approx(2 * 4000 * LLAMA_KV_BYTES_PER_TOKEN * 8 / 1e9)
    assert pool["has"] == pytest.approx(4.0)
    assert pool["unit"] == "Gbit/s"
    assert "connection_pool_size at least 21" in pool["relaxation"]
    assert "needs 21 Gbit/s" in answer["reason"] and "carries 4 Gbit/s" in answer["reason"]


@pytest.mark.slow
def test_the_line_tiers_allowed_are_named_with_their_figures(run_cli, tmp_path):
    # 20.97 Gbit/s against 1 line of 10 Gbit/s x 0.85 (the cap) x the jumbo-frame payload
    data = cross_dc(wan__max_lines=1)
    data["policy"] = {"utilization_cap_frac": 0.85}
    answer = infeasible(run_cli, tmp_path, data)
    line = the(answer, "WAN line")
    assert line["needs"] == pytest.approx(2 * 4000 * LLAMA_KV_BYTES_PER_TOKEN * 8 / 1e9)
    assert line["has"] == pytest.approx(10 * 0.85 * JUMBO_FRAME)
    assert "wan.max_lines at least 3" in line["relaxation"]  # 20.97 / 8.415 = 2.49


def test_a_rate_above_a_wan_ceiling_is_refused_before_any_milp(catalog, monkeypatch):
    from pdd_plan.loaders.scenario import load_scenario
    from pdd_plan.plan import milp_seeds as ms
    from pdd_plan.plan import solve as sv

    def no_milp(*_):
        raise AssertionError("the MILP ran")

    monkeypatch.setattr(ms, "solve_milp", no_milp)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(yaml.safe_dump(cross_dc(wan__connection_pool_size=4)))
        s = load_scenario(path, catalog)
    with pytest.raises(ceilings.ShortfallError) as caught:
        sv.solve(s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd", (2, 2, 2), 5)
    assert caught.value.shortfalls[0]["limit"] == "WAN connection pool"


@pytest.mark.slow
def test_a_power_budget_is_named_with_its_figures(run_cli, tmp_path):
    # 1.2 kW holds one H100 (700 W x PUE 1.3 = 910 W); 20 req/s of 4000-token prompts
    # need more than one prefill and one decode GPU
    answer = infeasible(run_cli, tmp_path, one_dc(power_budget_kw=1.2))
    power = the(answer, "power")
    assert power["has"] == pytest.approx(1.2)
    assert power["needs"] >= 2 * 0.91 - 1e-9  # a prefill and a decode GPU at least
    assert power["unit"] == "kW"
    # the figure was set and solved again (plan/relax.py): it suffices
    assert "power_budget_kw to " in power["relaxation"] and power["sufficient"]


@pytest.mark.slow
def test_a_budget_is_named_with_its_figures(run_cli, tmp_path):
    # $5/h pays one H100 at the catalog's $3.99/h; the plan needs two at least
    answer = infeasible(run_cli, tmp_path, one_dc(budget_usd_per_hour=5.0))
    budget = the(answer, "budget")
    assert budget["has"] == pytest.approx(5.0)
    assert budget["needs"] >= 2 * 3.99 - 1e-9
    # the figure was set and solved again (plan/relax.py): it suffices
    assert "budget_usd_per_hour to " in budget["relaxation"] and budget["sufficient"]


@pytest.mark.slow
def test_gpu_availability_is_named_with_its_figures(run_cli, tmp_path):
    data = one_dc()
    data["datacenters"][0]["gpus"][0]["max_gpus"] = 1  # one GPU for two roles
    answer = infeasible(run_cli, tmp_path, data)
    gpus = the(answer, "availability")
    assert gpus["has"] == pytest.approx(1)
    assert gpus["needs"] >= 2
    assert gpus["unit"] == "GPUs"
    # the figure was set and solved again (plan/relax.py): it suffices
    assert "max_gpus to " in gpus["relaxation"] and gpus["sufficient"]


def test_the_attempts_are_one_summary_not_a_line_each():
    from pdd_plan.model.deployment import RoutingPolicy
    from pdd_plan.plan.solve import Attempt

    outcome = "SLA missed at the sized rate: resized"
    attempts = [
        Attempt(RoutingPolicy(t, h), 0.85 * 0.85**k, outcome)
        for t in (0.8, 0.9, 0.95)
        for h in ("catch_up", "one_shot")
        for k in range(6)
    ]
    text = tried_summary(attempts)
    assert text.count(outcome) == 1
    assert "36 attempts" in text and "0.8/0.9/0.95" in text
    assert f"down to {0.85 * 0.85**5:.2f}" in text


@pytest.mark.slow
def test_the_table_format_exits_3_with_one_line_and_nothing_on_stdout(run_cli, tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(cross_dc(wan__connection_pool_size=4)))
    result = run_cli("solve", "s.yaml", "--time-limit", "5")
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr.count("error: ") == 1 and "connection pool" in result.stderr


def floors_scenario(ttft_s: float, tpot_ms: float) -> dict:
    data = one_dc()
    data["workload"]["arrival_rate_per_s"] = 1
    data["sla"] = {"ttft_p90_s": ttft_s, "tpot_p90_ms": tpot_ms}
    return data


@pytest.mark.slow
def test_sla_floors_no_instance_can_meet_are_named_with_figures(run_cli, tmp_path):
    # 10 ms for a 4000-token prefill of a 32B model (2.6e14 FLOP: above 0.1 s on any
    # H100 shape allowed) and 1 ms a token (a batch-1 step reads 64 GB of weights: over
    # 19 ms at 3.35 TB/s per GPU, so over 1 ms on one GPU): both floors are missed
    answer = infeasible(run_cli, tmp_path, floors_scenario(0.01, 1))
    ttft, tpot = the(answer, "TTFT P90"), the(answer, "TPOT P90")
    assert ttft["has"] == pytest.approx(0.01) and ttft["unit"] == "s"
    assert ttft["needs"] > 0.05
    assert tpot["has"] == pytest.approx(1.0) and tpot["unit"] == "ms"
    assert tpot["needs"] > 5
    assert "sla.ttft_p90_s at least" in ttft["relaxation"]
    assert "sla.tpot_p90_ms at least" in tpot["relaxation"]


@pytest.mark.slow
def test_relaxing_as_named_lifts_the_floor(run_cli, tmp_path):
    """The figures are floors: limits just above them no longer name them."""
    answer = infeasible(run_cli, tmp_path, floors_scenario(0.01, 1))
    ttft, tpot = the(answer, "TTFT P90"), the(answer, "TPOT P90")
    relaxed = floors_scenario(ttft["needs"] * 1.05, tpot["needs"] * 1.05)
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(relaxed))
    result = run_cli("solve", "r.yaml", "--format", "json", "--time-limit", "10")
    shown = json.loads(result.stdout) if result.stdout else {}
    assert not any("P90 limit (" in s["limit"] for s in shown.get("shortfalls", []))
