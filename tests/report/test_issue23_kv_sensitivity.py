"""The decode KV layout as a sensitivity (issue #23, item 1): `explain` and the sizing report
show how the architecture verdict moves from the model's own layout to the whole context
uncompressed, with both ends and where the verdict changes.

Hand figures: DeepSeek-V4-Pro at FP8 holds 61 x 512 = 31,232 B per uncompressed token; its
compressed entries are ceil(L / 4) x (512 + 68) B in each of 30 CSA layers and
ceil(L / 128) x 512 B in each of 31 HCA layers. The paper scenario's mean context is the
64K prompt + the mean output of 1,000: 66,536 tokens.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pdd_plan.api import DEFAULT_RESOLUTION
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.plan.kv_layouts import context_tokens, kv_layout_cases, window_range
from pdd_plan.plan.search import BCR_HEADROOM
from pdd_plan.stages.solving.kv_verdict import kv_layout_verdict

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "scenarios" / "pdd-paper.yaml"
CONTEXT = 65_536 + 1_000
UNCOMPRESSED_B = 61 * 512
COMPRESSED_B = 30 * math.ceil(CONTEXT / 4) * (512 + 68) + 31 * math.ceil(CONTEXT / 128) * 512


@pytest.fixture(scope="module")
def paper(catalog):
    return load_scenario(PAPER, catalog)


@pytest.fixture(scope="module")
def verdict(paper, catalog):
    return kv_layout_verdict(paper, catalog, (DEFAULT_RESOLUTION, 30.0))


def test_the_range_runs_from_the_models_window_to_the_whole_context(paper, catalog):
    assert context_tokens(paper) == CONTEXT
    cases = kv_layout_cases(paper, catalog.model_for(paper))
    tokens = [c[2].engine.kv_layout.uncompressed_tokens for c in cases]
    assert tokens[0] == 128 and tokens[-1] is None  # the model's own ... all
    assert all(a < b for a, b in zip(tokens[:-2], tokens[1:-1], strict=True))
    assert tokens[-2] < CONTEXT  # every finite case keeps less than the mean context


@pytest.mark.slow
def test_the_verdict_lists_both_ends_with_their_hand_bytes(verdict):
    first, last = verdict["cases"][0], verdict["cases"][-1]
    assert first["uncompressed_tokens"] == 128 and last["uncompressed_tokens"] is None
    own = 128 * UNCOMPRESSED_B + COMPRESSED_B  # 0.302 GB
    whole = CONTEXT * UNCOMPRESSED_B + COMPRESSED_B  # 2.38 GB
    assert first["per_request_bytes"] == pytest.approx(own, rel=1e-12)
    assert last["per_request_bytes"] == pytest.approx(whole, rel=1e-12)
    for case in verdict["cases"]:
        assert set(case["architectures"]) == {"pdd", "cdc_pd", "idc_pd"}


def _objective(paper, figures: dict) -> float:
    # max_bcr, as choose.py documents it: min(goodput, 1.5 x offered) / cost per hour
    capped = min(figures["goodput_rps"], BCR_HEADROOM * paper.workload.arrival_rate_per_s)
    return capped / figures["cost_usd_per_hour"]


@pytest.mark.slow
def test_each_cases_best_has_the_highest_objective(paper, verdict):
    for case in verdict["cases"]:
        planned = {a: f for a, f in case["architectures"].items() if f["goodput_rps"]}
        best = max(planned, key=lambda a: _objective(paper, planned[a]))
        assert _objective(paper, planned[case["best"]]) == pytest.approx(
            _objective(paper, planned[best]), rel=1e-3
        )


@pytest.mark.slow
def test_a_flip_is_named_exactly_where_neighbours_differ(verdict):
    rows = verdict["cases"]
    changes = [(a["case"], b["case"]) for a, b in zip(rows, rows[1:], strict=False)
               if a["best"] != b["best"]]  # fmt: skip
    assert [(f["from_case"], f["to_case"]) for f in verdict["flips"]] == changes
    for pair in verdict["pairs"]:
        a, b = pair["pair"]
        ratios = [r["architectures"][a]["bcr_rps_per_usd_hour"]
                  / r["architectures"][b]["bcr_rps_per_usd_hour"] for r in rows]  # fmt: skip
        assert pair["bcr_ratio"] == pytest.approx(ratios)
        crossings = sum((x > 1) != (y > 1) for x, y in zip(ratios, ratios[1:], strict=False))
        assert len(pair["crossings"]) == crossings


def test_a_model_without_a_window_has_no_range(paper, catalog):
    # Qwen3-32B: full attention in every layer, every token kept already
    assert window_range(catalog.model("qwen3_32b"), paper) == []


@pytest.mark.slow
def test_explain_shows_the_range_and_its_ends(run_cli):
    done = run_cli("explain", str(PAPER), "--format", "json")
    assert done.returncode == 0, done.stderr
    cases = json.loads(done.stdout)["kv_layout_sensitivity"]["cases"]
    assert cases[0]["uncompressed_tokens"] == 128 and cases[-1]["uncompressed_tokens"] is None
    text = run_cli("explain", str(PAPER))
    assert text.returncode == 0, text.stderr
    assert "Architecture verdict across the decode KV layout" in text.stdout
    assert "Best with 128 (own) tokens uncompressed:" in text.stdout
    assert "with all:" in text.stdout


@pytest.mark.slow
def test_the_report_shows_the_range_and_its_ends(run_cli, tmp_path):
    out = tmp_path / "report.md"
    done = run_cli("solve", str(PAPER), "--report", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "| tokens uncompressed | KV a request |" in text
    assert "| 128 (own) | 0.302 GB |" in text and "| all | 2.38 GB |" in text
    assert "- Best with 128 (own) tokens uncompressed:" in text
