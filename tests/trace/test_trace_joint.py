"""`trace analyze` and #12: the rank correlation of hit rate and prompt length, `--joint`
hit-rate bins with their own input lengths, and MD's LRU curve as `prefix_reuse`, on
hand-made traces whose answers are worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from trace_helpers import row, write_mooncake

from pdd_plan.loaders import trace_stats as stats
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.loaders.trace_reuse import ladder_blocks
from pdd_plan.model.workload import workload as wl

A = [1, 2, 3, 4]  # one long prompt (4 one-token blocks) that comes back


def long_hits_short_misses(path):
    """Long prompts (4 tokens) all come back and hit, short ones (1-2 tokens) are new.
    hits  [0, 1, 0, 1, 0, 1, 0]; inputs [4, 4, 1, 4, 1, 4, 2]."""
    rows = [
        row(0, 4, A),
        row(1000, 4, A),
        row(2000, 1, [10]),
        row(3000, 4, A),
        row(4000, 1, [11]),
        row(5000, 4, A),
        row(6000, 2, [12, 13]),
    ]
    return write_mooncake(path, rows)


def test_spearman_by_hand(run_main, tmp_path):
    """Average ranks: inputs 1,1 -> 1.5; 2 -> 3; 4 (x4) -> 5.5; hits 0 (x4) -> 2.5, 1 (x3)
    -> 6. Deviations from the mean rank 4: inputs (1.5, 1.5, -2.5, 1.5, -2.5, 1.5, -1),
    hits (-1.5, 2, -1.5, 2, -1.5, 2, -1.5). Sum of products 15.75, of squares 22.5 and 21:
    rho = 15.75 / sqrt(22.5 x 21) = 0.7246. By band: hit 0 holds 4/7 of the requests at a
    mean of (4 + 1 + 1 + 2) / 4 = 2 tokens, hit 1 holds 3/7 at 4."""
    long_hits_short_misses(tmp_path / "t.jsonl")
    args = ("trace", "analyze", "t.jsonl", "--block-tokens", "1", "--format", "json")
    result = run_main(*args)
    assert result.returncode == 0, result.stderr
    corr = json.loads(result.stdout)["hit_rate_vs_input"]
    assert corr["spearman_hit_vs_input"] == pytest.approx(15.75 / np.sqrt(22.5 * 21))
    bands = {(r["hit_low"], r["hit_high"]): r for r in corr["by_hit_rate"]}
    assert set(bands) == {(0.0, 0.25), (0.9, 1.0)}
    assert bands[(0.0, 0.25)]["share"] == pytest.approx(4 / 7)
    assert bands[(0.0, 0.25)]["mean_input_tokens"] == pytest.approx(2)
    assert bands[(0.9, 1.0)]["mean_input_tokens"] == pytest.approx(4)
    notes = json.loads(result.stdout)["notes"]
    assert any("--joint" in n for n in notes)  # material: the note points to it


def test_spearman_properties():
    """+1 for any increasing relation, -1 for a decreasing one, None for a constant."""
    x = np.array([3.0, 1.0, 7.0, 5.0])
    assert stats.spearman(x, np.exp(x)) == pytest.approx(1.0)
    assert stats.spearman(x, -(x**3)) == pytest.approx(-1.0)
    assert stats.spearman(x, np.ones(4)) is None
    assert list(stats.average_ranks(np.array([5.0, 1.0, 5.0]))) == [2.5, 1.0, 2.5]


def test_joint_bins_keep_the_cached_token_share(run_main, tmp_path):
    """Joint: hit 0 with inputs {4, 1, 1, 2} (share 4/7), hit 1 with {4, 4, 4} (3/7). The
    scenario's mean input is 20/7 (the trace's) and its cached tokens per request
    3/7 x 4 = 12/7, a cached share 12/20 = 0.6 as in the trace; independence would give
    the mean per-request hit 3/7 = 0.43."""
    long_hits_short_misses(tmp_path / "t.jsonl")
    args = ("trace", "analyze", "t.jsonl", "--block-tokens", "1", "--dist", "empirical")
    result = run_main(*args, "--joint", "--scenario-out", "s.yaml")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load((tmp_path / "s.yaml").read_text())
    assert "input_tokens" not in data["workload"]
    w = load_scenario(tmp_path / "s.yaml").workload
    assert w.input_tokens.mean() == pytest.approx(20 / 7)
    c = wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate)
    cached = c.mean(c.hit_rate * c.input_tokens) / c.mean(c.input_tokens)
    assert cached == pytest.approx(0.6)
    plain = run_main(*args, "--scenario-out", "p.yaml")
    assert plain.returncode == 0, plain.stderr
    w = load_scenario(tmp_path / "p.yaml").workload
    c = wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate)
    cached = c.mean(c.hit_rate * c.input_tokens) / c.mean(c.input_tokens)
    assert cached == pytest.approx(3 / 7)


def cycling(path, k: int = 4, m: int = 4, cycles: int = 5):
    """k conversations of m one-token blocks each, visited in turn, one a second."""
    rows = []
    for i in range(k * cycles):
        j = i % k
        rows.append(row(1000.0 * i, m, [100 * j + b for b in range(m)]))
    return write_mooncake(path, rows)


def test_the_decode_side_curve_of_cycling_conversations(run_main, tmp_path):
    """Between two visits of a conversation the other 3 push 3 x 4 = 12 blocks; its own
    blocks, touched last to first, sit at LRU positions 13..16. A cache of C blocks keeps
    its first min(4, max(0, C - 12)) blocks: resident share (C - 12) / 4 clipped to
    [0, 1]. The ladder runs from one prompt (4) to the working set (16 blocks)."""
    cycling(tmp_path / "c.jsonl")
    args = ("trace", "analyze", "c.jsonl", "--block-tokens", "1", "--format", "json")
    result = run_main(*args, "--reuse-curve", "--workload-out", "w.yaml")
    assert result.returncode == 0, result.stderr
    curve = json.loads(result.stdout)["decode_reuse_curve"]
    caps = curve["capacity_tokens"]
    assert caps[0] == 4 and caps[-1] == 16 and caps == sorted(set(caps)) and len(caps) <= 8
    expected = [min(1.0, max(0.0, (c - 12) / 4)) for c in caps]
    assert curve["resident_frac"] == pytest.approx(expected)
    assert curve["at_arrival_rate_per_s"] == pytest.approx(1.0)  # one request a second
    written = yaml.safe_load((tmp_path / "w.yaml").read_text())["workload"]
    assert written["prefix_reuse"] == curve
    skipped = run_main(*args)  # opt-in: the default holds only the caches asked for
    assert json.loads(skipped.stdout)["decode_reuse_curve"] is None


def test_the_ladder_is_geometric_between_a_prompt_and_the_working_set():
    """4 x 4^(i/7) rounded: 4, 4.9, 5.9, 7.2, 8.8, 10.8, 13.1, 16."""
    assert ladder_blocks(4, 16) == [4, 5, 6, 7, 9, 11, 13, 16]
    assert ladder_blocks(20, 16) == [16]  # a working set below one prompt: one point
