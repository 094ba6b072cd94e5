"""Metrics of a deployment, and their JSON shape (design.md §7)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def json_safe(value):
    """JSON has no NaN or infinity: an undefined or diverged figure is null (in nested
    dicts and lists too)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class Metrics:
    offered_rps: float
    goodput_rps: float
    cost_usd_per_hour: float
    ttft_s: dict[str, float]  # p50, p90, p99
    tpot_s: dict[str, float]
    max_inter_token_gap_s: float
    wan_mean_bits_per_s: float
    wan_utilization_frac: float
    wan_pool_utilization_frac: float
    wan_transfer_s: dict[str, float]  # p50, p99 of wait + transfer, for classes that cross
    rld_token_share_frac: float
    role_utilization_frac: dict[str, float]
    binding_role: str
    sla_met: bool
    mean_output_tokens: float
    mean_uncached_input_tokens: float
    sla_checks: dict[str, dict[str, float]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    largest_gap_s: dict[str, float] = field(default_factory=dict)  # per request, p50/90/99
    relay_overflow_frac: float = 0.0  # RLD-bound requests that found it full (P -> MD)
    decode_admission_wait_s: float = 0.0  # mean wait for a slot of the finishing role
    handoff_s: dict[str, float] = field(default_factory=dict)  # its parts (model/decode/handoff.py)

    @property
    def bcr_rps_per_usd_hour(self) -> float:
        return self.goodput_rps / self.cost_usd_per_hour if self.cost_usd_per_hour else 0.0

    def usd_per_million(self, tokens_per_request: float) -> float | None:
        tokens_per_hour = self.goodput_rps * tokens_per_request * 3600
        return self.cost_usd_per_hour / tokens_per_hour * 1e6 if tokens_per_hour else None

    def to_json(self) -> dict:
        return json_safe(
            {
                "offered_rps": self.offered_rps,
                "goodput_rps": self.goodput_rps,
                "cost_usd_per_hour": self.cost_usd_per_hour,
                "bcr_rps_per_usd_hour": self.bcr_rps_per_usd_hour,
                "usd_per_million_output_tokens": self.usd_per_million(self.mean_output_tokens),
                "usd_per_million_uncached_input_tokens": self.usd_per_million(
                    self.mean_uncached_input_tokens
                ),
                "ttft_s": dict(self.ttft_s),
                "tpot_s": dict(self.tpot_s),
                "max_inter_token_gap_s": self.max_inter_token_gap_s,
                "largest_gap_s": dict(self.largest_gap_s),
                "relay_overflow_frac": self.relay_overflow_frac,
                "decode_admission_wait_s": self.decode_admission_wait_s,
                "handoff_s": dict(self.handoff_s),
                "wan": {
                    "mean_gbit_per_s": self.wan_mean_bits_per_s / 1e9,
                    "utilization_frac": self.wan_utilization_frac,
                    "pool_utilization_frac": self.wan_pool_utilization_frac,
                    "transfer_s": dict(self.wan_transfer_s),
                },
                "rld_token_share_frac": self.rld_token_share_frac,
                "role_utilization_frac": dict(self.role_utilization_frac),
                "binding_role": self.binding_role,
                "sla_met": self.sla_met,
                "sla_checks": {k: dict(v) for k, v in self.sla_checks.items()},
                "warnings": list(self.warnings),
            }
        )
