"""`workload.load_curve` (issue #26 item 1): inline, CSV, YAML and Prometheus give the same
periods for the same data; a bad curve is one InputError naming the file, the key path (or
line, or point) and the value found."""

from __future__ import annotations

import json

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path

# three hours of a day's curve, written by hand: 12, 30 and 18 req/s
RATES = (12.0, 30.0, 18.0)
ORIGIN_UNIX_S = 1_717_200_000  # 2024-06-01T00:00:00Z


def scenario_with(tmp_path, load_curve, **workload) -> str:
    data = yaml.safe_load(resolve_scenario_path("default").read_text())
    data["workload"] = {**data["workload"], "load_curve": load_curve, **workload}
    if "arrival_rate_per_s" not in workload:
        del data["workload"]["arrival_rate_per_s"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def inline_periods() -> list[dict]:
    return [{"start_h": h, "duration_h": 1, "arrival_rate_per_s": r} for h, r in enumerate(RATES)]


def export(values: list, step_s: int = 3600, series=None) -> dict:
    """A query_range answer: point i at the end of hour i (rate over the step before)."""
    series = series or [{"metric": {"job": "api"}, "values": values}]
    return {"status": "success", "data": {"resultType": "matrix", "result": series}}


def hourly_values() -> list:
    return [[ORIGIN_UNIX_S + 3600 * (i + 1), f"{r:g}"] for i, r in enumerate(RATES)]


def curve_of(path):
    return load_scenario(path).workload.load_curve


def shape(curve) -> list[tuple]:
    """What "the same periods" means: start (from the curve's first), length, rate."""
    first = curve.periods[0].start_s
    return [(p.start_s - first, p.duration_s, p.arrival_rate_per_s) for p in curve.periods]


EXPECTED = [(3600.0 * i, 3600.0, r) for i, r in enumerate(RATES)]


def test_inline_curve_and_the_single_rate_defaults_to_its_peak(tmp_path):
    s = load_scenario(scenario_with(tmp_path, inline_periods()))
    assert shape(s.workload.load_curve) == EXPECTED
    assert s.workload.arrival_rate_per_s == max(RATES)  # solve's single rate: the peak
    assert s.workload.load_curve.horizon_hours == 3
    assert s.workload.load_curve.mean_rate_per_s == pytest.approx(sum(RATES) / 3)


def test_a_null_single_rate_beside_a_curve_takes_its_default_the_peak(tmp_path):
    """An optional key written null takes its default (docs/schemas.md): here the curve's
    peak, as when the key is left out (it was a workload of None, and a traceback later)."""
    s = load_scenario(scenario_with(tmp_path, inline_periods(), arrival_rate_per_s=None))
    assert s.workload.arrival_rate_per_s == max(RATES)


def test_the_four_forms_give_the_same_periods(tmp_path):
    (tmp_path / "c.csv").write_text(
        "# a comment line\nstart_h,duration_min,arrival_rate_per_s\n"
        + "".join(f"{h},60,{r}\n" for h, r in enumerate(RATES))
    )
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"periods": inline_periods()}))
    (tmp_path / "p.json").write_text(json.dumps(export(hourly_values())))
    stamps = [
        {"start": f"2024-06-01T{h:02d}:00:00Z", "duration_h": 1, "arrival_rate_per_s": r}
        for h, r in enumerate(RATES)
    ]
    forms = {
        "inline": inline_periods(),
        "inline_mapping": {"periods": stamps},
        "csv": {"file": "c.csv"},
        "yaml": {"file": "c.yaml"},
        "prometheus": {"prometheus": "p.json"},
    }
    for name, given in forms.items():
        assert shape(curve_of(scenario_with(tmp_path, given))) == EXPECTED, name
    assert curve_of(scenario_with(tmp_path, forms["prometheus"])).origin_unix_s == ORIGIN_UNIX_S


def test_scale_and_a_named_series(tmp_path):
    other = {"metric": {"job": "batch"}, "values": hourly_values()}
    mine = {"metric": {"job": "api"}, "values": hourly_values()}
    (tmp_path / "p.json").write_text(json.dumps(export(None, series=[other, mine])))
    curve = curve_of(
        scenario_with(tmp_path, {"prometheus": "p.json", "series": {"job": "api"}, "scale": 2})
    )
    assert [p.arrival_rate_per_s for p in curve.periods] == [2 * r for r in RATES]


def test_a_period_with_its_own_mix_and_lengths(tmp_path):
    periods = inline_periods()
    periods[1]["prefix_hit_rate"] = {"kind": "fixed", "value": 0.5}
    periods[2]["output_tokens"] = {"kind": "fixed", "value": 100}
    curve = curve_of(scenario_with(tmp_path, periods))
    assert curve.periods[1].prefix_hit_rate.mean() == 0.5
    assert curve.periods[2].output_tokens.mean() == 100
    assert curve.periods[0].prefix_hit_rate is None


def refused(tmp_path, load_curve, **workload) -> list:
    with pytest.raises(InputError) as caught:
        load_scenario(scenario_with(tmp_path, load_curve, **workload))
    return caught.value.problems


def only(problems):
    assert len(problems) == 1, [p.line() for p in problems]
    return problems[0]


@pytest.mark.parametrize(
    "change, key_path, found, expected",
    [
        ({1: {"start_h": 1.5}}, "workload.load_curve[1]", "", "a gap of 0.5 h"),
        ({1: {"start_h": 0.5}}, "workload.load_curve[1]", "", "an overlap of 0.5 h"),
        ({1: {"arrival_rate_per_s": -1}}, "workload.load_curve[1].arrival_rate_per_s", "-1",
         ">= 0"),
        ({2: {"duration_h": 0}}, "workload.load_curve[2].duration_h", "0", ">= 0.0166667"),
        ({0: {"duration_min": 60}}, "workload.load_curve[0]", "", "one of duration_h or"),
        ({0: {"start": "2024-06-01T00:00:00"}}, "workload.load_curve[0]", "", "one of start_h"),
        ({0: {"rate": 3}}, "workload.load_curve[0].rate", "an unknown key", "arrival_rate"),
        # as the workload's own (1 token is the prefill's: no decode step, no TPOT)
        ({1: {"output_tokens": {"kind": "fixed", "value": 1}}},
         "workload.load_curve[1].output_tokens", "", "reach 2 tokens"),
    ],
    ids=["gap", "overlap", "negative", "zero-length", "two-durations", "two-starts", "unknown",
         "one-token-outputs"],
)  # fmt: skip
def test_bad_inline_periods_are_named(tmp_path, change, key_path, found, expected):
    periods = inline_periods()
    for i, fields in change.items():
        periods[i].update(fields)
    problem = only(refused(tmp_path, periods))
    assert problem.file.endswith("s.yaml")
    assert problem.key_path == key_path
    assert found in problem.found and expected in problem.expected + problem.found


def test_a_timestamp_without_a_zone_is_refused(tmp_path):
    periods = [{"start": "2024-06-01T00:00:00", "duration_h": 1, "arrival_rate_per_s": 3}]
    problem = only(refused(tmp_path, periods))
    assert problem.key_path == "workload.load_curve[0].start"
    assert "without a zone" in problem.expected


@pytest.mark.parametrize(
    "value, found",
    [("NaN", "'NaN'"), ("+Inf", "'+Inf'"), ("-2", "'-2'"), (5, "5")],
    ids=["nan", "inf", "negative", "unquoted"],
)
def test_prometheus_bad_values_name_the_point(tmp_path, value, found):
    values = hourly_values()
    values[1][1] = value
    (tmp_path / "p.json").write_text(json.dumps(export(values)))
    problem = only(refused(tmp_path, {"prometheus": "p.json"}))
    assert problem.file.endswith("p.json")
    assert problem.key_path == "data.result[0].values[1]"
    assert found in problem.found and str(ORIGIN_UNIX_S + 7200) in problem.found


def test_prometheus_step_gap_is_refused(tmp_path):
    values = hourly_values()
    values[2][0] += 3600  # a missing hour
    (tmp_path / "p.json").write_text(json.dumps(export(values)))
    problem = only(refused(tmp_path, {"prometheus": "p.json"}))
    assert problem.key_path == "data.result[0].values[2]"
    assert "7200 s after the one before" in problem.found


def test_prometheus_two_series_without_a_selector(tmp_path):
    two = [{"metric": {"job": j}, "values": hourly_values()} for j in ("a", "b")]
    (tmp_path / "p.json").write_text(json.dumps(export(None, series=two)))
    problem = only(refused(tmp_path, {"prometheus": "p.json"}))
    assert problem.key_path == "data.result" and "found 2" in problem.expected


def test_prometheus_error_answer_and_instant_vector(tmp_path):
    (tmp_path / "e.json").write_text(json.dumps({"status": "error", "error": "bad query"}))
    assert only(refused(tmp_path, {"prometheus": "e.json"})).key_path == "status"
    vector = {"status": "success", "data": {"resultType": "vector", "result": []}}
    (tmp_path / "v.json").write_text(json.dumps(vector))
    assert "query_range" in only(refused(tmp_path, {"prometheus": "v.json"})).expected


def test_csv_problems_name_the_line_and_column(tmp_path):
    (tmp_path / "c.csv").write_text("start_h,duration_h,rate_per_s\n0,1,3\n")
    problem = only(refused(tmp_path, {"file": "c.csv"}))
    assert problem.file.endswith("c.csv") and "rate_per_s" in problem.key_path
    assert "arrival_rate_per_s" in problem.hint  # did you mean
    (tmp_path / "c.csv").write_text("start_h,duration_h,arrival_rate_per_s\n0,1,3\n1,1,abc\n")
    problem = only(refused(tmp_path, {"file": "c.csv"}))
    assert problem.key_path == "line 3.arrival_rate_per_s" and problem.found == "'abc'"


def test_missing_file_and_two_sources(tmp_path):
    problem = only(refused(tmp_path, {"file": "nowhere.csv"}))
    assert problem.file.endswith("nowhere.csv") and problem.found == "no such file"
    problem = only(refused(tmp_path, {"file": "a.csv", "prometheus": "b.json"}))
    assert problem.key_path == "workload.load_curve" and "exactly one of" in problem.expected


@pytest.mark.parametrize("form", ["inline", "prometheus"])
def test_the_resolved_scenario_keeps_the_curve(tmp_path, form):
    """`--out`'s resolved scenario writes the curve inline and reads back to the same one."""
    from pdd_plan.report.resolved import scenario_json

    periods = inline_periods()
    periods[0]["duration_min"] = periods[0].pop("duration_h") * 60
    periods[1]["prefix_hit_rate"] = {
        "kind": "bins",
        "bins": [
            {"low": 0.2, "high": 0.6, "share": 0.25},
            {"low": 0.6, "high": 1.0, "share": 0.75},
        ],
    }
    (tmp_path / "p.json").write_text(json.dumps(export(hourly_values(), step_s=3600)))
    given = {"prometheus": "p.json", "scale": 1.5} if form == "prometheus" else periods
    first = load_scenario(scenario_with(tmp_path, given))
    again_path = tmp_path / "again.json"
    again_path.write_text(json.dumps(scenario_json(first)))
    again = load_scenario(again_path)
    assert again.workload == first.workload
    assert again.workload.load_curve.origin_unix_s == first.workload.load_curve.origin_unix_s


def test_the_examples_load_the_same_day_from_yaml_and_from_prometheus():
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    inline = curve_of(examples / "diurnal.yaml")
    exported = curve_of(examples / "diurnal-prometheus.yaml")
    assert shape(inline) == shape(exported) and len(inline.periods) == 24
    assert inline.peak_rate_per_s == 4 * inline.trough_rate_per_s  # the 4:1
    assert exported.origin_unix_s == 1_748_822_400  # 2025-06-02T00:00:00Z


def test_validate_summarises_the_curve(tmp_path):
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.report.curve_view import curve_line
    from pdd_plan.report.views import scenario_summary

    catalog = Catalog()
    d = scenario_summary(load_scenario(scenario_with(tmp_path, inline_periods()), catalog),
                         catalog)  # fmt: skip
    c = d["load_curve"]
    assert (c["periods"], c["cycle_hours"], c["trough_rate_per_s"], c["peak_rate_per_s"]) == (
        3,
        3.0,
        12.0,
        30.0,
    )
    assert "12 to 30 req/s (peak/trough 2.5)" in curve_line(c)
    assert "load_curve" not in scenario_summary(load_scenario(resolve_scenario_path("default"),
                                                              catalog), catalog)  # fmt: skip
