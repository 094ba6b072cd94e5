"""Scenario lists whose items the planner names things after (GPU offers, instance
shapes, per-pair WAN links): each value once, so no two MILP constraints share a name and
no two figures contradict each other."""

from __future__ import annotations

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.strict import Node
from pdd_plan.model import scenario as sc
from pdd_plan.model.units import MS_S


def refuse_repeats(pairs, what: str) -> None:
    """Fail each (node, value) whose value an earlier one already has: the planner names
    its variables and constraints after these values, and a repeat is never a second
    offer but a copy-paste slip (which of two prices would hold?)."""
    first: dict = {}
    for node, value in pairs:
        if value is None:
            continue
        if value in first:
            node.fail(f"{what} not listed already (it is at {first[value]})")
        else:
            first[value] = node.path


def offer(g: Node, catalog: Catalog) -> tuple[Node, str | None, sc.GpuOffer | None]:
    """One `gpus` entry: its `gpu` node and id (to check repeats) and the offer, if valid."""
    o = g.mapping(
        required=("gpu",),
        optional=("price_usd_per_gpu_hour", "max_gpus", "gpus_per_instance"),
    )
    if o is None:
        return g, None, None
    gpu_id = o["gpu"].reference(catalog.gpus, "GPU")
    price = o["price_usd_per_gpu_hour"].number(minimum=0, exclusive_minimum=True, maximum=1e4)
    max_gpus = o["max_gpus"].integer(minimum=0, maximum=10_000_000)
    shapes: tuple = ()
    if not o["gpus_per_instance"].is_missing:
        items = o["gpus_per_instance"].items(min_items=1) or []
        shapes = tuple(s.integer(required=True, minimum=1, maximum=4096) for s in items)
        refuse_repeats(zip(items, shapes, strict=True), "an instance shape")
    if gpu_id is None or None in shapes or len(set(shapes)) < len(shapes):
        return o["gpu"], gpu_id, None
    if price is None:
        price = catalog.gpus[gpu_id].rental_usd_per_gpu_hour
    return o["gpu"], gpu_id, sc.GpuOffer(gpu_id, price, max_gpus, shapes)


def wan_links(node: Node, dc_ids: set[str] | None) -> dict[tuple[str, str], float]:
    """Per-pair RTTs: one entry per pair of two different datacenters (either order)."""
    links: dict[tuple[str, str], float] = {}
    first: dict[frozenset, str] = {}
    for link in (node.items() or []) if not node.is_missing else []:  # None: not a list
        g = link.mapping(required=("between", "rtt_ms"))
        if g is None:
            continue
        ends = [
            e.reference(dc_ids, "datacenter") if dc_ids is not None else e.identifier()
            for e in g["between"].items(2) or []
        ]
        rtt = g["rtt_ms"].number(required=True, minimum=0, maximum=10_000)
        if len(ends) != 2:
            g["between"].fail("a list of two datacenter ids")
        elif None not in ends and ends[0] == ends[1]:
            where = g["between"]
            where.problems.add(where.path, f"{ends[0]} at both ends", "two different datacenters")
        elif frozenset(ends) in first:  # twice, even with the same figure: a slip
            g["between"].problems.add(
                g["between"].path,
                f"the pair {ends[0]}, {ends[1]} again",
                f"one entry per datacenter pair (the first is {first[frozenset(ends)]})",
            )
        elif None not in ends:
            first[frozenset(ends)] = g["between"].path
            if rtt is not None:
                links[(ends[0], ends[1])] = rtt * MS_S
    return links
