"""The plan-file schema (`pdd-plan schema plan`, issue #25 item 4) against the plan loader:
every shipped plan and every solve result validates, the schema names the keys and choices
the loader reads, and what the loader refuses for its structure the schema refuses.
The plans the solver writes for PDD, CDC-PD and IDC-PD: test_schema_plan_solved.py."""

from __future__ import annotations

import copy
import json

import pytest
import schema_docs as sd
import yaml
from schema_probe import SchemaView, findings, generic, probes, recorded, unique_calls

from pdd_plan.errors import InputError
from pdd_plan.loaders import plan_file
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path

GOLDEN = sd.REPO / "tests" / "golden"


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return SchemaView("plan")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory, catalog) -> dict:
    folder = tmp_path_factory.mktemp("schema_plans")
    cache = sd.write(folder, "cache", sd.cache_scenario())
    return {name: load_scenario(resolve_scenario_path(str(cache) if name == "cache" else name),
                                catalog) for name in ("pdd-paper", "default", "cache")}  # fmt: skip


@pytest.fixture(scope="module")
def reads(tmp_path_factory, scenarios, catalog) -> dict[str, list]:
    folder = tmp_path_factory.mktemp("schema_plan_reads")
    out = {}
    for name, (scenario, doc) in sd.full_plans().items():
        path = sd.write(folder, name, doc)
        with recorded(path) as calls:
            load_plan(path, scenarios[scenario], catalog)
        out[name] = calls
    return out


def test_every_shipped_plan_and_golden_result_validates(view):
    shipped = sorted((sd.SCENARIOS / "plans").glob("*.yaml"))
    assert len(shipped) == 3
    for path in [*shipped, *sorted(GOLDEN.glob("*.json"))]:
        assert view.accepts(yaml.safe_load(path.read_text())), path.name
    for name, (_, doc) in sd.full_plans().items():
        assert view.accepts(doc), name


def _unwrapped(path: str) -> str:
    """A plan key's path as a bare plan writes it (`plan.instances[]` -> `instances[]`)."""
    return "" if path == "plan" else path.removeprefix("plan.")


def test_the_schema_names_the_keys_the_loader_reads_and_no_other(view, reads):
    taken: dict[str, set[str]] = {}
    for calls in reads.values():
        for c in calls:
            if c.getter == "mapping":
                keys = {*c.args["required"], *c.args["optional"]}
                taken.setdefault(generic(c.path), set()).update(keys)
    for path, keys in taken.items():
        assert view.keys_at(path) == keys, path
    assert view.object_paths() == set(taken)


def test_the_schema_offers_the_choices_the_loader_offers(view, reads):
    offered: dict[str, set] = {}
    for calls in reads.values():
        for c in calls:
            if c.getter == "choice":
                offered.setdefault(_unwrapped(generic(c.path)), set()).update(c.args["choices"])
    assert {"architecture", "instances[].role", "policy.handoff"} <= set(offered)
    for path, choices in offered.items():
        assert view.enum_at(path) == view.enum_at(f"plan.{path}") == choices, path


def test_a_result_with_every_key_solve_or_evaluate_writes_validates(view):
    result = json.loads((GOLDEN / "default.json").read_text())
    result["confidence"] = {"percentile": 0.9, "text": "a margin"}
    result["saturation"] = {"first": "main_decode is saturated: ..."}
    result["decode_split"] = []
    assert view.accepts(result)
    assert not view.accepts(result | {"reason": "no plan"})  # an answer without a plan


REFUSED = {
    "an unknown plan key": lambda d: d["plan"].update(polcy={}),
    "an unknown top-level key": lambda d: d.update(notes="x"),
    "no instances": lambda d: d["plan"].pop("instances"),
    "no architecture": lambda d: d["plan"].pop("architecture"),
    "an architecture not offered": lambda d: d["plan"].update(architecture="pd"),
    "a role the architecture has not": lambda d: d["plan"]["instances"][0].update(role="decode"),
    "a count as text": lambda d: d["plan"]["instances"][0].update(count="ten"),
    "no count": lambda d: d["plan"]["instances"][0].pop("count"),
    "a role with no instance": lambda d: d["plan"]["instances"][1].update(count=0),
    "no line for pdd": lambda d: d["plan"].pop("lines"),
    "a handoff not offered": lambda d: d["plan"]["policy"].update(handoff="auto"),
    "a threshold above 1": lambda d: d["plan"]["policy"].update(rld_hit_threshold=1.5),
    "a cache without its size": lambda d: d["plan"].update(decode_cache={"tier": "ssd"}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_plan_the_loader_refuses_for_its_structure_the_schema_refuses(
    case, view, scenarios, catalog, tmp_path
):
    doc = copy.deepcopy(sd.shipped_plan("pdd"))
    REFUSED[case](doc)
    with pytest.raises(InputError):
        load_plan(sd.write(tmp_path, "refused", doc), scenarios["pdd-paper"], catalog)
    assert not view.accepts(doc)


def test_what_the_plan_loader_takes_the_schema_takes_and_what_breaks_a_rule_both_refuse(
    reads, scenarios, catalog, monkeypatch
):
    """As test_schema_scenario_probes.py, for plan files (about 400 probes, 0.2 s)."""
    plans = sd.full_plans()
    docs = {name: doc for name, (_, doc) in plans.items()}
    current, view, found, count = {}, SchemaView("plan"), [], 0
    monkeypatch.setattr(plan_file, "load_yaml", lambda *_: copy.deepcopy(current["doc"]))
    for name, call in unique_calls(reads, docs):
        scenario = scenarios[plans[name][0]]

        def load(doc, scenario=scenario):
            current["doc"] = doc
            load_plan("probe.json", scenario, catalog)

        elsewhere = {k for c in reads[name] if c.getter == "mapping" and c.path == call.path
                     for k in (*c.args["required"], *c.args["optional"])}  # fmt: skip
        probe_list = list(probes(call, docs[name], elsewhere))
        count += len(probe_list)
        found += findings(view, load, probe_list)
    assert count > 150, count
    assert found == [], "\n".join(found)
