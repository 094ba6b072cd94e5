"""Scenario edits by dotted key: lists and mappings, created keys, the hit-rate mean, and
unknown keys refused with a did-you-mean before anything runs."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.plan import scenario_edit as se

TINY = Path(__file__).with_name("tiny.yaml")


@pytest.fixture(scope="module")
def data() -> dict:
    return load_yaml(TINY)


def test_keys_split_into_mapping_keys_and_list_indices():
    assert se.parse_key("datacenters.0.gpus.1.price_usd_per_gpu_hour") == [
        "datacenters", 0, "gpus", 1, "price_usd_per_gpu_hour"
    ]  # fmt: skip
    assert se.loader_path(["datacenters", 0, "gpus", 1, "x"]) == "datacenters[0].gpus[1].x"
    for bad in ("", "a..b", ".a", "a."):
        with pytest.raises(InputError):
            se.parse_key(bad)


def test_set_path_edits_lists_and_mappings_in_place(data):
    d = copy.deepcopy(data)
    assert se.set_path(d, "datacenters.1.gpus.0.max_gpus", 7) is False  # in the file
    assert d["datacenters"][1]["gpus"][0]["max_gpus"] == 7
    assert se.set_path(d, "wan.tier_prices_usd_per_month.wave_10g", 123.0) is True  # created
    assert d["wan"]["tier_prices_usd_per_month"] == {"wave_10g": 123.0}
    assert data["datacenters"][1]["gpus"][0]["max_gpus"] == 64  # the original is untouched


@pytest.mark.parametrize(
    "key, words",
    [
        ("datacenters.2.roles", ["datacenters[2]", "index below 2"]),
        ("datacenters.x.roles", ["found 'x' at datacenters.x", "index below 2"]),
        ("workload.arrival_rate_per_s.x", ["workload.arrival_rate_per_s", "a mapping or list"]),
    ],
)
def test_set_path_refuses_paths_that_cannot_exist(data, key, words):
    with pytest.raises(InputError) as err:
        se.set_path(copy.deepcopy(data), key, 1)
    text = str(err.value)
    assert text.startswith("command line: --vary ") and "\n" not in text
    for w in words:
        assert w in text


def test_edited_scenario_carries_the_values(catalog, data):
    s, created = se.edited(
        data,
        {
            "workload.arrival_rate_per_s": 3.5,
            "datacenters.1.gpus.0.price_usd_per_gpu_hour": 0.77,
            "wan.tier_prices_usd_per_month.wave_10g": 900,
        },
        "tiny.yaml",
        catalog,
    )
    assert s.workload.arrival_rate_per_s == 3.5
    assert s.datacenters[1].gpus[0].price_usd_per_gpu_hour == 0.77
    assert s.wan.tier_price_usd_per_month == {"wave_10g": 900.0}
    assert created == {"datacenters.1.gpus.0.price_usd_per_gpu_hour",
                       "wan.tier_prices_usd_per_month.wave_10g"}  # fmt: skip
    assert s.source_file == "tiny.yaml"


def test_a_bad_value_is_reported_against_the_scenario_file(catalog, data):
    with pytest.raises(InputError) as err:
        se.edited(data, {"workload.arrival_rate_per_s": -1}, "tiny.yaml", catalog)
    assert str(err.value).startswith("tiny.yaml: workload.arrival_rate_per_s: found -1")


@pytest.mark.parametrize("target", [0.3, 0.7, 0.95])
def test_hit_mean_moves_the_distribution_to_the_target(catalog, data, target):
    s, _ = se.edited(data, {se.HIT_MEAN_KEY: target}, "tiny.yaml", catalog)
    values, weights = s.workload.prefix_hit_rate.discretise(256)
    values, weights = np.asarray(values), np.asarray(weights) / np.sum(weights)
    assert float(np.dot(values, weights)) == pytest.approx(target, abs=2e-3)
    assert values.min() >= 0.0 and values.max() <= 1.0


def test_hit_mean_out_of_range_is_a_bad_value(catalog, data):
    with pytest.raises(InputError, match="a mean hit rate between 0 and 1"):
        se.edited(data, {se.HIT_MEAN_KEY: 1.5}, "tiny.yaml", catalog)


@pytest.mark.parametrize(
    "key, hint",
    [
        ("workload.arival_rate_per_s", "did you mean 'arrival_rate_per_s'?"),
        ("datacenters.0.gpus.0.price", "did you mean 'price_usd_per_gpu_hour'?"),
        ("workload.prefix_hit_rate.maen", f"did you mean '{se.HIT_MEAN_KEY}'?"),
        ("wan.tier_prices_usd_per_month.wave_7g", "did you mean"),
        ("sla.ttft_p95_ms", "ttft_p95_s"),
    ],
)
def test_unknown_keys_are_refused_with_a_did_you_mean(catalog, data, key, hint):
    with pytest.raises(InputError) as err:
        se.check_key(data, key, 1, "tiny.yaml", catalog)
    text = str(err.value)
    assert text.startswith(f"command line: --vary {key}: found ")
    assert hint in text and "\n" not in text


@pytest.mark.parametrize(
    "key",
    [
        "workload.arrival_rate_per_s",  # in the file
        "wan.tier_prices_usd_per_month.wave_100g",  # allowed, not in the file
        "sla.ttft_p99_s",
        se.HIT_MEAN_KEY,
    ],
)
def test_known_keys_pass_the_check(catalog, data, key):
    se.check_key(data, key, 3, "tiny.yaml", catalog)


def test_a_known_key_with_a_bad_value_passes_the_check(catalog, data):
    """The value is the point's business: the sweep records it, it does not stop."""
    se.check_key(data, "wan.tier_prices_usd_per_month.wave_10g", -5, "tiny.yaml", catalog)
