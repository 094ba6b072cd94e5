"""What a solve bought in response to a smaller decode-side cache (issue #12: "solve
responds by buying cache, relay or line, whichever is cheapest, stated in explain").

The chosen plan is compared with the best plan at the next cache option (the next smaller
size of the chosen tier, or, where no tier was bought, the smallest size of the cheapest
tier): both plans' hourly costs split into cache, relay, line and the other GPUs, from
`model.setup.cost_items` (the one cost formula), and the difference says what the smaller
cache is traded for.
"""

from __future__ import annotations

import dataclasses

from pdd_plan.errors import InfeasibleError
from pdd_plan.model.caches.cache_tier import NO_TIER, CacheBuy, CacheOptions, buy_options
from pdd_plan.model.setup import cost_items

PARTS = ("cache", "relay", "line", "other_gpus")


def cost_parts(scenario, deployment, gpus, lines) -> dict[str, float]:
    """A plan's $/h as cache tier, relay GPUs, leased lines and every other GPU charge."""
    out = dict.fromkeys(PARTS, 0.0)
    for c in cost_items(scenario, deployment, gpus, lines):
        if c.kind == "decode_cache":
            out["cache"] += c.usd_per_hour
        elif c.kind == "line_lease":
            out["line"] += c.usd_per_hour
        elif c.role == "relay_decode":
            out["relay"] += c.usd_per_hour
        else:
            out["other_gpus"] += c.usd_per_hour
    return out


def next_option(options: CacheOptions, chosen: CacheBuy) -> CacheOptions | None:
    """The one option to compare with: the next smaller size of the chosen tier (0 TB
    when it is the smallest), or the smallest size of the cheapest tier when none was
    bought; None when the scenario offers nothing else."""
    buys = buy_options(options)
    if chosen.tb > 0:
        size = chosen.tb
        smaller = [b for b in buys if b.tb < size and b.tier in (chosen.tier, NO_TIER)]
        pick = max(smaller, key=lambda b: b.tb, default=None)
    else:
        bought = [b for b in buys if b.tb > 0]
        pick = min(bought, key=lambda b: (b.usd_per_hour, b.tb), default=None)
    if pick is None:
        return None
    if pick.tb == 0:
        return CacheOptions(options.tiers[:1], (0.0,), options.price_usd_per_tb_month[:1],
                            options.read_bytes_per_s_per_gpu[:1])  # fmt: skip
    return CacheOptions((pick.tier,), (pick.tb,), (pick.price_usd_per_tb_month,),
                        (pick.read_bytes_per_s_per_gpu,))  # fmt: skip


def cache_response(scenario, result, solve_again, gpus, lines) -> dict | None:
    """The chosen plan against the best plan at the next cache option, by cost part.
    `solve_again(scenario)` solves a scenario as the caller's solve did. None when the
    plan buys no cache decision."""
    chosen = result.deployment.decode_cache if result.deployment else None
    options = scenario.policy.decode_cache
    if chosen is None or options is None:
        return None
    other = next_option(options, chosen)
    if other is None:
        return None
    alt_buy = buy_options(other)[0]
    entry = {"chosen": chosen.label(), "alternative": alt_buy.label()}
    relaxed = dataclasses.replace(
        scenario, policy=dataclasses.replace(scenario.policy, decode_cache=other)
    )
    try:
        again = solve_again(relaxed)
    except InfeasibleError as exc:
        return {**entry, "status": "infeasible", "note": str(exc),
                "sentence": f"with {alt_buy.label()} no plan meets the SLA"}  # fmt: skip
    if again.deployment is None:
        return {**entry, "status": again.status,
                "sentence": f"with {alt_buy.label()} no plan meets the SLA"}  # fmt: skip
    mine = cost_parts(scenario, result.deployment, gpus, lines)
    theirs = cost_parts(relaxed, again.deployment, gpus, lines)
    delta = {k: theirs[k] - mine[k] for k in PARTS}  # what the alternative changes
    return {**entry, "status": again.status, "chosen_usd_per_hour": mine,
            "alternative_usd_per_hour": theirs, "change_usd_per_hour": delta,
            "sentence": sentence(chosen, alt_buy, delta)}  # fmt: skip


def sentence(chosen: CacheBuy, alternative: CacheBuy, delta: dict[str, float]) -> str:
    """One line: what the plan at the other option buys instead, with $/h."""
    names = {"cache": "cache", "relay": "relay", "line": "line", "other_gpus": "other GPUs"}
    moves = [f"{names[k]} {v:+,.2f} $/h" for k, v in delta.items() if abs(v) >= 0.005]
    net = sum(delta.values())
    what = "; ".join(moves) or "no change"
    smaller = alternative.tb < chosen.tb
    verdict = (
        f"so {chosen.label()} saves {net:,.2f} $/h" if net > 0
        else f"so {alternative.label()} would cost {-net:,.2f} $/h less (not proven better: "
        "the search's cache bounds are conservative)" if net < 0
        else "the same cost"
    )  # fmt: skip
    way = "a smaller cache" if smaller else "a cache"
    return f"with {way} ({alternative.label()} instead of {chosen.label()}): {what}; {verdict}"
