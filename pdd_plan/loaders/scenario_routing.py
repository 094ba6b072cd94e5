"""The scenario keys of MD's decode-side cache and the short-output cut-off, strictly:
`workload.prefix_reuse` (an LRU curve) and `policy.short_output_cutoff`."""

from __future__ import annotations

from pdd_plan.loaders.strict import Node
from pdd_plan.model import scenario as sc

_NEW_CUTOFF_KEY = "min_uncached_bytes_per_output_token"
# the old criterion (output <= N and input >= M) caught 72 % of the paper's requests where
# the published share is 3-4 %, and is refused rather than silently reinterpreted
_OLD_CUTOFF_KEYS = ("max_output_tokens", "min_input_tokens")
MAX_CAPACITY_TOKENS = 1e15


def prefix_reuse(node: Node) -> sc.PrefixReuse | None:
    """capacity_tokens ascending (> 0), resident_frac non-decreasing in [0, 1], the same
    length, and the arrival rate they were measured at."""
    if node.is_missing or node.value is None:
        return None
    f = node.mapping(required=("capacity_tokens", "resident_frac", "at_arrival_rate_per_s"))
    if f is None:
        return None
    rate = f["at_arrival_rate_per_s"].number(
        required=True, minimum=sc.MIN_ARRIVAL_RATE_PER_S, maximum=1e7, unit="req/s"
    )
    caps = _numbers(f["capacity_tokens"], 0.0, MAX_CAPACITY_TOKENS, True, "ascending")
    fracs = _numbers(f["resident_frac"], 0.0, 1.0, False, "non-decreasing")
    if caps is not None and fracs is not None and len(caps) != len(fracs):
        f["resident_frac"].fail(f"a list as long as capacity_tokens ({len(caps)} points)")
        return None
    if None in (rate, caps, fracs):
        return None
    return sc.PrefixReuse(tuple(caps), tuple(fracs), rate)


def _numbers(node: Node, low: float, high: float, exclusive: bool, order: str):
    items = node.items(min_items=1)
    if items is None:
        return None
    values = [i.number(required=True, minimum=low, maximum=high, exclusive_minimum=exclusive)
              for i in items]  # fmt: skip
    if None in values:
        return None
    for prev, (item, v) in zip(values, list(zip(items, values, strict=True))[1:], strict=False):
        if v < prev or (order == "ascending" and v == prev):
            item.fail(f"a number {'>' if order == 'ascending' else '>='} the one before "
                      f"({prev:g}): the list is {order}")  # fmt: skip
            return None
    return values


def short_output_cutoff(node: Node) -> sc.ShortOutputCutoff:
    if node.is_missing or node.value is None:
        return sc.ShortOutputCutoff()
    g = node.mapping(optional=("enabled", _NEW_CUTOFF_KEY, *_OLD_CUTOFF_KEYS))
    if g is None:
        return sc.ShortOutputCutoff()
    for key in _OLD_CUTOFF_KEYS:
        if not g[key].is_missing:
            g[key].fail(
                f"{_NEW_CUTOFF_KEY} (the cut-off now selects by uncached input bytes per "
                "output token; leave it out for the default derived from the line)"
            )
    return sc.ShortOutputCutoff(
        bool(g["enabled"].boolean(default=False)),
        g[_NEW_CUTOFF_KEY].number(minimum=0, exclusive_minimum=True, maximum=1e15),
    )
