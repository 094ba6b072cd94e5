"""An edited scenario is written with libyaml's emitter when PyYAML has it (issue #15
speed): the strict loader must read back exactly what the pure-Python `safe_dump`
round trip gave, for the shipped scenarios and for edits with awkward values."""

from __future__ import annotations

import pytest
import yaml

from pdd_plan.loaders.scenario import resolve_scenario_path
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.plan import scenario_edit as se

AWKWARD = ["no", "yes", "1e3", "0x1F", "@x", "-", "a: b", "#c", "'q'", '"d"', "é ü ß", "",
           " lead", "trail ", "x" * 300, "line\nbreak", 1e-300, 1.7e308, -0.0, 2**70, True, None,
           [1, "two", 3.5], {"k": ["v", {"deep": 1}]}]  # fmt: skip


def _read_back(data, dumper):
    return yaml.safe_load(yaml.dump(data, Dumper=dumper, sort_keys=False))


@pytest.mark.parametrize("name", ["default", "pdd-paper", "template"])
def test_shipped_scenarios_read_back_alike(name):
    data = load_yaml(resolve_scenario_path(name), "a scenario")
    assert _read_back(data, se._DUMPER) == _read_back(data, yaml.SafeDumper) == data


@pytest.mark.parametrize("value", AWKWARD)
def test_awkward_values_read_back_alike(value):
    data = {"name": "x", "description": value, "workload": {"nested": [value, {"v": value}]}}
    assert _read_back(data, se._DUMPER) == _read_back(data, yaml.SafeDumper) == data


@pytest.mark.parametrize("name", ["default", "pdd-paper"])
def test_edited_scenario_is_the_same_with_either_emitter(name, catalog, monkeypatch):
    path = resolve_scenario_path(name)
    data = load_yaml(path, "a scenario")
    edits = {"workload.arrival_rate_per_s": 7.5, "description": "é: 'x' # y"}
    fast, _ = se.edited(data, edits, str(path), catalog)
    monkeypatch.setattr(se, "_DUMPER", yaml.SafeDumper)
    slow, _ = se.edited(data, edits, str(path), catalog)
    assert fast == slow
    assert fast.workload.arrival_rate_per_s == 7.5
