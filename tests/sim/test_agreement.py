"""The closed forms held to the simulator on the agreement suite, at small N (the large-N
table is benchmarks/agreement.py). A metric fails only where the closed form lies outside
the simulator's 95 % interval widened by the tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdd_plan.sim.agreement import SUITE, TOLERANCE, compare, envelope, verdict
from pdd_plan.sim.stats import Estimate

REPO = Path(__file__).resolve().parents[2]
REQUESTS = 2500
# TPOT P50/P99 and the largest gap are judged at large N only: at this N the run is as
# long as one long request's decode, so decode batches are still filling (TPOT P50 is
# 15-25 % below the closed form's here, within 1 % at 100,000 requests).
METRICS = ("ttft_p50", "ttft_p90", "ttft_p99", "tpot_p90")

# Where the closed form is known to miss at this N (benchmarks/agreement.py judges every
# case at large N): IDC-PD's TPOT and colocated's TTFT at this N: the run (~30 s) is as long
# as one request's decode, so the decode batches are still building up.
KNOWN_MISSES = {
    ("paper idc_pd kv-all 0.6", "tpot_p90"),
    # with every decode token uncompressed IDC-PD's decode batches are large and fill for
    # longer than this run: at 40,000 requests TPOT P90 0.0371 s closed, 0.0370 simulated
    # (0.9; 0.030 here)
    ("paper idc_pd kv-all 0.9", "tpot_p90"),
    ("paper idc_pd kv-all 0.95", "tpot_p90"),
    ("paper idc_pd kv-all 0.99", "tpot_p90"),
    ("paper colocated 0.5", "ttft_p90"),
    ("paper colocated 0.5", "ttft_p50"),
    # near decode capacity the slot queue builds over several longest holds (about 180 s
    # each); 2,500 requests last under a minute, so decode never fills at this N
    ("paper idc_pd kv-all 0.99", "ttft_p50"),
    ("paper idc_pd kv-all 0.99", "ttft_p90"),
    ("paper idc_pd kv-all 0.99", "ttft_p99"),
    ("paper colocated 0.9", "tpot_p90"),
    # each colocated instance's own slot queue builds over minutes, in episodes: at
    # 100,000 requests the simulated P99 is 1.9-7.2 s by seed against the closed form's
    # 2.1-2.2 s (benchmarks/agreement.py --seeds); here 0.5 s
    ("paper colocated 0.9", "ttft_p99"),
    # batched prefill near full-step capacity (model/queueing/prefill_gate.py): three instances
    # on one queue at 90 % of full-step load; at 30,000 requests P99 4.57 s against 5.38
    # simulated [4.82, 5.95] (the pooled gap's tail, instances' phases taken as
    # independent); at this N the simulated tail is a few long episodes
    ("paper pdd 3 P 0.9", "ttft_p99"),
    # colocated TPOT at this N: decode batches still building (at 60,000 requests +3.0 %)
    ("paper colocated 0.5", "tpot_p90"),
    # IDC-PD's decode at 94 % of its slots: the closed form's slot queue (Erlang-C over 120
    # slots) waits 2.6 % of requests 0.48 s on average, the simulator's hardly any, and the
    # batched prefill's P90 is 17 % long here: +42 % / +24 % on TTFT P90 / P99 at 60,000
    # requests (docs/agreement.md, its misses)
    ("paper idc_pd kv-all 0.95", "ttft_p90"),
    ("paper idc_pd kv-all 0.95", "ttft_p99"),
}


@pytest.fixture(scope="module")
def rows(catalog):
    return {case.name: compare(case, REPO, REQUESTS, catalog=catalog) for case in SUITE}


def test_the_suite_covers_what_the_issue_asks():
    assert len(SUITE) >= 12
    loads = [c.load_frac for c in SUITE]
    assert min(loads) <= 0.3 and max(loads) >= 0.9
    assert any(c.narrow for c in SUITE) and any(c.cutoff for c in SUITE)
    assert any(c.handoff == "one_shot" for c in SUITE) and any(c.lines for c in SUITE)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c.name for c in SUITE])
def test_closed_form_agrees_with_the_simulator(rows, case):
    row = rows[case]
    bad = []
    for metric in METRICS:
        outcome = verdict(row.closed[metric], row.simulated[metric], TOLERANCE[metric])
        if outcome == "no" and (case, metric) not in KNOWN_MISSES:
            e = row.simulated[metric]
            bad.append(f"{metric}: closed {row.closed[metric]:.4g}, sim {e.value:.4g} "
                       f"[{e.low:.4g}, {e.high:.4g}]")  # fmt: skip
    assert not bad, "; ".join(bad)


def test_independent_seeds_make_one_estimate():
    """Three runs with values 1, 3, 2 and intervals [0.9, 1.1], [2, 4], [1.5, 2.5]: the
    median value 2 and the union [0.9, 4]; a closed form of 3.6 is then 'n/a' (inside the
    union widened by 15 %: 3.6 < 4 x 1.15), where against the first run alone it is 'no'."""
    runs = [Estimate(1.0, 0.9, 1.1), Estimate(3.0, 2.0, 4.0), Estimate(2.0, 1.5, 2.5)]
    both = envelope(runs)
    assert (both.value, both.low, both.high) == (2.0, 0.9, 4.0)
    assert verdict(3.6, both, 0.15) == "n/a" and verdict(3.6, runs[0], 0.15) == "no"
    assert envelope(runs[:1]) == runs[0]
