"""The scenario schema against the loader, value by value: every getter call the loader makes
on the full documents (schema_docs.py) is probed with one change each (schema_probe.py):
a wrong type, a value past each bound, a fraction where a whole number goes, a choice not
offered, an unknown or a missing key, null; and the values at the bounds, each choice, each
optional key left out. The schema must take whatever the loader takes, and refuse whatever
breaks a getter's own rule, so a bound or a type changed on one side only fails here.
"""

from __future__ import annotations

import copy
import time

import pytest
import schema_docs as sd
from schema_probe import SchemaView, findings, probes, scenario_reads, unique_calls

from pdd_plan.loaders import scenario as scenario_loader
from pdd_plan.loaders.scenario import load_scenario

# (generic key path, rule) the loader checks against another key, which a JSON Schema cannot
# (docs/schemas.md lists them): at most connection_pool_size stripes
GAPS = {("wan.stripes_per_transfer", "maximum")}


@pytest.mark.slow
def test_what_the_loader_takes_the_schema_takes_and_what_breaks_a_rule_both_refuse(
    tmp_path, catalog, monkeypatch
):
    folder = sd.scenario_folder(tmp_path)
    docs = sd.full_scenarios()
    reads = scenario_reads(folder, catalog, docs)
    chosen = unique_calls(reads, docs)
    probe_list = []
    for name, call in chosen:
        elsewhere = {k for c in reads[name] if c.getter == "mapping" and c.path == call.path
                     for k in (*c.args["required"], *c.args["optional"])}  # fmt: skip
        probe_list += list(probes(call, docs[name], elsewhere))
    current = {}
    monkeypatch.setattr(scenario_loader, "load_yaml", lambda *_: copy.deepcopy(current["doc"]))

    def load(doc):
        current["doc"] = doc
        load_scenario(folder / "probe.json", catalog)

    start = time.perf_counter()
    found = findings(SchemaView("scenario"), load, probe_list, GAPS)
    wall_s = time.perf_counter() - start
    assert len(probe_list) > 500, len(probe_list)
    assert found == [], "\n".join(found)
    assert wall_s < 120
