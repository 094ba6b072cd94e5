"""Generated infeasible cases for issue #22 (points 4 and 5): the small two-datacenter
Llama-3.1-70B scenario (llama_two_dc) made infeasible in each way a planner meets, for
each architecture, and `solve --architecture ARCH --format json`'s answer for each."""

from __future__ import annotations

import yaml
from llama_two_dc import two_dc_llama

from pdd_plan import api
from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.catalog import Catalog

ARCHITECTURES = ("pdd", "cdc_pd", "idc_pd", "colocated")
TIME_LIMIT_S = 20.0
JUST_ABOVE = (0.0, 0.005, 0.01)  # how far above the physics floor a limit is set


def scenario(arch: str, sections: dict | None = None, **over) -> dict:
    """Every role in the two datacenters (one policy for PDD: quick), 64 connections
    (the builder's 4 cannot carry 2 req/s of KV), `arch` allowed; `sections` replaced
    whole, `over` as llama_two_dc takes them (section__key)."""
    data = two_dc_llama(**{"wan__connection_pool_size": 64, **over})
    data["datacenters"][0]["roles"] = ["prefill", "decode", "relay_decode", "colocated"]
    for dc in data["datacenters"]:
        dc["gpus"][0]["max_gpus"] = 32
    data["policy"] = {"rld_hit_threshold": 0.9, "handoff": "catch_up"}
    data.update(sections or {})
    data["architectures"] = [arch]
    return data


def written(tmp_path, data: dict) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def answer(path: str, arch: str, catalog: Catalog) -> dict | None:
    """`solve --architecture ARCH --format json`'s answer when it exits 3 (solve_cmd's
    path: the refusal, or the solve's infeasible result), else None."""
    try:
        result, files = api.solve_scenario(path, arch, catalog, time_limit_s=TIME_LIMIT_S)
    except InfeasibleError as exc:
        result, files = {"status": "infeasible", "error": exc}, None
    if result["status"] != "infeasible":
        return None
    return api.infeasible_answer(path, arch, result, files, catalog, time_limit_s=TIME_LIMIT_S)


def floor(tmp_path, arch: str, catalog: Catalog, key: str, unit: str) -> float:
    """The physics floor the tool names for an SLA limit of 1 ms (a TTFT or TPOT no
    instance meets even unloaded): its figure is the shortfall's `needs`."""
    tiny = {"ttft_p90_s": 0.001, "tpot_p90_ms": 100} if key == "ttft" else {
        "ttft_p90_s": 60, "tpot_p90_ms": 0.001}  # fmt: skip
    got = answer(written(tmp_path, scenario(arch, {"sla": tiny})), arch, catalog)
    found = [s for s in got["shortfalls"] if s["limit"].startswith(key.upper())]
    assert found and found[0]["unit"] == unit, got
    return found[0]["needs"]


def cases(tmp_path, arch: str, catalog: Catalog):
    """(name, scenario data) of every kind of infeasible case (module doc)."""
    ttft = floor(tmp_path, arch, catalog, "ttft", "s")
    tpot = floor(tmp_path, arch, catalog, "tpot", "ms")
    for up in JUST_ABOVE:
        sla = {"ttft_p90_s": ttft * (1 + up), "tpot_p90_ms": 100}
        yield f"ttft+{up:g}", scenario(arch, {"sla": sla})
    yield "tpot+0.005", scenario(arch, {"sla": {"ttft_p90_s": 60, "tpot_p90_ms": tpot * 1.005}})
    busy = {"workload__arrival_rate_per_s": 8.0}
    capped = scenario(arch, **busy)
    capped["policy"]["utilization_cap_frac"] = 0.05
    yield "cap", capped
    yield "availability", with_gpus(scenario(arch, **busy), 2)
    yield "budget", scenario(arch, objective__budget_usd_per_hour=10, **busy)
    yield "line", scenario(arch, wan__max_lines=1, workload__arrival_rate_per_s=20.0)
    powered = scenario(arch, **busy)
    powered["datacenters"][0]["power_budget_kw"] = 3
    yield "power", powered


def with_gpus(data: dict, gpus: int) -> dict:
    """Every datacenter's GPUs limited to `gpus`."""
    for dc in data["datacenters"]:
        dc["gpus"][0]["max_gpus"] = gpus
    return data
