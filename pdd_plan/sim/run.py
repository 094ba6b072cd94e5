"""One simulation run: requests through prefill, RDMA, the WAN and the decode pools.

The pipeline is feed-forward up to decode (prefill does not wait for the WAN, the WAN
does not wait for decode), so prefill and the WAN are simulated stage by stage over all
requests and the decode pools, which interact through the handoff, in one event loop.
What is shared with the closed forms: the Setup (instances, link, prices, batch limits),
the routing decision and KV bytes (`routing.route`), roofline step times, RDMA and the
single-flow TCP primitives. No queueing, waiting or tail formula. The decode stage (the
engine, its pools, the events fed to it, the token times read back) is sim/decode_stage.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from pdd_plan.model import decode_cache as dc
from pdd_plan.model import routing as rt
from pdd_plan.model.caches import tier_read_back
from pdd_plan.model.network.network import BITS_PER_BYTE
from pdd_plan.model.network.rdma import rdma_transfer_s
from pdd_plan.model.queueing.prefill_batch import batching_applies, budget_tokens
from pdd_plan.model.setup import Setup
from pdd_plan.model.workload.workload import RequestClasses
from pdd_plan.sim.decode import LOCAL_STAGE, MAIN_STAGE
from pdd_plan.sim.decode_stage import decode_engine, feed_and_run, stage_times
from pdd_plan.sim.prefill import ChunkTable, PrefillRun, batched_pool, fcfs_pool, with_load
from pdd_plan.sim.sampling import Requests, draw_requests, stepped_arrivals_s
from pdd_plan.sim.steps import PrefillTimes
from pdd_plan.sim.wan import WanRun, simulate_wan


@dataclass(frozen=True)
class SimConfig:
    requests: int
    seed: int = 0
    warmup_frac: float = 0.1
    rate_per_s: float | None = None  # None: the scenario's arrival rate
    hit_rate: object = None  # a hit-rate distribution other than the scenario's
    # a replay of counts and rates that change (sim/replay.py): role -> each instance's
    # (from, until) in the pool, and the arrival rate's steps ((from_s, req/s), ...)
    windows: dict | None = None
    rate_steps: tuple | None = None


@dataclass(frozen=True)
class Trace:
    """Per request (arrival order), every stage's times; NaN where a stage is skipped."""

    requests: Requests
    path: np.ndarray  # routing.DIRECT | RELAY | LOCAL
    prefill: PrefillRun
    prefill_service_s: np.ndarray
    rdma_done_s: np.ndarray
    wan_payload_bytes: np.ndarray
    wan: WanRun | None  # over every request; ready = done for those that ship nothing
    local_instance: np.ndarray
    local_first_s: np.ndarray
    local_last_s: np.ndarray
    local_tokens: np.ndarray
    main_instance: np.ndarray
    main_first_s: np.ndarray
    main_last_s: np.ndarray
    main_tokens: np.ndarray
    overflowed: np.ndarray | None = None  # found RLD full and went P -> MD
    largest_gap_s: np.ndarray | None = None  # each request's largest inter-token gap

    @property
    def first_token_s(self) -> np.ndarray:
        return np.where(self.local_tokens > 0, self.local_first_s, self.main_first_s)

    @property
    def done_s(self) -> np.ndarray:
        return np.fmax(
            np.where(self.local_tokens > 0, self.local_last_s, np.nan),
            np.where(self.main_tokens > 0, self.main_last_s, np.nan),
        )


@dataclass(frozen=True)
class SimRun:
    setup: Setup
    config: SimConfig
    rate_per_s: float
    trace: Trace
    segments: dict  # role -> list of per-instance segment arrays (k0, t0, d_first, d, batch)


# the residency draws' own random stream (beside the requests' seed), so drawing them
# leaves every other draw of a run unchanged
RESIDENCY_STREAM = 17


def _routes(setup: Setup, req: Requests, rate: float, seed: int = 0) -> rt.Routes:
    """The routing decision and KV bytes of `routing.route`, request by request. Each
    request's prefix is on MD or not, drawn from the LRU curve's resident share at this
    run's rate (`decode_cache.resident_frac`). A request's previous turn was cut off with
    the share of this run's requests the cut-off takes; MD then also lacks what that turn
    added (the uncached prompt and output of one of this run's cut-off requests)."""
    s, d = setup.scenario, setup.deployment
    n = len(req)
    per_request = RequestClasses(req.input_tokens, req.output_tokens, req.hit_rate,
                                 np.full(n, 1.0 / n))  # fmt: skip
    cutoff = rt.resolved_cutoff(s)
    resident, extra = np.ones(n), np.zeros(n)
    if d.architecture in ("pdd", "cdc_pd"):
        p = dc.resident_frac(dc.decode_cache_capacity_tokens(s, d, setup.model), rate,
                             s.workload.input_tokens.mean(), s.workload.prefix_reuse)  # fmt: skip
        cut = rt.cutoff_mask(d.architecture, per_request, d.policy, cutoff, setup.model,
                             s.kv_dtype, s.workload.input_tokens.mean())  # fmt: skip
        if p < 1.0 or cut.any():
            rng = np.random.default_rng([seed, RESIDENCY_STREAM])
            resident = (rng.random(n) < p).astype(float)
            previous_cut = rng.random(n) < cut.mean()
            if cut.any():
                added = (per_request.uncached_tokens + req.output_tokens)[cut]
                extra = np.where(previous_cut, added[rng.integers(0, len(added), n)], 0.0)
    return rt.route(d.architecture, per_request, d.policy, cutoff, setup.model, s.kv_dtype,
                    resident, threshold_input_tokens=s.workload.input_tokens.mean(),
                    md_extra_missing_tokens=extra)  # fmt: skip


UPSTREAM_STAGE = "simulate: routing, prefill and the WAN"


def simulate(setup: Setup, config: SimConfig, progress=None) -> SimRun:
    """Simulate `config.requests` requests on `setup`'s deployment. `progress(stage,
    done, total)`, when given, hears the stages and the requests fed to decode."""
    rate = config.rate_per_s or setup.scenario.workload.arrival_rate_per_s
    rng = np.random.default_rng(config.seed)
    if progress:
        progress(UPSTREAM_STAGE, 0, 1)
    req = draw_requests(setup.scenario.workload, rate, config.requests, rng, config.hit_rate)
    if config.rate_steps:  # the same renewal process, its clock following the steps
        req = dataclasses.replace(
            req, arrival_s=stepped_arrivals_s(req.arrival_s * rate, config.rate_steps)
        )
    hold = _handoff_hold_s(setup, req, rate, config.seed, config.windows)
    upstream = _upstream(setup, req, rate, hold, config.seed, config.windows)
    path, prefill, service, rdma_done, payload, wan = upstream
    if progress:
        progress(UPSTREAM_STAGE, 1, 1)
    wan_done = wan.done_s if wan is not None else np.full(len(req), np.nan)
    engine, local_pools, main_pool = decode_engine(setup, req, prefill, wan_done,
                                                   config.windows)  # fmt: skip
    instance = prefill.instance if setup.deployment.architecture == "colocated" else None
    feed_and_run(engine, path, instance, np.where(path == rt.DIRECT, wan_done, rdma_done),
                 wan_done, req, progress)  # fmt: skip
    return _collect(setup, config, rate, req, path, prefill, service, rdma_done, payload, wan,
                    engine, local_pools, main_pool)  # fmt: skip


def _handoff_hold_s(setup: Setup, req: Requests, rate: float, seed: int = 0, windows=None):
    """`pool_hold: handoff_end`: each request's connection time after its transfer, from a
    first run with connections released at transfer end (a relayed request kept by RLD
    holds until MD emits its first token; others 0). The second run's handoffs, moved by
    the longer connection waits, are not fed back (one pass, as in the closed form).
    None when connections release at transfer end."""
    if setup.scenario.wan.pool_hold != "handoff_end" or setup.deployment.architecture != "pdd":
        return None
    path, prefill, _, rdma_done, _, wan = _upstream(setup, req, rate, seed=seed, windows=windows)
    engine, _, main_pool = decode_engine(setup, req, prefill, wan.done_s, windows)
    feed_and_run(engine, path, None, np.where(path == rt.DIRECT, wan.done_s, rdma_done),
                 wan.done_s, req)  # fmt: skip
    main_first, _, _, main_tokens, _, _ = stage_times(engine, MAIN_STAGE, [main_pool], len(req))
    handed = (path == rt.RELAY) & ~engine.overflowed & (main_tokens > 0)
    return np.where(handed, main_first - wan.done_s, 0.0)


def _upstream(setup: Setup, req: Requests, rate: float, extra_hold_s=None, seed: int = 0,
              windows=None):  # fmt: skip
    """Routing, prefill, RDMA and the WAN over all requests: (path, prefill, service
    times, RDMA done, WAN payload bytes, WAN run or None). The routing's other columns
    and the intermediates are freed on return (memory per request). KV streamed during
    prefill (`wan.stream_during_prefill`) is ready at prefill start and may not finish
    before prefill end + its last layer at one connection's rate; `extra_hold_s`: per
    request, connection time after the transfer (`pool_hold: handoff_end`)."""
    routes = _routes(setup, req, rate, seed)
    path = routes.path
    prefill, service = _prefill_run(setup, req, (windows or {}).get(setup.prefill.group.role))
    rdma_done = _rdma_done(setup, routes.rdma_payload_bytes, service, prefill, path)
    if setup.link is None:
        return path, prefill, service, rdma_done, np.zeros(len(req)), None
    payload = routes.wan_payload_bytes  # 0 where a request stays local (PDD's cut-off too)
    bits = payload * BITS_PER_BYTE
    ready, not_before = prefill.end_s, None
    if setup.scenario.wan.stream_during_prefill:
        link = setup.link
        last_layer_bits = bits / (link.stripes_per_transfer * setup.model.num_layers)
        ready = prefill.start_s
        not_before = prefill.end_s + last_layer_bits / link.flow_cap_bits_per_s
    wan = simulate_wan(setup.link, ready, bits, not_before, extra_hold_s)
    # MD holds the KV once the transfer is done and its cached prefix is read back from
    # the tier (from prefill start: model/caches/tier_read_back.py)
    read = tier_read_back.read_back_s(setup, req.input_tokens, routes.md_hit_rate)
    if read.any():
        done = np.where(payload > 0, np.maximum(wan.done_s, prefill.start_s + read), wan.done_s)
        wan = dataclasses.replace(wan, done_s=done)
    return path, prefill, service, rdma_done, payload, wan


def _prefill_run(setup: Setup, req: Requests, windows=None) -> tuple[PrefillRun, np.ndarray]:
    """The prefill pool over all requests and each request's time in it (first chunk's
    step start to last chunk's step end): batched steps up to the engine's token budget
    (sim/prefill.py), or one request at a time where batching does not apply."""
    inst, count = setup.prefill.instance, setup.prefill.group.count
    per_gpu = setup.scenario.engine.prefill_token_budget_per_gpu
    longest = float(req.input_tokens.max())
    if not batching_applies(per_gpu, setup.deployment.architecture):
        service = PrefillTimes(inst, longest).service_s(req.uncached_tokens, req.cached_tokens)
        return fcfs_pool(req.arrival_s, service, count, windows), service
    budget = budget_tokens(inst, per_gpu)
    steps = ChunkTable(inst, budget, longest)
    prefill = batched_pool(req.arrival_s, req.uncached_tokens, req.cached_tokens, count,
                           budget, steps.step_s, windows)  # fmt: skip
    prefill = with_load(prefill, steps.full_step_s(), budget)
    return prefill, prefill.end_s - prefill.start_s


def _rdma_done(setup: Setup, rdma_payload_bytes, service, prefill: PrefillRun, path):
    """When each request's KV is on its local decode pool (NaN: it goes straight to MD)."""
    p_inst = setup.prefill.instance
    rdma = rdma_transfer_s(rdma_payload_bytes, p_inst.gpus, p_inst.gpu)
    # KV streams to RLD layer by layer under the prefill: what is left is the part not
    # overlapped, at least the last layer's share
    rdma_visible = np.maximum(rdma - service, rdma / setup.model.num_layers)
    rdma_visible = rdma_visible if setup.deployment.architecture != "colocated" else 0.0
    return np.where(path != rt.DIRECT, prefill.end_s + rdma_visible, np.nan)


def _first_from_prefill(prefill_end_s, first_s, last_s, tokens, gaps_s):
    """Colocated: the prefill pass emits the first token (every engine samples it from
    the prompt's last position), decode the rest: the stage's first token, its last (the
    prefill's, for a one-token answer), its tokens and the wait for the first decode
    token among the gaps."""
    decoded = tokens > 0
    first_gap = np.where(decoded, first_s - prefill_end_s, 0.0)
    return (prefill_end_s.copy(), np.where(decoded, last_s, prefill_end_s), tokens + 1,
            np.maximum(gaps_s, first_gap))  # fmt: skip


def _collect(setup, config, rate, req, path, prefill, service, rdma_done, payload, wan, engine,
             local_pools, main_pool) -> SimRun:  # fmt: skip
    n = len(req)
    lf, ll, li, lt, lseg, lgap = stage_times(engine, LOCAL_STAGE, local_pools, n)
    engine.rec[LOCAL_STAGE] = None  # read: freed before the next stage's columns are built
    if setup.deployment.architecture == "colocated":
        lf, ll, lt, lgap = _first_from_prefill(prefill.end_s, lf, ll, lt, lgap)
    mf, ml, mi, mt, mseg, mgap = stage_times(
        engine, MAIN_STAGE, [main_pool] if main_pool else [], n
    )
    engine.rec[MAIN_STAGE] = None
    handoff_gap = np.where((lt > 0) & (mt > 0), mf - ll, 0.0)
    np.maximum(handoff_gap, np.maximum(lgap, mgap, out=lgap), out=handoff_gap)
    largest_gap = handoff_gap  # (in place: no temporaries per request)
    trace = Trace(req, path, prefill, service, rdma_done, payload, wan,
                  li, lf, ll, lt, mi, mf, ml, mt, engine.overflowed.copy(),
                  largest_gap)  # fmt: skip
    arch = setup.deployment.architecture
    roles = {"pdd": ("relay_decode", "main_decode"), "cdc_pd": (None, "main_decode"),
             "idc_pd": ("decode", None), "colocated": ("colocated", None)}[arch]  # fmt: skip
    segments = {r: s for r, s in zip(roles, (lseg, mseg), strict=True) if r}
    return SimRun(setup, config, rate, trace, segments)
