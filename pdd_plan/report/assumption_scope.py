"""Which rows of the assumptions table apply to one plan (#14 item 14, #22 point 8): the
sizing report lists only those, so a dense GQA model planned as IDC-PD is not told about
DeepSeek-V4's indexer, relay overflow or the WAN, and a plan without a cut-off, striping
or a finite decode-side cache is not told how those are modelled.

Each scoped row is found by the start of its text (assumptions.py keeps the README's
wording); a row with no rule here applies to every plan. Rows about the optimiser's
internals that change no answer (INTERNAL), and any row that names a source or test file,
are never shown: a procurement reader cannot act on them (the README keeps them). Tests
check that every rule still finds its row, so rewording a row cannot silently widen the
report.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pdd_plan.model.scenario import PREFILL_TOKEN_BUDGET_PER_GPU, Scenario
from pdd_plan.report.assumptions import ASSUMPTIONS

LINE_ARCHITECTURES = ("pdd", "cdc_pd")  # the architectures that lease a WAN line
# the role a mixed answer may combine types in (model/decode/mixed_pool.py)
FINISHING_ROLE = {"pdd": "main_decode", "cdc_pd": "main_decode", "idc_pd": "decode"}
# Hugging Face classes whose attention has no bias, sink or output gate (their configs set
# attention_bias false and carry no sink or gate key): the row on what parameter counts
# leave out says nothing about them. A class not listed (an imported model) keeps the row.
PLAIN_ATTENTION_CLASSES = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "LlamaForCausalLM",
    "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
})  # fmt: skip
# a file a reader does not have: a test, a module, a path in the repository
FILE_REFERENCE = re.compile(r"\b(?:tests|pdd_plan|benchmarks)/|\.py\b")


@dataclass(frozen=True)
class Scope:
    """What a row may depend on: the scenario, its model, the architecture, and where
    known the solve result reported on (its plan and choice) and the catalog's GPUs (which
    rental prices are the catalog's). Without a result, what the scenario allows."""

    s: Scenario
    m: object  # the ModelSpec
    a: str
    result: dict | None = None
    gpus: dict | None = None

    @property
    def plan(self) -> dict | None:
        return (self.result or {}).get("plan")

    def kinds(self) -> set[str]:
        return {att.kind for att, _ in self.m.layers()}

    def moe(self) -> bool:
        return self.m.routed_expert_params() > 0

    def crosses(self) -> bool:
        return self.a in LINE_ARCHITECTURES

    def batched_prefill(self) -> bool:
        """Prefill steps carry a token budget (None: one request a step, unchunked)."""
        return self.a != "colocated" and self.s.engine.prefill_token_budget_per_gpu is not None

    def cutoff(self) -> bool:
        if self.a != "pdd":
            return False
        if self.plan is not None:
            return bool(self.plan["policy"].get("short_output_cutoff"))
        return self.s.policy.short_output_cutoff.enabled

    def catch_up(self) -> bool:
        handoff = self.plan["policy"]["handoff"] if self.plan else self.s.policy.handoff
        return self.a == "pdd" and handoff in ("catch_up", "auto")

    def finite_cache(self) -> bool:
        """MD's decode-side cache has a capacity (else every prefix stays: MD's hit = P's)."""
        if not self.crosses():
            return False
        if self.plan is not None and (self.plan.get("decode_cache") or {}).get("tb", 0) > 0:
            return True
        if self.plan is None and self.s.policy.decode_cache is not None:
            return True
        return self.s.policy.decode_cache_capacity_tokens is not None

    def may_mix(self) -> bool:
        return self.s.policy.mixed_pools and self.a in FINISHING_ROLE

    def mixed(self) -> bool:
        """The finishing decode role combines GPU types or shapes (without a plan: it may)."""
        if self.plan is None:
            return self.may_mix()
        role = FINISHING_ROLE.get(self.a)
        groups = [g for g in self.plan["instances"] if g["role"] == role and g["count"] > 0]
        return len({(g["datacenter"], g["gpu"], g["gpus_per_instance"]) for g in groups}) > 1

    def multi_gpu(self) -> bool:
        """An instance of the plan spans several GPUs (without a plan: it may)."""
        if self.plan is None:
            return True
        return any(g["gpus_per_instance"] > 1 for g in self.plan["instances"] if g["count"] > 0)

    def catalog_rental(self) -> bool:
        """A GPU of the plan is rented at the catalog's price (not the scenario's)."""
        if self.plan is None or self.gpus is None:
            return True
        offers = {(dc.id, o.gpu): o.price_usd_per_gpu_hour
                  for dc in self.s.datacenters for o in dc.gpus}  # fmt: skip
        used = [g for g in self.plan["instances"] if g["count"] > 0]
        catalog = {g["gpu"]: self.gpus[g["gpu"]].rental_usd_per_gpu_hour for g in used}
        return any(offers.get((g["datacenter"], g["gpu"])) == catalog[g["gpu"]] for g in used)

    def catalog_line_price(self) -> bool:
        """A line tier the plan leases (or may lease) is priced by the catalog."""
        if not self.crosses():
            return False
        tiers = (
            [x["tier"] for x in self.plan["lines"] if x["count"] > 0]
            if self.plan
            else self.s.wan.tiers
        )
        return any(t not in self.s.wan.tier_price_usd_per_month for t in tiers)

    def chosen(self) -> bool:
        """The plan was chosen among architectures (not forced with --architecture)."""
        if self.result is None:
            return len(self.s.architectures) > 1
        return bool(self.result.get("architecture_choice"))

    def profile(self):
        return self.s.engine.profile


def _fp8_rope(c: Scope) -> bool:
    return c.s.kv_dtype == "fp8" and bool(c.kinds() & {"mla", "compressed"})


def _quantised(c: Scope) -> bool:
    return c.m.weight_dtype != "bf16" or c.m.expert_weight_dtype != "bf16"


def _dp_fit(c: Scope) -> bool:
    return dict(c.profile().parallelism).get("dp", 1) > 1


def _power_budget(c: Scope) -> bool:
    return any(dc.power_budget_w is not None for dc in c.s.datacenters)


# (start of the row, does it apply to this Scope)
RULES: tuple[tuple[str, Callable[[Scope], bool]], ...] = (
    # rope dims kept apart exist in MLA-style caches only; the bias is an FP8 one
    ("KV dtype applies to every attention cache", _fp8_rope),
    ("DeepSeek-V4 indexer keys", lambda c: c.m.architecture == "DeepseekV4ForCausalLM"),
    ("DeepSeek-V4 CSA/HCA parameters", lambda c: "compressed" in c.kinds()),
    ("MTP layers are excluded", lambda c: c.m.mtp_layers > 0),
    ("Linear-attention recurrent states", lambda c: "linear" in c.kinds()),
    ("Embeddings, LM head and norms stay BF16", _quantised),
    ("MiniMax-M1 lightning layers", lambda c: c.m.architecture == "MiniMaxM1ForCausalLM"),
    ("Gated attention output gates",
     lambda c: c.m.architecture not in PLAIN_ATTENTION_CLASSES),
    ("Rental prices are neocloud", Scope.catalog_rental),
    ("Line prices are European", Scope.catalog_line_price),
    ("The WAN is in steady state", Scope.crosses),
    ("MD's decode-side cache", Scope.finite_cache),
    ("The closed form and the planner read the decode-side cache curve", Scope.finite_cache),
    ("One decode-side LRU", Scope.finite_cache),
    ("Cache tier prices", lambda c: c.crosses() and c.s.policy.decode_cache is not None),
    ("The cut-off's consistency cost", Scope.cutoff),
    # the threshold's formula: only where the scenario does not set the threshold
    ("Cut-off threshold", lambda c: c.cutoff() and c.s.policy.short_output_cutoff
     .min_uncached_bytes_per_output_token is None),
    ("Streamed KV appears",
     lambda c: c.crosses() and c.s.wan.stream_during_prefill),
    ("Striping:", lambda c: c.crosses() and c.s.wan.stripes_per_transfer > 1),
    ("Batched prefill:", Scope.batched_prefill),
    ("The operating batch:", Scope.batched_prefill),
    ("Default prefill budget", lambda c: c.batched_prefill()
     and c.s.engine.prefill_token_budget_per_gpu == PREFILL_TOKEN_BUDGET_PER_GPU),
    ("Colocated serving prefills", lambda c: c.a == "colocated"),
    ("Communication is added to compute", lambda c: c.profile().comm_overlap_frac == 0
     and c.profile().alltoall_overlap_frac == 0),
    # the engine profile's mechanisms (issue #23): only where the profile uses them
    ("The KV reads' efficiency", lambda c: c.profile().kv_read_efficiency_frac != 1.0),
    ("A GPU with no fitted profile in a profile set", lambda c: bool(c.profile().members)),
    ("MTP: a verify", lambda c: c.profile().mtp_draft_tokens > 0),
    ("Cache-tier read-back",
     lambda c: c.crosses() and c.s.policy.decode_cache is not None),
    ("Two-batch overlap", lambda c: c.profile().alltoall_overlap_frac > 0),
    ("`calibrate observed`'s standard errors", lambda c: bool(c.profile().held_out_ratio)),
    ("`solve --confidence`", lambda c: bool((c.result or {}).get("confidence"))),
    # how `validate` and the accuracy table replay measured runs: about no plan
    ("Published points with no stated KV cache dtype", lambda c: False),
    ("The accuracy table replays", lambda c: False),
    ("`validate` replays GuideLLM", lambda c: False),
    ("`validate` replays a benchmark", lambda c: False),
    ("The planner uses vLLM's default capture size",
     lambda c: c.profile().eager_mode_step_s > 0),
    ("Fitting DP runs", _dp_fit),
    ("Eager RLD tokens", lambda c: c.a == "pdd"),
    ("Relay overflow", lambda c: c.a == "pdd"),
    ("The handoff's fixed engine cost", lambda c: c.a == "pdd"),
    ("The cut-off selects relay candidates", Scope.cutoff),
    ("Catch-up's rounds in the closed form", Scope.catch_up),
    ("Catch-up's absorbing steps", Scope.catch_up),
    ("RLD's tokens past MD's position", lambda c: c.a == "pdd"),
    # replicated KV heads exist only on instances of several GPUs
    ("KV heads fewer than the tensor-parallel degree", Scope.multi_gpu),
    ("A decoding request counts for its life-average KV blocks",
     lambda c: not c.s.engine.reserve_max_output),
    # mixed decode roles: how a mix is modelled, only where the plan mixes; that the MILP
    # proposes the mixes, wherever the optimiser may mix (a cheaper mix may be missed)
    ("A mixed decode role is split", Scope.mixed),
    ("Each group of a mixed role", Scope.mixed),
    ("Each group's arrivals keep", Scope.mixed),
    ("With a mixed main-decode role", lambda c: c.a == "pdd" and c.mixed()),
    ("A mixed answer is the MILP's plan", Scope.may_mix),
    ("A datacenter's power budget", _power_budget),
    ("`max_bcr` ranks plans", lambda c: c.s.objective.kind == "max_bcr"),
    ("A choice among architectures is proven", Scope.chosen),
    # only a model file from `model import` was placed by these rules
    ("`model import` places MoE layers", lambda c: bool(c.s.model_file) and c.moe()),
    ("A scenario's `engine.kv_uncompressed_tokens`", lambda c: _keeps_more(c)),
    ("Without `engine.kv_uncompressed_tokens`",
     lambda c: c.m.largest_window_tokens() > 0 and not _keeps_more(c)),
)  # fmt: skip

# the optimiser's internals, none of which changes an answer: the README keeps them
INTERNAL = (
    "The search's main-decode ceiling",
    "The search's connection-pool ceiling",
    "An SLA verdict read from the CDF's sign",
    "HiGHS runs without its feasibility-jump heuristic",
)

# rows about experts, wherever they are in the table, apply to MoE models only
MOE_WORDS = ("expert", "MoE")


def shown_anywhere(row: tuple[str, str]) -> bool:
    """A row a report may show: not an internal one, naming no file in either column."""
    return not row[0].startswith(INTERNAL) and not any(FILE_REFERENCE.search(t) for t in row)


def _rule(text: str) -> Callable[[Scope], bool] | None:
    for start, applies in RULES:
        if text.startswith(start):
            return applies
    if any(w in text for w in MOE_WORDS):
        return Scope.moe
    return None


def _keeps_more(c: Scope) -> bool:
    """The scenario's decode layout keeps more uncompressed than the model's window."""
    layout = c.s.engine.kv_layout
    if layout is None:
        return False
    kept = layout.uncompressed_tokens
    return kept is None or kept > c.m.largest_window_tokens()


def applicable(scenario, model, architecture: str, result: dict | None = None,
               gpus: dict | None = None) -> list[tuple[str, str]]:  # fmt: skip
    """The rows of ASSUMPTIONS that apply to this scenario's model and the architecture,
    and, given the solve `result` reported on (and the catalog's `gpus`), to its plan."""
    scope = Scope(scenario, model, architecture, result, gpus)
    out = []
    for row in filter(shown_anywhere, ASSUMPTIONS):
        rule = _rule(row[0])
        if rule is None or rule(scope):
            out.append(row)
    return out
