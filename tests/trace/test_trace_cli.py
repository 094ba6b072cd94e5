"""`pdd-plan trace analyze` end to end: the workload block loads, a scenario built from it
solves, the plot is written, an Azure trace keeps its hit rate unknown."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from trace_helpers import row, write_mooncake

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path


def conversation_trace(path, requests: int = 300, rate_per_s: float = 8.0, seed: int = 3):
    """Multi-turn sessions behind one shared system prompt (block 0): each turn's prompt is
    the previous turn's blocks plus new ones. Poisson arrivals."""
    rng = np.random.default_rng(seed)
    times_ms = np.cumsum(rng.exponential(1000 / rate_per_s, requests))
    sessions: dict[int, list[int]] = {}
    next_id, rows = 1, []
    for t in times_ms:
        s = int(rng.integers(0, 40))
        blocks = sessions.get(s, [0])
        new = int(rng.integers(1, 12))
        blocks = blocks + list(range(next_id, next_id + new))
        next_id += new
        sessions[s] = blocks if len(blocks) < 60 else [0]
        length = 512 * (len(blocks) - 1) + int(rng.integers(1, 513))
        rows.append(row(float(round(t)), length, blocks, int(rng.integers(20, 800))))
    return write_mooncake(path, rows), rows


def test_the_workload_block_loads_into_a_scenario(run_main, tmp_path):
    path, rows = conversation_trace(tmp_path / "conv.jsonl")
    result = run_main("trace", "analyze", "conv.jsonl", "--workload-out", "w.yaml")
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "w.yaml").read_text()
    assert text.startswith("# pdd-plan trace analyze conv.jsonl")
    scenario = yaml.safe_load(resolve_scenario_path("default").read_text())
    scenario["workload"] = yaml.safe_load(text)["workload"]  # pasted in as it is
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    w = load_scenario(tmp_path / "s.yaml").workload
    times_s = np.array([r["timestamp"] for r in rows]) / 1000
    assert w.arrival_rate_per_s == pytest.approx((len(rows) - 1) / np.ptp(times_s), rel=1e-5)
    assert 0.7 < w.burstiness_cv2 < 1.3  # Poisson arrivals, rounded to the millisecond
    mean_input = np.mean([r["input_length"] for r in rows])
    assert w.input_tokens.kind == "bins"
    assert w.input_tokens.mean() == pytest.approx(mean_input, rel=0.1)
    assert w.prefix_hit_rate.kind == "bins" and 0 < w.prefix_hit_rate.mean() < 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [(), ("--joint", "--decode-cache-capacity", "200k")],
    ids=["independent", "joint-with-finite-md-cache"],
)
def test_a_scenario_built_from_the_trace_solves(run_main, run_cli, tmp_path, extra):
    """Also with the hit rate joint with prompt length and MD's LRU curve read at a finite
    decode-side capacity (#12 items 2 and 7)."""
    conversation_trace(tmp_path / "conv.jsonl")
    result = run_main(
        "trace", "analyze", "conv.jsonl", "--scenario-out", "conv.yaml", "--base", "default",
        "--reuse-curve", *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    workload = yaml.safe_load((tmp_path / "conv.yaml").read_text())["workload"]
    assert "prefix_reuse" in workload
    assert ("input_tokens" in workload) == (not extra)
    solved = run_cli("solve", "conv.yaml", "--format", "json")
    assert solved.returncode == 0, solved.stderr
    plan = json.loads(solved.stdout)
    assert plan["status"] in ("optimal", "feasible") and plan["metrics"]["sla_met"]
    assert plan["metrics"]["offered_rps"] == pytest.approx(8.0, rel=0.15)


def test_capacity_sweep_json_and_plots(run_main, tmp_path):
    write_mooncake(
        tmp_path / "t.jsonl",
        [row(0, 1200, [1, 2, 3]), row(1000, 1100, [1, 2, 9]), row(2000, 300, [1])],
    )
    args = ("trace", "analyze", "t.jsonl", "--cache-unit", "blocks", "--format", "json")
    result = run_main(*args, "--cache-capacity", "0,2,unlimited", "--plot", "hit.svg")
    assert result.returncode == 0, result.stderr
    cache = json.loads(result.stdout)["prefix_cache"]
    by_capacity = {c["capacity_blocks"]: c["token_hit_frac"] for c in cache["by_capacity"]}
    assert by_capacity == pytest.approx({0: 0.0, 2: 1324 / 2600, None: 1324 / 2600})
    assert cache["prefill"]["capacity_tokens"] == 0  # the first capacity feeds the workload
    assert "<svg" in (tmp_path / "hit.svg").read_text()
    result = run_main(*args, "--cache-capacity", "1,2", "--plot", "hit.png")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "hit.png").read_bytes().startswith(b"\x89PNG")


def test_the_decode_side_has_its_own_capacity(run_main, tmp_path):
    conversation_trace(tmp_path / "conv.jsonl")
    result = run_main(
        "trace", "analyze", "conv.jsonl", "--decode-cache-capacity", "20k",
        "--scenario-out", "s.yaml", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    cache = json.loads(result.stdout)["prefix_cache"]
    assert cache["decode"]["capacity_blocks"] == 20_000 // 512
    assert cache["decode"]["token_hit_frac"] < cache["prefill"]["token_hit_frac"]
    assert cache["prefill"] == cache["unlimited"]  # the prefill default: unlimited
    policy = yaml.safe_load((tmp_path / "s.yaml").read_text())["policy"]
    assert policy["decode_cache_capacity_tokens"] == 20_000


def test_an_azure_trace_never_gets_an_invented_hit_rate(run_main, tmp_path):
    (tmp_path / "az.csv").write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"2023-11-16 18:17:{s:02d}.5,{1000 + 37 * s},{5 + s}\n" for s in range(40))
    )
    args = ("trace", "analyze", "az.csv", "--workload-out", "w.yaml", "--scenario-out", "s.yaml")
    result = run_main(*args, "--format", "json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["prefix_cache"] is None and "prefix_hit_rate" not in out["workload"]
    assert any("no prefix hashes" in n for n in out["notes"])
    assert "UNKNOWN" in (tmp_path / "w.yaml").read_text()
    assert "prefix_hit_rate" not in yaml.safe_load((tmp_path / "w.yaml").read_text())["workload"]
    base = yaml.safe_load(resolve_scenario_path("default").read_text())["workload"]
    built = load_scenario(tmp_path / "s.yaml")  # the base's hit rate, said so in the notes
    assert (
        yaml.safe_load((tmp_path / "s.yaml").read_text())["workload"]["prefix_hit_rate"]
        == (base["prefix_hit_rate"])
    )
    assert built.workload.arrival_rate_per_s == pytest.approx(1.0)
    assert any("kept from the base" in n for n in out["notes"])


def test_the_table_names_the_ceiling(run_main, tmp_path):
    conversation_trace(tmp_path / "conv.jsonl")
    result = run_main("trace", "analyze", "conv.jsonl", "--cache-capacity", "100k,1M")
    assert result.returncode == 0, result.stderr
    assert "Prefix hit rate against LRU capacity" in result.stdout
    assert "unlimited" in result.stdout and "burstiness" in result.stdout
