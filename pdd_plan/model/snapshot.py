"""The system at one arrival rate (`evaluate.snapshot`): latency percentiles and the
distributions behind them, line and role utilisation, the relay's and the handoff's figures."""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.model.decode.mixed_pool import GroupLoad
from pdd_plan.model.decode.tpot import TpotRows
from pdd_plan.model.queueing.latency_mixture import LatencyGroup, grouped_quantiles_s


@dataclass(frozen=True)
class Snapshot:
    """The system at one arrival rate."""

    arrival_rate_per_s: float
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    max_gap_s: float
    wan_mean_bits_per_s: float
    wan_utilization_frac: float
    wan_pool_utilization_frac: float
    wan_transfer_s: dict[str, float]
    rld_token_share_frac: float
    utilization_frac: dict[str, float]
    ttft_groups: tuple[LatencyGroup, ...]
    tpot_rows: TpotRows
    largest_gap_s: dict[str, float] = None  # percentiles of each request's largest gap
    relay_overflow_frac: float = 0.0  # share of RLD-bound requests sent P -> MD instead
    decode_admission_wait_s: float = 0.0  # mean wait for a slot of the finishing role
    handoff_s: dict = None  # mean of each part of the handoff (model/decode/handoff.py)
    decode_groups: tuple[GroupLoad, ...] = ()  # a mixed decode role, group by group

    @property
    def mixed(self) -> bool:
        return len(self.decode_groups) > 1

    def ttft_quantile_s(self, q: float) -> float:
        return grouped_quantiles_s([q], self.ttft_groups)[0]

    def tpot_quantile_s(self, q: float) -> float:
        return self.tpot_rows.quantiles(self.tpot_rows.tpot_cdf, [q])[0]
