"""The scenario schema (`pdd-plan schema scenario`, issue #25 item 4) against the scenario
loader, which stays the authority: every shipped scenario validates; the schema names the
keys the loader reads, no more and no fewer, and the choices it offers; the template
documents the same keys; and documents the loader refuses for a structural reason (an
unknown key, a wrong type, a bound, a missing key, a bad choice) the schema refuses too.

The loader's keys, bounds and choices are recorded as it reads (schema_probe.py), so no
list here restates them: a key added to the loader and not to the schema (or the other
way) fails these tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import schema_docs as sd
import yaml
from schema_probe import SchemaView, free_mappings, generic, scenario_reads

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.report.resolved import scenario_json

DISTRIBUTIONS = ("length_distribution", "hit_rate_distribution", "hit_rate_mix")
KINDS = ("fixed", "bins", "lognormal", "beta", "empirical")


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return SchemaView("scenario")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return sd.scenario_folder(tmp_path_factory.mktemp("schema_scenarios"))


@pytest.fixture(scope="module")
def reads(folder, catalog) -> dict[str, list]:
    """Document name -> the getter calls the loader made reading it."""
    return scenario_reads(folder, catalog, sd.full_scenarios())


@pytest.fixture(scope="module")
def mappings(reads) -> dict[str, set[str]]:
    """Generic key path -> the keys the loader's mappings there take (free names: `*`)."""
    every = [c for calls in reads.values() for c in calls]
    free = free_mappings(every)
    out: dict[str, set[str]] = {}
    for c in every:
        if c.getter == "mapping":
            keys = {"*"} if c.args["patterns"] else {*c.args["required"], *c.args["optional"]}
            out.setdefault(generic(c.path, free), set()).update(keys)
    return out


def test_every_shipped_scenario_and_its_resolved_form_validates(view, catalog):
    shipped = sorted(sd.SCENARIOS.glob("*.yaml")) + sorted(sd.EXAMPLES.glob("*.yaml"))
    assert {p.stem for p in shipped} >= {"default", "pdd-paper", "template", "diurnal",
                                         "diurnal-prometheus"}  # fmt: skip
    assert resolve_scenario_path(None) in shipped  # the embedded default among them
    for path in shipped:
        assert view.accepts(yaml.safe_load(path.read_text())), path.name
        # what `solve --out DIR` writes as scenario.json: a scenario file itself
        assert view.accepts(scenario_json(load_scenario(path, catalog))), path.name


def test_the_full_documents_and_their_resolved_forms_validate(view, folder, catalog):
    for name, doc in sd.full_scenarios().items():
        assert view.accepts(doc), name
        resolved = scenario_json(load_scenario(sd.write(folder, name, doc), catalog))
        assert view.accepts(resolved), name


def test_the_schema_names_the_keys_the_loader_reads_and_no_other(view, mappings):
    for path, keys in mappings.items():
        if keys == {"*"}:
            assert view.free_at(path), f"{path}: the loader takes any name, the schema does not"
            continue
        assert view.keys_at(path) == keys, path
        closed = [s.get("additionalProperties") for s in view.at(path) if "type" in s]
        assert False in closed, f"{path}: the loader refuses unknown keys, the schema must"


def test_the_loader_reads_every_object_the_schema_describes(view, mappings):
    """So a new section needs a document that uses it (schema_docs.py), and the probes
    (test_schema_scenario_probes.py) then check its keys, bounds and types."""
    assert view.object_paths() - set(mappings) == set()
    assert {p for p, keys in mappings.items() if keys != {"*"}} - view.object_paths() == set()


def test_the_schema_offers_the_choices_the_loader_offers(view, reads):
    every = [c for calls in reads.values() for c in calls]
    free = free_mappings(every)
    offered: dict[str, set] = {}
    for c in every:
        if c.getter == "choice":
            offered.setdefault(generic(c.path, free), set()).update(c.args["choices"])
    assert offered  # roles, dtypes, kinds, objectives, handoff modes, pool holds, ...
    for path, choices in offered.items():
        assert view.enum_at(path) == choices, path


# ---- the template ----------------------------------------------------------------------------
def template_document() -> dict:
    """scenarios/template.yaml with its commented-out keys (`# key: value`, and list items
    written `# - key: value`) read as keys."""
    lines = []
    for line in (sd.SCENARIOS / "template.yaml").read_text().splitlines():
        m = re.match(r"^(\s*)#( +)((?:- )?[a-z_][a-z0-9_]*:.*)$", line)
        lines.append(m.group(1) + m.group(2)[1:] + m.group(3) if m else line)
    return yaml.safe_load("\n".join(lines))


def _paths(node, view: SchemaView, path: str = "") -> set[str]:
    """Generic key paths of a document; a distribution (`kind: fixed`, ...) is one key."""
    out = set()
    if isinstance(node, dict):
        free = path and view.free_at(path)
        for key, value in node.items():
            inner = f"{path}.*" if free else (f"{path}.{key}" if path else key)
            out.add(inner)
            if not (isinstance(value, dict) and value.get("kind") in KINDS):
                out |= _paths(value, view, inner)
    elif isinstance(node, list):
        for item in node:
            out |= _paths(item, view, f"{path}[]")
    return out


# a load curve written as the list itself takes the periods `load_curve: {periods: [...]}`
# takes: the template documents them there once
CURVE_PERIODS, CURVE_LIST = "workload.load_curve.periods[]", "workload.load_curve[]"


def test_the_template_documents_every_key_of_the_schema_and_no_other(view):
    documented = _paths(template_document(), view)
    documented |= {p.replace(CURVE_PERIODS, CURVE_LIST) for p in documented
                   if p.startswith(CURVE_PERIODS)}  # fmt: skip
    assert documented == view.key_paths(stop=DISTRIBUTIONS)
    # the distributions' keys, documented once for every place one is written
    words = set(re.findall(r"[a-z_]+", (sd.SCENARIOS / "template.yaml").read_text()))
    for name in DISTRIBUTIONS:
        keys = {k.split(".")[-1] for k in view.key_paths(view.schema["$defs"][name])}
        assert keys - {"[]"} <= words, name


# ---- a corpus of structural refusals, written by hand --------------------------------------
REFUSED = {
    "an unknown top-level key": lambda d: d | {"polcy": {}},
    "an unknown key in a datacenter": lambda d: d["datacenters"][0].update(gpu_type="x"),
    "a rate as text": lambda d: d["workload"].update(arrival_rate_per_s="fast"),
    "a negative RTT": lambda d: d["wan"].update(rtt_ms=-1),
    "no sla": lambda d: d.pop("sla"),
    "no prefix_hit_rate": lambda d: d["workload"].pop("prefix_hit_rate"),
    "an objective not offered": lambda d: d["objective"].update(kind="max_profit"),
    "a role twice": lambda d: d["datacenters"][0].update(roles=["prefill", "prefill"]),
    "a TPOT limit in seconds": lambda d: d["sla"].update(tpot_p90_s=0.05),
    "a percentile of 100": lambda d: d["sla"].update(ttft_p100_s=20),
    "a fixed distribution with a sigma": lambda d: d["workload"].update(
        input_tokens={"kind": "fixed", "value": 1000, "sigma": 1}),
    "a length of 0.5 tokens": lambda d: d["workload"].update(
        input_tokens={"kind": "fixed", "value": 1000.5}),
    "model and model_file": lambda d: d.update(model_file="m.yaml"),
    "neither model nor model_file": lambda d: d.pop("model"),
    "kv_uncompressed_tokens 0": lambda d: d.update(
        engine={"kv_uncompressed_tokens": 0, "kv_layout_source": "x"}),
    "kv_uncompressed_tokens without its source": lambda d: d.update(
        engine={"kv_uncompressed_tokens": "all"}),
    "a retired engine key": lambda d: d.update(engine={"decode_kv_bytes_per_token": 100}),
    "the retired cut-off keys": lambda d: d["policy"]["short_output_cutoff"].update(
        max_output_tokens=10),
    "a bought and a fixed decode cache": lambda d: d["policy"].update(
        decode_cache={"tiers": ["ssd"]}, decode_cache_capacity_tokens=1e6),
    "max_goodput without a budget": lambda d: d["objective"].update(kind="max_goodput"),
    "two datacenters and no wan": lambda d: d.pop("wan"),
    "a wan link from a datacenter to itself": lambda d: d["wan"].update(
        links=[{"between": ["dc_a", "dc_a"], "rtt_ms": 5}]),
    "bins carrying input_tokens beside the workload's": lambda d: d["workload"].update(
        prefix_hit_rate={"kind": "bins", "bins": [
            {"low": 0, "high": 1, "share": 1, "input_tokens": {"kind": "fixed", "value": 9}}]}),
    "no arrival rate and no load curve": lambda d: (
        d["workload"].pop("arrival_rate_per_s"), d["workload"].update(load_curve=None)),
    "a curve period with start_h and start": lambda d: d["workload"].update(load_curve=[
        {"start_h": 0, "start": "2025-06-02T00:00:00Z", "duration_h": 1, "arrival_rate_per_s": 3}]),
    "a curve period with no start": lambda d: d["workload"].update(load_curve=[
        {"duration_h": 1, "arrival_rate_per_s": 3}]),
    "a curve period with two lengths": lambda d: d["workload"].update(load_curve=[
        {"start_h": 0, "duration_h": 1, "duration_min": 60, "arrival_rate_per_s": 3}]),
    "a curve period with no length": lambda d: d["workload"].update(load_curve=[
        {"start_h": 0, "arrival_rate_per_s": 3}]),
    "2,017 curve periods": lambda d: d["workload"].update(load_curve=[
        {"start_h": h, "duration_h": 1, "arrival_rate_per_s": 3} for h in range(2017)]),
    "a curve from a file and an export": lambda d: d["workload"].update(
        load_curve={"file": sd.CURVE_FILE, "prometheus": sd.EXPORT_FILE}),
    "a curve mapping with no source": lambda d: d["workload"].update(load_curve={"scale": 2}),
    "a series selector beside a curve file": lambda d: d["workload"].update(
        load_curve={"file": sd.CURVE_FILE, "series": {"job": "api"}}),
    "a metric beside inline periods": lambda d: d["workload"].update(load_curve={
        "periods": [{"start_h": 0, "duration_h": 1, "arrival_rate_per_s": 3}], "metric": "x"}),
    "an offer without spot and with spot terms": lambda d: d["costs"].update(capacity_classes={
        "offers": [{"datacenter": "dc_a", "gpu": "h100_sxm", "spot": False,
                    "spot_price_frac": 0.3}]}),
    "a GPU quote quoting no figure": lambda d: d.update(prices={"gpus": [
        {"gpu": "h100_sxm", "note": "a quote"}]}),
    "a tariff quoting nothing": lambda d: d.update(prices={"power": [{"datacenter": "dc_a"}]}),
}  # fmt: skip


def _changed(change) -> dict:
    doc = sd.template()
    out = change(doc)
    return out if isinstance(out, dict) and "name" in out else doc


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_document_the_loader_refuses_for_its_structure_the_schema_refuses(
    case, view, folder, catalog
):
    doc = _changed(REFUSED[case])
    with pytest.raises(InputError):
        load_scenario(sd.write(folder, "refused", doc), catalog)
    assert not view.accepts(doc)
