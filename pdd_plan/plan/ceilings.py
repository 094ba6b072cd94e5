"""Ceilings no plan can pass, checked before any search: the WAN's.

Whatever the GPUs, a cross-datacenter plan must move its KV bytes over the line and
through the connection pool. Both are limits of the scenario, not of a plan:
- the pool: every transfer holds a connection for at least its bits / the per-connection
  throughput, so `connection_pool_size` x `per_connection_gbit_per_s` is the most payload
  the pool can ever carry (RTT and framing only add to the hold time);
- the line: at most `wan.max_lines` lines of the largest tier allowed, each carrying its
  payload goodput (framing removed) x the utilisation cap (the same planning margin as
  every GPU role: policy.utilization_cap_frac).
The bits needed are the least over the routing policies solve may pick and the most over
the hit-rate distributions the plan must meet, at the least rate the objective asks for.
A scenario above a ceiling is refused at once with the figures and the relaxations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdd_plan.errors import InfeasibleError
from pdd_plan.model.network.network import WanLink
from pdd_plan.model.units import GBIT_BITS
from pdd_plan.plan import bounds as bd
from pdd_plan.plan.figures import down_3g, up_3g

CROSSING = ("pdd", "cdc_pd")
CAP_REL_SLACK = 1e-9  # a load planned exactly at the utilisation cap is within it


@dataclass(frozen=True)
class Shortfall:
    """One limit that cannot be met: what it is, what is needed, what it allows, in
    `unit`, and the change that would lift it."""

    limit: str
    needs: float
    has: float
    unit: str
    relaxation: str

    def to_json(self) -> dict:
        return {
            "limit": self.limit,
            "needs": self.needs,
            "has": self.has,
            "unit": self.unit,
            "relaxation": self.relaxation,
        }


class ShortfallError(InfeasibleError):
    """Infeasible, with the shortfalls as data (`--format json` shows them)."""

    def __init__(self, message: str, shortfalls: list[Shortfall]):
        super().__init__(message)
        self.shortfalls = [s.to_json() for s in shortfalls]


def wan_bits_per_request(plans, spaces_policies) -> float:
    """Least over policies of the most over distributions: mean WAN bits per request."""
    per_policy = []
    for policy in spaces_policies:
        per_dist = [
            bd.wan_bits_per_request(plans.arch, *plans._classes_routes(policy, c))
            for c in plans.classes
        ]
        per_policy.append(max(per_dist))
    return min(per_policy, default=0.0)


def wan_shortfalls(scenario, tiers: dict, arch: str, bits: float, rate_rps: float) -> list:
    """The pool and line ceilings `rate_rps` requests/s of `bits` each break."""
    if arch not in CROSSING or bits <= 0:
        return []
    wan = scenario.wan
    needs = rate_rps * bits
    out = []
    pool = wan.connection_pool_size * wan.per_connection_bits_per_s
    if needs >= pool:
        connections = math.floor(needs / wan.per_connection_bits_per_s) + 1
        out.append(
            Shortfall(
                "WAN connection pool",
                needs / GBIT_BITS,
                pool / GBIT_BITS,
                "Gbit/s",
                f"wan.connection_pool_size at least {connections} (now "
                f"{wan.connection_pool_size}), or wan.per_connection_gbit_per_s above "
                f"{up_3g(needs / wan.connection_pool_size / GBIT_BITS)}, or an arrival rate "
                f"below {down_3g(rate_rps * pool / needs)} req/s",
            )
        )
    cap = scenario.policy.utilization_cap_frac
    frame = WanLink(1.0, 0.0, wan.per_connection_bits_per_s, wan.connection_pool_size)
    best = max(wan.tiers, key=lambda t: tiers[t].capacity_bits_per_s, default=None)
    if best is None:
        return out
    per_line = tiers[best].capacity_bits_per_s * frame.goodput_frac * cap
    line = wan.max_lines * per_line
    if needs > line:
        lines = math.ceil(needs / per_line)
        # no line allowed (wan.max_lines 0): no utilisation cap makes room; nor one the
        # scenario may not set (above 1)
        cap_needs = up_3g(needs / line * cap) if line else "inf"
        cap_relax = (
            f", or policy.utilization_cap_frac at least {cap_needs}"
            if float(cap_needs) <= 1
            else ""
        )
        out.append(
            Shortfall(
                f"WAN line ({wan.max_lines} x {best} at the {cap:.0%} utilisation cap)",
                needs / GBIT_BITS,
                line / GBIT_BITS,
                "Gbit/s",
                f"wan.max_lines at least {lines} (now {wan.max_lines}), or a larger tier "
                f"in wan.tiers{cap_relax}",
            )
        )
    return out


def check_wan(scenario, tiers: dict, arch: str, plans, policies, rate_rps: float) -> None:
    """ShortfallError when no plan's WAN can carry `rate_rps` (module doc)."""
    if arch not in CROSSING:
        return
    bits = wan_bits_per_request(plans, policies)
    found = wan_shortfalls(scenario, tiers, arch, bits, rate_rps)
    if not found:
        return
    what = "; ".join(
        f"{s.limit}: needs {s.needs:,.3g} {s.unit} of KV at {rate_rps:.3g} req/s, carries "
        f"{s.has:,.3g} {s.unit} (relax: {s.relaxation})"
        for s in found
    )
    raise ShortfallError(f"no {arch} plan can move its KV cache: {what}", found)


def line_within_cap(setup, rate: float, cap_frac: float) -> bool:
    """The line's load at `rate` (payload bits / its goodput, evaluate's figure) at most
    the utilisation cap; True without a line."""
    if setup.link is None:
        return True
    arch = setup.deployment.architecture
    bits = bd.wan_bits_per_request(arch, setup.classes, setup.routes)
    return rate * bits <= cap_frac * setup.link.goodput_bits_per_s * (1 + CAP_REL_SLACK)
