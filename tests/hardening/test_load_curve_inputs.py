"""Issue #26: a load curve's files (CSV, YAML, a Prometheus export) are inputs like any
other: a bad value, a special file, an oversized or unparseable one is one `error:` line
(exit 2) naming the file and the point, never a traceback or a hang."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from tests.hardening.conftest import REPO, assert_one_error_line

ORIGIN = 1_748_822_400


def scenario(tmp_path, load_curve) -> str:
    data = yaml.safe_load((REPO / "scenarios" / "default.yaml").read_text(encoding="utf-8"))
    data["workload"]["load_curve"] = load_curve
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return "s.yaml"


def export(values) -> str:
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix",
                                       "result": [{"metric": {}, "values": values}]}}
    )  # fmt: skip


def hours(*rates) -> list:
    return [[ORIGIN + 3600 * (i + 1), r] for i, r in enumerate(rates)]


@pytest.mark.parametrize(
    "values, fragments",
    [
        (hours("3", "NaN", "4"), ("p.json: data.result[0].values[1]", "'NaN'", "2025-06-02T02")),
        (hours("3", "4", "+Inf"), ("values[2]", "'+Inf'")),
        (hours("-0.5", "4"), ("values[0]", "'-0.5'", "a rate >= 0")),
        ([[ORIGIN, "3"], [ORIGIN + 30, "3"]], ("values[1]", "a step of 30 s", "60 s to")),
        ([[ORIGIN, "3"], [ORIGIN + 3600, "3"], [ORIGIN + 9000, "3"]],
         ("values[2]", "5400 s after the one before", "one step (3600 s)")),
    ],
    ids=["nan", "inf", "negative", "short-step", "gap"],
)  # fmt: skip
def test_a_bad_prometheus_point_is_one_line(cli, tmp_path, values, fragments):
    (tmp_path / "p.json").write_text(export(values))
    result = cli("scenario", "validate", scenario(tmp_path, {"prometheus": "p.json"}),
                 cwd=tmp_path)  # fmt: skip
    assert_one_error_line(result, 2, *fragments)


def test_a_fifo_as_the_curve_file_is_refused_without_waiting(cli, tmp_path):
    os.mkfifo(tmp_path / "c.csv")
    result = cli("scenario", "validate", scenario(tmp_path, {"file": "c.csv"}), cwd=tmp_path,
                 timeout=60)  # fmt: skip
    assert_one_error_line(result, 2, "c.csv", "a named pipe (FIFO)")


def test_json_nested_past_the_parser_is_one_line(cli, tmp_path):
    (tmp_path / "p.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("scenario", "validate", scenario(tmp_path, {"prometheus": "p.json"}),
                 cwd=tmp_path)  # fmt: skip
    assert_one_error_line(result, 2, "p.json")


def test_more_periods_than_allowed_is_one_line(cli, tmp_path):
    rows = "".join(f"{h},1,3\n" for h in range(3000))
    (tmp_path / "c.csv").write_text("start_h,duration_h,arrival_rate_per_s\n" + rows)
    result = cli("scenario", "validate", scenario(tmp_path, {"file": "c.csv"}), cwd=tmp_path)
    assert_one_error_line(result, 2, "c.csv", "3,000 period rows", "at most 2,016")


def test_binary_data_in_a_curve_file_is_one_line(cli, tmp_path):
    (tmp_path / "c.yaml").write_bytes(b"periods:\x00\x01")
    result = cli("scenario", "validate", scenario(tmp_path, {"file": "c.yaml"}), cwd=tmp_path)
    assert_one_error_line(result, 2, "c.yaml", "binary data")


def test_a_period_with_one_token_outputs_is_one_line(cli, tmp_path):
    """A period's own output lengths reach 2 tokens, as the workload's must (1 token has no
    decode step: `schedule` failed with a traceback in the latency model on it)."""
    periods = [{"start_h": 0, "duration_h": 1, "arrival_rate_per_s": 3,
                "output_tokens": {"kind": "fixed", "value": 1}}]  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"periods": periods}))
    result = cli("scenario", "validate", scenario(tmp_path, {"file": "c.yaml"}), cwd=tmp_path)
    assert_one_error_line(result, 2, "c.yaml", "periods[0].output_tokens", "reach 2 tokens")
