"""Shared by the issue #22 report tests: the catalog's figures read with yaml.safe_load,
and plans written by hand in the shape of `solve --format json`."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "hardware_catalog"
GOLDEN = REPO / "tests" / "golden"
HOURS_PER_MONTH = 730.0


def figure(path: str, key: str):
    return yaml.safe_load((CATALOG / path).read_text())[key]["value"]


def group(role, dc, gpu, per, count) -> dict:
    return {"role": role, "datacenter": dc, "gpu": gpu, "gpus_per_instance": per, "count": count}


def plan(architecture, *instances, lines=(), **policy) -> dict:
    return {"architecture": architecture, "instances": list(instances),
            "lines": [{"tier": t, "capacity_gbit_per_s": 10.0, "count": n} for t, n in lines],
            "policy": {"rld_hit_threshold": 0.9, "handoff": "catch_up",
                       "short_output_cutoff": False} | policy}  # fmt: skip


P_H100 = group("prefill", "dc_a", "h100_sxm", 8, 2)
