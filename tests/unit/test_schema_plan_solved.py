"""What `solve --out DIR` writes validates against the schemas (issue #25 item 4): plan.json
for a PDD, a CDC-PD and an IDC-PD plan, and scenario.json, the scenario as solved, against
the scenario schema. Each plan.json also reads back through the plan loader, so the schema
and the loader agree on it. (`solve --confidence` adds `confidence`: its solve takes about
40 s, so test_schema_plan.py checks a result carrying the key instead.)
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from pdd_plan.api import solve_scenario
from pdd_plan.cli.solve_cmd import write_outputs
from pdd_plan.loaders.file_schemas import file_schema
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.deployment_json import plan_json


def _written(tmp_path, scenario: str, architecture: str) -> tuple[dict, dict]:
    result, files = solve_scenario(scenario, architecture, time_limit_s=60)
    assert result["plan"] is not None, result.get("reason")
    out = tmp_path / architecture
    write_outputs(out, result, files)  # what `solve --out DIR` writes, less the report
    return tuple(json.loads((out / n).read_text()) for n in ("plan.json", "scenario.json"))


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["pdd", "cdc_pd", "idc_pd"])
def test_the_plan_json_solve_writes_validates_and_reads_back(tmp_path, catalog, architecture):
    plan, scenario = _written(tmp_path, "default", architecture)
    jsonschema.validate(plan, file_schema("plan"))
    jsonschema.validate(scenario, file_schema("scenario"))
    scenario_read = load_scenario(resolve_scenario_path("default"), catalog)
    deployment = load_plan(tmp_path / architecture / "plan.json", scenario_read, catalog)
    assert plan_json(deployment) == plan["plan"]
