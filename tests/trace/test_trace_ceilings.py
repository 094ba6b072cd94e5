"""The two Mooncake traces with an unlimited cache reach the hit-rate ceilings that
../shared/data/traces/README.md states, recomputed here without the LRU code."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdd_plan.loaders.trace_analyze import analyze

# README table: requests, mean input, mean output, span (s), prefix-token hit rate with an
# infinite cache (token-weighted: cached prompt tokens / all prompt tokens)
README = {
    "mooncake_conversation_trace.jsonl": (12_031, 12_035, 343, 3_537, 0.374),
    "mooncake_synthetic_trace.jsonl": (3_993, 15_325, 149, 1_022, 0.651),
}


def set_based_hits(path) -> tuple[np.ndarray, np.ndarray]:
    """Per request: cached tokens = leading run of ids seen in any earlier request x 512,
    capped at the prompt; and the prompt lengths."""
    seen, cached, prompts = set(), [], []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        run = 0
        while run < len(r["hash_ids"]) and r["hash_ids"][run] in seen:
            run += 1
        cached.append(min(run * 512, r["input_length"]))
        prompts.append(r["input_length"])
        seen.update(r["hash_ids"])
    return np.array(cached, float), np.array(prompts, float)


@pytest.mark.parametrize("name", sorted(README))
def test_unlimited_cache_gives_the_readme_ceiling(shared_dir, name):
    path = shared_dir / "data" / "traces" / name
    requests, mean_in, mean_out, span_s, ceiling = README[name]
    a = analyze(path)
    assert a.arrivals.requests == requests
    assert round(a.input_tokens.mean()) == mean_in
    assert round(a.output_tokens.mean()) == mean_out
    assert a.arrivals.span_s == pytest.approx(span_s, abs=1)
    token_hit = a.unlimited.token_hit_frac(a.input_tokens)
    assert token_hit == pytest.approx(ceiling, abs=5e-4)  # the README rounds to 3 digits
    cached, prompts = set_based_hits(path)
    assert token_hit == pytest.approx(cached.sum() / prompts.sum(), rel=1e-12)
    np.testing.assert_allclose(a.unlimited.hit_frac, cached / prompts, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(README))
def test_a_finite_cache_stays_below_the_ceiling_and_approaches_it(shared_dir, name):
    path = shared_dir / "data" / "traces" / name
    blocks = (2_000, 20_000, 10_000_000)  # the last holds every block of either trace
    a = analyze(path, capacities_blocks=blocks)
    hits = [r.token_hit_frac(a.input_tokens) for r in a.by_capacity]
    ceiling = a.unlimited.token_hit_frac(a.input_tokens)
    assert hits[0] < hits[1] < ceiling
    assert hits[2] == pytest.approx(ceiling, rel=1e-12)
