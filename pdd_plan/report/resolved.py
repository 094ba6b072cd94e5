"""The resolved scenario for `--out`: the scenario file's own keys and units, with every
default filled in, so the file is itself a scenario (`scenario validate`, `solve`).

Keys carry their units as in a scenario file (`rtt_ms`, `tpot_p90_ms`, `power_budget_kw`);
values converted from SI are rounded to 12 significant digits, so 50 ms stays 50, not
50.00000000000001. Empty texts and empty lists are left out (a scenario file may not hold
them); null stands for the loader's default where the loader accepts one.
"""

from __future__ import annotations

from pathlib import Path

from pdd_plan.model import scenario as sc
from pdd_plan.model.capacity_classes import CapacityClasses
from pdd_plan.model.workload.load_curve import iso_utc
from pdd_plan.report.resolved_prices import prices_section, spares


def _round(value: float | None, scale: float = 1.0) -> float | int | None:
    if value is None:
        return None
    scaled = float(f"{value * scale:.12g}")
    return int(scaled) if scaled.is_integer() and abs(scaled) < 2**53 else scaled


def _percentile_key(pct: float) -> str:
    return f"{pct:g}"


def _distribution(dist) -> dict:
    if dist.kind == "bins":
        bins = [
            {"low": lo, "high": hi, "share": _round(s)}
            for lo, hi, s in zip(dist.lows, dist.highs, dist.shares, strict=True)
        ]
        for key in ("input_tokens", "output_tokens"):  # a joint bin's own lengths
            for b, d in zip(bins, getattr(dist, key, None) or (), strict=False):
                b[key] = _distribution(d)
        return {"kind": "bins", "bins": bins}
    if dist.kind == "empirical":
        return {"kind": "empirical", "values": list(dist.values), "weights": list(dist.weights)}
    if dist.kind == "mixture":  # the lengths of joint bins whose hit rate was replaced
        values, weights = dist.discretise(64)  # 64 strata, the mean kept exactly
        return {"kind": "empirical", "values": values.tolist(), "weights": weights.tolist()}
    fields = {
        "fixed": ("value",),
        "lognormal": ("median", "sigma", "low", "high"),
        "beta": ("alpha", "beta", "low", "high"),
    }[dist.kind]
    return {"kind": dist.kind, **{f: getattr(dist, f) for f in fields}}


def _datacenter(dc: sc.Datacenter) -> dict:
    offers = []
    for o in dc.gpus:
        offer = {"gpu": o.gpu, "price_usd_per_gpu_hour": o.price_usd_per_gpu_hour}
        offer["max_gpus"] = o.max_gpus
        if o.gpus_per_instance:
            offer["gpus_per_instance"] = list(o.gpus_per_instance)
        offers.append(offer)
    out = {"id": dc.id, "roles": list(dc.roles), "gpus": offers}
    out["power_budget_kw"] = _round(dc.power_budget_w, 1e-3)
    out["budget_usd_per_hour"] = dc.budget_usd_per_hour
    if dc.name:
        out["name"] = dc.name
    return out


def _wan(wan: sc.Wan) -> dict:
    out = {
        "rtt_ms": _round(wan.rtt_s, 1e3),
        "tiers": list(wan.tiers),
        "tier_prices_usd_per_month": dict(wan.tier_price_usd_per_month),
        "per_connection_gbit_per_s": _round(wan.per_connection_bits_per_s, 1e-9),
        "connection_pool_size": wan.connection_pool_size,
        "max_lines": wan.max_lines,
    }
    if wan.link_rtt_s:
        out["links"] = [
            {"between": [a, b], "rtt_ms": _round(rtt, 1e3)}
            for (a, b), rtt in wan.link_rtt_s.items()
        ]
    # the transfer engine's knobs (model/network/wan_streaming.py), where they are not the default
    default = sc.Wan(0.0, (), {}, 1.0, 1, 0)
    for key in ("stream_during_prefill", "stripes_per_transfer", "pool_hold"):
        if getattr(wan, key) != getattr(default, key):
            out[key] = getattr(wan, key)
    return out


def _workload(w: sc.Workload) -> dict:
    out = {"arrival_rate_per_s": w.arrival_rate_per_s, "burstiness_cv2": w.burstiness_cv2}
    for key in ("input_tokens", "output_tokens"):  # a mixture over joint bins is in the bins
        if getattr(w.prefix_hit_rate, key, None) is None:
            out[key] = _distribution(getattr(w, key))
    out["prefix_hit_rate"] = _distribution(w.prefix_hit_rate)
    if w.hit_rate_alternatives:
        out["prefix_hit_rate_alternatives"] = {
            name: _distribution(d) for name, d in w.hit_rate_alternatives.items()
        }
    if w.load_curve is not None:  # written inline, whatever file it came from
        out["load_curve"] = _load_curve(w.load_curve)
    if w.prefix_reuse is not None:  # MD cache's LRU curve (model/decode_cache.py)
        r = w.prefix_reuse
        out["prefix_reuse"] = {
            "capacity_tokens": list(r.capacity_tokens),
            "resident_frac": list(r.resident_frac),
            "at_arrival_rate_per_s": r.at_arrival_rate_per_s,
        }
    return out


def _load_curve(curve) -> list[dict]:
    """The periods as a scenario writes them: `start` times where the curve has an origin,
    else `start_h`; whole minutes as `duration_min` (exact), else `duration_h`."""
    out = []
    for p in curve.periods:
        if curve.origin_unix_s is None:
            period = {"start_h": _round(p.start_s / 3600)}
        else:
            period = {"start": iso_utc(curve.origin_unix_s + p.start_s)}
        if float(p.duration_s / 60).is_integer():
            period["duration_min"] = int(p.duration_s / 60)
        else:
            period["duration_h"] = _round(p.duration_s / 3600)
        period["arrival_rate_per_s"] = p.arrival_rate_per_s
        for key in ("prefix_hit_rate", "input_tokens", "output_tokens"):
            if getattr(p, key) is not None:
                period[key] = _distribution(getattr(p, key))
        out.append(period)
    return out


def _capacity_classes(c: CapacityClasses) -> dict:
    """`capacity_classes`, where it is not the default (model/capacity_classes.py)."""
    if c == CapacityClasses():
        return {}
    out = {"reserved": {"price_frac": c.reserved_price_frac, "term_years": c.reserved_term_years,
                        "basis": c.reserved_basis}}  # fmt: skip
    if c.spot is not None:
        out["spot"] = _spot(c.spot)
    offers = []
    for (dc, gpu), o in c.by_offer.items():
        offer = {"datacenter": dc, "gpu": gpu, "reserved_price_frac": o.reserved_price_frac}
        offer["spot"] = o.spot is not None
        if o.spot is not None:
            offer.update({f"spot_{k}": v for k, v in _spot(o.spot).items() if k != "basis"})
        offers.append(offer)
    if offers:
        out["offers"] = offers
    return {"capacity_classes": out}


def _spot(t) -> dict:
    return {
        "price_frac": t.price_frac,
        "interruptions_per_hour": t.interruptions_per_hour,
        "replacement_min": _round(t.replacement_s / 60),
        "confidence": t.confidence,
        "max_share_frac": t.max_share_frac,
        "basis": t.basis,
    }


def _sla(sla: sc.Sla) -> dict:
    out = {f"ttft_p{_percentile_key(p)}_s": _round(v) for p, v in sla.ttft_s.items()}
    out.update({f"tpot_p{_percentile_key(p)}_ms": _round(v, 1e3) for p, v in sla.tpot_s.items()})
    return out


def _policy(p: sc.Policy) -> dict:
    c = p.short_output_cutoff
    return {
        "rld_hit_threshold": p.rld_hit_threshold if p.rld_hit_threshold is not None else "auto",
        "handoff": p.handoff,
        "short_output_cutoff": {
            "enabled": c.enabled,
            # null: the default derived from the line and the TPOT limit
            "min_uncached_bytes_per_output_token": c.min_uncached_bytes_per_output_token,
        },
        "utilization_cap_frac": p.utilization_cap_frac,
        "decode_cache_capacity_tokens": p.decode_cache_capacity_tokens,
        # only when off: a resolved scenario without it reads back as on (the default)
        **({} if p.mixed_pools else {"mixed_pools": False}),
    }


def _decode_cache(p: sc.Policy) -> dict:
    """The cache options as the scenario gave them (absent: no cache decision)."""
    c = p.decode_cache
    if c is None:
        return {}
    return {"decode_cache": {"tiers": list(c.tiers), "tb_total": list(c.tb_total)}}


def _engine(e: sc.Engine) -> dict:
    out: dict = {}
    if e.kv_layout is not None:  # absent: the model's own layout
        tokens = e.kv_layout.uncompressed_tokens
        out["kv_uncompressed_tokens"] = "all" if tokens is None else tokens
        if e.kv_layout.source:
            out["kv_layout_source"] = e.kv_layout.source
    out["handoff_fixed_ms"] = _round(e.handoff_fixed_s, 1e3)
    if e.handoff_fixed_source:
        out["handoff_fixed_source"] = e.handoff_fixed_source
    out["reserve_max_output"] = e.reserve_max_output
    # batched prefill (model/queueing/prefill_batch.py), where it is not the default
    if e.prefill_token_budget_per_gpu is None:
        out["prefill_batching"] = False
    elif e.prefill_token_budget_per_gpu != sc.PREFILL_TOKEN_BUDGET_PER_GPU:
        out["prefill_token_budget_per_gpu"] = e.prefill_token_budget_per_gpu
    source = e.profile.source
    if not e.profile.is_identity() and source and source != "built-in":
        out["profile"] = str(Path(source).resolve())  # absolute: the run folder moves
    return out


def scenario_json(scenario: sc.Scenario) -> dict:
    """The scenario as a scenario file that reads back to the same scenario."""
    s = scenario
    out: dict = {"name": s.name}
    if s.description:
        out["description"] = s.description
    model_file = getattr(s, "model_file", "")
    if model_file:
        out["model_file"] = str(Path(model_file).resolve())  # absolute: the run folder moves
    else:
        out["model"] = s.model
    out.update({"kv_dtype": s.kv_dtype, "weight_dtype": s.weight_dtype})
    out["datacenters"] = [_datacenter(dc) for dc in s.datacenters]
    if s.wan.tiers:  # a one-datacenter scenario has no WAN to describe
        out["wan"] = _wan(s.wan)
    out.update(
        {
            "workload": _workload(s.workload),
            "sla": _sla(s.sla),
            "objective": {
                "kind": s.objective.kind,
                "demand_rps": s.objective.demand_rps,
                "budget_usd_per_hour": s.objective.budget_usd_per_hour,
            },
            "policy": _policy(s.policy) | _decode_cache(s.policy),
            "costs": {
                "include_power": s.costs.include_power,
                "power_usd_per_kwh": s.costs.power_usd_per_kwh,
                "pue": s.costs.pue,
                "amortization_years": s.costs.amortization_years,
                "charge_whole_nodes": s.costs.charge_whole_nodes,
                **spares(s),
                **_capacity_classes(s.costs.capacity_classes),
            },
            "engine": _engine(s.engine),
            "architectures": list(s.architectures),
        }
    )
    if prices_section(s):  # the quotes the run used (issue #25), in the section's shape
        out["prices"] = prices_section(s)
    return out
