"""Issue #25 point 1: prices the user was quoted (scenario `prices:` or `--prices FILE`).

A quoted rental, lease and tariff are the prices the optimiser and the answer charge (one
price per figure: the offer's, model.setup.gpu_usd_per_gpu_hour); quoted purchase prices
make the bill's purchase total and its rent-or-buy; every quoted row says basis "quoted".
Expectations are the quotes written in this file times the counts of the plan, by hand, and
the catalog's figures read with yaml.safe_load.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import pytest
import yaml

from pdd_plan import api
from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.plan.candidates import default_policy
from pdd_plan.plan.elastic import milp_inputs
from pdd_plan.report.bom import bom_csv

CATALOG = Path(__file__).resolve().parents[2] / "hardware_catalog"
HOURS_PER_MONTH = 730.0
PUE, KWH_USD, YEARS = 1.25, 0.12, 3

SCENARIO = """\
name: quoted
model: qwen3_32b
datacenters:
  - id: dc_a
    roles: [prefill, relay_decode]
    gpus:
      - {gpu: h100_sxm}
  - id: dc_b
    roles: [main_decode]
    gpus:
      - {gpu: h20_96g}
      - {gpu: h200_sxm}
wan:
  rtt_ms: 20
  tiers: [wave_10g]
workload:
  arrival_rate_per_s: 0.5
  input_tokens: {kind: fixed, value: 2000}
  output_tokens: {kind: fixed, value: 100}
  prefix_hit_rate: {kind: fixed, value: 0.5}
sla:
  ttft_p90_s: 10
  tpot_p90_ms: 200
costs:
  include_power: true
  power_usd_per_kwh: 0.12
  pue: 1.25
  amortization_years: 3
"""
PRICES = """\
prices:
  gpus:
    - gpu: h100_sxm
      rental_usd_per_gpu_hour: 2.5
      purchase_usd_per_gpu: 25000
      note: "Acme quote Q-17"
      quoted_by: Acme
      valid_until: "2027-03-31"
      lead_time_weeks: 12
    - gpu: h20_96g
      datacenter: dc_b
      purchase_usd_per_gpu: 11000
      contract_term_months: 36
  lines:
    - {tier: wave_10g, price_usd_per_month: 900, install_usd: 2000}
"""
# 3 x 1 + 2 x 2 H100 = 7 GPUs in dc_a (one 8-GPU node), 5 H20 in dc_b (one node)
PLAN = """\
plan:
  architecture: pdd
  instances:
    - {role: prefill, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 1, count: 3}
    - {role: relay_decode, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 2, count: 2}
    - {role: main_decode, datacenter: dc_b, gpu: h20_96g, gpus_per_instance: 1, count: 5}
  lines:
    - {tier: wave_10g, count: 2}
"""


def gpu_figure(gpu: str, key: str):
    return yaml.safe_load((CATALOG / "gpus" / f"{gpu}.yaml").read_text())[key]["value"]


def power_per_gpu_hour(gpu: str, usd_per_kwh: float = KWH_USD) -> float:
    return gpu_figure(gpu, "tdp_w") / 1e3 * PUE * usd_per_kwh


def written(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    (tmp_path / name).write_text(text)
    (tmp_path / "p.yaml").write_text(PLAN)
    return tmp_path / name


def rows_of(text: str) -> list[dict]:
    return list(csv.DictReader(x for x in io.StringIO(text) if not x.startswith("#")))


def total(rows: list[dict], item: str, column: str) -> float:
    return float(next(r for r in rows if r["kind"] == "total" and r["item"] == item)[column])


def bom_of(path: Path) -> tuple[dict, list[dict]]:
    catalog = Catalog()
    result = api.evaluate_plan(path, path.parent / "p.yaml", catalog)
    s = load_scenario(path, catalog)
    return result, rows_of(bom_csv(result["plan"], s, catalog))


def test_the_purchase_total_is_the_quotes_times_the_gpus_by_hand(tmp_path):
    _, rows = bom_of(written(tmp_path, SCENARIO + PRICES))
    # whole nodes: one 8-GPU H100 node in dc_a, one 8-GPU H20 node in dc_b
    assert total(rows, "total_purchase", "purchase_usd") == pytest.approx(8 * 25000 + 8 * 11000)
    orders = {r["item"]: r for r in rows if r["kind"] == "order"}
    assert float(orders["h100_sxm"]["unit_price_usd"]) == 8 * 25000
    h100 = orders["h100_sxm"]
    assert (h100["basis"], h100["flag"], h100["price_source"]) == ("quoted", "quoted", "quote")
    assert "Acme quote Q-17" in h100["note"] and h100["quoted_by"] == "Acme"
    assert (h100["lead_time_weeks"], h100["valid_until"]) == ("12", "2027-03-31")
    assert orders["h20_96g"]["contract_term_months"] == "36"


def test_rent_or_buy_uses_the_quoted_purchase_price(tmp_path):
    _, rows = bom_of(written(tmp_path, SCENARIO + PRICES))
    (h100,) = [r for r in rows if r["kind"] == "purchase" and r["item"] == "h100_sxm"]
    power = 7 * power_per_gpu_hour("h100_sxm")
    owned = 8 * 25000 / (YEARS * 8760) + power
    assert float(h100["unit_price_usd"]) == 25000
    assert float(h100["cost_usd_per_hour"]) == pytest.approx(owned, rel=1e-6)
    # renting the node: 8 x the quoted $2.50, plus its power (costs.include_power); an owner
    # pays the power too, so the purchase is repaid by 8 x $2.50 a GPU-hour
    assert float(h100["break_even_months"]) == pytest.approx(8 * 25000 / (8 * 2.5 * 730))
    assert h100["cheaper"] == ("buy" if owned < 8 * 2.5 + power else "rent") == "buy"


def test_a_quoted_node_price_is_the_order_lines_price(tmp_path):
    node = "\n".join(["    - {gpu: h100_sxm, datacenter: dc_a, purchase_usd_per_node: 310000}"])
    text = SCENARIO + PRICES.replace("  lines:", node + "\n  lines:")
    _, rows = bom_of(written(tmp_path, text))
    (order,) = [r for r in rows if r["kind"] == "order" and r["item"] == "h100_sxm"]
    assert float(order["unit_price_usd"]) == 310000 and float(order["purchase_usd"]) == 310000
    (buy,) = [r for r in rows if r["kind"] == "purchase" and r["item"] == "h100_sxm"]
    assert float(buy["purchase_usd"]) == pytest.approx(310000)  # rent or buy: the node price


def test_quoted_rental_lease_and_install_are_what_the_answer_and_the_bill_charge(tmp_path):
    result, rows = bom_of(written(tmp_path, SCENARIO + PRICES))
    catalog_h20 = gpu_figure("h20_96g", "rental_usd_per_gpu_hour")
    hand = 7 * (2.5 + power_per_gpu_hour("h100_sxm"))
    hand += 5 * (catalog_h20 + power_per_gpu_hour("h20_96g")) + 2 * 900 / HOURS_PER_MONTH
    assert result["metrics"]["cost_usd_per_hour"] == pytest.approx(hand, abs=1e-6)
    assert total(rows, "total_hourly", "cost_usd_per_hour") == pytest.approx(hand, abs=0.005)
    assert total(rows, "total_one_time", "one_time_usd") == pytest.approx(2 * 2000)
    rental = [r for r in rows if r["kind"] == "gpu_rental" and r["item"] == "h100_sxm"]
    assert {r["basis"] for r in rental} == {"quoted"}
    (lease,) = [r for r in rows if r["kind"] == "line_lease"]
    assert lease["basis"] == "quoted" and lease["source_reference"] == (
        "s.yaml: prices.lines[0].price_usd_per_month"
    )


def test_the_optimisers_candidates_are_priced_at_the_quoted_rental(tmp_path):
    catalog = Catalog()
    s = load_scenario(written(tmp_path, SCENARIO + PRICES), catalog)
    *_, found, _ = milp_inputs(s, catalog.model_for(s), catalog.gpus, "pdd", default_policy(s),
                               0.8, (4, 6, 10))  # fmt: skip
    h100 = [c for c in found if c.gpu == "h100_sxm"]
    assert h100
    for c in h100:  # the quote, not the catalog's $3.99, plus power (include_power)
        assert c.price_usd_per_hour == pytest.approx(
            c.gpus_per_instance * (2.5 + power_per_gpu_hour("h100_sxm")), rel=1e-12
        )


def test_a_datacenters_quoted_tariff_prices_its_power(tmp_path):
    tariff = "  power:\n    - {datacenter: dc_b, usd_per_kwh: 0.05, note: utility contract}\n"
    result, rows = bom_of(written(tmp_path, SCENARIO + PRICES + tariff))
    (power,) = [r for r in rows if r["kind"] == "power" and r["datacenter"] == "dc_b"]
    assert float(power["unit_price_usd"]) == pytest.approx(power_per_gpu_hour("h20_96g", 0.05))
    assert "utility contract" in power["note"]
    hand = 7 * (2.5 + power_per_gpu_hour("h100_sxm"))
    hand += 5 * (gpu_figure("h20_96g", "rental_usd_per_gpu_hour")
                 + power_per_gpu_hour("h20_96g", 0.05)) + 2 * 900 / HOURS_PER_MONTH  # fmt: skip
    assert result["metrics"]["cost_usd_per_hour"] == pytest.approx(hand, abs=1e-6)


def test_a_price_file_takes_the_place_of_the_section(tmp_path):
    from pdd_plan.loaders.prices_apply import run_prices

    body = PRICES.replace("prices:\n", "").replace("\n  ", "\n").replace("  gpus:", "gpus:", 1)
    (tmp_path / "quotes.yaml").write_text(body.replace("2.5", "2.25"))
    path = written(tmp_path, SCENARIO + PRICES)
    with run_prices(str(tmp_path / "quotes.yaml")):
        s = load_scenario(path)
    (offer,) = s.datacenter("dc_a").gpus
    assert offer.price_usd_per_gpu_hour == 2.25
    assert s.quotes.gpu("h100_sxm", "dc_a", "rental_usd_per_gpu_hour").file.endswith("quotes.yaml")


def test_the_same_figure_quoted_twice_at_two_values_is_refused(tmp_path):
    text = SCENARIO.replace("{gpu: h100_sxm}", "{gpu: h100_sxm, price_usd_per_gpu_hour: 3.0}")
    with pytest.raises(InputError) as caught:
        load_scenario(written(tmp_path, text + PRICES))
    (problem,) = caught.value.problems
    assert problem.key_path == "prices.gpus[0].rental_usd_per_gpu_hour"
    assert "datacenters[0].gpus[0].price_usd_per_gpu_hour" in problem.expected
    same = SCENARIO.replace("{gpu: h100_sxm}", "{gpu: h100_sxm, price_usd_per_gpu_hour: 2.5}")
    load_scenario(written(tmp_path, same + PRICES))  # the same value twice is no conflict


def test_a_price_set_in_place_is_quoted_in_the_bill(tmp_path):
    text = SCENARIO.replace("{gpu: h100_sxm}", "{gpu: h100_sxm, price_usd_per_gpu_hour: 3.0}")
    _, rows = bom_of(written(tmp_path, text))
    rental = [r for r in rows if r["kind"] == "gpu_rental" and r["item"] == "h100_sxm"]
    assert {(r["basis"], r["source_reference"]) for r in rental} == {
        ("quoted", "s.yaml: datacenters[0].gpus[0].price_usd_per_gpu_hour")
    }


def test_the_resolved_scenario_keeps_the_quotes_and_the_spares(tmp_path):
    """`--out`'s scenario.json is a scenario that prices the same, quotes and notes kept."""
    import json

    from pdd_plan.report.resolved import scenario_json

    tariff = "  power:\n    - {datacenter: dc_b, usd_per_kwh: 0.05, note: utility contract}\n"
    first = load_scenario(written(tmp_path, SCENARIO + "  spares: {prefill: 2}\n" + PRICES
                                  + tariff))  # fmt: skip
    (tmp_path / "scenario.json").write_text(json.dumps(scenario_json(first)))
    again = load_scenario(tmp_path / "scenario.json")
    # every figure, the offers' quoted rental and the tariff included
    assert dataclasses.replace(again, source_file="") == dataclasses.replace(first, source_file="")
    assert again.costs.spare_nodes_per_role == {"prefill": 2}
    assert again.datacenter("dc_b").power_usd_per_kwh == 0.05
    for gpu, dc, figure in (("h100_sxm", "dc_a", "purchase_usd_per_gpu"),
                            ("h20_96g", "dc_b", "purchase_usd_per_gpu")):  # fmt: skip
        before, after = first.quotes.gpu(gpu, dc, figure), again.quotes.gpu(gpu, dc, figure)
        assert (after.value, after.note, after.lead_time_weeks, after.contract_term_months) == (
            before.value,
            before.note,
            before.lead_time_weeks,
            before.contract_term_months,
        )
    assert again.quotes.tariff("dc_b").note == "utility contract"
