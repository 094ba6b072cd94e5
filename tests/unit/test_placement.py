"""Each architecture's roles sit where the architecture says (issue #22, point 1):
IDC-PD's prefill and decode in one datacenter, PDD's relay beside prefill, main decode in
another datacenter than prefill. A role that can never be placed is refused by the loader,
`scenario validate` says where each architecture can sit, plans that break the placement
are refused, and the optimiser (exact search and MILP seeds) returns only placed plans."""

from __future__ import annotations

import json

import pytest
import yaml

from pdd_plan.api import solve_scenario
from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario
from tests.unit.llama_two_dc import two_dc_llama


def _write(tmp_path, data, name="s.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _two_sites(roles_a, roles_b):
    data = two_dc_llama()
    data["datacenters"][0]["roles"] = roles_a
    data["datacenters"][1]["roles"] = roles_b
    return data


@pytest.mark.parametrize(
    ("roles_b", "index", "role"),
    [
        (["main_decode", "decode"], 1, "decode"),  # the reported case: IDC-PD decode afar
        (["relay_decode", "main_decode"], 0, "relay_decode"),  # a relay away from prefill
    ],
)
def test_a_beside_prefill_role_without_prefill_is_refused(tmp_path, catalog, roles_b, index, role):
    path = _write(tmp_path, _two_sites(["prefill"], roles_b))
    with pytest.raises(InputError) as err:
        load_scenario(path, catalog)
    text = str(err.value)
    assert f"datacenters[1].roles[{index}]" in text and f"found '{role}'" in text
    assert "also allows prefill" in text and "main_decode" in text


def test_main_decode_with_no_prefill_elsewhere_is_refused(tmp_path, catalog):
    data = two_dc_llama()
    data["datacenters"] = [
        {"id": "dc_a", "roles": ["prefill", "main_decode"], "gpus": [{"gpu": "h100_sxm"}]}
    ]
    with pytest.raises(InputError) as err:
        load_scenario(_write(tmp_path, data), catalog)
    assert "datacenters[0].roles[1]" in str(err.value)
    assert "another datacenter allows prefill" in str(err.value)


@pytest.mark.slow
def test_the_cli_refusal_is_one_line_with_exit_2(tmp_path, run_cli):
    path = _write(tmp_path, _two_sites(["prefill", "relay_decode"], ["main_decode", "decode"]))
    for command in (["scenario", "validate"], ["solve"]):
        done = run_cli(*command, str(path))
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_validate_says_where_each_architecture_sits(tmp_path, run_cli):
    data = _two_sites(["prefill", "relay_decode", "decode"], ["main_decode"])
    done = run_cli("scenario", "validate", str(_write(tmp_path, data)), "--format", "json")
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)["scenario"]["placements"]
    assert where["idc_pd"] == "prefill + decode in dc_a"
    assert where["pdd"] == "prefill + relay_decode in dc_a, main_decode in dc_b (over the line)"
    assert where["cdc_pd"] == "prefill in dc_a, main_decode in dc_b (over the line)"


def test_an_explicit_architecture_that_cannot_be_placed_is_refused(tmp_path, catalog):
    # both sites may prefill, but main decode only where prefill is too: CDC-PD can place
    # main decode in dc_b with prefill in dc_a; IDC-PD needs decode beside prefill: none
    data = _two_sites(["prefill", "main_decode"], ["prefill", "main_decode"])
    data["architectures"] = ["cdc_pd", "idc_pd"]
    with pytest.raises(InputError) as err:
        load_scenario(_write(tmp_path, data), catalog)
    assert "architectures[1]" in str(err.value) and "missing: decode" in str(err.value)


def _placed(plan: dict) -> bool:
    home = {g["datacenter"] for g in plan["instances"] if g["role"] == "prefill"}
    assert len(home) == 1
    (home,) = home
    for g in plan["instances"]:
        if g["role"] in ("decode", "relay_decode") and g["datacenter"] != home:
            return False
        if g["role"] == "main_decode" and g["datacenter"] == home:
            return False
    return True


def _cheap_far_decode(objective: str, ttft_p90_s: float = 2.0) -> dict:
    """Two sites that may each prefill and decode: H100 only in dc_a, H20 only in dc_b.
    Long prompts make H20 (148 dense TFLOP/s to H100's 989) a dear prefill and it is the
    cheaper decoder, so the cheapest split, were it allowed, prefills in dc_a and decodes
    in dc_b."""
    data = two_dc_llama(objective__kind=objective, sla__ttft_p90_s=ttft_p90_s)
    data["workload"]["input_tokens"]["value"] = 8000
    data["workload"]["arrival_rate_per_s"] = 5.0
    data["datacenters"] = [
        {"id": "dc_a", "roles": ["prefill", "decode", "relay_decode", "main_decode"],
         "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]},
        {"id": "dc_b", "roles": ["prefill", "decode", "relay_decode", "main_decode"],
         "gpus": [{"gpu": "h20_96g", "max_gpus": 64}]},
    ]  # fmt: skip
    # a line that carries the uncached prompts' KV (8,000 tokens x 320 KiB at 5 req/s)
    data["wan"].update(tiers=["wave_100g"], connection_pool_size=256, max_lines=8)
    data["wan"]["per_connection_gbit_per_s"] = 2.0
    return data


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["min_cost", "max_bcr"])
@pytest.mark.parametrize("arch", ["idc_pd", "cdc_pd", "pdd"])
def test_solved_plans_keep_their_architectures_placement(tmp_path, catalog, objective, arch):
    # across the line the prompt's KV (2.6 GB at 2 Gbit/s a connection) takes 10 s
    path = _write(tmp_path, _cheap_far_decode(objective, 2.0 if arch == "idc_pd" else 30.0))
    result, _ = solve_scenario(path, architecture=arch, catalog=catalog, time_limit_s=60)
    assert result["status"] in ("optimal", "feasible"), result.get("reason")
    assert _placed(result["plan"]), result["plan"]
    if arch == "idc_pd":
        assert result["plan"]["lines"] == []
    else:
        assert result["metrics"]["wan"]["mean_gbit_per_s"] > 0


@pytest.mark.slow
def test_a_plan_file_against_its_placement_is_refused(tmp_path, catalog, run_cli):
    scenario = _write(tmp_path, _cheap_far_decode("min_cost"))
    plan = {
        "plan": {
            "architecture": "idc_pd",
            "instances": [
                {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm",
                 "gpus_per_instance": 8, "count": 1},
                {"role": "decode", "datacenter": "dc_b", "gpu": "h20_96g",
                 "gpus_per_instance": 8, "count": 1},
            ],
        }
    }  # fmt: skip
    done = run_cli("evaluate", str(scenario), str(_write(tmp_path, plan, "plan.yaml")))
    assert done.returncode == 2, done.stdout
    assert "plan.instances" in done.stderr and "decode in dc_b, prefill in dc_a" in done.stderr
