"""The assumptions of the models and the optimiser, each with the direction it biases
the results: the one list behind the README table "Assumptions and limits" and the
sizing report. Change both together: tests/unit/test_report.py checks that they agree row
for row."""

from __future__ import annotations

# (assumption, bias), in the README's order; Markdown inline code is kept as written.
ASSUMPTIONS: tuple[tuple[str, str], ...] = (
    (
        (
            "KV dtype applies to every attention cache; rope dims that engines keep in BF16 under "
            "an FP8 cache are not counted"
        ),
        "KV bytes low by about 1-2 % under FP8",
    ),
    (
        "DeepSeek-V4 indexer keys are FP4 (reproduces the published 23 GB; FP8 would give 26.1 GB)",
        "if wrong, V4 KV low by 10 %",
    ),
    (
        (
            "DeepSeek-V4 CSA/HCA parameters (grouped low-rank output, compressor) are modelled from"
            " the config's dims, not a reference implementation"
        ),
        "parameters within 2 % of the published 1.6T/49B",
    ),
    (
        (
            "MTP layers are excluded from parameters, weights and KV (MTP decoding is the engine "
            "profile's `mtp`, off by default)"
        ),
        "weights low by about 1-2 % where engines load MTP for speculative decoding",
    ),
    (
        (
            "Linear-attention recurrent states are FP32 (conv states BF16) unless the config says "
            "otherwise"
        ),
        "fixed state high by 2x if an engine keeps BF16 states",
    ),
    (
        (
            "Embeddings, LM head and norms stay BF16 when linears are quantised; fp4/mxfp4 include "
            "one 8-bit scale per 32 values, int4 a 16-bit scale per 32"
        ),
        "weight bytes within about 1 % of checkpoints",
    ),
    (
        "MiniMax-M1 lightning layers are counted with q, k, v, output-gate and output projections",
        "active parameters 5.6 % above the published 45.9B",
    ),
    (
        (
            "Gated attention output gates (Qwen3-Next, Qwen3.5), attention biases and sinks are "
            "left out of parameter counts"
        ),
        "parameters low by < 0.5 %",
    ),
    (
        (
            "GPU efficiency fractions measured on NVIDIA's TRT-LLM kernel tables are used for other"
            " engines; chips without measurements borrow a sibling's value (marked assumed)"
        ),
        "throughput optimistic on less tuned engines",
    ),
    (
        (
            "Rental prices are neocloud on-demand list prices for 8-GPU nodes; prices missing from "
            "public sources are assumed relative to a sourced sibling (marked)"
        ),
        "hyperscaler users pay 2-3x more: override per datacenter",
    ),
    (
        "Line prices are European short-haul medians",
        "long-haul routes cost up to 25x more: override per scenario",
    ),
    (
        (
            "Input length, output length and hit rate are independent unless the hit-rate bins "
            "carry their own lengths (`trace analyze --joint` writes them); inside a joint bin the "
            "hit rate is uniform and independent of that bin's lengths"
        ),
        (
            "without joint bins: tails optimistic where long prompts also have low hits; with them,"
            " the within-bin correlation is lost (synthetic trace: cached share 0.639 against "
            "0.651)"
        ),
    ),
    (
        (
            "Batched prefill: the c instances' phases are independent (the gap before a take is the"
            " Palm interval of c independent step processes), steps gamma with the fixed point's "
            "mean and variance"
        ),
        (
            "the simulated gap's tail is heavier (long steps coincide when the others carry an "
            "absent instance's load: E[G*^2] 0.11 s^2 against 0.18 on the 3-prefill `pdd-paper` "
            "plan at 90 %): TTFT P90/P99 optimistic there (-17/-22 %)"
        ),
    ),
    (
        (
            "The operating batch: an arrival waits only when all c instances are busy, with Erlang "
            "C's chance at the busy share; a step's time is its mean over its compositions (one "
            "chunk drawn from the mix, the rest a gamma compound sum of chunks' compute)"
        ),
        (
            "at 90 % of full-step load with strong feedback (3 DeepSeek-V4 EP32 instances) the busy"
            " share comes out 0.942 against 0.965 simulated and TTFT 15 % low; where steps vary "
            "more than the composition's law (Kimi-K2, 2-5 instances) TTFT P90/P99 24-53 % low at "
            "80-95 % load"
        ),
    ),
    (
        (
            "Default prefill budget 16,384 tokens per GPU (expert-parallel prefill servers); "
            "tensor-parallel engines often run smaller budgets per instance (vLLM: 8,192)"
        ),
        (
            "prefill capacity optimistic for engines left at a small budget: set "
            "`engine.prefill_token_budget_per_gpu`"
        ),
    ),
    (
        (
            "Colocated serving prefills one request at a time between decode steps: a request's "
            "first token comes from its prefill pass, and a decoding request pauses for each "
            "prefill its instance runs before its last token (the prefill queue's busy periods)"
        ),
        (
            "colocated prefill capacity pessimistic at high hit rates; TPOT pessimistic against an "
            "engine that chunks prefill into its decode steps"
        ),
    ),
    (
        (
            "Communication is added to compute, not overlapped, unless the engine profile states "
            "`comm_overlap_frac` or `alltoall_overlap_frac` (two-batch overlap)"
        ),
        "step times high by up to the communication share",
    ),
    (
        (
            "Kernels reach the catalog's measured GEMM/attention efficiencies at every size above "
            "the fitted per-kernel latencies"
        ),
        "throughput optimistic for odd shapes and small batches",
    ),
    (
        (
            "One GPU type and instance shape per role, except the finishing decode role (main "
            "decode, IDC-PD decode), which may mix types in one datacenter"
        ),
        "plans that would mix prefill or relay types are not found",
    ),
    (
        (
            "A mixed decode role is split by capacity at each group's TPOT batch, with fixed shares"
            " (a live least-loaded router rebalances on current load)"
        ),
        "optimistic for the group whose step rises faster with batch, near saturation",
    ),
    (
        (
            "Each group of a mixed role has its own slot queue (n_i K_i servers), where a router "
            "that takes any free slot pools the whole role"
        ),
        "pessimistic slot wait (less pooling)",
    ),
    (
        (
            "Each group's arrivals keep the scenario's burstiness (splitting a bursty stream "
            "smooths each share towards cv2 = 1)"
        ),
        "pessimistic for cv2 > 1, optimistic below; small",
    ),
    (
        (
            "With a mixed main-decode role, PDD's relay load and handoff are solved per group and "
            "averaged by share, and with `pool_hold: handoff_end` the line's figures are the first "
            "group's"
        ),
        "small, no set direction",
    ),
    (
        "A mixed answer is the MILP's plan trimmed with `evaluate`, not searched exhaustively",
        "pessimistic cost: a cheaper mix the MILP does not propose may exist",
    ),
    (
        "The WAN is in steady state: the pool wait is G/G/K, the line M/G/R processor sharing",
        (
            "optimistic near capacity: measured runs above ~90 % of the line saturate the pool (the"
            " published narrow mix); `evaluate` warns there"
        ),
    ),
    (
        (
            "MD's decode-side cache holds a request's prefix whole or not at all, independent of "
            "its hit rate and length; without a measured curve the reuse interval is lognormal "
            "(median 300 s, sigma 1), an assumption"
        ),
        "mean bytes exact against a measured curve; pessimistic if real turns return sooner",
    ),
    (
        (
            "The closed form and the planner read the decode-side cache curve at the scenario's "
            "arrival rate (the simulator at its own)"
        ),
        "goodput optimistic with a finite cache: at higher rates fewer prefixes stay resident",
    ),
    (
        (
            "One decode-side LRU over all requests, pooled over the MD instances; what one host can"
            " hold and the tier's read bandwidth back into HBM are not checked (a 3 GB prefix takes"
            " ~0.43 s from one NVMe drive)"
        ),
        "optimistic, mostly for SSD, which the planner therefore prefers to DRAM",
    ),
    (
        (
            "Cache tier prices: DRAM rental = purchase / 36 months (list price of 256 GB DDR5 "
            "modules); SSD rental = EBS gp3 $0.08/GiB-month; the tier's power, CPUs and chassis are"
            " not counted"
        ),
        "DRAM pessimistic, SSD optimistic on price; cost slightly optimistic",
    ),
    (
        (
            "The cut-off's consistency cost: every conversation has a next turn, which lacks on MD "
            "what the cut-off turn added (its uncached prompt and its output); the previous turn "
            "was cut off with the cut-off's share, independent of this request"
        ),
        (
            "pessimistic about the cut-off's WAN saving and relay cost where conversations end; the"
            " output part may count twice where P's cache holds prompts only (under 0.3 % of the "
            "added tokens on `pdd-paper`)"
        ),
    ),
    (
        (
            "Cut-off threshold = stripes x one connection's rate x the TPOT limit; the handoff and "
            "slow start are left out of the waste test"
        ),
        (
            "cuts off fewer requests than the true waste test (RLD's steps are shorter than the "
            "limit, transfers slower than the connection's rate)"
        ),
    ),
    (
        "The cut-off selects relay candidates by P's uncached bytes, not MD's",
        (
            "cuts off fewer requests where MD lacks more than P (non-resident prefixes, next turns "
            "of cut-off conversations); no chain of cut-offs"
        ),
    ),
    (
        (
            "A step above the CUDA-graph capture size lasts at least the profile's "
            "`eager_mode_step_s`, launches fully overlapping GPU work; the plain roofline has 0 "
            "(every step replayed from graphs)"
        ),
        (
            "plain roofline optimistic for long steps of many-kernel models on fast instances; the "
            "floor optimistic where host work and GPU synchronise"
        ),
    ),
    (
        (
            "The planner uses vLLM's default capture size (512 tokens per attention group, per GPU "
            'under "ep"); a profile does not store the size it was fitted at'
        ),
        "optimistic for engines launched with a smaller capture size",
    ),
    (
        (
            "Fitting DP runs: every rank carries rank 0's decode batch and no prefill of its own; "
            "iterations that wait for another rank's prefill (0.6-1.4 %) count as outliers"
        ),
        "optimistic in the TPOT tail of DP-attention instances",
    ),
    (
        (
            "Catch-up's rounds in the closed form: RLD step phases independent and uniform, mean MD"
            " and RLD steps (the switch gap as 4 values)"
        ),
        (
            "more RLD load where MD's step is between one and two RLD steps (up to 13 % of the stop"
            " time in a synthetic case, about 0 on `pdd-paper`); switch-gap P90 within 7 % of the "
            "simulator on the PDD agreement cases"
        ),
    ),
    (
        "Catch-up's absorbing steps after the first extend slow only the handed-off request",
        "co-batched TPOT slightly optimistic (about one extra token per step)",
    ),
    (
        "RLD's tokens past MD's position at the stop count as RLD output",
        "RLD output high by about 2 tokens per handoff if the paper counts delivered tokens only",
    ),
    (
        (
            "Streamed KV appears uniformly over the prefill; in the closed form the wait for a "
            "connection is still added after prefill"
        ),
        "TTFT slightly optimistic when layers differ in time; pessimistic when the pool queues",
    ),
    (
        (
            "Striping: the N flows of a transfer take their N connections together (closed form) "
            "and are not counted as a burst on the line"
        ),
        "pool wait pessimistic; optimistic near line saturation",
    ),
    (
        "Eager RLD tokens count the mean wait for a WAN connection, not its distribution",
        "RLD share low when the pool queues",
    ),
    (
        (
            "A decoding request counts for its life-average KV blocks (prompt + half its output); "
            "block growth and the engine's retraction of requests when blocks run out are not "
            "modelled"
        ),
        (
            "slots high where an engine admits by the current blocks and retracts often; low where "
            "it reserves the whole output (set `engine.reserve_max_output`)"
        ),
    ),
    (
        (
            "KV heads fewer than the tensor-parallel degree are replicated on the instance's GPUs "
            "(as vLLM and SGLang do)"
        ),
        (
            "none for those engines; KV room pessimistic for an engine that splits one head's KV by"
            " sequence over GPUs"
        ),
    ),
    (
        (
            "The decode step a request shares is the step at its pool's mean batch plus itself (the"
            " arrival theorem), at most the slots"
        ),
        (
            "exact for Poisson arrivals; TPOT pessimistic by one request's share of a step for "
            "smoother arrivals"
        ),
    ),
    (
        (
            "The slot wait of a decode role is one pooled many-server queue, one per instance on "
            "colocated serving (Erlang-C scaled by the Halfin-Whitt effect of the output-length "
            "variability, exponential tail)"
        ),
        (
            "TTFT optimistic above about 95 % of a decode role's slots, where the long simulated "
            "runs queue longer (`evaluate` warns there)"
        ),
    ),
    (
        (
            "Relay overflow: each relay instance is a loss system on its KV room with a class per "
            "request size (Kaufman-Roberts over 1,024 units; Poisson arrivals, no retry), the "
            "pool's room less half a mean request per instance beyond the first for packing; an "
            "overflowed request waits for its KV on MD like a direct one"
        ),
        (
            "overflow share low under bursty arrivals; long requests are refused where short ones "
            "still fit, as an engine's admission does"
        ),
    ),
    (
        (
            "The handoff's fixed engine cost (235.6 ms by default, from the published 305 ms) "
            "delays the handed-off request only, not the requests co-batched with its extend step"
        ),
        (
            "TPOT of MD's other requests optimistic if the engine runs the extend step outside its "
            "CUDA graph for the whole batch"
        ),
    ),
    (
        (
            "TPOT spread from the batch: each instance holds N/n of a Poisson population (M/G/inf, "
            "no cap), averaged over a request's life"
        ),
        "spread high near the slot limit, where the cap clips the population",
    ),
    (
        (
            "The SLA check is monotone: a plan with more of any role or a larger line meets "
            "whatever a smaller one meets, and a rate met implies every lower rate met; the "
            "search's bounds, corner tests and bisections prune on it (checked against exhaustive "
            "enumeration on 38 small random scenarios, not proven)"
        ),
        (
            "where it fails, a pruned plan could have been cheaper: cost pessimistic; never a plan "
            "that breaks the SLA (every answer is verified with `evaluate`)"
        ),
    ),
    (
        (
            "The search's main-decode ceiling mirrors `decode_side`'s first pass (every remote "
            "request's whole output on MD, before the relay's eager tokens) to 1e-9"
        ),
        (
            "none on answers: it only skips plans the model fails; if the model's first pass "
            "changes, tests/property/test_first_pass_bound.py fails"
        ),
    ),
    (
        (
            "The search's connection-pool ceiling takes each transfer's hold at full flow rate plus"
            " the RTT (no sharing slowdown, no wait for a connection)"
        ),
        (
            "none on answers: the ceiling is at or above the model's saturation rate, so it can "
            "only be loose (more evaluations), never refuse a plan the model runs"
        ),
    ),
    (
        (
            "An SLA verdict read from the CDF's sign beside the limit (within twice brentq's "
            "tolerance) equals comparing the searched percentile with the limit, given a "
            "non-decreasing CDF"
        ),
        "none (exact; a sign within 1e-12 of zero runs the search)",
    ),
    (
        "HiGHS runs without its feasibility-jump heuristic",
        (
            "none on answers: the optimum is proven within the same gap; MILP values move by up to "
            "2e-7 (integer tolerance)"
        ),
    ),
    (
        (
            "The optimiser's capacities are linear per instance (a prefill instance carries cap / "
            "E[prefill time]; a decode instance its TPOT-limited batch), then each plan is verified"
            " with `evaluate`"
        ),
        "plans conservative by up to the utilisation cap (0.85 by default); never below the SLA",
    ),
    (
        (
            "A datacenter's power budget counts GPUs x TDP x PUE (no CPUs, NICs or cooling beyond "
            "the PUE; GPUs at full TDP)"
        ),
        (
            "fits more GPUs than a budget that includes whole servers; fewer than one that counts "
            "typical draw"
        ),
    ),
    (
        "`max_bcr` ranks plans that serve between 1x and 1.5x the offered demand",
        "a plan that would win by serving far more traffic than asked is not considered",
    ),
    (
        (
            "A choice among architectures is proven only where each architecture's search is; a "
            "stopped search's own bound decides whether it could still win (a tie within 0.1 % "
            "counts as could-win)"
        ),
        "none on plans; `optimal` is claimed less often (conservative)",
    ),
    (
        (
            "Relaxation figures are rounded towards the safe side at 3 significant digits (budgets "
            "to the cent, power to 0.1 kW)"
        ),
        "a figure may overstate the need by up to one unit in its last digit",
    ),
    (
        "Availability, power and budget relaxations come from the elastic MILP's linear capacities",
        "a figure may fall short of what the exact search then needs (3 of 112 fuzzed relaxations)",
    ),
    (
        (
            "The utilisation cap holds each role's mean utilisation (evaluate's figure) at the rate"
            " every plan must carry, under every hit-rate mix"
        ),
        (
            "conservative where the worst listed mix is rare; optimistic for headroom against "
            "bursts above the mean and above that rate (no peak or percentile of load is capped)"
        ),
    ),
    (
        (
            "`model import` places MoE layers by the config's `decoder_sparse_step` (Qwen: (i + 1) "
            "% k == 0) or integer `moe_layer_freq` (DeepSeek, Kimi-Linear: i >= "
            "first_k_dense_replace and i % k == 0), as transformers and vLLM do; the sliding-window"
            " hybrid family (MiMo) ignores an integer `moe_layer_freq`"
        ),
        (
            "none for the shipped configs (k = 1); a MiMo-style config with k > 1 would count "
            "routed weights on every layer (weights and FLOPs high)"
        ),
    ),
    (
        (
            "Decode kernels reach the roofline (DeepSeek-V4's sparse attention, hyper-connections "
            "and MTP are not modelled)"
        ),
        (
            "decode optimistic for V4: the published deployment decodes several times fewer tokens "
            "per GPU"
        ),
    ),
    (
        (
            "A scenario's `engine.kv_uncompressed_tokens` sets both the HBM a decoding request "
            "holds and the KV bytes each decode step reads (every held byte is read); attention "
            "FLOPs and prefill's KV stay the architecture's"
        ),
        "TPOT pessimistic for an engine that holds uncompressed tokens its kernels skip",
    ),
    (
        (
            "Without `engine.kv_uncompressed_tokens` (or with the model's window) a decode engine "
            "keeps the model's own KV layout: its window uncompressed (DeepSeek-V4: the last 128 "
            "tokens), every token's compressed entries, nothing else"
        ),
        (
            "HBM per request and TPOT optimistic for an engine that keeps more (BF16 rope "
            "dimensions: about +1.4 % for DeepSeek-V4; whole-block paging); the report's KV-layout "
            "sensitivity shows the range"
        ),
    ),
    (
        (
            "The KV reads' efficiency (`kv_read_efficiency_frac`) is one figure per engine, "
            "whatever the TP degree and block layout"
        ),
        (
            "step times off where paged attention's efficiency changes with heads per GPU beyond "
            "what the fit saw"
        ),
    ),
    (
        (
            "A GPU with no fitted profile in a profile set runs the nearest datasheet's profile: "
            "efficiencies carried by ratios, seconds terms (per-kernel and host floors) as fitted"
        ),
        (
            "optimistic on slower hosts, pessimistic on faster ones; the further the datasheet, the"
            " larger"
        ),
    ),
    (
        (
            "MTP: a verify of k+1 tokens plus k one-layer draft passes per step, L tokens emitted; "
            "a mixed step is credited one token per request"
        ),
        (
            "pessimistic for mixed steps; slightly optimistic by the draft module's LM head, which "
            "is not counted"
        ),
    ),
    (
        (
            "Cache-tier read-back: a resident prefix is read from the tier into the main-decode "
            "instance's HBM at DRAM 50 GB/s or SSD 7 GB/s per GPU (PCIe Gen5 x16 copy; one Gen4 "
            "NVMe drive per GPU) unless the catalog states one, from prefill start, beside the "
            "prefill and the transfer (MD holds the KV at the later end)"
        ),
        (
            "optimistic for scattered SSD reads and for DRAM shared by several GPUs; the read does "
            "not slow MD's running decode steps"
        ),
    ),
    (
        "Two-batch overlap (`alltoall_overlap_frac`) hides at most the step's GPU time",
        "optimistic if the second micro-batch's compute is shorter than the modelled step",
    ),
    (
        (
            "`calibrate observed`'s standard errors are linearised at the optimum, with a 5 % noise"
            " floor on the figures"
        ),
        (
            "with as many figures as parameters the error shown is that floor, not a measurement; "
            "the held-out error is the honest figure"
        ),
    ),
    (
        (
            "`solve --confidence`: the margin is the P quantile of the profile's held-out observed "
            "/ predicted ratios, never below 1; a metric with no held-out figure gets none"
        ),
        "with few points the margin above their range is the largest ratio seen",
    ),
    (
        (
            "Published points with no stated KV cache dtype are replayed with bf16 and with FP8 in "
            "the accuracy table"
        ),
        (
            "bf16 understates the requests that fit: on saturated points it overstates TTFT (NIM "
            "concurrency 50: +474 % against +89 % with FP8) and understates throughput"
        ),
    ),
    (
        (
            "The accuracy table replays TensorRT-LLM max-throughput runs with vLLM's scheduler "
            "limits (8,192 tokens per iteration, at most 256 running) and 1,000 requests"
        ),
        (
            "where the engine batched more, the model's throughput is low (Qwen3-235B 1000/1000: "
            "-47 to -63 %)"
        ),
    ),
    (
        "`validate` replays GuideLLM constant-rate runs as Poisson arrivals",
        "Poisson bursts queue more: TTFT percentiles biased high at high load",
    ),
    (
        "`validate` replays a benchmark of more than 100,000 requests with its first 100,000",
        (
            "a long run's steady-state tail is under-sampled; percentiles are unbiased once the run"
            " is past warm-up"
        ),
    ),
)
