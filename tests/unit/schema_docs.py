"""Documents that use every key the loaders read, for the schema drift tests: scenarios (each
section, each distribution kind at each place, model and model_file, both decode-cache
forms) and plan files (each architecture, a bare plan, a solve result, a bought cache).

A new scenario or plan key belongs in one of these documents as well as in the schema:
test_schema_scenario.py fails until the loader has been seen reading every object the
schema describes, so the probes check its keys, bounds and types.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
MODEL_FILE, PROFILE_FILE = "my_model.yaml", "profile.yaml"
LENGTHS = {
    "fixed": {"kind": "fixed", "value": 4000},
    "bins": {
        "kind": "bins",
        "bins": [
            {"low": 100, "high": 1000, "share": 0.5},
            {"low": 1000, "high": 10000, "share": 0.5},
        ],
    },
    "lognormal": {"kind": "lognormal", "median": 4000, "sigma": 0.8, "low": 256, "high": 32768},
    "beta": {"kind": "beta", "alpha": 2, "beta": 5, "low": 256, "high": 32768},
    "empirical": {"kind": "empirical", "values": [1000, 5000], "weights": [1, 3]},
}
OUTPUTS = {  # output lengths that reach 2 tokens
    "fixed": {"kind": "fixed", "value": 300},
    "bins": {
        "kind": "bins",
        "bins": [{"low": 2, "high": 100, "share": 0.5}, {"low": 100, "high": 500, "share": 0.5}],
    },
    "lognormal": {"kind": "lognormal", "median": 300, "sigma": 1.0, "low": 2, "high": 4096},
    "beta": {"kind": "beta", "alpha": 2, "beta": 5, "low": 2, "high": 1000},
    "empirical": {"kind": "empirical", "values": [50, 300]},
}
HIT_RATES = {
    "fixed": {"kind": "fixed", "value": 0.8},
    "bins": {"kind": "bins", "bins": [{"low": 0.0, "high": 0.5, "share": 0.25},
                                      {"low": 0.5, "high": 1.0, "share": 0.75}]},
    "lognormal": {"kind": "lognormal", "median": 0.5, "sigma": 0.5, "low": 0.01, "high": 0.99},
    "beta": {"kind": "beta", "alpha": 2, "beta": 2, "low": 0.0, "high": 1.0},
    "empirical": {"kind": "empirical", "values": [0.1, 0.9], "weights": [1, 2]},
}  # fmt: skip


def template() -> dict:
    return yaml.safe_load((SCENARIOS / "template.yaml").read_text())


def every_section() -> dict:
    """The template with every optional section and key the template leaves out."""
    doc = template()
    doc["datacenters"][0]["name"] = "Site A"
    doc["workload"]["prefix_hit_rate_alternatives"] = {
        f"{kind}_mix": copy.deepcopy(d) for kind, d in HIT_RATES.items()
    }
    doc["workload"]["prefix_reuse"] = {
        "capacity_tokens": [1e6, 4e6], "resident_frac": [0.2, 0.6], "at_arrival_rate_per_s": 10,
    }  # fmt: skip
    doc["objective"] = {"kind": "max_goodput", "demand_rps": 5, "budget_usd_per_hour": 1000}
    doc["policy"]["short_output_cutoff"]["min_uncached_bytes_per_output_token"] = 1e6
    doc["policy"]["decode_cache"] = {"tiers": ["dram", "ssd"], "tb_total": [0, 2, 8]}
    doc["policy"]["mixed_pools"] = True
    doc["engine"] = {
        "kv_uncompressed_tokens": "all", "kv_layout_source": "a benchmark",
        "handoff_fixed_ms": 200, "handoff_fixed_source": "a benchmark",
        "reserve_max_output": False, "prefill_batching": True,
        "prefill_token_budget_per_gpu": 8192, "profile": PROFILE_FILE,
    }  # fmt: skip
    return doc


def joint_bins() -> dict:
    """A model file, a fixed decode-side cache, and hit-rate bins carrying their own lengths
    (every kind), so the workload has no input_tokens of its own."""
    doc = template()
    del doc["model"]
    doc["model_file"] = MODEL_FILE
    doc["policy"]["decode_cache_capacity_tokens"] = 1e6
    doc["engine"] = {"kv_uncompressed_tokens": 1_000_000, "kv_layout_source": "a benchmark"}
    del doc["workload"]["input_tokens"]
    doc["workload"]["output_tokens"] = OUTPUTS["fixed"]
    bins = []
    for i, kind in enumerate(LENGTHS):
        one = {"low": i / 5, "high": (i + 1) / 5, "share": 0.2, "input_tokens": LENGTHS[kind]}
        bins.append(one | ({"output_tokens": OUTPUTS[kind]} if i % 2 else {}))
    doc["workload"]["prefix_hit_rate"] = {"kind": "bins", "bins": bins}
    return doc


def each_kind(input_kind: str, output_kind: str, hit_kind: str) -> dict:
    doc = template()
    doc["workload"] |= {"input_tokens": LENGTHS[input_kind], "output_tokens": OUTPUTS[output_kind],
                        "prefix_hit_rate": HIT_RATES[hit_kind]}  # fmt: skip
    return doc


def full_scenarios() -> dict[str, dict]:
    """name -> a scenario document; together they reach every key the loader reads."""
    docs = {"every_section": every_section(), "joint_bins": joint_bins()}
    rotations = [("empirical", "bins", "fixed"), ("beta", "empirical", "lognormal"),
                 ("fixed", "beta", "empirical"), ("bins", "lognormal", "beta")]  # fmt: skip
    for kinds in rotations:
        docs["_".join(kinds)] = each_kind(*kinds)
    return docs


def scenario_folder(folder: Path) -> Path:
    """`folder` with the files the documents name (a model entry, an engine profile)."""
    catalog = REPO / "hardware_catalog"
    shutil.copy(catalog / "models" / "qwen3_32b.yaml", folder / MODEL_FILE)
    shutil.copy(catalog / "engines" / "vllm_0_20_b300_qwen3_32b.yaml", folder / PROFILE_FILE)
    return folder


def write(folder: Path, name: str, doc) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


# ---- plan files --------------------------------------------------------------------------------
def shipped_plan(architecture: str) -> dict:
    return yaml.safe_load((SCENARIOS / "plans" / f"pdd-paper-{architecture}.yaml").read_text())


def cache_scenario() -> dict:
    doc = yaml.safe_load((SCENARIOS / "pdd-paper.yaml").read_text())
    doc["policy"] = (doc.get("policy") or {}) | {"decode_cache": {"tiers": ["ssd"]}}
    doc["policy"].pop("decode_cache_capacity_tokens", None)
    return doc


def full_plans() -> dict[str, tuple[str, dict]]:
    """name -> (the scenario it is read against: a shipped name or `cache`, a plan file)."""
    pdd = shipped_plan("pdd")
    cached = copy.deepcopy(pdd)
    cached["plan"]["decode_cache"] = {"tier": "ssd", "tb": 8, "price_usd_per_tb_month": 20}
    result = json.loads((REPO / "tests" / "golden" / "default.json").read_text())
    colocated = {"plan": {"architecture": "colocated", "instances": [
        {"role": "colocated", "datacenter": "dc_a", "gpu": "h100_sxm",
         "gpus_per_instance": 16, "count": 4}]}}  # fmt: skip
    return {
        "pdd": ("pdd-paper", pdd),
        "cdc_pd": ("pdd-paper", shipped_plan("cdc_pd")),
        "idc_pd": ("pdd-paper", shipped_plan("idc_pd")),
        "colocated": ("default", colocated),
        "bare": ("cache", cached["plan"]),
        "result": ("default", result),
        "cache": ("cache", cached),
    }
