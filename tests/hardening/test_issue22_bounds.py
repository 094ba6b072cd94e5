"""Issue #22 item 11: no unbounded work. `report --hit-rates` is capped like every list
option; `trace analyze` refuses, with the figure, a trace whose caches would outgrow
their memory bound (instead of taking gigabytes); a rate beyond what the GPUs allowed
could carry is refused in start-up time (tests/property/test_capacity_ceiling.py holds
the proof side)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InputError


def _shared():
    """tests/hardening/conftest.py's helpers (the tests are not a package)."""
    spec = importlib.util.spec_from_file_location(
        "hardening_shared_issue22_bounds", Path(__file__).with_name("conftest.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_h = _shared()
assert_one_error_line, TINY = _h.assert_one_error_line, _h.TINY


# ---- g: report --hit-rates -------------------------------------------------------------


def test_999_hit_rates_are_refused_at_once_with_the_figure_and_the_cap(cli, tmp_path):
    values = ",".join(f"{i / 1000:.3f}" for i in range(1, 1000))
    done = cli("report", "-o", "r.html", "--hit-rates", values, timeout=60)
    assert_one_error_line(done, 2, "--hit-rates", "999 values", "at most 32")
    assert done.stdout == "" and not (tmp_path / "r.html").exists()


def test_the_hit_rate_cap_and_repeats():
    from pdd_plan.cli.report_cmd import MAX_HIT_MEANS, _hit_means

    at_cap = ",".join(f"{i / 100:.2f}" for i in range(MAX_HIT_MEANS))
    assert len(_hit_means(at_cap)) == MAX_HIT_MEANS
    with pytest.raises(InputError, match=f"{MAX_HIT_MEANS + 1} values"):
        _hit_means(at_cap + ",0.99")
    with pytest.raises(InputError, match="0.5 more than once"):
        _hit_means("0.3,0.5,0.5")


# ---- h: trace analyze memory -----------------------------------------------------------


def unique_blocks_trace(path: Path, requests: int, blocks: int) -> Path:
    """`requests` requests a second apart, each with `blocks` never-seen blocks."""
    lines = []
    for i in range(requests):
        ids = list(range(i * blocks, (i + 1) * blocks))
        row = {"timestamp": i * 1000, "input_length": 512 * blocks, "output_length": 10,
               "hash_ids": ids}  # fmt: skip
        lines.append(json.dumps(row) + "\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(
    "capacity, bytes_per_block, refused_at",
    [
        # unlimited: every distinct block kept; 1,000 blocks' worth: past it at request 101
        (None, "SET_BYTES_PER_BLOCK", 101),
        # an LRU of 5,000 blocks (never full here), 300 blocks' worth: at request 31
        (5000, "LRU_BYTES_PER_BLOCK", 31),
    ],
)
def test_trace_caches_past_their_memory_bound_are_refused(
    tmp_path, monkeypatch, capacity, bytes_per_block, refused_at
):
    from pdd_plan.loaders import trace_lru
    from pdd_plan.loaders.trace_analyze import analyze

    blocks_allowed = 1000 if capacity is None else 300
    per_block = getattr(trace_lru, bytes_per_block)
    monkeypatch.setattr(trace_lru, "MAX_CACHE_BYTES", blocks_allowed * per_block)
    trace = unique_blocks_trace(tmp_path / "t.jsonl", 200, 10)
    with pytest.raises(InputError) as refused:
        analyze(trace, capacities_blocks=(capacity,), decode_capacity_blocks=capacity)
    message = str(refused.value)
    assert f"request {refused_at}" in message, message
    assert f"{refused_at * 10:,} prefix blocks" in message, message


def test_a_trace_within_the_bound_is_analysed_whole(tmp_path):
    from pdd_plan.loaders.trace_analyze import analyze

    trace = unique_blocks_trace(tmp_path / "t.jsonl", 200, 10)
    found = analyze(trace, capacities_blocks=(None,), reuse_curve=True)
    assert len(found.input_tokens) == 200
    assert float(found.unlimited.hit_frac.max()) == 0.0  # no block ever repeats


# ---- i: a rate beyond the GPUs ---------------------------------------------------------


@pytest.mark.slow
def test_1e7_req_s_is_refused_with_each_role_ceiling(cli, tmp_path):
    data = {**TINY, "workload": {**TINY["workload"], "arrival_rate_per_s": 1e7}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    done = cli("solve", "s.yaml", "--architecture", "idc_pd", "--format", "json")
    line = assert_one_error_line(done, 3, "prefill saturation: needs 1e+07 req/s", "saturates")
    answer = json.loads(done.stdout)
    assert answer["status"] == "infeasible" and answer["reason"] in line
