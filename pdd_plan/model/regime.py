"""Where the closed forms are known to be optimistic (a line or a decode role near
capacity), and which role binds: the words `evaluate` puts beside its numbers."""

from __future__ import annotations

# Above this line utilisation the stationary WAN model is outside what it can vouch for:
# the published narrow-mix run (pdd-system.md §3) saturated its connection pool and
# queued for seconds at about this load, which no steady-state flow model reproduces.
WAN_TRUST_LIMIT_FRAC = 0.90


DECODE_ROLES = ("decode", "main_decode")
# Above this share of a decode role's slots the wait for a slot is a many-server queue
# near saturation, which the closed form underestimates (benchmarks/agreement.py).
DECODE_TRUST_LIMIT_FRAC = 0.95


def regime_warnings(snap) -> tuple[str, ...]:
    """Where the closed forms are known to be optimistic, say so beside the numbers
    (`snap`: the evaluate.Snapshot at the offered rate; None where it saturates)."""
    if snap is None:
        return ("saturated at the offered rate: latency percentiles are undefined",)
    out = []
    if snap.wan_utilization_frac >= WAN_TRUST_LIMIT_FRAC:
        out.append(
            f"WAN line at {snap.wan_utilization_frac:.0%} of capacity: measured runs this close "
            "to capacity saturate the connection pool and queue for seconds, which this "
            "steady-state model does not predict; lease more line or plan below "
            f"{WAN_TRUST_LIMIT_FRAC:.0%}"
        )
    decode = {r: u for r, u in snap.utilization_frac.items() if r in DECODE_ROLES}
    full = [r for r, u in decode.items() if u >= DECODE_TRUST_LIMIT_FRAC]
    if full:
        out.append(
            f"{', '.join(full)} at {max(decode[r] for r in full):.0%} of its slots: the wait "
            "for a decode slot rises steeply this close to capacity and long simulated runs "
            "put it above this model's (docs/agreement.md: how well the closed forms agree "
            "with the simulator); plan below "
            f"{DECODE_TRUST_LIMIT_FRAC:.0%}"
        )
    return tuple(out)


def binding_role(utilization: dict[str, float]) -> str:
    return max(utilization, key=utilization.get) if utilization else ""
