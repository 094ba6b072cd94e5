"""The closed forms held to the simulator on the agreement suite, at small N (the large-N
table is benchmarks/agreement.py). A metric fails only where the closed form lies outside
the simulator's 95 % interval widened by the tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdd_plan.sim.agreement import SUITE, TOLERANCE, compare, verdict

REPO = Path(__file__).resolve().parents[2]
REQUESTS = 2500
METRICS = ("ttft_p50", "ttft_p90", "ttft_p99", "tpot_p90")

# Where the closed form is known to miss (benchmarks/agreement.py): colocated TTFT P90, where
# prefills pause decode in bursts that the closed form spreads evenly (evaluate warns there);
# IDC-PD's TPOT and colocated's TTFT median at this N: the run (~30 s) is as long as one
# request's decode, so the decode batches are still building up (0.084 s simulated here
# against 0.098 s at 60,000 requests; the large-N benchmark judges both, and agrees within
# 0.3 % and 6.8 %).
KNOWN_MISSES = {
    ("paper idc_pd 0.6", "tpot_p90"),
    ("paper colocated 0.5", "ttft_p90"),
    ("paper colocated 0.5", "ttft_p50"),
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
