"""`pdd-plan trace analyze --load-curve OUT` (issue #26 item 1): the rate per period from
the timestamps, each period's hit mix from the LRU replay, and the file reads back as a
scenario's `workload.load_curve: {file: OUT}` with the periods an inline curve of the same
counts gives."""

from __future__ import annotations

import pytest
import yaml
from trace_helpers import row, write_mooncake

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path


def scenario_reading(tmp_path, load_curve) -> object:
    data = yaml.safe_load(resolve_scenario_path("default").read_text())
    data["workload"]["load_curve"] = load_curve
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_scenario(path).workload.load_curve


def test_rates_per_period_match_an_inline_curve_of_the_same_counts(run_main, tmp_path):
    # one-minute periods holding 6, 12 and 3 requests; the request at 180 s starts a
    # fourth period that is not whole, so it is left out
    counts = (6, 12, 3)
    rows = [
        row(60_000 * k + 1000 * i, 512, [100 * k + i])
        for k, n in enumerate(counts)
        for i in range(n)
    ]
    rows.append(row(180_000, 512, [999]))
    write_mooncake(tmp_path / "t.jsonl", rows)
    result = run_main(
        "trace", "analyze", "t.jsonl", "--load-curve", "curve.yaml", "--period-min", "1"
    )
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "curve.yaml").read_text()
    assert "1 requests after the last whole period are left out" in text
    written = scenario_reading(tmp_path, {"file": "curve.yaml"})
    inline = scenario_reading(
        tmp_path,
        [
            {"start_h": k / 60, "duration_min": 1, "arrival_rate_per_s": n / 60}
            for k, n in enumerate(counts)
        ],
    )
    assert len(written.periods) == len(inline.periods) == 3
    for w, i in zip(written.periods, inline.periods, strict=True):
        assert w.start_s == pytest.approx(i.start_s, abs=0.01)
        assert w.duration_s == pytest.approx(i.duration_s, abs=0.01)
        assert w.arrival_rate_per_s == pytest.approx(i.arrival_rate_per_s, rel=1e-5)
        assert w.prefix_hit_rate is None  # fewer than 100 requests: the workload's mix


def test_a_busy_period_gets_its_own_hit_mix(run_main, tmp_path):
    # 120 requests in the first minute all ask for block 7: the first misses, the other
    # 119 hit their whole 512-token prompt; the second minute's 120 are all new blocks
    rows = [row(400 * i, 512, [7]) for i in range(120)]
    rows += [row(60_000 + 400 * i, 512, [1000 + i]) for i in range(120)]
    rows.append(row(120_000, 512, [5000]))
    write_mooncake(tmp_path / "t.jsonl", rows)
    result = run_main(
        "trace", "analyze", "t.jsonl", "--load-curve", "curve.yaml", "--period-min", "1"
    )
    assert result.returncode == 0, result.stderr
    curve = scenario_reading(tmp_path, {"file": "curve.yaml"})
    first, second = curve.periods
    assert first.arrival_rate_per_s == pytest.approx(2.0) == second.arrival_rate_per_s
    assert first.prefix_hit_rate.mean() == pytest.approx(119 / 120, abs=0.01)
    assert second.prefix_hit_rate.mean() == pytest.approx(0.0, abs=0.01)


def test_a_trace_shorter_than_one_period_is_refused(run_main, tmp_path):
    write_mooncake(tmp_path / "t.jsonl", [row(0, 512, [1]), row(30_000, 512, [2])])
    result = run_main("trace", "analyze", "t.jsonl", "--load-curve", "curve.yaml")
    assert result.returncode == 2
    assert "t.jsonl: found a trace spanning 30 s; expected a trace spanning at least one" in (
        result.stderr
    )
    assert not (tmp_path / "curve.yaml").exists()
