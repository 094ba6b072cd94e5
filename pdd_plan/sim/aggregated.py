"""One aggregated serving instance, iteration by iteration, as a benchmark drives it.

`pdd-plan estimate --concurrency N` (closed loop: N clients, each sends its next request
the moment its last one finishes, as `vllm bench serve --max-concurrency`, SGLang's
`bench_serving` and genai-perf run) and `--rate R` (open loop, Poisson arrivals). Every
request has the same input and output length (benchmark style).

The scheduler is vLLM's (V1, chunked prefill): each iteration decodes every running
request that has its first token, then fills what is left of the token budget
(`max_batched_tokens`) with prefill chunks, first of running requests whose prompt is
partly computed, then of waiting ones in arrival order, while fewer than `max_running`
requests run. A request emits its first token at the end of the iteration that computes
the last chunk of its prompt, and one token per iteration after that.

An iteration's time is the roofline's mixed step (`Instance.mixed_step_s`): its decode
requests at their mean context plus its chunks (as that many prompts of the mean chunk
length after the mean cached length). In closed loop a new request arrives at an
iteration boundary, so which requests run in which iteration does not depend on the
step times: the schedule is computed once and re-timed for any engine profile
(`IterationParts.seconds`), which is what lets `calibrate serving` fit a profile to
benchmark percentiles in seconds. In open loop arrivals fall between iterations, so the
schedule is recomputed with the step times.

Deterministic: the same inputs (and seed, in open loop) give the same numbers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np

from pdd_plan.model.compute.engine_profile import step_parts
from pdd_plan.model.compute.roofline import Instance

MAX_BATCHED_TOKENS = 8192  # vLLM's default token budget per iteration (chunked prefill)
MAX_RUNNING = 256  # vLLM's default max_num_seqs
PERCENTILES = (50, 90, 99)
# open loop: contexts are rounded to this many tokens when an iteration is timed (a
# 16-token change of a 1,000-token context moves a decode step by well under 1 %)
CONTEXT_STEP_TOKENS = 16


@dataclass(frozen=True)
class Load:
    """A benchmark run: fixed lengths, `requests` in all, closed loop (`concurrency`)
    or open loop (`rate_per_s`, Poisson arrivals from `seed`)."""

    isl_tokens: int
    osl_tokens: int
    requests: int
    concurrency: int | None = None
    rate_per_s: float | None = None
    seed: int = 0
    max_batched_tokens: int = MAX_BATCHED_TOKENS
    max_running: int = MAX_RUNNING

    def __post_init__(self):
        if (self.concurrency is None) == (self.rate_per_s is None):
            raise ValueError("give exactly one of concurrency and rate_per_s")
        if min(self.isl_tokens, self.osl_tokens, self.requests, self.max_batched_tokens) < 1:
            raise ValueError("lengths, requests and the token budget must be >= 1")


@dataclass
class _Request:
    arrive_s: float = 0.0
    arrive_iter: int = 0
    prefilled_tokens: int = 0
    first_iter: int = -1
    done_iter: int = -1


@dataclass
class Schedule:
    """Per iteration: decode requests, the sum of their contexts, prefill chunks, their
    new tokens and the tokens they had computed before (sums); per request: the
    iteration it joined before, its first-token and last-token iterations."""

    decode: list = field(default_factory=list)
    context_sum: list = field(default_factory=list)
    prompts: list = field(default_factory=list)
    new_tokens: list = field(default_factory=list)
    cached_tokens: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    gate_s: list = field(default_factory=list)  # open loop (`open_loop_schedule`)


class _Engine:
    """The scheduler's state: waiting (FCFS), prefilling and decoding requests."""

    def __init__(self, load: Load, max_running: int):
        self.load, self.max_running = load, max_running
        self.waiting: deque[_Request] = deque()
        self.prefilling: list[_Request] = []
        self.decoding: deque[_Request] = deque()  # finish in the order they started
        self.context_sum = 0  # tokens of KV of the decoding requests
        self.out = Schedule()

    def busy(self) -> bool:
        return bool(self.waiting or self.prefilling or self.decoding)

    def _chunks(self) -> list[tuple[_Request, int]]:
        budget = self.load.max_batched_tokens - len(self.decoding)
        isl, chunks = self.load.isl_tokens, []
        for r in self.prefilling:
            if budget <= 0:
                return chunks
            chunks.append((r, min(isl - r.prefilled_tokens, budget)))
            budget -= chunks[-1][1]
        while self.waiting and budget > 0:
            if len(self.decoding) + len(self.prefilling) >= self.max_running:
                break
            r = self.waiting.popleft()
            self.prefilling.append(r)
            chunks.append((r, min(isl, budget)))
            budget -= chunks[-1][1]
        return chunks

    def iterate(self) -> list[_Request]:
        """Run one iteration; the requests it finishes."""
        it, s, load = len(self.out.decode), self.out, self.load
        chunks = self._chunks()
        s.decode.append(len(self.decoding))
        self.context_sum += len(self.decoding)  # each decode request's new token
        s.context_sum.append(self.context_sum)
        s.prompts.append(len(chunks))
        s.new_tokens.append(sum(n for _, n in chunks))
        s.cached_tokens.append(sum(r.prefilled_tokens for r, _ in chunks))
        done = []
        while self.decoding and self.decoding[0].done_iter == it:
            r = self.decoding.popleft()
            self.context_sum -= load.isl_tokens + load.osl_tokens - 1
            done.append(r)
        for r, n in chunks:
            r.prefilled_tokens += n
            if r.prefilled_tokens == load.isl_tokens:
                self.prefilling.remove(r)
                r.first_iter, r.done_iter = it, it + load.osl_tokens - 1
                if load.osl_tokens == 1:
                    done.append(r)
                else:
                    self.decoding.append(r)
                    self.context_sum += load.isl_tokens
        return done


def closed_loop_schedule(load: Load, max_running: int) -> Schedule:
    """The iterations of `load.concurrency` clients sending `load.requests` in all."""
    engine = _Engine(load, max_running)
    clients = min(load.concurrency, load.requests)
    for _ in range(clients):
        engine.waiting.append(_Request())
    engine.out.requests.extend(engine.waiting)
    sent = clients
    while engine.busy():
        for _ in engine.iterate():
            if sent < load.requests:
                r = _Request(arrive_iter=len(engine.out.decode))
                engine.waiting.append(r)
                engine.out.requests.append(r)
                sent += 1
    return engine.out


class IterationParts:
    """The plain roofline's parts of a schedule's iterations, re-timed for any profile
    vector by `seconds` (the same arithmetic as `Instance.mixed_step_s`)."""

    def __init__(self, inst: Instance, schedule: Schedule):
        plain = replace(inst, engine_profile=inst.engine_profile.mtp_only())  # MTP verifies
        decode = np.asarray(schedule.decode, dtype=float)
        prompts = np.asarray(schedule.prompts, dtype=float)
        per_prompt = 1.0 / np.maximum(prompts, 1.0)
        context = np.asarray(schedule.context_sum, dtype=float) / np.maximum(decode, 1.0)
        new = np.rint(np.asarray(schedule.new_tokens, dtype=float) * per_prompt)
        cached = np.asarray(schedule.cached_tokens, dtype=float) * per_prompt
        # every part a profile re-weighs (the KV, expert and attention shares, kernels)
        self.parts = plain.plain_step_parts(decode, context, new, cached, prompts)
        groups = inst.gpus if inst.parallel_mode() == "ep" else 1
        self.counts = dict(decode_requests=decode, prompts=prompts, new_tokens=new, groups=groups)

    def seconds(self, params) -> np.ndarray:
        compute_s, memory_s, comm_s, overhead_s = step_parts(params, self.parts, self.counts)
        return np.maximum(compute_s, memory_s) + comm_s + overhead_s


@dataclass(frozen=True)
class Serving:
    """Per-request TTFT and TPOT (s), the run's length, and the iterations' decode batch."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray  # requests with more than one output token
    duration_s: float
    output_tokens: int
    mean_batch: float  # decode requests per iteration, weighted by iteration time

    def summary(self) -> dict:
        out = {"requests": len(self.ttft_s), "duration_s": self.duration_s}
        for name, values in (("ttft", self.ttft_s), ("tpot", self.tpot_s)):
            out[f"{name}_mean_s"] = float(np.mean(values)) if len(values) else None
            for q in PERCENTILES:
                value = float(np.percentile(values, q)) if len(values) else None
                out[f"{name}_p{q}_s"] = value
        out["request_throughput_per_s"] = len(self.ttft_s) / self.duration_s
        out["output_throughput_tokens_per_s"] = self.output_tokens / self.duration_s
        out["mean_batch"] = self.mean_batch
        return out


def time_closed_loop(schedule: Schedule, step_s: np.ndarray, osl_tokens: int) -> Serving:
    """Percentiles of a closed-loop schedule whose iterations take `step_s`."""
    end = np.cumsum(step_s)
    start = end - step_s
    arrive = np.array([r.arrive_iter for r in schedule.requests])
    first = np.array([r.first_iter for r in schedule.requests])
    done = np.array([r.done_iter for r in schedule.requests])
    ttft = end[first] - start[arrive]
    tpot = _tpot(end[done] - end[first], osl_tokens)
    decode = np.asarray(schedule.decode, dtype=float)
    mean_batch = float(np.sum(decode * step_s) / end[-1])
    return Serving(ttft, tpot, float(end[-1]), len(arrive) * osl_tokens, mean_batch)


def open_loop_schedule(inst: Instance, load: Load, max_running: int) -> Schedule:
    """Poisson arrivals at `load.rate_per_s`; the schedule follows the step times. Each
    iteration's `gate_s` is the latest arrival it admitted (an idle engine waits for it)."""
    rng = np.random.default_rng(load.seed)
    arrivals = np.cumsum(rng.exponential(1.0 / load.rate_per_s, load.requests))
    engine, memo = _Engine(load, max_running), {}
    clock, sent = 0.0, 0
    while sent < load.requests or engine.busy():
        if not engine.busy():
            clock = max(clock, float(arrivals[sent]))
        gate = 0.0
        while sent < load.requests and arrivals[sent] <= clock:
            r = _Request(arrive_s=float(arrivals[sent]))
            engine.waiting.append(r)
            engine.out.requests.append(r)
            gate, sent = r.arrive_s, sent + 1
        engine.out.gate_s.append(gate)
        engine.iterate()
        clock += _last_step_s(inst, engine.out, memo)
    return engine.out


def time_open_loop(s: Schedule, step_s: np.ndarray, load: Load) -> Serving:
    """Percentiles of an open-loop schedule re-timed with `step_s`: an iteration starts
    when the last one ends or, on an idle engine, at its gate (the arrival it waited
    for): end[i] = C[i] + max over j <= i of (gate[j] - C[j-1]), C the cumulative time.
    With the step times it was scheduled with, this is the run itself; with others, the
    same schedule re-timed (sim/serving_fit.py iterates to the schedule they make)."""
    cumulative = np.cumsum(step_s)
    end = cumulative + np.maximum.accumulate(np.asarray(s.gate_s) - (cumulative - step_s))
    arrive = np.array([r.arrive_s for r in s.requests])
    first = np.array([r.first_iter for r in s.requests])
    done = np.array([r.done_iter for r in s.requests])
    ttft = end[first] - arrive
    tpot = _tpot(end[done] - end[first], load.osl_tokens)
    duration = float(end[-1] - arrive[0])
    mean_batch = float(np.sum(np.asarray(s.decode) * step_s) / np.sum(step_s))
    return Serving(ttft, tpot, duration, len(arrive) * load.osl_tokens, mean_batch)


def _last_step_s(inst: Instance, s: Schedule, memo: dict) -> float:
    """The last iteration's time; contexts rounded to CONTEXT_STEP_TOKENS so that the
    thousands of near-identical decode steps of a long run are timed once each."""
    decode, prompts = s.decode[-1], max(s.prompts[-1], 1)
    context = CONTEXT_STEP_TOKENS * round(s.context_sum[-1] / max(decode, 1) / CONTEXT_STEP_TOKENS)
    cached = CONTEXT_STEP_TOKENS * round(s.cached_tokens[-1] / prompts / CONTEXT_STEP_TOKENS)
    key = (decode, context, round(s.new_tokens[-1] / prompts), cached, s.prompts[-1])
    if key not in memo:
        memo[key] = float(inst.mixed_step_s(*key))
    return memo[key]


def _tpot(decode_s: np.ndarray, osl_tokens: int) -> np.ndarray:
    """(last token - first token) / (output tokens - 1); none for one-token outputs."""
    return decode_s / (osl_tokens - 1) if osl_tokens > 1 else np.array([])


def running_cap(inst: Instance, load: Load) -> int:
    """Requests that may run at once: the engine's limit and what the KV cache holds at
    each request's full length (0: not one fits)."""
    return min(load.max_running, inst.max_batch(load.isl_tokens + load.osl_tokens))


def serve(inst: Instance, load: Load) -> Serving:
    """Serve `load` on `inst` (with its engine profile). ValueError when the KV cache
    cannot hold one request."""
    cap = running_cap(inst, load)
    if cap < 1:
        raise ValueError("the KV cache cannot hold one request of this length")
    if load.concurrency is not None:
        schedule = closed_loop_schedule(load, cap)
        step_s = IterationParts(inst, schedule).seconds(inst.engine_profile.vector())
        return time_closed_loop(schedule, step_s, load.osl_tokens)
    schedule = open_loop_schedule(inst, load, cap)
    step_s = IterationParts(inst, schedule).seconds(inst.engine_profile.vector())
    return time_open_loop(schedule, step_s, load)
