"""`workload:` and `sla:` of a scenario, strictly: what the deployment is asked to serve
(arrival rate, lengths, prefix hit rates and their alternatives, prefix reuse) and how fast
(TTFT and TPOT limits at named percentiles)."""

from __future__ import annotations

import re

from pdd_plan.loaders.distributions import (
    bins_carry_all,
    distribution,
    joint_lengths,
    outputs_reaching_two_tokens,
)
from pdd_plan.loaders.load_curve_source import load_curve
from pdd_plan.loaders.scenario_routing import prefix_reuse
from pdd_plan.loaders.strict import Node, did_you_mean
from pdd_plan.model import scenario as sc
from pdd_plan.model.units import MS_S

MAX_TOKENS = 10_000_000
_MIX_NAME = "a mix name of lower-case letters, digits and _"
_SLA_KEY = re.compile(r"(ttft|tpot)_p(\d{1,3}(?:\.\d+)?)_(s|ms)")
_SLA_EXAMPLES = tuple(
    f"{m}_p{p}_{u}" for m, u in (("ttft", "s"), ("tpot", "ms")) for p in (50, 90, 99)
)


def scenario_workload(node: Node) -> sc.Workload | None:
    # a length every hit-rate bin carries itself (joint bins) may be left out here
    raw_hits = node.value.get("prefix_hit_rate") if isinstance(node.value, dict) else None
    own = tuple(k for k in ("input_tokens", "output_tokens") if bins_carry_all(raw_hits, k))
    lengths = tuple(k for k in ("input_tokens", "output_tokens") if k not in own)
    # with a load curve, the single rate (solve's) defaults to the curve's peak
    curved = isinstance(node.value, dict) and node.value.get("load_curve") is not None
    f = node.mapping(
        required=(*(() if curved else ("arrival_rate_per_s",)), *lengths, "prefix_hit_rate"),
        optional=("burstiness_cv2", "prefix_hit_rate_alternatives", "prefix_reuse", *own,
                  "load_curve", *(("arrival_rate_per_s",) if curved else ())),
    )  # fmt: skip
    if f is None:
        return None
    curve = load_curve(f["load_curve"])
    rate = f["arrival_rate_per_s"].number(
        required=not curved, minimum=sc.MIN_ARRIVAL_RATE_PER_S, maximum=1e7, unit="req/s"
    )
    unset = f["arrival_rate_per_s"].is_missing or f["arrival_rate_per_s"].value is None
    if rate is None and curve is not None and unset:  # null too: its default, as elsewhere
        rate = max(curve.peak_rate_per_s, sc.MIN_ARRIVAL_RATE_PER_S)
    cv2 = f["burstiness_cv2"].number(default=1.0, minimum=0, maximum=1e3)
    for k in own:
        if not f[k].is_missing:  # it would be read by no bin
            f[k].fail(f"no workload {k}: every prefix_hit_rate bin has its own")
    inputs, outputs = (
        None if k in own else distribution(f[k], 1, MAX_TOKENS, integer=True)
        for k in ("input_tokens", "output_tokens")
    )
    outputs = outputs_reaching_two_tokens(f["output_tokens"], outputs)
    hits = distribution(f["prefix_hit_rate"], 0.0, 1.0, lengths=(1, MAX_TOKENS))
    hits, inputs, outputs = joint_lengths(hits, inputs, outputs)
    alternatives = {}
    alt = f["prefix_hit_rate_alternatives"]
    if not alt.is_missing:
        mixes = alt.mapping(patterns=(r"[a-z0-9_]+",), pattern_text=_MIX_NAME) or {}
        for name, child in mixes.items():
            parsed = distribution(child, 0.0, 1.0)
            if parsed is not None:
                alternatives[name] = parsed
    reuse = prefix_reuse(f["prefix_reuse"])
    if None in (rate, inputs, outputs, hits) or (curved and curve is None):
        return None
    return sc.Workload(rate, cv2, inputs, outputs, hits, alternatives, prefix_reuse=reuse,
                       load_curve=curve)  # fmt: skip


def scenario_sla(node: Node) -> sc.Sla | None:
    f = node.mapping(patterns=(r".*",))  # any key: an unknown one is reported below
    if f is None:
        return None
    limits: dict[str, dict[float, float]] = {"ttft": {}, "tpot": {}}
    for key, child in f.items():
        match = _SLA_KEY.fullmatch(key)
        if match is None:
            child.problems.add(
                child.path,
                "an unknown key",
                "ttft_pNN_s or tpot_pNN_ms (NN a percentile)",
                did_you_mean(key, _SLA_EXAMPLES),
            )
            continue
        metric, pct, unit = match.groups()
        expected_unit = "s" if metric == "ttft" else "ms"
        if unit != expected_unit:
            child.problems.add(
                child.path, f"a {metric} limit in {unit}", f"{metric}_p{pct}_{expected_unit}"
            )
            continue
        value = child.number(required=True, minimum=0, exclusive_minimum=True, maximum=1e6)
        if not 0 < float(pct) < 100:
            child.problems.add(child.path, f"percentile {pct}", "a percentile between 0 and 100")
        elif value is not None:
            limits[metric][float(pct)] = value * (1.0 if unit == "s" else MS_S)
    for metric, example in (("ttft", "ttft_p90_s: 10"), ("tpot", "tpot_p90_ms: 50")):
        if not limits[metric] and not any(k.startswith(metric) for k in f):
            unit = "s" if metric == "ttft" else "ms"
            node.problems.add(
                f"{node.path}.{metric}_pNN_{unit}",
                f"no {metric.upper()} limit",
                f"at least one, e.g. {example}",
            )
    return sc.Sla(limits["ttft"], limits["tpot"])
