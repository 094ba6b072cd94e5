"""Issue #22 point 8, the order line and the purchase total: never $0 printed as if it
were a price; where GPU types lack a sourced purchase price, the report and the bill of
materials say which (prices from the catalog's YAML, multiplied by hand)."""

from __future__ import annotations

import csv
import io
import re

import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.report.bom import bom_csv
from pdd_plan.report.bom_items import bill
from pdd_plan.report.markdown_bom import bom_section, order_line
from tests.report.issue22_plans import P_H100, figure, group, plan


@pytest.fixture(scope="module")
def default(catalog):
    return load_scenario(resolve_scenario_path("default"), catalog)


# --- the order line and the purchase total --------------------------------------------


def _bom_rows(text: str) -> dict[str, dict]:
    body = "\n".join(x for x in text.splitlines() if not x.startswith("#"))
    return {r["item"]: r for r in csv.DictReader(io.StringIO(body)) if r["kind"] == "total"}


def test_nothing_priced_is_said_so_never_as_a_zero_purchase(default, catalog):
    assert figure("gpus/h100_sxm.yaml", "purchase_usd_per_gpu") is None  # the premise
    assert figure("gpus/h20_96g.yaml", "purchase_usd_per_gpu") is None
    p = plan("cdc_pd", P_H100, group("main_decode", "dc_b", "h20_96g", 8, 2),
             lines=[("wave_10g", 1)])  # fmt: skip
    b = bill(p, default, catalog)
    line = order_line(b)
    assert not re.search(r"\$0\b", line) and "not priced" in line
    assert "h100_sxm" in line.split("buying")[1] and "h20_96g" in line.split("buying")[1]
    section = "\n".join(bom_section({"bom": b, "bom_header": _facts(default, catalog)}, 4))
    (total,) = [x for x in section.splitlines() if x.startswith("| **total purchase**")]
    assert "not priced" in total and "h100_sxm" in total and "h20_96g" in total
    assert not re.search(r"\$0\b", total)
    row = _bom_rows(bom_csv(p, default, catalog))["total_purchase"]
    assert row["purchase_usd"] == "" and "h100_sxm" in row["note"] and "h20_96g" in row["note"]


def test_a_partial_purchase_total_names_what_it_leaves_out(default, catalog):
    price = figure("gpus/h200_sxm.yaml", "purchase_usd_per_gpu")
    p = plan("cdc_pd", P_H100, group("main_decode", "dc_b", "h200_sxm", 8, 2),
             lines=[("wave_10g", 1)])  # fmt: skip
    b = bill(p, default, catalog)
    by_hand = 16 * price  # two 8-GPU nodes of H200
    buying = order_line(b).split("buying")[1]
    assert f"${by_hand:,.0f}" in buying and "h200_sxm only" in buying
    assert "no sourced purchase price for h100_sxm" in buying
    assert float(_bom_rows(bom_csv(p, default, catalog))["total_purchase"]["purchase_usd"]) == (
        pytest.approx(by_hand)
    )


def test_a_plan_without_a_line_states_no_one_time_cost(default, catalog):
    p = plan("idc_pd", P_H100, group("decode", "dc_a", "h100_sxm", 8, 1))
    b = bill(p, default, catalog)
    assert "no one-time cost" in order_line(b) and "one-time $0" not in order_line(b)
    section = "\n".join(bom_section({"bom": b, "bom_header": _facts(default, catalog)}, 4))
    assert "One-time costs: none" in section and "total one-time" not in section


def _facts(s, catalog):
    from pdd_plan.report.bom import header_facts

    return header_facts(s, catalog, "cdc_pd")
