"""Bug hunt (round 21, helper hb): `calibrate steps` inputs found wrong by fuzzing.

1. A step-time CSV cell of 1e308 tokens (or requests) was accepted by the reader and
   overflowed the fit's FLOP and byte products: a traceback ("token counts must be >= 0",
   "Residuals are not finite"). Bad input is one line naming file, line and column
   (docs/guarantees.md: "a calibration input that is ... mistyped, negative or non-finite
   is one line naming file, line or key"); cells now have a ceiling, 1e9, past any iteration.
2. Latencies of 1e308 ms gave a profile with `cv_error_frac` 2.8e301, which the
   profile loader then refused (its ceiling was 100): a file the tool wrote did not read
   back. The cross-validated error is information about the fit, used in no arithmetic:
   any finite non-negative value reads back.
3. `calibrate serving`: token totals of 1e308 overflowed into a traceback.
4. `calibrate observed`: decreasing percentiles (P50 > P99) were read; a figure the fit
   missed was named `tpot_p90` in seconds, not the file's `tpot_ms.p90` in ms, and a
   saturated fit printed `nan`.
"""

from __future__ import annotations

import pytest

from tests.hardening.conftest import assert_one_error_line

HEADER = "new_tokens,cached_tokens,prompts,decode_batch,decode_context_tokens,latency_ms"


def rows(n: int = 40) -> list[str]:
    """Mixed iterations: prompts of 0-2 x 500 tokens beside 1-16 decodes; latency 2 ms +
    2 us per new token + 50 us per decode (a plausible small engine)."""
    out = []
    for i in range(n):
        prompts, decodes = i % 3, 1 + i % 16
        new = 500 * prompts
        out.append(
            f"{new},0,{prompts},{decodes},{1000 + 100 * i},{2 + new * 0.002 + decodes * 0.05}"
        )
    return out


ARGS = ["--model", "qwen3_32b", "--gpu", "h100_sxm", "--tp", "1", "-o", "p.yaml"]


@pytest.mark.parametrize("column,index", [("new_tokens", 0), ("decode_batch", 3),
                                          ("decode_context_tokens", 4)])  # fmt: skip
def test_a_cell_past_any_iteration_is_one_line_not_a_traceback(cli, tmp_path, column, index):
    lines = rows()
    cells = lines[10].split(",")
    cells[index] = "1e308"
    lines[10] = ",".join(cells)
    (tmp_path / "steps.csv").write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    done = cli("calibrate", "steps", "steps.csv", *ARGS)
    line = assert_one_error_line(done, 2)
    assert line == (f"error: steps.csv: line 12, column {column}: found '1e308'; expected a "
                    "number from 0 to 1e+09"), line  # fmt: skip
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.slow
def test_the_data_itself_calibrates(cli, tmp_path):
    """The rows read and fit. They are no roofline engine's (a 2 ms step of a 32B model
    that reads 65 GB of weights at 2.9 TB/s: 22 ms at least), so the fit is refused as
    poor since issue #22 and kept, marked, with --accept-poor-fit."""
    (tmp_path / "steps.csv").write_text(HEADER + "\n" + "\n".join(rows()) + "\n")
    done = cli("calibrate", "steps", "steps.csv", *ARGS, "--accept-poor-fit")
    assert done.returncode == 0, done.stderr
    assert "poor_fit:" in (tmp_path / "p.yaml").read_text()


@pytest.mark.slow
def test_a_profile_with_a_large_cv_error_reads_back(cli, tmp_path):
    """A fit's cross-validated error of 5,000 (500,000 %) is what calibrate writes for
    absurd latencies; the profile must load (exit 0), its error shown, not refused."""
    (tmp_path / "p.yaml").write_text(
        "name: bad_fit\nparameters: {fixed_step_s: 0.001}\n"
        "cv_error_frac: {decode: 5000.0, prefill: 1.0e+301}\n"
    )
    done = cli("estimate", "--model", "qwen3_32b", "--gpu", "h100_sxm", "--isl", "100",
               "--osl", "10", "--engine-profile", "p.yaml")  # fmt: skip
    assert done.returncode == 0, done.stderr
    for bad in ("-1", ".inf", ".nan"):
        (tmp_path / "q.yaml").write_text(
            f"name: bad_fit\nparameters: {{}}\ncv_error_frac: {{decode: {bad}}}\n"
        )
        refused = cli("estimate", "--model", "qwen3_32b", "--gpu", "h100_sxm", "--isl",
                      "100", "--osl", "10", "--engine-profile", "q.yaml")  # fmt: skip
        assert_one_error_line(refused, 2, "q.yaml: cv_error_frac.decode: found")


@pytest.mark.slow
def test_a_serving_run_of_absurd_token_totals_is_one_line(cli, tmp_path):
    """`calibrate serving`: a vllm bench serve result whose total_input_tokens is 1e308
    (10 requests: 1e307 tokens each) overflowed the KV arithmetic into a traceback; a
    request holds at most 10,000,000 tokens (the scenario files' and --isl's cap)."""
    import json

    run = {"backend": "vllm", "num_prompts": 10, "completed": 10, "max_concurrency": 1,
           "request_rate": "inf", "duration": 10.0, "total_input_tokens": 1e308,
           "total_output_tokens": 1000, "mean_ttft_ms": 50.0, "median_ttft_ms": 50.0,
           "p99_ttft_ms": 60.0, "mean_tpot_ms": 20.0, "median_tpot_ms": 20.0,
           "p99_tpot_ms": 25.0}  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps(run))
    done = cli("calibrate", "serving", "r.json", "--model", "qwen3_32b", "--gpu", "h200_sxm",
               "-o", "p.yaml", "--no-cv")  # fmt: skip
    assert_one_error_line(done, 2, "r.json: total_input_tokens: found 1e+308; expected at most "
                          "10,000,000 tokens per request (the run has 10 requests)")  # fmt: skip
    assert not (tmp_path / "p.yaml").exists()


OBSERVED_PLAN = {"plan": {"architecture": "colocated", "instances": [
    {"role": "colocated", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 1,
     "count": 2}]}}  # fmt: skip


def observed(cli, tmp_path, text: str):
    import yaml

    from tests.hardening.conftest import TINY

    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(OBSERVED_PLAN))
    (tmp_path / "obs.yaml").write_text(text)
    return cli("calibrate", "observed", "s.yaml", "p.yaml", "obs.yaml", "-o", "out.yaml")


@pytest.mark.slow
def test_observed_percentiles_that_decrease_are_refused_as_read(cli, tmp_path):
    """`calibrate observed`: a CDF does not decrease, so P50 <= P90 <= P99 of one metric;
    TPOT P50 40 ms with P99 10 ms was read and left to the fit to contradict."""
    done = observed(cli, tmp_path, "offered_rps: 2\ntpot_ms: {p50: 40, p99: 10}\n")
    assert_one_error_line(done, 2, "obs.yaml: tpot_ms.p99: found 10; expected a number >= p50 "
                          "(40): percentiles do not decrease")  # fmt: skip


@pytest.mark.slow
def test_a_figure_the_fit_misses_is_named_by_its_key_and_unit(cli, tmp_path):
    """TPOT P90 of 1e-9 ms (one step of a 32B model reads 65 GB of weights: over 10 ms on
    any GPU) cannot be fitted: the line names `tpot_ms.p90` and 1e-09 as the file says
    them, not `tpot_p90` and 1e-12 (seconds)."""
    done = observed(cli, tmp_path, "offered_rps: 2\nttft_s: {p90: 1.2}\ntpot_ms: {p90: 1.0e-9}\n")
    assert_one_error_line(done, 2, "obs.yaml: tpot_ms.p90: found 1e-09 observed, ")
    assert not (tmp_path / "out.yaml").exists()
