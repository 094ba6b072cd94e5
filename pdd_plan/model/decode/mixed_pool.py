"""A decode role of several instance groups (mixed GPU types or shapes, issue #15 item 4).

The router balances load: it sends each group a share of the role's requests in
proportion to what the group carries at its own TPOT-feasible batch,

    share_i = n_i x B_i / step_i(B_i)  /  sum_j n_j x B_j / step_j(B_j)

(B_i the group's `batch_limit`: the batch whose step reaches the TPOT limit, or what fits
HBM), so every group runs at about the same share of its capacity. Every request asks
the same tokens of whichever group it lands on, so a share of requests is a share of
tokens. Each group is then judged on its own share (its batch, step, slots and slot wait
and TPOT rows), and the role's latency distributions are the share-weighted mixture of
the groups'. One group: share 1, and every figure is the single-pool one exactly.

Only the role that finishes requests (main decode, IDC-PD's decode) may be mixed; a
mixed prefill, relay or colocated role is refused (`mixable`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pdd_plan.errors import InputError

if TYPE_CHECKING:  # (tpot loads scipy: not at start-up)
    from pdd_plan.model.decode.tpot import TpotRows

MIXABLE_ROLES = ("main_decode", "decode")


def mixable(role: str, groups, file: str = "plan") -> None:
    """Refuse several groups for a role this model does not mix (bad input, exit 2)."""
    if len(groups) <= 1:
        return
    if role not in MIXABLE_ROLES:
        raise InputError.single(
            file, "plan.instances", f"{len(groups)} instance groups for the {role} role",
            "one GPU type and shape for every role but main_decode and decode (mixed "
            "prefill, relay and colocated pools are not modelled)",
        )  # fmt: skip
    datacenters = sorted({g.datacenter for g in groups})
    if len(datacenters) > 1:
        raise InputError.single(
            file, "plan.instances", f"{role} groups in {', '.join(datacenters)}",
            f"every {role} group in one datacenter (the WAN's RTT is per datacenter pair)",
        )  # fmt: skip


def refuse_mixed(setup, command: str) -> None:
    """A command that models one group per role (the simulator) refuses a mixed role."""
    if not setup.mixed:
        return
    role = setup.decode.group.role
    groups = ", ".join(f"{p.group.count} x {p.group.gpus_per_instance} {p.group.gpu}"
                       for p in setup.decode_groups)  # fmt: skip
    raise InputError.single(
        "plan", "plan.instances", f"{len(setup.decode_groups)} {role} groups ({groups})",
        f"one GPU type and shape per role for `{command}` (its pools are per role, not per "
        "group; `evaluate` models the mixed role)",
    )  # fmt: skip


def capacity_tokens_per_s(pool, context_tokens: float) -> float:
    """Tokens per second a group decodes with every instance at its batch limit."""
    batch = max(int(pool.batch_limit), 0)
    if batch < 1:
        return 0.0
    step_s = float(pool.instance.decode_step_s(batch, context_tokens))
    return pool.group.count * batch / step_s


def capacity_shares(pools, context_tokens: float) -> tuple[float, ...]:
    """Each group's share of the role's requests (summing to 1); a role where no group
    has a TPOT-feasible batch is split by instance count (it misses its SLA anyway)."""
    caps = [capacity_tokens_per_s(p, context_tokens) for p in pools]
    total = sum(caps)
    if total <= 0:
        caps = [float(p.group.count) for p in pools]
        total = sum(caps)
    return tuple(c / total for c in caps)


def members(setup) -> list[tuple[float, object]]:
    """(share, the setup with that group as its decode pool) per decode group."""
    pools = setup.decode_groups
    if len(pools) <= 1:
        return [(1.0, setup)]
    return [
        (s, dataclasses.replace(setup, decode=p))
        for s, p in zip(setup.decode_shares_frac, pools, strict=True)
    ]


def weighted_mean(shares, values) -> float:
    """The share-weighted mean (one group: the value itself, exactly)."""
    return sum(s * v for s, v in zip(shares, values, strict=True)) / sum(shares)


def weighted_dict(shares, dicts) -> dict:
    """Share-weighted mean of each key the dictionaries hold in common."""
    if len(dicts) == 1:
        return dicts[0]
    keys = set.intersection(*(set(d) for d in dicts)) if dicts else set()
    return {k: weighted_mean(shares, [d[k] for d in dicts]) for k in dicts[0] if k in keys}


@dataclass(frozen=True)
class MixedRows:
    """TPOT and largest-gap distributions of a mixed role: F(t) = sum_i share_i F_i(t),
    each group's rows (model/decode/tpot.py) with its own interruptions."""

    shares: tuple[float, ...]
    parts: tuple[TpotRows, ...]

    @property
    def weights(self):
        import numpy as np

        return np.concatenate([p.weights for p in self.parts])

    def _live(self):
        return [(s, p) for s, p in zip(self.shares, self.parts, strict=True)
                if s > 0 and len(p.weights) and p.weights.sum() > 0]  # fmt: skip

    def _mix(self, name: str, x: float) -> float:
        live = self._live()
        return sum(s * getattr(p, name)(x) for s, p in live) / sum(s for s, _ in live)

    def tpot_cdf(self, t: float) -> float:
        return self._mix("tpot_cdf", t)

    def gap_cdf(self, g: float) -> float:
        return self._mix("gap_cdf", g)

    def max_gap_s(self) -> float:
        return max((p.max_gap_s() for _, p in self._live()), default=0.0)

    def quantiles(self, cdf, qs) -> list[float]:
        from pdd_plan.model.decode.tpot import cdf_quantiles

        return cdf_quantiles(cdf, qs, *self._bracket())

    def quantile_at_most(self, cdf, q: float, limit_s: float) -> bool:
        """`self.quantiles(cdf, [q])[0] <= limit_s`, the same verdict (as TpotRows's)."""
        from pdd_plan.model.decode.tpot import cdf_quantile_at_most

        return cdf_quantile_at_most(cdf, q, limit_s, *self._bracket())

    def _bracket(self) -> tuple[float, float]:
        live = [p for _, p in self._live()]
        low = min(float(min(p.mean_s.min(), p.step_s.min())) for p in live) * 0.5
        high = max(float(max(p.mean_s.max(), p.step_s.max(), p.fixed_gap_s.max())) for p in live)
        return low, high


def combine_rows(shares, rows):
    """One group's rows as they are; several as their mixture."""
    return rows[0] if len(rows) == 1 else MixedRows(tuple(shares), tuple(rows))


@dataclass(frozen=True)
class GroupLoad:
    """One group of a mixed decode role at one rate, for explain and the report."""

    gpu: str
    gpus_per_instance: int
    count: int
    share_frac: float  # of the role's requests
    batch: float  # per instance
    slots: int  # per instance
    utilization_frac: float  # batch / slots
    slot_wait_s: float  # mean wait for a slot in this group
