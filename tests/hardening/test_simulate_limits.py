"""Issue #10, part E: what the simulator refuses and what it keeps.

17: `evaluate` and `simulate` refuse the same plan (a decode instance whose HBM holds no
request) with the same line and exit 2. 19: sample sizes too small for the statistics
printed are refused, at a documented minimum. 24: the simulator's memory does not hold
every request's record (checked in benchmarks/memory_simulate.py), and its metrics are
the statistics of its own per-request trace.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest


def _shared():
    """tests/hardening/conftest.py's helpers (the tests are not a package)."""
    spec = importlib.util.spec_from_file_location(
        "hardening_shared", Path(__file__).with_name("conftest.py")
    )
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


_h = _shared()
REPO, assert_one_error_line, checksums = _h.REPO, _h.assert_one_error_line, _h.checksums
PAPER_PLAN = REPO / "scenarios/plans/pdd-paper-pdd.yaml"


def paper_plan_with(tmp_path: Path, role: str, gpus: int, name: str = "plan.yaml") -> Path:
    """The published PDD plan with `role`'s instances resized to `gpus` GPUs."""
    lines = PAPER_PLAN.read_text().splitlines()
    hits = [i for i, line in enumerate(lines) if f"role: {role}," in line]
    assert len(hits) == 1, hits
    i = hits[0]
    head, _, tail = lines[i].partition("gpus_per_instance: ")
    lines[i] = head + f"gpus_per_instance: {gpus}" + tail[tail.index(",") :]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# --- 17: evaluate and simulate refuse the same plan -----------------------------------

# DeepSeek-V4-Pro's weights are 790.8 GiB (README); 8 H100s hold 8 x 80 GB = 640 GB and 4
# H200s 4 x 141 GB = 564 GB: neither instance holds the weights, let alone a request.
NO_ROOM = [("relay_decode", 8, "relay_decode on 8 x h100_sxm"),
           ("main_decode", 4, "main_decode on 4 x h200_sxm")]  # fmt: skip


@pytest.mark.parametrize("role, gpus, found", NO_ROOM)
def test_evaluate_and_simulate_refuse_a_plan_that_holds_no_request(cli, tmp_path, role, gpus,
                                                                   found):  # fmt: skip
    plan = paper_plan_with(tmp_path, role, gpus)
    before = checksums(tmp_path)
    evaluated = cli("evaluate", "pdd-paper", plan)
    simulated = cli("simulate", "pdd-paper", plan, "--requests", "3000",
                    "--trace-out", tmp_path / "trace.csv")  # fmt: skip
    line = assert_one_error_line(evaluated, 2, "plan.instances", found, "HBM")
    assert assert_one_error_line(simulated, 2) == line  # the same words, the same code
    assert checksums(tmp_path) == before  # no trace written


def test_the_published_plan_is_not_refused(cli):
    """The control: the published plan's instances (24 and 16 GPUs) hold requests."""
    r = cli("evaluate", "pdd-paper", PAPER_PLAN, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "evaluated"


# --- 19: too few requests for the statistics printed -----------------------------------


# 2,000 measured requests (20 batches of 100, each with its own P99); the warm-up leaves
# out int(warmup_frac x requests) first requests, so by hand:
#   0.1: 2,222 - 222 = 2,000 (runs); 2,221 - 222 = 1,999 (refused)
#   0.0: 2,000 runs, 1,999 refused
#   0.5: 3,999 - 1,999 = 2,000 (runs); 3,998 - 1,999 = 1,999 (refused)
@pytest.mark.parametrize(
    "requests, warmup, least",
    [(1, "0.1", "2,222"), (2221, "0.1", "2,222"), (1999, "0", "2,000"), (3998, "0.5", "3,999")],
)
def test_too_few_requests_are_refused(cli, requests, warmup, least):
    r = cli("simulate", "pdd-paper", PAPER_PLAN, "--requests", requests,
            "--warmup-frac", warmup)  # fmt: skip
    assert_one_error_line(r, 2, "--requests", f"at least {least}", "P99")


@pytest.mark.parametrize("requests, warmup", [(2222, "0.1"), (2000, "0"), (3999, "0.5")])
def test_the_least_sample_runs_and_its_statistics_are_sane(cli, requests, warmup):
    r = cli("simulate", "pdd-paper", PAPER_PLAN, "--requests", requests,
            "--warmup-frac", warmup, "--format", "json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["metrics"]
    assert m["simulation"]["measured_requests"] == 2000
    for q in ("p50", "p90", "p99"):
        ci = m["confidence_intervals"]["ttft_s"][q]
        assert ci["ci95_low"] < ci["ci95_high"], (q, ci)  # a real interval, not a point
    for role, used in m["role_utilization_frac"].items():
        assert 0.0 <= used <= 1.0, (role, used)  # never the 1,458,083,370 % of one request
