"""A trace analysis -> a scenario `workload:` block, and a whole scenario built on a base."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import yaml

from pdd_plan.errors import InputError, Problem
from pdd_plan.loaders import trace_stats as stats
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.loaders.scenario_demand import MAX_TOKENS
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.loaders.trace_analyze import TraceAnalysis
from pdd_plan.model.workload.workload import MAX_EXACT_BINS

DIST_KINDS = ("bins", "empirical")


# in a joint hit-rate bin's own lengths (a few dozen requests), 2 % is one request: a point
# mass there needs this many requests of one length, else every length would be its own bin
JOINT_MIN_POINT_COUNT = 10


def _distribution(
    values: np.ndarray, kind: str, low: float, high: float, integer: bool, min_point: int = 1
) -> dict:
    """Values clipped into what the scenario loader accepts (lengths >= 1, hit in [0, 1])."""
    values = np.clip(values, low, high)

    def num(x: float):
        return int(round(x)) if integer else round(float(x), 4)

    if kind == "empirical":
        points, weights = stats.empirical_strata(values)
        return {
            "kind": "empirical",
            "values": [num(v) for v in points],
            "weights": [round(w, 6) for w in weights],
        }
    return {
        "kind": "bins",
        "bins": [
            {"low": num(b.low), "high": num(b.high), "share": round(b.share, 6)}
            for b in stats.quantile_bins(values, min_point)
        ],
    }


def joint_hit_rate(analysis: TraceAnalysis, kind: str = "bins") -> dict | None:
    """The P-side hit rate as `bins` whose every bin carries the input lengths of the
    requests in it (hit rate joint with prompt length); None without hashes, or when
    the hit rate needs more bins than a joint `bins` may have."""
    if analysis.prefill is None:
        return None
    members = stats.quantile_bins_with_members(analysis.prefill.hit_frac)
    if len(members) > MAX_EXACT_BINS:
        return None
    bins = []
    for b, mask in members:
        inputs = analysis.input_tokens[mask]
        bins.append(
            {
                "low": round(b.low, 4),
                "high": round(b.high, 4),
                "share": round(b.share, 6),
                "input_tokens": _distribution(
                    inputs, kind, 1, MAX_TOKENS, True, JOINT_MIN_POINT_COUNT
                ),
            }
        )
    return {"kind": "bins", "bins": bins}


def workload_block(analysis: TraceAnalysis, kind: str = "bins", joint: bool = False) -> dict:
    """The scenario `workload` mapping. Without prefix hashes it has no `prefix_hit_rate`:
    the hit rate is unknown and is not made up. `joint`: the hit rate's bins carry their
    own input lengths (and the block no workload-level input_tokens), where possible.
    With the decode-side curve, `prefix_reuse` (trace_reuse.py)."""
    a = analysis.arrivals
    block = {
        "arrival_rate_per_s": float(f"{a.rate_per_s:.6g}"),  # never rounded to 0
        "burstiness_cv2": round(a.cv2, 4),
        "input_tokens": _distribution(analysis.input_tokens, kind, 1, MAX_TOKENS, True),
        "output_tokens": _distribution(analysis.output_tokens, kind, 1, MAX_TOKENS, True),
    }
    joint_hits = joint_hit_rate(analysis, kind) if joint else None
    if joint_hits is not None:
        del block["input_tokens"]  # every hit-rate bin has its own
        block["prefix_hit_rate"] = joint_hits
    elif analysis.prefill is not None:
        block["prefix_hit_rate"] = _distribution(analysis.prefill.hit_frac, kind, 0.0, 1.0, False)
    if analysis.reuse is not None:
        block["prefix_reuse"] = analysis.reuse.block()
    return block


def joint_cached_token_frac(hit_rate: dict) -> float:
    """The cached share of prompt tokens a joint hit-rate `bins` gives a scenario:
    sum(share x mid-hit x mean input) / sum(share x mean input)."""
    num = den = 0.0
    for b in hit_rate["bins"]:
        mean_in = _block_mean(b["input_tokens"])
        num += b["share"] * (b["low"] + b["high"]) / 2 * mean_in
        den += b["share"] * mean_in
    return num / den


def _block_mean(dist: dict) -> float:
    if dist["kind"] == "empirical":
        return float(np.dot(dist["values"], dist["weights"]) / sum(dist["weights"]))
    return stats.bins_mean([stats.Bin(b["low"], b["high"], b["share"]) for b in dist["bins"]])


def workload_yaml(analysis: TraceAnalysis, block: dict) -> str:
    """`workload:` with a comment saying where it came from; paste it into a scenario."""
    a = analysis.arrivals
    lines = [
        f"# pdd-plan trace analyze {Path(analysis.path).name} ({analysis.format}): "
        f"{a.requests:,} requests over {a.span_s:,.0f} s",
    ]
    if analysis.prefill is None:
        lines.append(
            "# prefix_hit_rate: UNKNOWN - this trace has no prefix hashes; add your own "
            "distribution before using this block"
        )
    else:
        cap = analysis.prefill.capacity_tokens
        where = "an unlimited" if cap is None else f"a {cap:,}-token"
        lines.append(
            f"# prefix_hit_rate: LRU replay of {analysis.block_tokens}-token blocks, {where} cache"
        )
        if "input_tokens" not in block:
            lines.append("# input_tokens: per hit-rate bin (hit rate joint with prompt length)")
    if "prefix_reuse" in block:
        lines.append(
            "# prefix_reuse: token hits an LRU of each capacity keeps / those an unlimited "
            "cache keeps (MD's cache)"
        )
    dumped = yaml.safe_dump(
        {"workload": block}, sort_keys=False, default_flow_style=None, width=100
    )
    return "\n".join(lines) + "\n" + dumped


def scenario_with_workload(
    base: str, block: dict, trace_name: str, decode_cache_capacity_tokens: int | None = None
) -> tuple[dict, list[str]]:
    """The base scenario (a file or shipped name) with its workload replaced; notes on what
    was kept from the base."""
    path = resolve_scenario_path(base)
    data = load_yaml(path, "a pdd-plan scenario")
    notes = []
    if not isinstance(data, dict):
        data = {}
    old = data.get("workload") if isinstance(data.get("workload"), dict) else {}
    workload = dict(block)
    if "prefix_hit_rate" not in workload:  # unknown from the trace: the base's, said so
        for key in ("prefix_hit_rate", "prefix_hit_rate_alternatives"):
            if key in old:
                workload[key] = old[key]
        notes.append(f"prefix_hit_rate kept from the base scenario {path.name} (trace has none)")
    data["workload"] = workload
    data["name"] = f"{data.get('name', 'scenario')}-{trace_name}"
    data["description"] = (
        f"{path.name} with its workload from `pdd-plan trace analyze {trace_name}`"
    )
    if decode_cache_capacity_tokens is not None:
        policy = data.get("policy") if isinstance(data.get("policy"), dict) else {}
        data["policy"] = {**policy, "decode_cache_capacity_tokens": decode_cache_capacity_tokens}
    return data, notes


def scenario_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def check_reads_back(trace: str, base: str, outputs: str, text: str) -> None:
    """Refuse (exit 2, nothing written) a scenario `text` the scenario loader would reject:
    what trace analyze writes, it must read back. Each problem names its source (the
    trace for the workload, else the base scenario) and the outputs it was bound for."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_scenario(path)
        except InputError as exc:
            hint = f"the scenario loader's rule; {outputs} not written"
            raise InputError(
                [
                    Problem(
                        trace if p.key_path.startswith("workload") else base,
                        p.key_path,
                        p.found,
                        p.expected,
                        hint,
                    )
                    for p in exc.problems
                ]
            ) from None
