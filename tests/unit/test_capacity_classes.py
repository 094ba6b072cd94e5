"""`costs.capacity_classes` (issue #26 item 2): reserved, on-demand and spot terms per GPU
type and datacenter, their defaults said to be assumptions, spot's headroom N+k at a
confidence, every bad value one problem naming its key."""

from __future__ import annotations

import json

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.capacity_classes import spot_instances_for


def scenario_with(tmp_path, classes) -> object:
    data = yaml.safe_load(resolve_scenario_path("default").read_text())
    data["costs"] = {"capacity_classes": classes}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def classes_of(tmp_path, classes):
    return load_scenario(scenario_with(tmp_path, classes)).costs.capacity_classes


def test_defaults_are_reserved_and_on_demand_said_to_be_assumed():
    c = load_scenario(resolve_scenario_path("default")).costs.capacity_classes
    assert c.reserved_price_frac == 0.6 and c.spot is None
    assert c.reserved_basis.startswith("assumed:")
    offer = c.offer("dc_a", "h100_sxm")
    assert offer.reserved_price_frac == 0.6 and offer.spot is None


def test_spot_with_defaults_and_an_offer_of_its_own(tmp_path):
    c = classes_of(
        tmp_path,
        {
            "reserved": {"price_frac": 0.45, "basis": "a 3-year quote"},
            "spot": {},
            "offers": [
                {"datacenter": "dc_b", "gpu": "h20_96g", "reserved_price_frac": 0.5,
                 "spot_price_frac": 0.3, "spot_interruptions_per_hour": 0.2},
                {"datacenter": "dc_b", "gpu": "h200_sxm", "spot": False},
            ],
        },
    )  # fmt: skip
    assert c.reserved_price_frac == 0.45 and c.reserved_basis == "a 3-year quote"
    assert c.spot.price_frac == 0.4 and c.spot.basis.startswith("assumed:")
    h20 = c.offer("dc_b", "h20_96g")
    assert (h20.reserved_price_frac, h20.spot.price_frac) == (0.5, 0.3)
    assert h20.spot.interruptions_per_hour == 0.2
    assert h20.spot.replacement_s == c.spot.replacement_s  # the class's, where not given
    assert c.offer("dc_b", "h200_sxm").spot is None
    assert c.offer("dc_a", "h100_sxm").spot == c.spot  # no item: the classes' terms


def test_spot_headroom_is_the_binomial_n_plus_k():
    # p = 0.1, 90 %: 2 instances all up 0.81 of the time (short); 3 with at most one down
    # 0.9^3 + 3 x 0.1 x 0.9^2 = 0.972 (enough)
    assert spot_instances_for(2, 0.1, 0.9) == 3
    assert spot_instances_for(1, 0.1, 0.9) == 1  # up 0.9 of the time: just enough
    assert spot_instances_for(5, 0.0, 0.99) == 5  # never interrupted: no headroom
    assert spot_instances_for(0, 0.5, 0.99) == 0


@pytest.mark.parametrize(
    "classes, key_path, expected",
    [
        ({"reserved": {"price_frac": 1.2}}, "reserved.price_frac", "<= 1"),
        ({"reserved": {"price_frac": 0}}, "reserved.price_frac", "> 0"),
        ({"spot": {"interruptions_per_hour": -1}}, "spot.interruptions_per_hour", ">= 0"),
        ({"spot": {"confidence": 1}}, "spot.confidence", "<= 0.999999"),
        ({"spot": {"prize_frac": 0.3}}, "spot.prize_frac", "one of"),
        ({"offers": [{"datacenter": "dc_c", "gpu": "h100_sxm"}]}, "offers[0].datacenter",
         "a known datacenter id"),
        ({"offers": [{"datacenter": "dc_a", "gpu": "h20_96g"}]}, "offers[0].gpu",
         "a known dc_a GPU id"),
        ({"offers": [{"datacenter": "dc_a", "gpu": "h100_sxm", "spot": False,
                      "spot_price_frac": 0.2}]}, "offers[0].spot", "no spot_* keys"),
    ],
    ids=["dearer", "free", "negative", "certain", "misspelt", "no-dc", "no-gpu", "spot-off"],
)  # fmt: skip
def test_bad_classes_are_named(tmp_path, classes, key_path, expected):
    with pytest.raises(InputError) as caught:
        classes_of(tmp_path, classes)
    (problem,) = caught.value.problems
    assert problem.key_path == f"costs.capacity_classes.{key_path}"
    assert expected in problem.expected


def test_the_resolved_scenario_keeps_the_classes(tmp_path):
    from pdd_plan.report.resolved import scenario_json

    given = {
        "reserved": {"price_frac": 0.55, "term_years": 3},
        "spot": {"price_frac": 0.35, "replacement_min": 7.5, "max_share_frac": 0.5},
        "offers": [{"datacenter": "dc_b", "gpu": "h20_96g", "spot_confidence": 0.95}],
    }
    first = load_scenario(scenario_with(tmp_path, given))
    (tmp_path / "again.json").write_text(json.dumps(scenario_json(first)))
    assert load_scenario(tmp_path / "again.json").costs == first.costs
