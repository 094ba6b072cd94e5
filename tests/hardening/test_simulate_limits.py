"""Issue #10, part E: what the simulator refuses and what it keeps.

17: `evaluate` and `simulate` refuse the same plan (a decode instance whose HBM holds no
request) with the same line and exit 2. 19: sample sizes too small for the statistics
printed are refused, at a documented minimum. 24: the simulator's memory does not hold
every request's record (checked in benchmarks/memory_simulate.py), and its metrics are
the statistics of its own per-request trace.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import stat
import sys
import threading
from pathlib import Path

import numpy as np
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

# DeepSeek-V4-Pro's weights are 790.8 GiB (`model show`); 8 H100s hold 8 x 80 GB = 640 GB and 4
# H200s 4 x 141 GB = 564 GB: neither instance holds the weights, let alone a request.
NO_ROOM = [("relay_decode", 8, "relay_decode on 8 x h100_sxm"),
           ("main_decode", 4, "main_decode on 4 x h200_sxm")]  # fmt: skip


@pytest.mark.slow
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


@pytest.mark.slow
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
@pytest.mark.slow
@pytest.mark.parametrize(
    "requests, warmup, least",
    [(1, "0.1", "2,222"), (2221, "0.1", "2,222"), (1999, "0", "2,000"), (3998, "0.5", "3,999")],
)
def test_too_few_requests_are_refused(cli, requests, warmup, least):
    r = cli("simulate", "pdd-paper", PAPER_PLAN, "--requests", requests,
            "--warmup-frac", warmup)  # fmt: skip
    assert_one_error_line(r, 2, "--requests", f"at least {least}", "P99")


@pytest.mark.slow
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


# --- 24: the trace streamed to its file; the metrics are the trace's statistics ----------


def read_trace(path: Path) -> dict[str, np.ndarray]:
    """The CSV's columns as float arrays (empty cells NaN; the path column as text)."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    out = {}
    for j, name in enumerate(header):
        cells = [r[j] for r in body]
        out[name] = (
            np.array(cells)
            if name == "path"
            else np.array([float(c) if c else np.nan for c in cells])
        )
    return out


@pytest.mark.slow
def test_metrics_are_the_statistics_of_the_trace(cli, tmp_path):
    """The printed percentiles, relay share and WAN load recomputed from the per-request
    CSV by their definitions (design.md §4), over the requests after the warm-up."""
    n, warmup = 5000, 0.1
    r = cli("simulate", "pdd-paper", PAPER_PLAN, "--requests", n, "--seed", 3,
            "--format", "json", "--trace-out", "trace.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["metrics"]
    t = read_trace(tmp_path / "trace.csv")
    assert len(t["request"]) == n and np.array_equal(t["request"], np.arange(n))
    warm = int(warmup * n)
    after = slice(warm, None)
    assert m["simulation"]["measured_requests"] == n - warm
    ttft = t["first_token_s"][after] - t["arrival_s"][after]
    out = t["output_tokens"][after]
    multi = out > 1
    tpot = (t["done_s"][after] - t["first_token_s"][after])[multi] / (out[multi] - 1)
    for q, level in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        # the CSV keeps 6 decimals: the statistics agree to that
        assert m["ttft_s"][q] == pytest.approx(np.quantile(ttft, level), abs=2e-6)
        assert m["tpot_s"][q] == pytest.approx(np.quantile(tpot, level), abs=2e-6)
    local = t["local_tokens"][after].sum()
    assert m["rld_token_share_frac"] == pytest.approx(local / out.sum(), rel=1e-12)
    window_s = t["arrival_s"][-1] - t["arrival_s"][warm]
    wan_bits = 8 * t["wan_payload_bytes"][after].sum()
    assert m["wan"]["mean_gbit_per_s"] == pytest.approx(wan_bits / window_s / 1e9, rel=1e-5)
    # every request either emitted all its tokens, and the stages ran in order
    assert np.array_equal(t["local_tokens"] + t["main_tokens"], t["output_tokens"])
    assert np.all(t["prefill_end_s"] >= t["prefill_start_s"])
    assert np.all(t["prefill_start_s"] >= t["arrival_s"])


@pytest.fixture(scope="module")
def small_run():
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.sim.entry import load_setup
    from pdd_plan.sim.run import SimConfig, simulate

    setup = load_setup("pdd-paper", PAPER_PLAN, Catalog())
    return simulate(setup, SimConfig(2500, seed=5))


def test_chunks_do_not_change_the_trace(small_run):
    """Rows written 7 at a time (chunk boundaries everywhere) or all at once: the same
    bytes; one header, one line a request."""
    from pdd_plan.sim.trace_csv import write_trace_csv

    whole, pieces = io.StringIO(), io.StringIO()
    write_trace_csv(small_run, whole, chunk_rows=10**9)
    write_trace_csv(small_run, pieces, chunk_rows=7)
    assert whole.getvalue() == pieces.getvalue()
    lines = whole.getvalue().splitlines()
    assert len(lines) == 2501 and lines[0].startswith("request,path,")
    assert "nan" not in whole.getvalue() and "inf" not in whole.getvalue()


def test_trace_follows_a_symlink_and_keeps_the_link(small_run, tmp_path):
    from pdd_plan.report.streamed import streamed_text
    from pdd_plan.sim.trace_csv import write_trace_csv

    (tmp_path / "real.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to("real.csv")
    with streamed_text(tmp_path / "link.csv") as handle:
        write_trace_csv(small_run, handle)
    assert os.readlink(tmp_path / "link.csv") == "real.csv"
    assert (tmp_path / "real.csv").read_text().count("\n") == 2501
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "real.csv"]


def test_trace_to_a_fifo_is_written_through(small_run, tmp_path):
    """A FIFO gets the rows as they are written, never a rename over it."""
    from pdd_plan.report.streamed import streamed_text
    from pdd_plan.sim.trace_csv import write_trace_csv

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with streamed_text(fifo) as handle:
        write_trace_csv(small_run, handle, chunk_rows=100)
    reader.join(timeout=30)
    assert got and got[0].count("\n") == 2501
    assert fifo.is_fifo()


def test_a_failed_trace_leaves_the_old_file(small_run, tmp_path):
    """An error while the rows are written (here a bug raised mid-way) leaves the target
    as it was and no temporary file."""
    from pdd_plan.report.streamed import streamed_text

    target = tmp_path / "trace.csv"
    target.write_text("earlier run\n")
    target.chmod(0o640)
    before = checksums(tmp_path)
    with pytest.raises(RuntimeError), streamed_text(target) as handle:
        handle.write("request,path\n")
        raise RuntimeError("stopped mid-way")
    assert checksums(tmp_path) == before


def test_a_new_trace_gets_the_umask_mode_and_a_replaced_one_keeps_its_mode(small_run, tmp_path):
    from pdd_plan.report.streamed import streamed_text

    old_umask = os.umask(0o027)
    try:
        with streamed_text(tmp_path / "new.csv") as handle:
            handle.write("x\n")
        kept = tmp_path / "kept.csv"
        kept.write_text("y\n")
        kept.chmod(0o600)
        with streamed_text(kept) as handle:
            handle.write("z\n")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o666 & ~0o027
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_text() == "z\n"
