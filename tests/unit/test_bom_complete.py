"""The bill of materials is complete (issue #14, items 4-7): its hourly total is the answer's
cost with power on, line installation is a one-time cost, rent or buy with a sourced
purchase price, nodes to order with the idle GPUs stated, provenance on every row, the
run's facts at the top, and what is not included.

Every expectation is recomputed here from the catalog YAML files read with yaml.safe_load
(not through the tool's loaders) and hand arithmetic.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

import pdd_plan
from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.report.bom import bom_csv, header_facts
from pdd_plan.report.bom_items import bill
from pdd_plan.report.markdown_bom import bom_section, cost_table, order_line
from pdd_plan.report.md_format import usd

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "hardware_catalog"
HOURS_PER_MONTH = 730.0  # the cloud price lists' convention (8,760 h / 12)
KWH_USD, PUE = 0.12, 1.25

SCENARIO = """\
name: {name}
model: qwen3_32b
datacenters:
  - id: dc_a
    name: "Frankfurt FR2"
    roles: [prefill, relay_decode]
    gpus:
      - {{gpu: h100_sxm}}
      - {{gpu: h200_sxm, price_usd_per_gpu_hour: 3.5}}
  - id: dc_b
    name: "Ulanqab"
    roles: [main_decode]
    gpus:
      - {{gpu: h20_96g}}
      - {{gpu: h200_sxm}}
wan:
  rtt_ms: 20
  tiers: [wave_10g]
workload:
  arrival_rate_per_s: 0.5
  input_tokens: {{kind: fixed, value: 2000}}
  output_tokens: {{kind: fixed, value: 100}}
  prefix_hit_rate: {{kind: fixed, value: 0.5}}
sla:
  ttft_p90_s: 10
  tpot_p90_ms: 200
costs:
  include_power: true
  power_usd_per_kwh: {kwh}
  pue: {pue}
  amortization_years: 3
  charge_whole_nodes: {whole}
"""
# 3 x 1 + 2 x 2 H100 = 7 GPUs in dc_a: one 8-GPU node, one GPU idle
PLAN = """\
plan:
  architecture: pdd
  instances:
    - {{role: prefill, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 1, count: 3}}
    - {{role: relay_decode, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 2, count: 2}}
    - {{role: main_decode, datacenter: dc_b, gpu: {md_gpu}, gpus_per_instance: 1, count: 5}}
  lines:
    - {{tier: wave_10g, count: 2}}
"""


def catalog_yaml(*parts: str) -> dict:
    return yaml.safe_load((CATALOG.joinpath(*parts)).read_text())


def gpu_figure(gpu: str, key: str):
    return catalog_yaml("gpus", f"{gpu}.yaml")[key]["value"]


def wave_10g() -> dict:
    return next(t for t in catalog_yaml("lines.yaml")["tiers"] if t["id"] == "wave_10g")


def per_gpu_hour(gpu: str) -> float:
    """Rental plus power: TDP x PUE x $/kWh, by hand."""
    power = gpu_figure(gpu, "tdp_w") / 1e3 * PUE * KWH_USD
    return gpu_figure(gpu, "rental_usd_per_gpu_hour") + power


def solved(tmp_path: Path, md_gpu: str = "h20_96g", whole: bool = False, name="bom_check"):
    """The scenario and plan written in tmp_path, the plan evaluated, and its BOM."""
    path = tmp_path / "s.yaml"
    text = SCENARIO.format(name=json.dumps(name), kwh=KWH_USD, pue=PUE, whole=str(whole).lower())
    path.write_text(text)
    (tmp_path / "p.yaml").write_text(PLAN.format(md_gpu=md_gpu))
    catalog = Catalog()
    assert catalog.root.resolve() == CATALOG.resolve()  # the files this test reads
    result = api.evaluate_plan(path, tmp_path / "p.yaml", catalog)
    scenario = load_scenario(path, catalog)
    return result, scenario, catalog, bom_csv(result["plan"], scenario, catalog)


def parsed(text: str) -> tuple[dict[str, str], list[dict]]:
    """The comment rows as {key: value} and the item rows as dicts."""
    lines = list(csv.reader(io.StringIO(text)))
    facts = {r[0][2:]: r[1] for r in lines if r[0].startswith("# ")}
    header = next(i for i, r in enumerate(lines) if not r[0].startswith("#"))
    rows = [dict(zip(lines[header], r, strict=True)) for r in lines[header + 1 :]]
    return facts, rows


def total(rows: list[dict], item: str, column: str) -> float:
    return float(next(r for r in rows if r["kind"] == "total" and r["item"] == item)[column])


def test_hourly_total_is_the_answers_cost_with_power_and_lines(tmp_path):
    result, _, _, text = solved(tmp_path)
    _, rows = parsed(text)
    lines = 2 * wave_10g()["price_usd_per_month"]["value"] / HOURS_PER_MONTH
    hand = 7 * per_gpu_hour("h100_sxm") + 5 * per_gpu_hour("h20_96g") + lines
    assert hand == pytest.approx(28.665 + 7.8 + 1448 / 730)  # the figures written out
    answer = result["metrics"]["cost_usd_per_hour"]
    assert answer == pytest.approx(hand, abs=0.005)
    assert total(rows, "total_hourly", "cost_usd_per_hour") == pytest.approx(answer, abs=0.005)
    assert total(rows, "total_hourly", "cost_usd_per_month") == pytest.approx(
        hand * HOURS_PER_MONTH, abs=0.01
    )
    counted = [r for r in rows if r["counts_in"] == "total_hourly"]
    assert sum(float(r["cost_usd_per_hour"]) for r in counted) == pytest.approx(hand, abs=0.005)
    power = [r for r in counted if r["kind"] == "power"]
    assert [(r["role"], int(r["units"])) for r in power] == [
        ("prefill", 3), ("relay_decode", 4), ("main_decode", 5)]  # fmt: skip
    assert float(power[0]["unit_price_usd"]) == pytest.approx(0.7 * PUE * KWH_USD)


def test_line_installation_is_a_one_time_cost(tmp_path):
    _, _, _, text = solved(tmp_path)
    _, rows = parsed(text)
    install = wave_10g()["install_usd"]["value"]
    (row,) = [r for r in rows if r["kind"] == "line_install"]
    assert int(row["units"]) == 2 and float(row["one_time_usd"]) == pytest.approx(2 * install)
    assert total(rows, "total_one_time", "one_time_usd") == pytest.approx(2 * install, abs=0.005)
    assert row["flag"] == "assumed"  # the catalog's basis for the 10G install price


def test_rent_or_buy_uses_the_sourced_purchase_price_only(tmp_path):
    result, _, _, text = solved(tmp_path, md_gpu="h200_sxm")
    _, rows = parsed(text)
    price = gpu_figure("h200_sxm", "purchase_usd_per_gpu")
    assert price == 32000  # the Hugging Face MSRP
    (h200,) = [r for r in rows if r["kind"] == "purchase" and r["item"] == "h200_sxm"]
    assert int(h200["units"]) == 8 and float(h200["purchase_usd"]) == pytest.approx(8 * price)
    power = 5 * gpu_figure("h200_sxm", "tdp_w") / 1e3 * PUE * KWH_USD
    amortised = 8 * price / (3 * 8760) + power  # amortization_years: 3
    assert float(h200["cost_usd_per_hour"]) == pytest.approx(amortised, abs=1e-5)
    assert total(rows, "total_purchase", "purchase_usd") == pytest.approx(8 * price, abs=0.005)
    (h100,) = [r for r in rows if r["kind"] == "purchase" and r["item"] == "h100_sxm"]
    assert gpu_figure("h100_sxm", "purchase_usd_per_gpu") is None
    assert h100["flag"] == "no sourced purchase price" and h100["purchase_usd"] == ""
    assert not [r for r in rows if r["item"] == "total_hourly_if_bought"]  # H100 unpriced
    hand = 7 * per_gpu_hour("h100_sxm") + 5 * per_gpu_hour("h200_sxm") + 1448 / 730
    assert result["metrics"]["cost_usd_per_hour"] == pytest.approx(hand, abs=0.005)
    assert total(rows, "total_hourly", "cost_usd_per_hour") == pytest.approx(hand, abs=0.005)


def test_nodes_to_order_state_the_idle_gpus(tmp_path):
    _, _, _, text = solved(tmp_path)
    _, rows = parsed(text)
    nodes = {r["item"]: r for r in rows if r["kind"] == "nodes"}
    h100, h20 = nodes["h100_sxm"], nodes["h20_96g"]
    assert (int(h100["gpus"]), int(h100["nodes"]), int(h100["spare_gpus"])) == (7, 1, 1)
    assert (int(h20["gpus"]), int(h20["nodes"]), int(h20["spare_gpus"])) == (5, 1, 3)
    node_price = gpu_figure("h100_sxm", "gpus_per_node") * 3.99
    assert float(h100["unit_price_usd"]) == pytest.approx(node_price)
    assert h100["counts_in"] == ""  # a view of what to order, not a second charge


def test_charging_whole_nodes_moves_the_answer_and_the_bom_alike(tmp_path):
    result, _, _, text = solved(tmp_path, whole=True)
    _, rows = parsed(text)
    idle = 1 * 3.99 + 3 * gpu_figure("h20_96g", "rental_usd_per_gpu_hour")
    hand = 7 * per_gpu_hour("h100_sxm") + 5 * per_gpu_hour("h20_96g") + 1448 / 730 + idle
    assert result["metrics"]["cost_usd_per_hour"] == pytest.approx(hand, abs=0.005)
    assert total(rows, "total_hourly", "cost_usd_per_hour") == pytest.approx(hand, abs=0.005)
    spares = {r["item"]: int(r["units"]) for r in rows if r["kind"] == "spare_gpus"}
    assert spares == {"h100_sxm": 1, "h20_96g": 3}


def test_every_priced_row_names_its_source_and_the_assumed_h20_price_is_flagged(tmp_path):
    _, _, _, text = solved(tmp_path)
    _, rows = parsed(text)
    sources = catalog_yaml("sources.yaml")
    rental = {r["item"]: r for r in rows if r["kind"] == "gpu_rental"}
    h20, h100 = rental["h20_96g"], rental["h100_sxm"]
    assert h20["basis"] == "assumed" and h20["flag"] == "assumed"
    assert h20["product"] == catalog_yaml("gpus", "h20_96g.yaml")["name"]
    assert h100["flag"] == "" and h100["basis"] == "published"
    key = catalog_yaml("gpus", "h100_sxm.yaml")["rental_usd_per_gpu_hour"]["source"]
    assert h100["price_source"] == key
    assert h100["source_title"] == sources[key]["title"]
    assert h100["source_reference"] == sources[key]["reference"]
    assert h100["source_accessed"] == str(sources[key]["accessed"])
    for r in rows:
        if r["kind"] in ("gpu_rental", "power", "line_lease", "line_install", "purchase"):
            assert r["price_source"] and r["basis"] and r["product"], r


def test_the_line_row_names_its_endpoints_and_tier(tmp_path):
    _, _, _, text = solved(tmp_path)
    _, rows = parsed(text)
    (line,) = [r for r in rows if r["kind"] == "line_lease"]
    assert line["datacenter"] == "dc_a-dc_b"
    assert line["location"] == "Frankfurt FR2 - Ulanqab"
    assert line["product"] == wave_10g()["name"] and line["unit"] == "line of 10 Gbit/s"
    excluded = {r["item"] for r in rows if r["kind"] == "not_included"}
    assert {"cpus_and_host_memory", "storage", "spares", "fabric"} <= excluded


def test_header_rows_name_scenario_version_date_and_catalog_digest(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01T00:00:00Z
    _, _, _, text = solved(tmp_path)
    facts, _ = parsed(text)
    assert text.startswith("# pdd-plan bill of materials,")
    assert facts["scenario"] == "bom_check"
    assert facts["tool_version"] == f"pdd-plan {pdd_plan.__version__}"
    assert facts["generated_utc"] == "2026-01-01T00:00:00Z"
    digest = hashlib.sha256()
    names = ["sources.yaml", "lines.yaml"]
    names += sorted(f"gpus/{p.name}" for p in (CATALOG / "gpus").glob("*.yaml"))
    names += ["line_ends.yaml"]  # the order hardware (issue #25): the order lines' figures
    names += sorted(f"nodes/{p.name}" for p in (CATALOG / "nodes").glob("*.yaml"))
    names += ["models/qwen3_32b.yaml"]
    for name in names:
        digest.update(name.encode() + b"\0" + (CATALOG / name).read_bytes() + b"\0")
    assert facts["catalog_sha256"] == digest.hexdigest()


def test_the_date_is_now_in_utc_without_an_epoch(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    before = datetime.now(UTC).replace(microsecond=0)
    _, _, _, text = solved(tmp_path)
    stamp = datetime.strptime(parsed(text)[0]["generated_utc"], "%Y-%m-%dT%H:%M:%SZ")
    assert before <= stamp.replace(tzinfo=UTC) <= datetime.now(UTC)


def test_the_csv_stays_machine_readable_and_formula_safe(tmp_path):
    _, _, _, text = solved(tmp_path, name='=HYPERLINK("x")\nsecond line')
    lines = list(csv.reader(io.StringIO(text)))
    assert len({len(r) for r in lines}) == 1  # comment rows as wide as the header
    assert all("\n" not in c for r in lines for c in r)
    assert all(not c.startswith(("=", "+", "-", "@")) for r in lines for c in r)
    facts, rows = parsed(text)
    assert facts["scenario"].startswith("'=HYPERLINK")
    numeric = ("units", "unit_price_usd", "cost_usd_per_hour", "one_time_usd", "purchase_usd")
    for r in rows:
        for column in numeric:
            if r[column]:
                float(r[column])  # a plain number: no $, no thousands separator


def test_the_report_shows_the_same_facts_and_totals(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    result, scenario, catalog, text = solved(tmp_path, md_gpu="h200_sxm")
    facts, rows = parsed(text)
    b = bill(result["plan"], scenario, catalog)
    data = {"bom": b, "bom_header": header_facts(scenario, catalog, "pdd")}
    section = "\n".join(bom_section(data, scenario.costs.amortization_years))
    assert facts["catalog_sha256"] in section and "2026-01-01T00:00:00Z" in section
    assert usd(total(rows, "total_purchase", "purchase_usd"), False) in section
    assert usd(total(rows, "total_one_time", "one_time_usd"), False) in section
    assert "no sourced purchase price" in section and "Not included: CPUs" in section
    assert order_line(b).startswith("- **Order**: 1 node of 8 x h100_sxm in dc_a (1 idle GPU)")
    plan_table = cost_table(b)
    assert plan_table[-1].split(" | ")[7] == usd(result["metrics"]["cost_usd_per_hour"])


@pytest.mark.parametrize(
    ("line", "found"),
    [("  amortization_years: 0", "0"), ("  amortization_years: four", "four"),
     ("  charge_whole_nodes: maybe", "maybe")],
)  # fmt: skip
def test_bad_cost_keys_are_refused_with_their_key_path(tmp_path, line, found):
    from pdd_plan.errors import InputError

    text = SCENARIO.format(name='"bad"', kwh=KWH_USD, pue=PUE, whole="false")
    key = line.split(":")[0].strip()
    text = "\n".join(x for x in text.splitlines() if not x.strip().startswith(key)) + "\n"
    (tmp_path / "s.yaml").write_text(text + line + "\n")
    with pytest.raises(InputError) as caught:
        load_scenario(tmp_path / "s.yaml")
    (problem,) = caught.value.problems
    assert problem.key_path == f"costs.{key}" and found in problem.found


def test_a_line_or_group_of_count_zero_is_not_a_row(tmp_path):
    _, scenario, catalog, _ = solved(tmp_path)
    plan = {"architecture": "pdd",
            "instances": [{"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm",
                           "gpus_per_instance": 1, "count": 3},
                          {"role": "relay_decode", "datacenter": "dc_a", "gpu": "h100_sxm",
                           "gpus_per_instance": 2, "count": 0},
                          {"role": "main_decode", "datacenter": "dc_b", "gpu": "h20_96g",
                           "gpus_per_instance": 1, "count": 5}],
            "lines": [{"tier": "wave_10g", "count": 0}]}  # fmt: skip
    _, rows = parsed(bom_csv(plan, scenario, catalog))
    assert not [r for r in rows if r["item"] == "wave_10g" or r["role"] == "relay_decode"]
    hand = 3 * per_gpu_hour("h100_sxm") + 5 * per_gpu_hour("h20_96g")
    assert total(rows, "total_hourly", "cost_usd_per_hour") == pytest.approx(hand, abs=0.005)
    assert total(rows, "total_one_time", "one_time_usd") == 0


def test_with_every_gpu_priced_the_bom_gives_the_hourly_cost_if_bought(tmp_path):
    _, scenario, catalog, _ = solved(tmp_path)
    plan = {"architecture": "pdd",
            "instances": [{"role": "prefill", "datacenter": "dc_a", "gpu": "h200_sxm",
                           "gpus_per_instance": 2, "count": 5},
                          {"role": "main_decode", "datacenter": "dc_b", "gpu": "h200_sxm",
                           "gpus_per_instance": 1, "count": 3}],
            "lines": [{"tier": "wave_10g", "count": 1}]}  # fmt: skip
    _, rows = parsed(bom_csv(plan, scenario, catalog))
    price, tdp_kw = 32000, gpu_figure("h200_sxm", "tdp_w") / 1e3
    # dc_a: 10 GPUs -> 2 nodes = 16 bought; dc_b: 3 GPUs -> 1 node = 8 bought
    assert total(rows, "total_purchase", "purchase_usd") == pytest.approx(24 * price)
    owned = 24 * price / (3 * 8760) + 13 * tdp_kw * PUE * KWH_USD
    line = wave_10g()["price_usd_per_month"]["value"] / HOURS_PER_MONTH
    bought = total(rows, "total_hourly_if_bought", "cost_usd_per_hour")
    assert bought == pytest.approx(owned + line, abs=0.005)
    rented = 10 * (3.5 + tdp_kw * PUE * KWH_USD) + 3 * per_gpu_hour("h200_sxm") + line
    assert total(rows, "total_hourly", "cost_usd_per_hour") == pytest.approx(rented, abs=0.005)
    (dc_a,) = [r for r in rows if r["kind"] == "gpu_rental" and r["datacenter"] == "dc_a"]
    # a price the scenario sets in place is a quote (issue #25): basis and flag say so, and
    # the reference names the file and key path it is written at
    assert (dc_a["price_source"], dc_a["basis"], dc_a["flag"]) == ("quote", "quoted", "quoted")
    assert dc_a["source_reference"] == "s.yaml: datacenters[0].gpus[1].price_usd_per_gpu_hour"
