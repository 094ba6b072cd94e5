"""Issue #25 point 2: an orderable bill. One order line per datacenter and node
configuration with its power in kW (nodes x the node's maximum) and kWh a year (kW x PUE x
8,760 h), always; N+k spare nodes per role; a port and an optic row at each end of each
line; totals per datacenter. The node figures are read from hardware_catalog/nodes with
yaml.safe_load, the counts of the plan worked out by hand.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import yaml

from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.report.bom import bom_csv, header_facts
from pdd_plan.report.bom_items import bill
from pdd_plan.report.markdown_bom import bom_section, order_line
from tests.unit.test_quoted_prices import PLAN, SCENARIO

CATALOG = Path(__file__).resolve().parents[2] / "hardware_catalog"
PUE, HOURS_PER_YEAR = 1.25, 8760


def node_file(gpu: str) -> dict:
    """The catalog's node configuration of `gpu`, read as plain YAML."""
    (found,) = [d for p in (CATALOG / "nodes").glob("*.yaml")
                if (d := yaml.safe_load(p.read_text()))["gpu"] == gpu]  # fmt: skip
    return found


def rows_of(text: str) -> list[dict]:
    return list(csv.DictReader(x for x in io.StringIO(text) if not x.startswith("#")))


def solved(tmp_path: Path, extra: str = "", plan: str = PLAN):
    (tmp_path / "s.yaml").write_text(SCENARIO + extra)
    (tmp_path / "p.yaml").write_text(plan)
    catalog = Catalog()
    result = api.evaluate_plan(tmp_path / "s.yaml", tmp_path / "p.yaml", catalog)
    s = load_scenario(tmp_path / "s.yaml", catalog)
    return result, s, catalog, rows_of(bom_csv(result["plan"], s, catalog))


def orders(rows: list[dict]) -> dict[str, dict]:
    return {r["datacenter"]: r for r in rows if r["kind"] == "order"}


def test_one_order_line_per_datacenter_and_node_configuration_with_its_power(tmp_path):
    _, _, _, rows = solved(tmp_path)
    lines = orders(rows)
    assert sorted((r["datacenter"], r["item"]) for r in lines.values()) == [
        ("dc_a", "h100_sxm"),
        ("dc_b", "h20_96g"),
    ]  # prefill and relay decode share dc_a's nodes
    for dc, gpu in (("dc_a", "h100_sxm"), ("dc_b", "h20_96g")):
        node, row = node_file(gpu), lines[dc]
        assert row["node_config"] == node["id"] and row["product"] == node["name"]
        assert int(row["nodes"]) == 1  # 7 and 5 GPUs: one 8-GPU node each
        kw = 1 * node["max_power_kw"]["value"]
        assert float(row["power_kw"]) == pytest.approx(kw)
        assert float(row["kwh_per_year"]) == pytest.approx(kw * PUE * HOURS_PER_YEAR)
        assert node["cpu_model"] in row["configuration"]


def test_power_is_stated_with_power_left_out_of_the_hourly_cost(tmp_path):
    _, _, _, rows = solved(tmp_path, plan=PLAN)
    text = SCENARIO.replace("include_power: true", "include_power: false")
    (tmp_path / "off").mkdir()
    (tmp_path / "off" / "s.yaml").write_text(text)
    (tmp_path / "off" / "p.yaml").write_text(PLAN)
    catalog = Catalog()
    result = api.evaluate_plan(tmp_path / "off" / "s.yaml", tmp_path / "off" / "p.yaml", catalog)
    s = load_scenario(tmp_path / "off" / "s.yaml", catalog)
    off = rows_of(bom_csv(result["plan"], s, catalog))
    assert not [r for r in off if r["kind"] == "power"]  # not charged an hour...
    assert orders(off)["dc_a"]["power_kw"] == orders(rows)["dc_a"]["power_kw"] != ""  # ...stated


def test_a_gpu_without_a_node_configuration_is_powered_by_its_boards(tmp_path):
    assert not [p for p in (CATALOG / "nodes").glob("*.yaml")
                if yaml.safe_load(p.read_text())["gpu"] == "mi300x"]  # the premise  # fmt: skip
    extra = SCENARIO.replace("      - {gpu: h200_sxm}", "      - {gpu: h200_sxm}\n"
                             "      - {gpu: mi300x}")  # fmt: skip
    plan = PLAN.replace("gpu: h20_96g", "gpu: mi300x")
    (tmp_path / "s.yaml").write_text(extra)
    (tmp_path / "p.yaml").write_text(plan)
    catalog = Catalog()
    s = load_scenario(tmp_path / "s.yaml", catalog)
    result = api.evaluate_plan(tmp_path / "s.yaml", tmp_path / "p.yaml", catalog)
    row = orders(rows_of(bom_csv(result["plan"], s, catalog)))["dc_b"]
    mi300x = yaml.safe_load((CATALOG / "gpus" / "mi300x.yaml").read_text())
    gpus = mi300x["gpus_per_node"]["value"]  # one whole node bought for the 5 in use
    assert float(row["power_kw"]) == pytest.approx(gpus * mi300x["tdp_w"]["value"] / 1e3)
    assert row["node_config"] == "" and "GPU boards alone" in row["note"]


def test_spares_add_k_nodes_per_role(tmp_path):
    result, _, _, rows = solved(tmp_path, "  spares: {prefill: 1, main_decode: 2}\n")
    lines = orders(rows)
    assert (int(lines["dc_a"]["nodes"]), int(lines["dc_a"]["spare_nodes"])) == (1 + 1, 1)
    assert (int(lines["dc_b"]["nodes"]), int(lines["dc_b"]["spare_nodes"])) == (1 + 2, 2)
    kw = 3 * node_file("h20_96g")["max_power_kw"]["value"]
    assert float(lines["dc_b"]["power_kw"]) == pytest.approx(kw)  # spares counted as installed
    # ordered, never charged: the hourly total is still the answer's cost
    hourly = next(r for r in rows if r["item"] == "total_hourly")
    assert float(hourly["cost_usd_per_hour"]) == pytest.approx(
        result["metrics"]["cost_usd_per_hour"], abs=0.005
    )


def test_one_number_of_spares_is_k_for_every_role_the_plan_has(tmp_path):
    _, _, _, rows = solved(tmp_path, "  spares: 1\n")
    lines = orders(rows)
    # dc_a holds prefill and relay decode (one spare each), dc_b main decode
    assert [int(lines[dc]["spare_nodes"]) for dc in ("dc_a", "dc_b")] == [2, 1]


def test_each_line_end_has_a_port_row_and_an_optic_row(tmp_path):
    quote = "prices:\n  lines:\n    - {tier: wave_10g, optic_usd_each: 450, lead_time_weeks: 6}\n"
    _, _, _, rows = solved(tmp_path, quote)
    ports = [r for r in rows if r["kind"] == "line_port"]
    optics = [r for r in rows if r["kind"] == "line_optic"]
    assert (
        sorted(r["datacenter"] for r in ports)
        == sorted(r["datacenter"] for r in optics)
        == ["dc_a", "dc_b"]
    )  # two ends of the wave_10g lines
    assert {int(r["units"]) for r in ports + optics} == {2}  # the plan leases 2 lines
    assert all(r["one_time_usd"] == "" for r in ports)  # your router's: not priced
    assert sum(float(r["one_time_usd"]) for r in optics) == pytest.approx(2 * 2 * 450)
    install = yaml.safe_load((CATALOG / "lines.yaml").read_text())["tiers"][1]
    assert install["id"] == "wave_10g"
    once = 2 * install["install_usd"]["value"] + 2 * 2 * 450
    total = next(r for r in rows if r["item"] == "total_one_time")
    assert float(total["one_time_usd"]) == pytest.approx(once)
    assert {r["basis"] for r in optics} == {"quoted"} and optics[0]["lead_time_weeks"] == "6"


def test_an_unquoted_optic_has_no_price_and_says_so(tmp_path):
    _, _, _, rows = solved(tmp_path)
    optics = [r for r in rows if r["kind"] == "line_optic"]
    assert optics and all(r["unit_price_usd"] == "" and "not priced" in r["note"] for r in optics)


def test_totals_per_datacenter_add_up_their_order_lines(tmp_path):
    _, _, _, rows = solved(tmp_path, "  spares: 1\n")
    for dc, line in orders(rows).items():
        (t,) = [r for r in rows if r["item"] == "datacenter_total" and r["datacenter"] == dc]
        assert (t["nodes"], t["power_kw"], t["kwh_per_year"]) == (
            line["nodes"],
            line["power_kw"],
            line["kwh_per_year"],
        )
    power = next(r for r in rows if r["item"] == "total_power")
    assert float(power["power_kw"]) == pytest.approx(
        sum(float(r["power_kw"]) for r in orders(rows).values())
    )


def test_the_report_shows_the_order_lines(tmp_path):
    result, s, catalog, _ = solved(tmp_path, "  spares: 1\n")
    b = bill(result["plan"], s, catalog)
    section = "\n".join(bom_section({"bom": b, "bom_header": header_facts(s, catalog, "pdd")},
                                    s.costs.amortization_years))  # fmt: skip
    # dc_a: 1 node + a spare each for prefill and relay decode; dc_b: 1 + 1 for main decode
    assert node_file("h100_sxm")["name"] in section and "| 3 (2 spare) |" in section
    kw = (
        node_file("h100_sxm")["max_power_kw"]["value"] * 3
        + node_file("h20_96g")["max_power_kw"]["value"] * 2
    )
    assert f"power {kw:g} kW at full draw" in order_line(b)
