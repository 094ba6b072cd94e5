"""Issue #23 item 5: `pdd-plan validate` on the command line: the table states every
metric's definition, JSON carries the same errors, bad input is one line and exit 2."""

import json

import pytest

from tests.unit.test_issue23_validate_errors import RUNS, _vllm
from tests.unit.test_issue23_validate_readers import AIPERF, _guidellm_benchmark

ARGS = ("--model", "qwen3_32b", "--gpu", "h200_sxm", "--tp", "1")


def _write(tmp_path) -> list[str]:
    names = []
    for i, run in enumerate(RUNS):
        (tmp_path / f"r{i}.json").write_text(json.dumps(_vllm(*run)))
        names.append(f"r{i}.json")
    return names


def test_json_has_the_hand_computed_errors(run_cli, tmp_path):
    result = run_cli("validate", *_write(tmp_path), *ARGS, "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    first = {f["figure"]: f["error_frac"] for f in data["runs"][0]["figures"]}
    assert first["ttft_mean"] == pytest.approx(-0.2) and first["tpot_p90"] == pytest.approx(0.25)
    assert data["summary"]["ttft_p50"]["median_error_frac"] == pytest.approx(-0.05)
    assert "(output tokens - 1)" in data["definitions"]["tpot"]
    assert "every gap" in data["definitions"]["itl"]
    assert data["engine_profile"]["identity"] is True


def test_table_states_definitions_and_each_tools_keys(run_cli, tmp_path):
    names = _write(tmp_path)
    (tmp_path / "a.json").write_text(json.dumps(AIPERF))
    guide = {"benchmarks": [_guidellm_benchmark({"type_": "concurrent", "streams": 4})]}
    (tmp_path / "g.json").write_text(json.dumps(guide))
    result = run_cli("validate", *names, "a.json", "g.json", *ARGS)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "TTFT P90 (ms)" in out and "ITL P99 (ms)" in out and "requests/s" in out
    assert "-20.0 %" in out and "+25.0 %" in out  # run 1's TTFT and TPOT errors
    assert "over the runs" in out and "error = model / measured - 1" in out
    assert "read from aiperf" in out and "inter_chunk_latency (every gap)" in out
    assert "read from guidellm" in out and "time_per_output_token_ms includes" in out


@pytest.mark.parametrize(
    "args, fragments",
    [
        (("--kv-dtype", "fp7"), ("command line", "--kv-dtype", "'fp7'")),
        (("--engine-profile", "missing.yaml"), ("missing.yaml",)),
        (("--gpu", "h999"), ("h999",)),
    ],
)
def test_bad_options_are_one_line(run_cli, tmp_path, args, fragments):
    names = _write(tmp_path)
    result = run_cli("validate", *names, "--model", "qwen3_32b", "--tp", "1",
                     *(("--gpu", "h200_sxm") if "--gpu" not in args else ()), *args)  # fmt: skip
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_a_bad_second_file_prints_nothing_but_its_line(run_cli, tmp_path):
    names = _write(tmp_path)
    bad = _vllm(*RUNS[0]) | {"mean_itl_ms": -1.0}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    result = run_cli("validate", *names, "bad.json", *ARGS)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and result.stdout == ""
    assert "bad.json" in lines[0] and "mean_itl_ms" in lines[0] and "-1.0" in lines[0]
