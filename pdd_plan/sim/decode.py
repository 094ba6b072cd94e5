"""The decode side: continuous batching on the local pool (RLD, IDC-PD's decode or the
colocated instances) and on main decode (MD), and the extend-decode handoff between them.

Events, in wall-time order:
- ARRIVE(stage, request, handed tokens, mode): the request's KV is on the stage's pool; it
  joins the least-loaded instance that has a free slot and room for the KV blocks it
  reserves, at its next step boundary; else it waits FIFO (MD, IDC-PD, colocated) or,
  on RLD, overflows: the router sends it P -> MD, where it joins once its KV is there.
- HANDOFF(request): MD holds the KV of a relayed request (its WAN transfer is complete).
  One-shot: RLD stops at its next boundary, the token ids cross the line and MD's engine
  sets up the handoff (one RTT + the fixed engine cost), then MD admits it like any
  request (slot wait, next boundary) and absorbs the e tokens RLD emitted in one
  extend-decode step that also emits the next token. Catch-up: the same delay, slot and
  boundary waits, while RLD keeps going and streams its ids (one way each); MD extend-
  decodes the ids that reached it by its join, then absorbs what arrived meanwhile in its
  next steps until it has caught up; RLD stops at its first boundary after the stop
  reaches it (one way).
- BOUNDARY(instance): the instance's batch changes at a step boundary (leaves, joins).
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from pdd_plan.model.decode.handoff import run_catch_up
from pdd_plan.sim.decode_instance import DecodeInstance
from pdd_plan.sim.steps import DecodeSteps

ARRIVE, HANDOFF, BOUNDARY, AVAILABLE = 0, 1, 2, 3
LOCAL_STAGE, MAIN_STAGE = 0, 1


@dataclass
class Pool:
    """`cap`: most requests an instance runs (the TPOT-feasible batch); `kv_capacity_bytes`:
    KV an instance admits (requests reserve `kv_need` each: what one request holds on
    this pool's instances, replicated heads counted; None: the engine's `kv_need`);
    `overflow`: a request that finds no room is not queued (RLD: the router sends it
    P -> MD)."""

    steps: DecodeSteps
    instances: list[DecodeInstance]
    cap: int
    kv_capacity_bytes: float = float("inf")  # per KV bin
    overflow: bool = False
    kv_bins: int = 1  # separate KV pools per instance (one per GPU under expert parallelism)
    queue: deque = field(default_factory=deque)
    loads: list = None  # requests running or joining, per instance (for dispatch)
    kv_used: list = None  # KV bytes reserved, per instance and bin
    kv_need: object = None  # KV bytes each request reserves here (indexable by request)
    # per slot, (from, until): takes requests in between, finishes what it holds (sim/replay.py)
    windows: list | None = None

    def takes(self, inst: DecodeInstance, t: float) -> bool:  # a new request at wall time t
        return self.windows is None or self.windows[inst.slot][0] <= t < self.windows[inst.slot][1]

    def __post_init__(self):
        self.loads = [0] * len(self.instances)
        self.kv_used = [[0.0] * self.kv_bins for _ in self.instances]

    def free_bin(self, inst: DecodeInstance, need: float) -> int | None:
        """The emptiest KV bin of `inst` with room for `need` bytes (None: none)."""
        used = self.kv_used[inst.slot]
        b = min(range(self.kv_bins), key=used.__getitem__)
        return b if used[b] + need <= self.kv_capacity_bytes else None

    def fits(self, inst: DecodeInstance, need: float, joining: int = 0) -> bool:
        return inst.load + joining < self.cap and self.free_bin(inst, need) is not None

    def sync(self, inst: DecodeInstance) -> None:
        self.loads[inst.slot] = inst.batch + len(inst.pending)


@dataclass
class StageRecord:
    """Per request, on one stage: instance, join / first-token step, tokens (numpy, not
    Python objects: 24 bytes a request)."""

    n: int
    instance: np.ndarray = None
    join: np.ndarray = None
    first: np.ndarray = None
    tokens: np.ndarray = None

    def __post_init__(self):
        self.instance = np.full(self.n, -1, dtype=np.int32)
        self.join, self.first = (np.full(self.n, -1, dtype=np.int64) for _ in "ab")
        self.tokens = np.zeros(self.n, dtype=np.int32)


def _flat(typecode: str, values: np.ndarray, dtype) -> array:
    """A compact array of Python numbers: indexing it gives a plain int or float, as a
    list would, at 8 bytes an entry instead of ~32."""
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values, dtype=dtype).tobytes())
    return out


def _load(inst: DecodeInstance) -> int:
    return inst.load


class DecodeEngine:
    """Runs every decode event; `pools[stage]` is a list of pools (one per colocated
    instance, else one) and `local_pool_of[request]` picks the local one."""

    def __init__(self, local_pools: list[Pool], main_pool: Pool | None, inputs, outputs, mode,
                 kv_need=None, wan_done_s=None, handoff_delay_s: float = 0.0,
                 one_way_s: float = 0.0):  # fmt: skip
        """`kv_need`: KV bytes each request reserves on admission; `wan_done_s`: when MD
        holds each request's KV (where RLD overflows to P -> MD); `handoff_delay_s`: the
        token-id round trip + the engine's fixed cost of a handoff (model/decode/handoff.py);
        `one_way_s`: half the line's RTT (catch-up streams ids and sends its stop one way)."""
        self.pools = {LOCAL_STAGE: local_pools, MAIN_STAGE: [main_pool] if main_pool else []}
        n = len(inputs)
        self.inputs = _flat("d", inputs, np.float64)
        self.outputs = _flat("q", outputs, np.int64)  # whole numbers of tokens
        self.catch_up = mode == "catch_up"
        self.kv_need = _flat("d", np.zeros(n) if kv_need is None else kv_need, np.float64)
        for pool in [*local_pools, *self.pools[MAIN_STAGE]]:
            if pool.kv_need is None:
                pool.kv_need = self.kv_need
            elif not isinstance(pool.kv_need, array):
                pool.kv_need = _flat("d", pool.kv_need, np.float64)
        self.wan_done = wan_done_s
        self.handoff_delay_s = handoff_delay_s
        self.one_way_s = one_way_s
        self.overflowed = np.zeros(n, dtype=bool)
        # the KV bin each request holds, per stage: under catch-up a request holds KV on RLD
        # and MD at once (from MD's admission to RLD's stop), each freed by its own stage
        self.kv_bin = {s: _flat("i", np.zeros(n), np.int32) for s in (LOCAL_STAGE, MAIN_STAGE)}
        self.rec = {LOCAL_STAGE: StageRecord(n), MAIN_STAGE: StageRecord(n)}
        self.leave_of = {LOCAL_STAGE: {}, MAIN_STAGE: {}}  # live leave step per request
        # local-stage state of the live requests: ("queued"|"pending"|"run", ...); a request
        # not in it is done (removed, so that it holds nothing per finished request)
        self.where: dict[int, tuple] = {}
        self.events: list = []
        self.seq = 0
        self._ctx_offset = {LOCAL_STAGE: {}, MAIN_STAGE: {}}  # context at join - join step

    # ---- scheduling --------------------------------------------------------------------
    def push(self, t: float, kind: int, payload) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, payload))

    def _wall(self, inst: DecodeInstance, v: float) -> float:
        return v if inst.clock is None else inst.clock.to_wall(v)

    def _own(self, inst: DecodeInstance, t: float) -> float:
        return t if inst.clock is None else inst.clock.to_decode(t)

    def _reschedule(self, stage: int, p: int, inst: DecodeInstance) -> None:
        inst.version += 1
        k = inst.next_change(self.leave_of[stage])
        if k is not None and inst.busy:
            wall = self._wall(inst, inst.time_of(k))
            self.push(wall, BOUNDARY, (stage, p, inst, inst.version, k))

    # ---- joining -------------------------------------------------------------------------
    def _least_loaded(self, pool: Pool, rid: int, t: float) -> DecodeInstance | None:
        """The least-loaded instance taking requests at t, with a slot and room for its KV."""
        need = pool.kv_need[rid]
        for inst in sorted(pool.instances, key=_load):  # stable: ties in instance order
            if not pool.takes(inst, t):
                continue
            if inst.load >= pool.cap:
                return None  # and so is every instance after it
            if pool.free_bin(inst, need) is not None:
                return inst
        return None

    def _reserve(self, stage: int, pool: Pool, inst: DecodeInstance, rid: int,
                 sign: float = 1.0) -> None:  # fmt: skip
        """Reserve (sign 1) or free (-1) the request's KV blocks in one bin of `inst`, on
        `stage` (the bin it holds there)."""
        bins = self.kv_bin[stage]
        if sign > 0:
            b = pool.free_bin(inst, pool.kv_need[rid])
            bins[rid] = 0 if b is None else b
        pool.kv_used[inst.slot][bins[rid]] += sign * pool.kv_need[rid]

    def _join(self, stage: int, p: int, inst: DecodeInstance, t: float, spec: tuple) -> None:
        """Join at the next boundary (now, if the instance is idle)."""
        rid = spec[0]
        self.rec[stage].instance[rid] = inst.index
        self._reserve(stage, self.pools[stage][p], inst, rid)
        if stage == LOCAL_STAGE:
            self.where[rid] = ("pending", p, inst)
        if not inst.busy:
            inst.pending.append(spec)
            inst.pending_k = inst.k0
            self._boundary(stage, p, inst, inst.k0, self._own(inst, t))
            return
        inst.pending_k = inst.next_boundary(self._own(inst, t))
        inst.pending.append(spec)
        self.pools[stage][p].sync(inst)
        self._reschedule(stage, p, inst)

    def arrive(self, stage: int, p: int, t: float, spec: tuple) -> None:
        pool = self.pools[stage][p]
        inst = self._least_loaded(pool, spec[0], t)
        if inst is None and pool.overflow:
            self._overflow(t, spec[0])
            return
        if inst is None:
            pool.queue.append(spec)
            if stage == LOCAL_STAGE:
                self.where[spec[0]] = ("queued", p, None)
            return
        if stage == MAIN_STAGE and spec[5] == "catch_up":
            spec = self._catch_up_spec(inst, t, spec)
            if spec is None:
                return
        self._join(stage, p, inst, t, spec)

    # ---- boundaries ------------------------------------------------------------------------
    def _boundary(self, stage: int, p: int, inst: DecodeInstance, k: int, t_own: float) -> None:
        """Apply the leaves and joins at step boundary k (time t_own on the instance's clock),
        admit queued requests, and start the next segment."""
        rec, leave_of, pool = self.rec[stage], self.leave_of[stage], self.pools[stage][p]
        while inst.leaves and inst.leaves[0][0] <= k:
            k_leave, rid = heapq.heappop(inst.leaves)
            if leave_of.get(rid) == k_leave:
                del leave_of[rid]
                inst.batch -= 1
                self._reserve(stage, pool, inst, rid, -1.0)
                inst.ctx_base -= self._ctx_offset[stage].pop(rid)
                if stage == LOCAL_STAGE:
                    self.where.pop(rid, None)
        if inst.pending and inst.pending_k <= k:
            joining, inst.pending = inst.pending, []
        else:
            joining = []
        taking = pool.takes(inst, self._wall(inst, t_own))
        while taking and pool.queue and pool.fits(inst, pool.kv_need[pool.queue[0][0]],
                                                  len(joining)):  # fmt: skip
            spec = pool.queue.popleft()
            if stage == MAIN_STAGE and spec[5] == "catch_up":
                spec = self._catch_up_spec(inst, self._wall(inst, t_own), spec, k_now=k)
                if spec is None:
                    continue
            joining.append(spec)
            rec.instance[spec[0]] = inst.index
            self._reserve(stage, pool, inst, spec[0])
        extend_tokens = 0
        for rid, tokens, handed, skip, context, _ in joining:
            rec.join[rid], rec.first[rid] = k, k + 1 + skip
            rec.tokens[rid] = tokens
            leave_of[rid] = k + skip + tokens
            heapq.heappush(inst.leaves, (k + skip + tokens, rid))
            inst.batch += 1
            self._ctx_offset[stage][rid] = context - k
            inst.ctx_base += context - k
            extend_tokens += handed
            if stage == LOCAL_STAGE:
                self.where[rid] = ("run", p, inst)
        d = d_first = 0.0
        if inst.batch:
            steps = pool.steps
            d = steps.step_s(inst.batch, inst.ctx_base / inst.batch + k)
            d_first = (
                steps.extend_s(inst.batch, extend_tokens, inst.ctx_base / inst.batch + k)
                if extend_tokens
                else d
            )
        inst.start_segment(k, t_own, d_first, d)
        pool.sync(inst)
        self._reschedule(stage, p, inst)

    # ---- the handoff ------------------------------------------------------------------------
    def _catch_up_spec(self, md: DecodeInstance, t: float, spec: tuple, k_now=None):
        """Catch-up's rounds on MD's and RLD's own step grids (model/handoff.run_catch_up):
        MD joins at its next boundary j and extend-decodes the ids that reached it by then
        (RLD streams each one way); each following MD step absorbs the ids that arrived
        during the previous one, until MD has caught up; the stop reaches RLD one way later
        and RLD leaves at its next boundary. The user takes RLD's tokens up to there, then
        MD's (MD recomputes RLD's last few: it emits from RLD's stop on)."""
        rid = spec[0]
        state = self.where.get(rid, ("done",))
        if state[0] != "run":
            return spec if state[0] != "done" else None
        rld, k_join = state[2], self.rec[LOCAL_STAGE].join[rid]
        out, tau = self.outputs[rid], self.one_way_s
        if k_now is not None or not md.busy:
            k_j, t_j = (md.k0 if k_now is None else k_now), t
        else:
            k_j = md.next_boundary(self._own(md, t))
            t_j = self._wall(md, md.time_of(k_j))
        emitted = min(rld.steps_done_at(t_j - tau) - k_join, out)
        if emitted >= out:
            return None  # RLD finishes it before MD could take over
        md_steps, batch = self.pools[MAIN_STAGE][0].steps, md.load + 1
        ctx = self.inputs[rid] + emitted
        # MD's steps at its batch's mean context with this request in it (as `_boundary`)
        mean_ctx = (md.ctx_base + ctx - k_j) / (md.batch + 1) + k_j

        def md_step_s(k: int) -> float:
            if k > 0:
                return md_steps.extend_s(batch, k, mean_ctx)
            return md_steps.step_s(batch, mean_ctx)

        def rld_tokens_by(t_s: float) -> int:
            return rld.steps_done_at(t_s) - k_join

        rounds = run_catch_up(t_j, emitted, rld_tokens_by, md_step_s, tau, out)
        stop = rld.next_boundary(rounds.stop_s) if rld.busy else rld.k0
        total = min(stop - k_join, out)
        if total >= out:
            return None
        self._stop_local(rid, rld, stop, total)
        # MD emits RLD's position + 1 at its round-th step, then one a step: the first token
        # the user takes from MD (total + 1) comes (total - position) steps later
        skip = rounds.md_steps + max(total - rounds.md_position_tokens, 0) - 1
        return (rid, out - total, emitted, skip, ctx, "catch_up")

    def _overflow(self, t: float, rid: int) -> None:
        """RLD is full: the router sends the request P -> MD, which takes it once its KV
        is there."""
        self.overflowed[rid] = True
        self.where.pop(rid, None)  # its handoff event finds nothing to hand off
        self.rec[LOCAL_STAGE].instance[rid] = -1
        spec = (rid, self.outputs[rid], 0, 0, self.inputs[rid], "direct")
        self.push(max(t, float(self.wan_done[rid])), ARRIVE, (MAIN_STAGE, 0, spec))

    def _stop_local(self, rid: int, rld: DecodeInstance, stop: int, tokens: int) -> None:
        self.leave_of[LOCAL_STAGE][rid] = stop
        self.rec[LOCAL_STAGE].tokens[rid] = tokens
        heapq.heappush(rld.leaves, (stop, rid))
        self._reschedule(LOCAL_STAGE, self.where[rid][1], rld)

    def handoff(self, t: float, rid: int) -> None:
        state = self.where.get(rid, ("done",))
        direct = (rid, self.outputs[rid], 0, 0, self.inputs[rid], "direct")
        if state[0] == "done":
            return  # RLD finished the whole output
        if state[0] in ("queued", "pending"):  # MD holds the KV before RLD started
            pool = self.pools[LOCAL_STAGE][state[1]]
            if state[0] == "queued":
                pool.queue = deque(s for s in pool.queue if s[0] != rid)
            else:
                inst = state[2]
                inst.pending = [s for s in inst.pending if s[0] != rid]
                self._reserve(LOCAL_STAGE, pool, inst, rid, -1.0)
                pool.sync(inst)
                self._reschedule(LOCAL_STAGE, state[1], inst)
            self.rec[LOCAL_STAGE].instance[rid] = -1
            self.where.pop(rid, None)
            self.arrive(MAIN_STAGE, 0, t, direct)
            return
        if self.catch_up:  # MD asks for the ids, gets them, and sets up the extend step
            spec = (rid, 0, 0, 1, 0, "catch_up")
            self.push(t + self.handoff_delay_s, ARRIVE, (MAIN_STAGE, 0, spec))
            return
        rld, k_join, out = state[2], self.rec[LOCAL_STAGE].join[rid], self.outputs[rid]
        stop = rld.next_boundary(t)
        emitted = stop - k_join
        if emitted >= out:
            return
        self._stop_local(rid, rld, stop, emitted)
        spec = (rid, out - emitted, emitted, 0, self.inputs[rid] + emitted, "one_shot")
        self.push(rld.time_of(stop) + self.handoff_delay_s, ARRIVE, (MAIN_STAGE, 0, spec))

    def drop_request_state(self) -> None:
        """After the run only `rec` and `overflowed` are read: free the rest before the
        per-request results are built beside them."""
        self.inputs = self.outputs = self.kv_need = self.kv_bin = self.wan_done = None

    # ---- the loop -----------------------------------------------------------------------------
    def run(self, until: float = float("inf")) -> None:
        """Every event before `until` (all of them by default)."""
        events = self.events
        while events and not events[0][0] >= until:  # (a NaN time is run, not left)
            t, _, kind, payload = heapq.heappop(events)
            if kind == BOUNDARY:
                stage, p, inst, version, k = payload
                if version == inst.version:
                    self._boundary(stage, p, inst, k, inst.time_of(k))
            elif kind == ARRIVE:
                self.arrive(payload[0], payload[1], t, payload[2])
            elif kind == AVAILABLE:  # an instance joins: it takes the queue's head
                stage, p, inst = payload
                if not inst.busy and self.pools[stage][p].queue:
                    self._boundary(stage, p, inst, inst.k0, self._own(inst, t))
            else:
                self.handoff(t, payload)


def local_spec(rid: int, outputs, inputs) -> tuple:
    return (rid, int(outputs[rid]), 0, 0, float(inputs[rid]), "local")


def direct_spec(rid: int, outputs, inputs) -> tuple:
    return (rid, int(outputs[rid]), 0, 0, float(inputs[rid]), "direct")
