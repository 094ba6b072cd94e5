"""Documents that use every key the loaders read, for the schema drift tests: scenarios (each
section, each distribution kind at each place, model and model_file, both decode-cache
forms, both spares forms, each way to give a load curve) and plan files (each architecture,
a bare plan, a solve result, a bought cache).

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
EXAMPLES = REPO / "examples"
MODEL_FILE, PROFILE_FILE = "my_model.yaml", "profile.yaml"
CURVE_FILE, EXPORT_FILE = "curve.csv", "export.json"
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
    doc["workload"]["load_curve"] = {"periods": one_period(), "scale": 2}
    doc["costs"]["spares"] = {"prefill": 1, "relay_decode": 0, "main_decode": 2, "decode": 0,
                              "colocated": 0}  # fmt: skip
    doc["costs"]["capacity_classes"] = capacity_classes()
    doc["prices"] = prices()
    return doc


def one_period() -> list[dict]:
    """A curve of one hour, its own mix and lengths bins: with no period after it, its
    start and length reach their bounds (a later period would no longer meet it)."""
    return copy.deepcopy([{"start_h": 0, "duration_h": 1, "arrival_rate_per_s": 5,
                           "prefix_hit_rate": HIT_RATES["bins"], "input_tokens": LENGTHS["bins"],
                           "output_tokens": OUTPUTS["bins"]}])  # fmt: skip


def curve_periods() -> list[dict]:
    """Five contiguous hours from a time, the n-th with each distribution's n-th kind as its
    own; the last one's length in minutes (no period after it: it reaches its bounds)."""
    periods = []
    for i, kind in enumerate(LENGTHS):
        length = {"duration_min": 60} if i == len(LENGTHS) - 1 else {"duration_h": 1}
        start = {"start": f"2025-06-02T{i:02d}:00:00Z"}
        periods.append(start | length | {"arrival_rate_per_s": 5 + i,
                       "prefix_hit_rate": HIT_RATES[kind], "input_tokens": LENGTHS[kind],
                       "output_tokens": OUTPUTS[kind]})  # fmt: skip
    return copy.deepcopy(periods)


def capacity_classes() -> dict:
    """Every key: reserved and spot terms, an offer with its own spot terms, one without."""
    spot = {"price_frac": 0.35, "interruptions_per_hour": 0.1, "replacement_min": 15,
            "confidence": 0.95, "max_share_frac": 0.5}  # fmt: skip
    return {
        "reserved": {"price_frac": 0.55, "term_years": 3, "basis": "a 3-year quote"},
        "spot": spot | {"basis": "a spot market's figures"},
        "offers": [
            {"datacenter": "dc_a", "gpu": "h100_sxm", "reserved_price_frac": 0.5, "spot": True,
             **{f"spot_{k}": v for k, v in spot.items()}},
            {"datacenter": "dc_b", "gpu": "h200_sxm", "spot": False},
        ],
    }  # fmt: skip


def prices() -> dict:
    """Every key of every entry. The first GPU quote prices a GPU no datacenter offers, so
    its figures reach their bounds; a rental where the template sets one is the same."""
    terms = {"note": "quote Q-17", "quoted_by": "a vendor", "valid_until": "2025-12-31",
             "lead_time_weeks": 12, "contract_term_months": 36}  # fmt: skip
    return {
        "gpus": [{"gpu": "h20_96g", "rental_usd_per_gpu_hour": 1.5, "purchase_usd_per_gpu": 12000,
                  "purchase_usd_per_node": 110000, **terms},
                 {"gpu": "h100_sxm", "datacenter": "dc_a", "rental_usd_per_gpu_hour": 2.5}],
        "lines": [{"tier": "wave_100g", "price_usd_per_month": 2900, "install_usd": 4000,
                   "optic_usd_each": 450, **terms}],
        "power": [{"datacenter": "dc_a", "usd_per_kwh": 0.085}, {"usd_per_kwh": 0.1}],
    }  # fmt: skip


def curve_forms() -> dict[str, dict]:
    """The other ways to give a load curve (every_section has `{periods}`): the list itself
    (the single rate left to the curve's peak), a curve file, a Prometheus export; and
    `costs.spares` as one number for every role."""
    inline, in_file, exported = template(), template(), template()
    inline["workload"]["load_curve"] = curve_periods()
    del inline["workload"]["arrival_rate_per_s"]
    in_file["workload"]["load_curve"] = {"file": CURVE_FILE}
    in_file["costs"]["spares"] = 1
    exported["workload"]["load_curve"] = {
        "prometheus": EXPORT_FILE, "metric": "requests_per_s", "series": {"job": "api"},
    }  # fmt: skip
    return {"inline_curve": inline, "curve_file": in_file, "curve_prometheus": exported}


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
    return docs | curve_forms()


def scenario_folder(folder: Path) -> Path:
    """`folder` with the files the documents name (a model entry, an engine profile, a
    curve file, a Prometheus export of two series: the `series` and `metric` choose one)."""
    catalog = REPO / "hardware_catalog"
    shutil.copy(catalog / "models" / "qwen3_32b.yaml", folder / MODEL_FILE)
    shutil.copy(catalog / "engines" / "vllm_0_20_b300_qwen3_32b.yaml", folder / PROFILE_FILE)
    (folder / CURVE_FILE).write_text("start_h,duration_h,arrival_rate_per_s\n0,1,10\n1,1,20\n")
    points = [[1_748_822_400 + 3600 * i, rate] for i, rate in enumerate(("10", "20", "15"), 1)]
    series = [{"metric": {"__name__": "requests_per_s", "job": job}, "values": points}
              for job in ("api", "batch")]  # fmt: skip
    export = {"status": "success", "data": {"resultType": "matrix", "result": series}}
    (folder / EXPORT_FILE).write_text(json.dumps(export))
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
