"""Plain-dict views of catalog entries, models and scenarios: one source for the rich
tables and for `--format json`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdd_plan.loaders.catalog import GPU_FIELDS, Catalog
from pdd_plan.model.compute.hardware import Gpu, LineTier
from pdd_plan.model.placement import placement_summary
from pdd_plan.model.units import GBIT_BITS, GIB_BYTES, TERA
from pdd_plan.report.curve_view import curve_summary

if TYPE_CHECKING:  # annotations only: `catalog list` reads no model, and loads no numpy
    from pdd_plan.model.compute.llm import ModelSpec
    from pdd_plan.model.scenario import Scenario

CONTEXT_POINTS_TOKENS = (1, 4096, 65536, 131072)


def gpu_summary(gpu: Gpu) -> dict:
    return {
        "id": gpu.id,
        "name": gpu.name,
        "bf16_dense_tflop_per_s": gpu.bf16_flop_per_s / TERA,
        "fp8_dense_tflop_per_s": None if gpu.fp8_flop_per_s is None else gpu.fp8_flop_per_s / TERA,
        "hbm_gib": gpu.hbm_bytes / GIB_BYTES,
        "hbm_tbyte_per_s": gpu.hbm_bytes_per_s / TERA,
        "gpus_per_node": gpu.gpus_per_node,
        "rental_usd_per_gpu_hour": gpu.rental_usd_per_gpu_hour,
        "assumed_or_low_confidence": sorted(
            k for k, v in gpu.provenance.items() if v.basis in ("assumed", "low_confidence")
        ),
    }


def gpu_detail(gpu: Gpu) -> dict:
    fields = {}
    for key in GPU_FIELDS:
        figure = gpu.provenance[key]
        fields[key] = {
            "value": figure.value,
            "source": figure.source,
            "basis": figure.basis,
            "note": figure.note,
        }
    return {"id": gpu.id, "name": gpu.name, "vendor": gpu.vendor, "fields": fields}


def line_summary(tier: LineTier) -> dict:
    price = tier.provenance["price_usd_per_month"]
    return {
        "id": tier.id,
        "name": tier.name,
        "kind": tier.kind,
        "capacity_gbit_per_s": tier.capacity_bits_per_s / GBIT_BITS,
        "price_usd_per_month": tier.price_usd_per_month,
        "install_usd": tier.install_usd,
        "basis": price.basis,
        "source": price.source,
        "note": price.note,
    }


def model_summary(model: ModelSpec, kv_dtype: str = "bf16") -> dict:
    return {
        "id": model.id,
        "name": model.name,
        "architecture": model.architecture,
        "layers": model.num_layers,
        "total_params": model.params_total(),
        "active_params": model.params_active(),
        "kv_bytes_per_token": model.kv_bytes_per_token(kv_dtype),
        "fixed_state_bytes": model.fixed_state_bytes(),
        "kv_dtype": kv_dtype,
    }


def model_detail(
    model: ModelSpec, kv_dtype: str, weight_dtype: str | None, context_tokens: int
) -> dict:
    out = model_summary(model, kv_dtype)
    out.update(
        {
            "source": model.source,
            "hidden_size": model.hidden_size,
            "vocab_size": model.vocab_size,
            "mtp_layers": model.mtp_layers,
            "weight_dtype": weight_dtype or model.weight_dtype,
            "expert_weight_dtype": weight_dtype or model.expert_weight_dtype,
            "weight_bytes": model.weight_bytes(weight_dtype),
            "routed_expert_params": model.routed_expert_params(),
            "embedding_params": model.embedding_params(),
            "shipped_kv_bytes_per_token": model.shipped_bytes_per_token(kv_dtype),
            "shipped_kv_source": model.shipped_kv_source or "computed from the architecture",
            "kv_breakdown": [
                {
                    "category": r.category,
                    "layers": r.layers,
                    "bytes_per_token": r.bytes_per_token,
                    "window_bytes": r.window_bytes,
                    "fixed_bytes": r.fixed_bytes,
                }
                for r in model.kv_breakdown(kv_dtype)
            ],
            "kv_bytes_per_request": {
                str(n): model.kv_bytes(n, kv_dtype) for n in CONTEXT_POINTS_TOKENS
            },
            "context_tokens": context_tokens,
            "prefill_flop_per_token": model.prefill_flops(context_tokens) / context_tokens,
            "decode_flop_per_token": model.decode_flops(context_tokens),
            "notes": model.notes,
        }
    )
    return out


def catalog_listing(catalog: Catalog) -> dict:
    return {
        "gpus": [gpu_summary(g) for g in catalog.gpus.values()],
        "lines": [line_summary(t) for t in catalog.lines.values()],
    }


def scenario_summary(s: Scenario, catalog: Catalog) -> dict:
    from pdd_plan.plan.kv_layouts import kv_layout_text

    w = s.workload
    model = catalog.model_for(s)
    return {
        "name": s.name,
        "file": s.source_file,
        "model": s.model,
        "kv_dtype": s.kv_dtype,
        "kv_bytes_per_token": model.kv_bytes_per_token(s.kv_dtype),
        "decode_kv_layout": kv_layout_text(s, model),
        "arrival_rate_per_s": w.arrival_rate_per_s,
        "burstiness_cv2": w.burstiness_cv2,
        "mean_input_tokens": w.input_tokens.mean(),
        "mean_output_tokens": w.output_tokens.mean(),
        "mean_prefix_hit_rate": w.prefix_hit_rate.mean(),
        "hit_rate_alternatives": {k: v.mean() for k, v in w.hit_rate_alternatives.items()},
        **({"load_curve": curve_summary(w.load_curve)} if w.load_curve else {}),
        "datacenters": [
            {
                "id": dc.id,
                "roles": list(dc.roles),
                "gpus": [
                    {
                        "gpu": o.gpu,
                        "price_usd_per_gpu_hour": o.price_usd_per_gpu_hour,
                        "max_gpus": o.max_gpus,
                    }
                    for o in dc.gpus
                ],
            }
            for dc in s.datacenters
        ],
        "wan": {
            "rtt_ms": s.wan.rtt_s * 1e3,
            "tiers": list(s.wan.tiers),
            "per_connection_gbit_per_s": s.wan.per_connection_bits_per_s / GBIT_BITS,
            "connection_pool_size": s.wan.connection_pool_size,
        },
        "sla": {
            "ttft_s": {f"p{p:g}": v for p, v in s.sla.ttft_s.items()},
            "tpot_s": {f"p{p:g}": v for p, v in s.sla.tpot_s.items()},
        },
        "objective": s.objective.kind,
        "architectures": list(s.architectures),
        "placements": {a: placement_summary(a, s.datacenters) for a in s.architectures},
    }
