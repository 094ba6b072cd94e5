"""The simulator's batched prefill pool (sim/prefill.py), checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.prefill import ChunkTable, batched_pool, fcfs_pool, with_load


def _linear_step(chunks) -> float:
    """A made-up step: 1 s fixed plus 10 ms per new token of the whole step (no tokens,
    no forward pass: 0, as the roofline has it)."""
    tokens = sum(new for new, _ in chunks)
    return 1.0 + 0.01 * tokens if tokens > 0 else 0.0


ARRIVAL_S = np.array([0.0, 0.5, 0.6])
NEW_TOKENS = np.array([150.0, 30.0, 80.0])
CACHED_TOKENS = np.zeros(3)


def test_one_instance_by_hand():
    """Budget 100. t=0: r0's first 100 tokens (2 s, to t=2). t=2: r0's last 50, r1's 30 and
    r2's first 20 (2 s, to t=4: r0 and r1 end). t=4: r2's last 60 (1.6 s, to 5.6)."""
    run = batched_pool(ARRIVAL_S, NEW_TOKENS, CACHED_TOKENS, 1, 100, _linear_step)
    assert run.start_s.tolist() == [0.0, 2.0, 2.0]
    assert run.end_s == pytest.approx([4.0, 4.0, 5.6])
    assert run.instance.tolist() == [0, 0, 0]


def test_two_instances_by_hand():
    """Budget 100. t=0: instance 0 takes r0's first 100 (to 2.0). t=0.5: idle instance 1
    takes r1 (1.3 s, to 1.8). r2 arrives at 0.6 with both busy; instance 1 frees first and
    takes it whole at 1.8 (1.8 s, to 3.6). Instance 0 runs r0's last 50 at 2.0 (to 3.5):
    a started request stays on its instance."""
    run = batched_pool(ARRIVAL_S, NEW_TOKENS, CACHED_TOKENS, 2, 100, _linear_step)
    assert run.start_s.tolist() == [0.0, 0.5, 1.8]
    assert run.end_s == pytest.approx([3.5, 1.8, 3.6])
    assert run.instance.tolist() == [0, 1, 1]


def test_a_full_hit_request_rides_the_next_step():
    """A request with no uncached tokens takes no budget and ends with the step it joins."""
    run = batched_pool(np.array([0.0, 0.1]), np.array([100.0, 0.0]), np.zeros(2), 1, 100,
                       _linear_step)  # fmt: skip
    assert run.start_s.tolist() == [0.0, 2.0]
    assert run.end_s.tolist() == [2.0, 2.0]


def test_chunk_table_step_is_the_roofline(catalog):
    """One chunk: the roofline prefill time, within the tables' interpolation; sixteen
    small chunks in one step cost far less than sixteen steps (one weight read)."""
    inst = Instance(catalog.model("qwen3_32b"), catalog.gpus["h200_sxm"], 1)
    table = ChunkTable(inst, 16_384, 40_000)
    for new, cached in [(1, 0), (37, 2000), (4000, 12_345), (16_384, 20_000)]:
        want = inst.prefill_time_s(new, cached)
        assert table.step_s([(new, cached)]) == pytest.approx(want, rel=6e-3)
    lone = table.step_s([(8, 2000)])
    assert table.step_s([(8, 2000)] * 16) < 0.5 * 16 * lone


def test_busy_share_is_the_load_against_full_steps():
    """The one-instance case's steps: [0, 2] 100 tokens, [2, 4] 100, [4, 5.6] 60. A full
    step (100 tokens) takes 2 s, so its tokens needed 2, 2 and 1.2 s of full steps: 5.2
    instance-seconds of 5.6. Without batching each request's [start, end] counts whole."""
    run = batched_pool(ARRIVAL_S, NEW_TOKENS, CACHED_TOKENS, 1, 100, _linear_step)
    loaded = with_load(run, _linear_step([(100, 0)]), 100)
    assert loaded.busy_s((0.0, 5.6)) == pytest.approx(5.2)
    assert loaded.busy_s((4.0, 4.8)) == pytest.approx(0.6)  # half of the last step
    plain = fcfs_pool(ARRIVAL_S, np.array([1.0, 1.0, 1.0]), 1)
    assert plain.busy_s((0.0, 10.0)) == pytest.approx(3.0)
