"""The decode stage of one simulation run (sim/run.py): the decode engine and its pools
built from the Setup, the arrival and handoff events fed to it a chunk at a time, and each
request's first and last token times read back from the instances' step segments.
"""

from __future__ import annotations

import heapq

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.model import routing as rt
from pdd_plan.model.decode.decode_admission import (
    count_cap,
    kv_bins,
    reserve_output_tokens,
    reserved_tokens,
)
from pdd_plan.model.decode_side import engine_fixed_s
from pdd_plan.model.setup import RolePool, Setup
from pdd_plan.sim.decode import (
    ARRIVE,
    AVAILABLE,
    HANDOFF,
    LOCAL_STAGE,
    MAIN_STAGE,
    DecodeEngine,
    Pool,
    direct_spec,
    local_spec,
)
from pdd_plan.sim.decode_instance import DecodeInstance, PausedClock, boundary_times
from pdd_plan.sim.gaps import instance_gaps_s, pause_gaps_s
from pdd_plan.sim.prefill import PrefillRun
from pdd_plan.sim.sampling import Requests
from pdd_plan.sim.steps import DecodeSteps

DECODE_STAGE = "simulate: requests through decode"


def _cap(pool: RolePool, context: float) -> int:
    """The count limit of an instance's batch (the TPOT-feasible batch where it binds
    first; `decode_admission.count_cap`); KV bytes limit it too (`_kv_need`)."""
    cap = pool.batch_limit or pool.instance.max_batch(context)
    if cap < 1:
        g = pool.group
        raise InputError.single(
            "plan", "plan.instances", f"{g.role} on {g.gpus_per_instance} x {g.gpu}",
            "an instance shape whose HBM holds at least one request's KV next to the weights",
        )  # fmt: skip
    return count_cap(pool, context)


# the step table covers batches up to this many requests (an instance that holds more
# small requests runs them at this batch's step: none of the shipped scenarios gets near)
MAX_TABLE_BATCH = 16_384


def _kv_need(pool: RolePool, scenario, req: Requests) -> np.ndarray:
    """KV bytes each request counts for on the pool's instances (reserved tokens:
    decode_admission.reserved_tokens; replicated heads counted: Instance.held_kv_bytes)."""
    tokens = reserved_tokens(req.input_tokens, req.output_tokens, reserve_output_tokens(scenario))
    return np.asarray(pool.instance.held_kv_bytes(tokens.astype(np.int64)), float)


def _decode_pool(
    pool: RolePool, req: Requests, scenario, clocks=None, overflow=False, windows=None
) -> list[Pool]:
    need = _kv_need(pool, scenario, req)
    context = float(np.average(req.input_tokens + req.output_tokens / 2, weights=req.output_tokens))
    bins = kv_bins(pool.instance)
    capacity = pool.instance.kv_capacity_bytes() / bins  # per bin
    most = bins * (capacity // max(float(need.min()), 1.0))
    steps = DecodeSteps(
        pool.instance,
        int(min(_cap(pool, context), most, MAX_TABLE_BATCH)),
        float(req.input_tokens.min()),
        float((req.input_tokens + req.output_tokens).max()),
        int(req.output_tokens.max()),
    )
    if clocks is not None:  # colocated: one pool of one instance per instance
        return [
            Pool(
                steps,
                [DecodeInstance(i, c, slot=0)],
                steps.cap,
                capacity,
                False,
                bins,
                kv_need=need,
            )  # fmt: skip
            for i, c in enumerate(clocks)
        ]
    instances = [DecodeInstance(i) for i in range(pool.group.count)]
    return [Pool(steps, instances, steps.cap, capacity, overflow, bins, kv_need=need,
                 windows=None if windows is None else list(windows))]  # fmt: skip


def _paused_clocks(prefill: PrefillRun, count: int) -> list[PausedClock]:
    clocks = []
    for i in range(count):
        mine = prefill.instance == i
        order = np.argsort(prefill.start_s[mine])
        clocks.append(PausedClock(prefill.start_s[mine][order], prefill.end_s[mine][order]))
    return clocks


def decode_engine(setup: Setup, req: Requests, prefill: PrefillRun, wan_done: np.ndarray,
                  windows: dict | None = None):  # fmt: skip
    """The decode engine and its pools (the KV need per request is copied into it).
    `windows`: role -> each instance's (from, until) (sim/replay.py; not colocated)."""
    arch = setup.deployment.architecture
    s, w = setup.scenario, windows or {}
    if arch == "colocated":
        clocks = _paused_clocks(prefill, setup.prefill.group.count)
        local_pools, main_pool = _decode_pool(setup.decode, req, s, clocks), None
    elif arch == "idc_pd":
        local_pools, main_pool = _decode_pool(setup.decode, req, s, windows=w.get("decode")), None
    elif arch == "cdc_pd":
        main_pool = _decode_pool(setup.decode, req, s, windows=w.get("main_decode"))[0]
        local_pools = []
    else:
        local_pools = _decode_pool(setup.relay, req, s, overflow=True,
                                   windows=w.get("relay_decode"))  # fmt: skip
        main_pool = _decode_pool(setup.decode, req, s, windows=w.get("main_decode"))[0]
    delay = one_way = 0.0
    if arch == "pdd":  # the token ids' round trip + the engine's fixed cost per handoff
        delay, one_way = setup.link.rtt_s + engine_fixed_s(setup), setup.link.rtt_s / 2
    engine = DecodeEngine(local_pools, main_pool, req.input_tokens, req.output_tokens,
                          setup.deployment.policy.handoff, None, wan_done, delay,
                          one_way)  # fmt: skip
    for stage, pools in ((LOCAL_STAGE, local_pools), (MAIN_STAGE, [main_pool])):
        for p, pool in enumerate(x for x in pools if x is not None):
            for inst in pool.instances if pool.windows else ():
                if pool.windows[inst.slot][0] > 0:  # joins later: takes the queue then
                    engine.push(pool.windows[inst.slot][0], AVAILABLE, (stage, p, inst))
    return engine, local_pools, main_pool


# arrival and handoff events put in the engine's heap at a time
FEED_EVENTS = 65_536
PROGRESS_STEPS = 100  # updates of a progress bar over the decode run


def _event_order(path: np.ndarray, arrive_s: np.ndarray, wan_done_s: np.ndarray):
    """The arrival and handoff events in the order the engine takes them when all are
    pushed at once (time, then push order: request by request, its ARRIVE then its
    HANDOFF): event ids (i < n: request i arrives; n + j: the j-th relayed request's
    handoff) and their times."""
    n = len(path)
    relay = np.flatnonzero(path == rt.RELAY)
    times = np.concatenate([arrive_s, wan_done_s[relay]])
    push = np.concatenate([2 * np.arange(n, dtype=np.int64), 2 * relay + 1])
    order = np.lexsort((push, times))
    return order, times[order], relay


def feed_and_run(engine: DecodeEngine, path, colocated_instance, arrive_s, wan_done_s, req,
                 progress=None):  # fmt: skip
    """The engine run with its arrival and handoff events fed a chunk at a time, each with
    the sequence number it would have had pushed all at once (request i's ARRIVE 2i, its
    HANDOFF 2i + 1; the engine's own events after them): the same events in the same
    order, with a chunk of them in the heap instead of one Python tuple per request."""
    order, times, relay = _event_order(path, arrive_s, wan_done_s)
    n = len(path)
    engine.seq = 2 * n + 1
    outputs, inputs = _io(req)
    if colocated_instance is not None:  # the prefill pass emitted each request's first token
        outputs, inputs = outputs - 1, inputs + 1
    # with a bar, smaller chunks so it moves ~PROGRESS_STEPS times (the same run: any
    # chunk size gives the same events in the same order)
    chunk = min(FEED_EVENTS, max(1, len(order) // PROGRESS_STEPS)) if progress else FEED_EVENTS
    fed = 0  # arrivals fed so far: the requests that reached decode
    for start in range(0, len(order), chunk):
        stop = min(start + chunk, len(order))
        if progress:
            progress(DECODE_STAGE, fed, n)
            fed += int(np.count_nonzero(order[start:stop] < n))
        for e, t in zip(order[start:stop].tolist(), times[start:stop].tolist(), strict=True):
            if e >= n:
                rid = int(relay[e - n])
                heapq.heappush(engine.events, (t, 2 * rid + 1, HANDOFF, rid))
                continue
            if path[e] == rt.DIRECT:
                payload = (MAIN_STAGE, 0, direct_spec(e, outputs, inputs))
            elif colocated_instance is None:
                payload = (LOCAL_STAGE, 0, local_spec(e, outputs, inputs))
            elif outputs[e] > 0:
                payload = (LOCAL_STAGE, int(colocated_instance[e]), local_spec(e, outputs, inputs))
            else:  # a one-token answer ends with its prefill
                continue
            heapq.heappush(engine.events, (t, 2 * e, ARRIVE, payload))
        engine.run(until=float(times[stop]) if stop < len(order) else float("inf"))
    if progress:
        progress(DECODE_STAGE, n, n)
    engine.drop_request_state()


def _io(req: Requests):
    return req.output_tokens, req.input_tokens


def stage_times(engine: DecodeEngine, stage: int, pools: list[Pool], n: int):
    """First and last token times of each request on one stage, from the segments."""
    rec = engine.rec[stage]
    first, last, gaps = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n)
    segments = []
    for pool in pools:
        for inst in pool.instances:
            seg = inst.segment_arrays()
            segments.append(seg)
            mine = (rec.instance == inst.index) & (rec.tokens > 0)
            if not mine.any():
                continue
            f = boundary_times(seg, rec.first[mine])
            last_ = boundary_times(seg, rec.first[mine] + rec.tokens[mine] - 1)
            gaps[mine] = instance_gaps_s(seg, rec.first[mine], rec.tokens[mine])
            if inst.clock is not None:
                f = np.array([inst.clock.to_wall(v) for v in f])
                last_ = np.array([inst.clock.to_wall(v) for v in last_])
                pause = pause_gaps_s(inst.clock, f, last_)
                gaps[mine] = np.where(pause > 0, gaps[mine] + pause, gaps[mine])
            first[mine], last[mine] = f, last_
    return first, last, rec.instance.astype(np.int64), rec.tokens.astype(np.int64), segments, gaps
