"""Scenarios that validate but crashed the solver (#10 C, item 11): repeats the planner
names its constraints after, and figures below a physical floor. Each is refused by the
loader, so `scenario validate` and `solve` (and `compare`, `explain`) give the same one
line, exit 2, naming the key path."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model import scenario as sc
from tests.hardening.conftest import assert_one_error_line

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "scenarios" / "default.yaml").read_text(encoding="utf-8"))


def _scenario(tmp_path: Path, edit) -> Path:
    data = copy.deepcopy(DEFAULT)
    edit(data)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _dc(i: int):
    return lambda d: d["datacenters"][i]


def _repeat_gpu(d):  # h100_sxm a second time in dc_a, at another price
    d["datacenters"][0]["gpus"].append({"gpu": "h100_sxm", "price_usd_per_gpu_hour": 1.0})


def _links(*links):
    return lambda d: d["wan"].__setitem__(
        "links", [{"between": list(ends), "rtt_ms": rtt} for ends, rtt in links]
    )


# (id, edit, key path, fragments the line must hold besides the path)
CASES = [
    ("gpu_twice", _repeat_gpu, "datacenters[0].gpus[1].gpu", ("datacenters[0].gpus[0].gpu",)),
    (
        "datacenter_twice",
        lambda d: d["datacenters"].append(copy.deepcopy(d["datacenters"][0])),
        "datacenters[2].id",
        ("'dc_a'",),
    ),
    (
        "shape_twice",
        lambda d: _dc(0)(d)["gpus"][0].__setitem__("gpus_per_instance", [24, 24]),
        "datacenters[0].gpus[0].gpus_per_instance[1]",
        ("24",),
    ),
    (
        "rate_1e-300",
        lambda d: d["workload"].__setitem__("arrival_rate_per_s", 1e-300),
        "workload.arrival_rate_per_s",
        ("1e-300", ">= 1e-06"),
    ),
    (
        "rate_below_floor",
        lambda d: d["workload"].__setitem__("arrival_rate_per_s", 9e-7),
        "workload.arrival_rate_per_s",
        (">= 1e-06",),
    ),
    (
        "demand_1e-300",
        lambda d: d.__setitem__("objective", {"kind": "min_cost", "demand_rps": 1e-300}),
        "objective.demand_rps",
        (">= 1e-06",),
    ),
    (
        "cap_1e-300",
        lambda d: d["policy"].__setitem__("utilization_cap_frac", 1e-300),
        "policy.utilization_cap_frac",
        ("1e-300", ">= 0.05"),
    ),
    (
        "cap_below_floor",
        lambda d: d["policy"].__setitem__("utilization_cap_frac", 0.049),
        "policy.utilization_cap_frac",
        (">= 0.05",),
    ),
    (
        "engine_kv_1e-300",  # hung solve for minutes (a batch too large to count)
        lambda d: d.__setitem__(
            "engine", {"kv_uncompressed_tokens": 1e-300, "kv_layout_source": "test"}
        ),
        "engine.kv_uncompressed_tokens",
        ("from 1 to",),
    ),
    (
        "link_contradicts",
        _links((("dc_a", "dc_b"), 5), (("dc_a", "dc_b"), 50)),
        "wan.links[1].between",
        ("wan.links[0].between",),
    ),
    (
        "link_reversed_twice",
        _links((("dc_a", "dc_b"), 5), (("dc_b", "dc_a"), 50)),
        "wan.links[1].between",
        ("dc_b, dc_a",),
    ),
    (
        "link_identical_twice",  # refused too: which of two copies the user meant is unknown
        _links((("dc_a", "dc_b"), 5), (("dc_a", "dc_b"), 5)),
        "wan.links[1].between",
        ("one entry per datacenter pair",),
    ),
    (
        "link_to_itself",
        _links(
            (("dc_a", "dc_a"), 5),
        ),
        "wan.links[0].between",
        ("two different datacenters",),
    ),
    (
        "max_lines_10000",  # the walk over line mixes ran for minutes past --time-limit
        lambda d: d["wan"].__setitem__("max_lines", 10_000),
        "wan.max_lines",
        ("<= 64",),
    ),
    (
        "output_one_token",  # no decode step, no TPOT: solve crashed on an empty array
        lambda d: d["workload"].__setitem__("output_tokens", {"kind": "fixed", "value": 1}),
        "workload.output_tokens",
        ("reach 2 tokens",),
    ),
    (
        "output_below_two",
        lambda d: d["workload"].__setitem__(
            "output_tokens", {"kind": "bins", "bins": [{"low": 1, "high": 2, "share": 1.0}]}
        ),
        "workload.output_tokens",
        ("reach 2 tokens",),
    ),
    (
        "tier_twice",
        lambda d: d["wan"].__setitem__("tiers", ["wave_10g", "wave_10g"]),
        "wan.tiers[1]",
        ("wan.tiers[0]",),
    ),
    (
        "role_twice",
        lambda d: _dc(1)(d).__setitem__("roles", ["main_decode", "main_decode"]),
        "datacenters[1].roles[1]",
        ("'main_decode'",),
    ),
    (
        "architecture_twice",
        lambda d: d.__setitem__("architectures", ["pdd", "pdd"]),
        "architectures[1]",
        ("'pdd'",),
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "edit, key_path, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize(
    "args", [("scenario", "validate", "s.yaml"), ("solve", "s.yaml", "--time-limit", "5")]
)
def test_refused_by_validate_and_solve(cli, tmp_path, args, edit, key_path, fragments):
    _scenario(tmp_path, edit)
    result = cli(*args)
    assert_one_error_line(result, 2, f"s.yaml: {key_path}: found", *fragments)


# the four the issue found crashing every solving command
ORIGINAL = ("gpu_twice", "shape_twice", "rate_1e-300", "cap_1e-300")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["compare", "explain"])
@pytest.mark.parametrize("case", ORIGINAL)
def test_refused_by_compare_and_explain(cli, tmp_path, command, case):
    _, edit, key_path, fragments = next(c for c in CASES if c[0] == case)
    _scenario(tmp_path, edit)
    result = cli(command, "s.yaml", "--time-limit", "5")
    assert_one_error_line(result, 2, f"s.yaml: {key_path}: found", *fragments)


def test_several_repeats_are_reported_together(cli, tmp_path):
    def edit(d):
        _repeat_gpu(d)
        d["wan"]["tiers"] = ["wave_100g", "wave_100g"]

    _scenario(tmp_path, edit)
    result = cli("scenario", "validate", "s.yaml")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert "datacenters[0].gpus[1].gpu" in lines[0] and "wan.tiers[1]" in lines[1]


def test_the_floors_themselves_are_taken(tmp_path):
    """At the floor exactly, and with distinct shapes, GPUs and links, a scenario loads."""

    def edit(d):
        d["workload"]["arrival_rate_per_s"] = sc.MIN_ARRIVAL_RATE_PER_S
        d["policy"]["utilization_cap_frac"] = sc.MIN_UTILIZATION_CAP_FRAC
        d["engine"] = {"kv_uncompressed_tokens": 128, "kv_layout_source": "test"}  # its window
        d["datacenters"][0]["gpus"][0]["gpus_per_instance"] = [8, 16, 24]
        d["wan"]["links"] = [{"between": ["dc_a", "dc_b"], "rtt_ms": 5}]
        d["wan"]["max_lines"] = 64
        d["workload"]["output_tokens"] = {"kind": "fixed", "value": 2}

    s = load_scenario(_scenario(tmp_path, edit))
    assert s.workload.arrival_rate_per_s == 1e-6
    assert s.policy.utilization_cap_frac == 0.05
    assert s.datacenters[0].gpus[0].gpus_per_instance == (8, 16, 24)
    assert s.wan.rtt_between("dc_b", "dc_a") == pytest.approx(0.005)
    assert s.wan.max_lines == 64 and s.workload.output_tokens.mean() == 2
