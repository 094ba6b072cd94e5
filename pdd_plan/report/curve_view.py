"""A load curve in figures, as `scenario validate` and `schedule` state it."""

from __future__ import annotations


def curve_summary(curve) -> dict:
    """What a load curve is, in figures (`scenario validate`, `schedule`'s `curve`)."""
    return {"periods": len(curve.periods), "cycle_hours": curve.horizon_hours,
            "peak_rate_per_s": curve.peak_rate_per_s,
            "trough_rate_per_s": curve.trough_rate_per_s,
            "mean_rate_per_s": curve.mean_rate_per_s, "source": curve.source}  # fmt: skip


def curve_line(c: dict) -> str:
    ratio = c["peak_rate_per_s"] / c["trough_rate_per_s"] if c["trough_rate_per_s"] else None
    return (
        f"load curve: {c['periods']} periods over {c['cycle_hours']:g} h ({c['source']}), "
        f"{c['trough_rate_per_s']:g} to {c['peak_rate_per_s']:g} req/s"
        + (f" (peak/trough {ratio:.3g})" if ratio else "")
        + f", mean {c['mean_rate_per_s']:.3g} req/s; `pdd-plan schedule` plans over it"
    )
