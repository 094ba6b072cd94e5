"""The architecture verdict across the decode engine's KV layout (`explain`, the report).

Each case of `plan.kv_layouts.kv_layout_cases` (the model's own layout ... the whole context
uncompressed) is solved for every architecture of the scenario by the sensitivity cases'
own `case_entry.case_entry`, side by side in forked processes (fork_pool.py), and ranked
as `solve` ranks architectures (choose.py): the verdict at each end of the range and
between which layouts it changes, if it does.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.scenario import Scenario
from pdd_plan.plan.kv_layouts import kv_layout_cases, per_request_bytes

RULE = (
    "Each architecture solved again with the decode engine keeping more of each request's "
    "KV uncompressed (the HBM it holds and the KV each decode step reads move together), "
    "from the model's own layout to the whole context uncompressed; best: the "
    "architecture `solve` would recommend."
)


@dataclass(frozen=True)
class _ArchCase:
    """`case_entry` of one (sensitivity case, architecture), as fork_pool's children call it."""

    catalog: Catalog
    resolution: tuple[int, int, int]
    time_limit_s: float

    def __call__(self, item) -> dict:
        from pdd_plan.stages.solving.case_entry import case_entry

        (case, change, variant), arch = item
        entry = case_entry(case, change, variant, arch, self.catalog, self.resolution,
                           self.time_limit_s)  # fmt: skip
        return {**entry, "architecture": arch}


def kv_layout_verdict(s: Scenario, catalog: Catalog, run) -> dict | None:
    """{"rule", "cases": [per layout: bytes a request, each architecture's figures, the
    best], "flips": [where the best changes]}; None where the model has no window (every
    layer keeps every token already: there is no range)."""
    from pdd_plan.stages import fork_pool

    model = catalog.model_for(s)
    cases = kv_layout_cases(s, model)
    if not cases:
        return None
    archs = s.architectures
    items = [(case, arch) for case in cases for arch in archs]
    entries = fork_pool.each(_ArchCase(catalog, *run), items)
    rows = [
        _row(variant, model, entries[i * len(archs) : (i + 1) * len(archs)], case, change)
        for i, (case, change, variant) in enumerate(cases)
    ]
    return {"rule": RULE, "cases": rows, "flips": _flips(rows), "pairs": _pairs(rows, archs)}


def _row(variant: Scenario, model, entries: list[dict], case: str, change: str) -> dict:
    from pdd_plan.stages.solving.choose import rank

    ranked = rank(variant, entries)
    tokens = variant.engine.kv_layout.uncompressed_tokens
    return {
        "case": case,
        "change": change,
        "uncompressed_tokens": tokens,
        "per_request_bytes": per_request_bytes(model, variant, tokens),
        "architectures": {e["architecture"]: _figures(e) for e in entries},
        "best": ranked[0]["architecture"] if ranked else None,
    }


def _figures(entry: dict) -> dict:
    m = entry.get("metrics") or {}
    return {
        "status": entry["status"],
        "goodput_rps": m.get("goodput_rps"),
        "bcr_rps_per_usd_hour": m.get("bcr_rps_per_usd_hour"),
        "cost_usd_per_hour": m.get("cost_usd_per_hour"),
    }


def _flips(rows: list[dict]) -> list[dict]:
    """Each pair of neighbouring layouts whose best architecture differs."""
    return [
        {"from_case": a["case"], "to_case": b["case"], "from": a["best"], "to": b["best"]}
        for a, b in zip(rows, rows[1:], strict=False)
        if a["best"] != b["best"]
    ]


def _bcr(row: dict, arch: str) -> float | None:
    return row["architectures"][arch]["bcr_rps_per_usd_hour"]


def _pairs(rows: list[dict], archs) -> list[dict]:
    """Each pair of architectures: its BCR ratio at the range's ends and the neighbouring
    layouts between which the ratio crosses 1 (the pair's order changes), if any."""
    out = []
    for i, a in enumerate(archs):
        for b in archs[i + 1 :]:
            ratios = [_ratio(_bcr(r, a), _bcr(r, b)) for r in rows]
            crossings = [
                {"from_case": r0["case"], "to_case": r1["case"]}
                for r0, r1, x, y in zip(rows, rows[1:], ratios, ratios[1:], strict=False)
                if x is not None and y is not None and (x > 1) != (y > 1)
            ]
            out.append({"pair": [a, b], "bcr_ratio": ratios, "crossings": crossings})
    return out


def _ratio(x: float | None, y: float | None) -> float | None:
    return x / y if x is not None and y else None
