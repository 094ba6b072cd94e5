"""Bug hunt (round 21, helper hb): plan files found wrong by structural fuzzing.

1. A plan the model refuses after the loader read it (two groups for a role it does not
   mix; a decode shape whose HBM cannot hold one request beside the weights) gave
   `error: plan: plan.instances: ...`: the file named was the word `plan`, not the plan
   file, although docs/guarantees.md promises every line names the file (the model cannot know
   the path; the command that read the file now names it).
2. `decode_cache: {tier: none, tb: .nan}` gave two lines, the bad `tb` and then `tier:
   found 'none'; expected a known cache tier id`, although `none` is the documented tier
   of a plan that buys none (tb 0): one problem, one line.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.hardening.conftest import TINY, assert_one_error_line

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

PDD = {
    "architecture": "pdd",
    "instances": [
        {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 2,
         "count": 1},
        {"role": "relay_decode", "datacenter": "dc_a", "gpu": "h100_sxm",
         "gpus_per_instance": 1, "count": 1},
        {"role": "main_decode", "datacenter": "dc_b", "gpu": "l40s", "gpus_per_instance": 2,
         "count": 2},
    ],
    "lines": [{"tier": "wave_10g", "count": 1}],
}  # fmt: skip


def write(tmp_path, plan: dict) -> tuple:
    scenario, plan_path = tmp_path / "s.yaml", tmp_path / "my-plan.yaml"
    scenario.write_text(yaml.safe_dump(TINY))
    plan_path.write_text(yaml.safe_dump({"plan": plan}))
    return scenario, plan_path


def two_prefill_groups() -> dict:
    plan = copy.deepcopy(PDD)
    plan["instances"].append({**plan["instances"][0], "gpus_per_instance": 1})
    return plan


def main_decode_on_one_l40s() -> dict:
    """Qwen3-32B's BF16 weights are 32.8 G parameters x 2 bytes = 65.5 GB; one L40S holds
    45 GiB x 0.9 usable = 43.5 GB: no request fits beside the weights."""
    plan = copy.deepcopy(PDD)
    plan["instances"][2]["gpus_per_instance"] = 1
    return plan


@pytest.mark.parametrize("command", ["evaluate", "simulate"])
@pytest.mark.parametrize("make,what", [
    (two_prefill_groups, "2 instance groups for the prefill role"),
    (main_decode_on_one_l40s, "main_decode on 1 x l40s"),
])  # fmt: skip
def test_the_models_refusals_of_a_plan_name_the_plan_file(cli, tmp_path, command, make, what):
    scenario, plan = write(tmp_path, make())
    extra = ["--requests", "2300"] if command == "simulate" else []
    line = assert_one_error_line(cli(command, scenario, plan, *extra), 2, what)
    assert line.startswith(f"error: {plan}: plan.instances: found "), line


def test_a_bad_cache_size_is_one_problem_not_two(cli, tmp_path):
    plan = copy.deepcopy(PDD)
    plan["decode_cache"] = {"tier": "none", "tb": float("nan")}
    scenario, path = write(tmp_path, plan)
    line = assert_one_error_line(cli("evaluate", scenario, path), 2)
    assert line.startswith(f"error: {path}: plan.decode_cache.tb: found nan; expected "), line


def test_a_sweep_of_a_plan_the_model_refuses_names_the_plan_file(cli, tmp_path):
    """`sweep --plan`: each point's error names the plan file, as `evaluate`'s does."""
    scenario, plan = write(tmp_path, two_prefill_groups())
    done = cli("sweep", scenario, "--plan", plan, "--vary", "workload.arrival_rate_per_s=1,2",
               "--jobs", "1")  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("error: ")]  # and the bar
    assert len(errors) == 1 and "2 instance groups for the prefill role" in errors[0], errors
    assert f"{plan}: plan.instances: found" in errors[0], errors
    assert "plan: plan.instances" not in errors[0], errors
