"""A scenario: what the planner is asked to plan for. Plain data, SI units."""

from __future__ import annotations

from dataclasses import dataclass, field

from pdd_plan.model.caches.cache_tier import CacheOptions
from pdd_plan.model.capacity_classes import CapacityClasses
from pdd_plan.model.compute.attention import KvLayout
from pdd_plan.model.compute.engine_profile import IDENTITY, EngineProfile
from pdd_plan.model.prices import NO_QUOTES, Quotes
from pdd_plan.model.workload.load_curve import LoadCurve
from pdd_plan.model.workload.workload import Distribution

ROLES = ("prefill", "relay_decode", "main_decode", "decode", "colocated")
ARCHITECTURES = ("pdd", "idc_pd", "cdc_pd", "colocated")
OBJECTIVES = ("max_bcr", "min_cost", "max_goodput")
HANDOFF_MODES = ("catch_up", "one_shot", "auto")

# Physical floors of the scenario's figures. Below them the numbers stop describing a
# service, and the solver's arithmetic underflows (a line of 0 bit/s, a utilisation cap
# that sizes a pool to infinity, a decode batch too large to count):
MIN_ARRIVAL_RATE_PER_S = 1e-6  # one request in 11.6 days is not a serving workload
MIN_UTILIZATION_CAP_FRAC = 0.05  # a pool planned to sit 95 % idle is not a sizing
# And a ceiling: 64 lines of the largest tier carry 25.6 Tbit/s, far past any KV stream,
# while the planner's walk over line mixes grows as lines^2 x tiers (10,000 lines ran for
# minutes whatever --time-limit said).
MAX_LINES = 64


@dataclass(frozen=True)
class GpuOffer:
    """A GPU type a datacenter can host, at its local price, up to an availability."""

    gpu: str
    price_usd_per_gpu_hour: float
    max_gpus: int | None
    gpus_per_instance: tuple[int, ...]  # instance shapes allowed; empty = planner's choice


@dataclass(frozen=True)
class Datacenter:
    id: str
    roles: tuple[str, ...]
    gpus: tuple[GpuOffer, ...]
    power_budget_w: float | None = None
    budget_usd_per_hour: float | None = None
    name: str = ""  # the scenario's free-text name or location of the site (for the BOM)
    # the site's quoted electricity tariff (scenario `prices.power`); None: costs.power_usd_per_kwh
    power_usd_per_kwh: float | None = None


@dataclass(frozen=True)
class Wan:
    rtt_s: float
    tiers: tuple[str, ...]
    tier_price_usd_per_month: dict[str, float]
    per_connection_bits_per_s: float
    connection_pool_size: int
    max_lines: int
    link_rtt_s: dict[tuple[str, str], float] = field(default_factory=dict)
    # how the transfer engine uses the line (model/network/wan_streaming.py); streaming off by
    # default: the paper does not say its engine streamed over the WAN (README)
    stream_during_prefill: bool = False
    stripes_per_transfer: int = 1
    pool_hold: str = "transfer_end"  # or "handoff_end" (wan_streaming.POOL_HOLDS)

    def rtt_between(self, a: str, b: str) -> float:
        return self.link_rtt_s.get((a, b), self.link_rtt_s.get((b, a), self.rtt_s))


@dataclass(frozen=True)
class PrefixReuse:
    """A measured LRU curve of MD's decode-side cache (model/decode_cache.py): the share
    of requests whose prefix is resident at each capacity, at one arrival rate."""

    capacity_tokens: tuple[float, ...]  # ascending, > 0
    resident_frac: tuple[float, ...]  # non-decreasing, in [0, 1]
    at_arrival_rate_per_s: float


@dataclass(frozen=True)
class Workload:
    arrival_rate_per_s: float
    burstiness_cv2: float
    input_tokens: Distribution
    output_tokens: Distribution
    prefix_hit_rate: Distribution
    hit_rate_alternatives: dict[str, Distribution] = field(default_factory=dict)
    prefix_reuse: PrefixReuse | None = None  # MD cache's LRU curve (model/decode_cache.py)
    # the offered rate period by period (model/workload/load_curve.py); None: one rate
    load_curve: LoadCurve | None = None


@dataclass(frozen=True)
class Sla:
    ttft_s: dict[float, float]  # percentile (0-100) -> limit
    tpot_s: dict[float, float]


@dataclass(frozen=True)
class Objective:
    kind: str
    demand_rps: float | None = None
    budget_usd_per_hour: float | None = None


@dataclass(frozen=True)
class ShortOutputCutoff:
    """PDD finishes beside prefill, shipping nothing to MD, a request whose P-side uncached
    input bytes per output token reach the threshold (routing.cutoff_mask); None: the
    default derived from the line and the TPOT limit (routing.resolved_cutoff)."""

    enabled: bool = False
    min_uncached_bytes_per_output_token: float | None = None


@dataclass(frozen=True)
class Policy:
    rld_hit_threshold: float | None  # None = searched by the planner
    handoff: str
    short_output_cutoff: ShortOutputCutoff
    utilization_cap_frac: float
    decode_cache_capacity_tokens: float | None  # None = unlimited (MD hit rate = P's)
    # the decode-side cache as a decision (tiers x TB per MD instance); None: not bought
    decode_cache: CacheOptions | None = None
    # the optimiser may combine GPU types and shapes within the finishing decode role
    # (model/decode/mixed_pool.py); on by default: see plan/formulate.py
    mixed_pools: bool = True


@dataclass(frozen=True)
class Costs:
    include_power: bool = False
    power_usd_per_kwh: float = 0.10
    pue: float = 1.3
    # the term over which the BOM spreads a purchase price (4 years: between the 3-year
    # refresh of GPU generations and the 5-6 years servers are depreciated over)
    amortization_years: float = 4.0
    charge_whole_nodes: bool = False  # charge the idle GPUs of a partly used rented node
    # N+k: spare nodes the bill orders per role (role -> k; a role not named: 0); the BOM's
    # order lines only, never the answer's hourly cost
    spare_nodes_per_role: dict[str, int] = field(default_factory=dict)
    # reserved / on-demand / spot prices (model/capacity_classes.py): what a plan over a
    # load curve buys its GPUs in; a single-rate plan is priced on-demand
    capacity_classes: CapacityClasses = field(default_factory=CapacityClasses)


# Default token budget of one prefill step, per GPU of the instance: DeepSeek's and SGLang's
# expert-parallel prefill servers run 16,384 tokens per GPU per forward pass (the figure
# model/compute/roofline.py `prefill_time_s` and sim/steps.py's chunk cite). Per GPU, not per
# instance: each GPU's weight read is amortised over the tokens that GPU computes, so a
# per-GPU budget keeps a step's arithmetic intensity the same at any instance size.
PREFILL_TOKEN_BUDGET_PER_GPU = 16_384
MAX_PREFILL_TOKEN_BUDGET_PER_GPU = 10_000_000  # beyond any context window


@dataclass(frozen=True)
class Engine:
    """What the serving engine's own layout changes (None: computed from the model).

    `kv_layout`: how the decode engine stores a request's KV (model/compute/attention.py
    `KvLayout`: its last tokens uncompressed, the rest as the architecture compresses it);
    None: the model's own layout. One layout sets both the HBM a decoding request holds
    (how many fit beside the weights) and the KV bytes each decode step reads.
    `profile`: the engine's fitted step-time parameters (model/compute/engine_profile.py); the
    identity (the plain roofline) unless the scenario or --engine-profile names one.
    `reserve_max_output`: the engine reserves KV blocks for the workload's maximum output
    on admission (else for the request's own output).
    `prefill_token_budget_per_gpu`: the prefill step's token budget (vLLM
    `max_num_batched_tokens`, SGLang `chunked_prefill_size`) per GPU of the instance.
    """

    kv_layout: KvLayout | None = None
    # per handoff, outside the decode step (model/decode/handoff.py; None: the default derived
    # from the published recompute handoff)
    handoff_fixed_s: float | None = None
    handoff_fixed_source: str = ""
    reserve_max_output: bool = False  # admission reserves KV for the maximum output
    profile: EngineProfile = IDENTITY
    # tokens one prefill step carries per GPU of the instance (model/queueing/prefill_batch.py);
    # None: one request per step, unchunked (prefill batching off)
    prefill_token_budget_per_gpu: int | None = PREFILL_TOKEN_BUDGET_PER_GPU


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    model: str
    kv_dtype: str
    weight_dtype: str | None
    datacenters: tuple[Datacenter, ...]
    wan: Wan
    workload: Workload
    sla: Sla
    objective: Objective
    policy: Policy
    costs: Costs
    architectures: tuple[str, ...] = ARCHITECTURES
    source_file: str = ""
    engine: Engine = field(default_factory=Engine)
    # a model entry file outside the catalog (scenario `model_file:`); `model` is its id
    model_file: str = ""
    # the prices the user was quoted (model/prices.py), already applied to the fields above:
    # where each was written, not a figure, so two scenarios pricing alike are equal
    quotes: Quotes = field(default=NO_QUOTES, compare=False)

    def datacenter(self, dc_id: str) -> Datacenter:
        return next(dc for dc in self.datacenters if dc.id == dc_id)
