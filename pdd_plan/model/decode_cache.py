"""MD's decode-side radix cache as an LRU cache: which requests find their prefix there.

An LRU cache of C tokens holds a conversation's prefix until C tokens of other prefixes
have been touched since its last use (its reuse, or stack, distance). So a request's
prefix is on MD either whole (MD's hit = P's) or not at all (MD's hit = 0: MD lacks the
whole input and the WAN ships it), never a uniform fraction of every prefix. The share of
requests whose prefix is still resident is the LRU curve at MD's capacity:

- measured: `workload.prefix_reuse` (a trace's LRU replay, `trace analyze`), points of
  (capacity, resident share) taken at one arrival rate; at another rate the same wall-clock
  reuse interval spans proportionally more tokens, so capacity C at rate r reads the curve
  at C x (measured rate / r);
- parametric (no trace): a conversation's next turn comes after an interval T, lognormal
  with median REUSE_MEDIAN_S and sigma REUSE_SIGMA; meanwhile r x E[input] tokens of other
  prefixes arrive per second, so the prefix is resident iff r E[input] T <= C:
  p = Phi((ln(C / (r E[input])) - ln(median)) / sigma).

The closed form splits each request class into a resident and a non-resident subclass
(`split_md_view`, `routed`); the simulator draws residency per request with the same p.

The short-output cut-off's consistency cost: a cut-off turn never reaches MD, so the next
turn of its conversation, if its prefix is otherwise resident, lacks on MD what the cut-off
turn added (its uncached prompt and its output) besides its own new tokens.
"""

from __future__ import annotations

import math

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.model.caches.cache_tier import deployment_capacity_tokens
from pdd_plan.model.scenario import PrefixReuse
from pdd_plan.model.workload.workload import RequestClasses

# The parametric reuse interval. Median 300 s: the interval the old uniform cache factor
# assumed (one agent turn to the next, an assumption: the paper publishes no inter-turn
# gap). Sigma 1.0 (an assumption): turns follow tool calls of seconds to human replies of
# tens of minutes; sigma 1 puts 95 % of intervals within 300 s x e^(+-2) = 41 s .. 37 min.
REUSE_MEDIAN_S = 300.0
REUSE_SIGMA = 1.0


def decode_cache_capacity_tokens(scenario, deployment=None, model=None) -> float | None:
    """MD's decode-side cache capacity in tokens (None: unlimited). The one place that
    reads it: a deployment that buys a cache tier (cache_tier.py) has its own capacity
    (main-decode instances x TB / the model's KV bytes per token), else the scenario's."""
    if deployment is not None and model is not None:
        return deployment_capacity_tokens(scenario, deployment, model)
    return scenario.policy.decode_cache_capacity_tokens


def curve_resident_frac(reuse: PrefixReuse, capacity_tokens: float, rate_per_s: float) -> float:
    """The measured curve at `capacity_tokens` and `rate_per_s`: piecewise linear in
    log capacity between its points, its last value above them, and 0 below the first
    (`trace analyze` starts its ladder at one prompt, below which an LRU holds no whole
    prefix; a hand-written curve should start where its share is near 0 too)."""
    c = capacity_tokens * reuse.at_arrival_rate_per_s / rate_per_s
    caps, fracs = np.asarray(reuse.capacity_tokens, float), np.asarray(reuse.resident_frac, float)
    if c < caps[0]:
        return 0.0
    return float(np.interp(math.log(c), np.log(caps), fracs))


def parametric_resident_frac(
    capacity_tokens: float, rate_per_s: float, mean_input_tokens: float
) -> float:
    """P(r E[input] T <= C) for T ~ lognormal(REUSE_MEDIAN_S, REUSE_SIGMA)."""
    inflow_tokens_per_s = rate_per_s * mean_input_tokens
    if capacity_tokens <= 0:
        return 0.0
    if inflow_tokens_per_s <= 0:
        return 1.0
    z = (math.log(capacity_tokens / inflow_tokens_per_s) - math.log(REUSE_MEDIAN_S)) / REUSE_SIGMA
    return 0.5 * math.erfc(-z / math.sqrt(2.0))  # the standard normal CDF


def resident_frac(
    capacity_tokens: float | None,
    rate_per_s: float,
    mean_input_tokens: float,
    reuse: PrefixReuse | None = None,
) -> float:
    """Share of requests whose prefix MD's cache still holds (1: unlimited capacity)."""
    if capacity_tokens is None:
        return 1.0
    if reuse is not None:
        return curve_resident_frac(reuse, capacity_tokens, rate_per_s)
    return parametric_resident_frac(capacity_tokens, rate_per_s, mean_input_tokens)


def split_resident(classes: RequestClasses, p: float) -> tuple[RequestClasses, np.ndarray]:
    """Each class as a resident (weight x p, MD residency 1) and a non-resident (weight x
    (1 - p), residency 0) subclass; unsplit where every request is one or the other."""
    both, resident, _ = split_md_view(classes, p)
    return both, resident


def split_md_view(classes: RequestClasses, p: float, after_cut_frac: float = 0.0,
                  extra_tokens: float = 0.0):  # fmt: skip
    """(classes, MD residency, extra tokens MD lacks) per subclass: resident after an
    ordinary turn (weight w p (1 - s)), resident after a cut-off turn (w p s: MD also lacks
    that turn's `extra_tokens`), non-resident (w (1 - p)). Parts of zero weight dropped."""
    parts = [(p * (1.0 - after_cut_frac), 1.0, 0.0), (p * after_cut_frac, 1.0, extra_tokens),
             (1.0 - p, 0.0, 0.0)]  # fmt: skip
    parts = [part for part in parts if part[0] > 0.0]
    n, c = len(classes), classes
    if len(parts) == 1:
        _, resident, extra = parts[0]
        return classes, np.full(n, resident), np.full(n, extra)
    split = RequestClasses(
        np.concatenate([c.input_tokens] * len(parts)),
        np.concatenate([c.output_tokens] * len(parts)),
        np.concatenate([c.hit_rate] * len(parts)),
        np.concatenate([c.weight * share for share, _, _ in parts]),
    )
    resident = np.concatenate([np.full(n, r) for _, r, _ in parts])
    return split, resident, np.concatenate([np.full(n, e) for _, _, e in parts])


def cutoff_turns(scenario, arch: str, policy, classes, model) -> tuple[float, float]:
    """(share of requests the cut-off takes, the mean tokens such a turn adds that never
    reach MD: its uncached prompt and its output)."""
    cut = rt.cutoff_mask(arch, classes, policy, rt.resolved_cutoff(scenario), model,
                         scenario.kv_dtype, scenario.workload.input_tokens.mean())  # fmt: skip
    w = classes.weight[cut]
    if not w.sum():
        return 0.0, 0.0
    added = classes.uncached_tokens[cut] + classes.output_tokens[cut]
    return float(w.sum() / classes.weight.sum()), float(np.dot(w, added) / w.sum())


def md_resident_frac(scenario, arch: str, policy, classes, model, rate_per_s=None, deployment=None):
    """The LRU curve's resident share of requests; 1 for architectures whose requests
    never cross (no MD cache)."""
    if arch not in ("pdd", "cdc_pd"):
        return 1.0
    w = scenario.workload
    rate = w.arrival_rate_per_s if rate_per_s is None else rate_per_s
    capacity = decode_cache_capacity_tokens(scenario, deployment, model)
    return resident_frac(capacity, rate, w.input_tokens.mean(), w.prefix_reuse)


def routed(scenario, arch: str, policy, classes, model, rate_per_s=None, deployment=None):
    """(classes split by MD residency, their routes): the closed form's and the MILP's
    view of MD's cache. `rate_per_s`: the rate the curve is read at (the scenario's)."""
    p = md_resident_frac(scenario, arch, policy, classes, model, rate_per_s, deployment)
    # the cut-off's consistency cost: a conversation's previous turn was cut off with the
    # cut-off's share, independent of residency; its next turn then lacks on MD what the
    # cut-off turn added (MD's radix cache still holds the turns before it)
    after_cut, extra = cutoff_turns(scenario, arch, policy, classes, model)
    split, resident, extra = split_md_view(classes, p, after_cut, extra)
    routes = rt.route(
        arch, split, policy, rt.resolved_cutoff(scenario), model, scenario.kv_dtype, resident,
        threshold_input_tokens=scenario.workload.input_tokens.mean(),
        md_extra_missing_tokens=extra,
    )  # fmt: skip
    return split, routes
