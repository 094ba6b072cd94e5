"""The parts of one roofline step of an `Instance`: FLOPs, bytes moved, communication
and fixed kernel latencies (the terms `roofline.Instance._assemble` combines into
max(compute_s, memory_s) + comm_s + overhead_s; model/compute/roofline.py's docstring gives the
"tp" and "ep" mechanisms and their limits).

`StepParts` is a mixin of `roofline.Instance`: it reads the instance's fields (`model`,
`gpu`, `gpus`), its dtypes and weight figures (`compute_dtype`, `_expert_dtype`,
`weight_bytes`, `_experts_per_gpu`), its parallel mode (`_ep`, `_is_ep`) and its memos
(`_const`, `_per_unique`, `_kv_bytes`: model/compute/roofline_memo.py).
Pure: numpy only, no I/O.
"""

from __future__ import annotations

from pdd_plan.model.compute.kernels import (
    ACTIVATION_BYTES,
    ATTENTION_KERNEL_LATENCY_S,
    CONTEXT_ATTENTION_FLOP_EFF_FRAC,
    DENSE_LAYER_GEMMS,
    DENSE_LAYER_MEMORY_OPS,
    EP_LOAD_IMBALANCE,
    GEMM_LATENCY_S,
    GENERATION_ATTENTION_FLOP_EFF_FRAC,
    MEMORY_OP_LATENCY_S,
    MOE_EXTRA_GEMMS,
    MOE_EXTRA_MEMORY_OPS,
    AllReduce,
    AllToAll,
    achievable_flop_per_s,
    experts_touched,
    where,
)
from pdd_plan.model.compute.llm import EMBEDDING_DTYPE
from pdd_plan.model.units import dtype_bytes


class StepParts:
    """What one step of `roofline.Instance` computes, moves and exchanges."""

    def _expert_bytes(self) -> list[tuple[int, int, int, float]]:
        """(layers, experts, top-k, bytes of one expert) per MoE FFN kind."""
        return self._const("expert_bytes", self._expert_bytes_uncached)

    def _expert_bytes_uncached(self) -> list[tuple[int, int, int, float]]:
        width = dtype_bytes(self._expert_dtype())
        hidden = self.model.hidden_size
        return [
            (n, f.num_experts, f.experts_per_token, f.expert_params(hidden) * width)
            for n, f in self.model.moe_layout()
        ]

    def _dense_read_bytes(self) -> float:
        """Weights every step reads whatever the routing: all but the routed experts and
        the input embedding table (a step gathers only its tokens' rows of it)."""
        return self._const("dense_read_bytes", self._dense_read_bytes_uncached)

    def _dense_read_bytes_uncached(self) -> float:
        experts = self.model.routed_expert_params() * dtype_bytes(self._expert_dtype())
        m = self.model
        lookup = 0 if m.tie_word_embeddings else m.vocab_size * m.hidden_size
        return self.weight_bytes() - experts - lookup * dtype_bytes(EMBEDDING_DTYPE)

    def weight_read_bytes(self, tokens):
        """Weight bytes a step of `tokens` tokens reads (all GPUs together, "tp")."""
        touched = sum(n * experts_touched(e, k, tokens) * b for n, e, k, b in self._expert_bytes())
        return self._dense_read_bytes() + touched

    def ep_weight_read_bytes_per_gpu(self, tokens):
        """Weight bytes one GPU reads in an "ep" step of `tokens` tokens (all GPUs): the
        replicated weights, and each of its ceil(E / gpus) experts per MoE layer with the
        chance that one of the step's tokens is routed to it, 1 - (1 - k/E)^T."""
        experts = sum(
            held * experts_touched(e, k, tokens) / e * b for held, e, k, b in self._held_experts()
        )
        return self._dense_read_bytes() + experts

    def _held_experts(self) -> list[tuple[int, int, int, float]]:
        """(layers x experts one GPU holds per layer, experts, top-k, bytes of one expert)
        per MoE FFN kind, in "ep"."""
        return self._const("held_experts", lambda: [
            (n * self._experts_per_gpu(e), e, k, b) for n, e, k, b in self._expert_bytes()
        ])  # fmt: skip

    def _linear_flop_per_token(self) -> tuple[float, float]:
        """(matmul FLOPs per token incl. the LM head, linear-state FLOPs per token)."""
        m = self.model
        return self._const(
            "linear_flop_per_token",
            lambda: (m._matmul_flop_per_token(), m._linear_state_flop_per_token()),
        )

    def _routed_flop_per_token(self) -> float:
        """Matmul FLOPs of one token's routed experts (all MoE layers)."""
        return self._const("routed_flop_per_token", self._routed_flop_per_token_uncached)

    def _routed_flop_per_token_uncached(self) -> float:
        hidden = self.model.hidden_size
        return 2.0 * sum(
            n * f.experts_per_token * f.expert_params(hidden) for n, f in self.model.moe_layout()
        )

    def _chunk_attention_flops(self, new: int, cached: int) -> float:
        if new <= 0:
            return 0.0
        key = ("chunk_attention_flops", new, cached)
        return self._const(key, lambda: self._chunk_attention_flops_uncached(new, cached))

    def _chunk_attention_flops_uncached(self, new: int, cached: int) -> float:
        matmul, state = self._linear_flop_per_token()
        lm_head = 2.0 * self.model.vocab_size * self.model.hidden_size
        linear = (matmul - lm_head) * new + lm_head + state * new
        return self.model.prefill_flops(new, cached) - linear

    def _decode_attention_flops(self, context: int) -> float:
        key = ("decode_attention_flops", context)
        return self._const(key, lambda: self._decode_attention_flops_uncached(context))

    def _decode_attention_flops_uncached(self, context: int) -> float:
        linear = sum(self._linear_flop_per_token())
        return self.model.decode_flops(context) - linear

    def layer_latency_s(self) -> float:
        """Fixed kernel latencies of one forward pass (all layers)."""
        return self._const("layer_latency_s", self._layer_latency_s)

    def _layer_latency_s(self) -> float:
        gemm = GEMM_LATENCY_S[self.compute_dtype()]
        dense = DENSE_LAYER_GEMMS * gemm + ATTENTION_KERNEL_LATENCY_S
        dense += DENSE_LAYER_MEMORY_OPS * MEMORY_OP_LATENCY_S
        moe_layers = sum(n for n, _ in self.model.moe_layout())
        moe = MOE_EXTRA_GEMMS * gemm + MOE_EXTRA_MEMORY_OPS * MEMORY_OP_LATENCY_S
        return self.model.num_layers * dense + moe_layers * moe

    def kernels_per_step(self) -> float:
        """Kernels one GPU launches per forward pass: every layer's (DENSE_LAYER_GEMMS, an
        attention kernel, DENSE_LAYER_MEMORY_OPS; an MoE layer MOE_EXTRA_* more), and its
        collectives: two all-reduces per layer in "tp", a dispatch and a combine per MoE
        layer in "ep" (none on one GPU). What an engine profile's `kernel_latency_s`
        multiplies: the per-step floor of a CUDA-graph replay grows with the kernels in it."""
        return self._const("kernels_per_step", self._kernels_per_step)

    def _kernels_per_step(self) -> float:
        moe_layers = sum(n for n, _ in self.model.moe_layout())
        dense = DENSE_LAYER_GEMMS + 1 + DENSE_LAYER_MEMORY_OPS
        moe = MOE_EXTRA_GEMMS + MOE_EXTRA_MEMORY_OPS
        kernels = self.model.num_layers * dense + moe_layers * moe
        if self.gpus > 1:
            kernels += 2 * (moe_layers if self._is_ep else self.model.num_layers)
        return float(kernels)

    def _compute(self, batch, context, new, cached, prompts) -> tuple:
        """(FLOPs, compute seconds) of a step (`_compute_split`)."""
        return self._compute_split(batch, context, new, cached, prompts)[:2]

    def _compute_split(self, batch, context, new, cached, prompts) -> tuple:
        """(FLOPs, compute seconds, of which routed-expert GEMMs, of which attention) of a
        step: linears at the compute dtype, attention in
        BF16 at its own efficiency (generation for decode tokens, context for a chunk);
        `prompts` chunks of `new` tokens. In "ep" the busiest GPU's routed-expert FLOPs
        are EP_LOAD_IMBALANCE x their share. The two shares are what an engine profile's
        expert-GEMM and attention efficiencies re-weigh (engine_profile.py)."""
        matmul, state = self._linear_flop_per_token()
        lm_head = 2.0 * self.model.vocab_size * self.model.hidden_size
        # the LM head runs for every decode token but only the last token of a chunk
        tokens = batch + prompts * new
        linear = tokens * (matmul + state) - where(new > 0, prompts * (new - 1) * lm_head, 0.0)
        decode_attention = batch * self._per_unique(self._decode_attention_flops, context)
        chunk_attention = prompts * self._per_unique(self._chunk_attention_flops, new, cached)
        attention_s = (
            decode_attention / GENERATION_ATTENTION_FLOP_EFF_FRAC
            + chunk_attention / CONTEXT_ATTENTION_FLOP_EFF_FRAC
        ) / achievable_flop_per_s(self.gpu, "bf16")
        linear_rate = achievable_flop_per_s(self.gpu, self.compute_dtype())
        linear_s = linear / linear_rate
        flops = linear + decode_attention + chunk_attention
        routed_s = tokens * self._routed_flop_per_token() / linear_rate
        shares = (routed_s / self.gpus, attention_s / self.gpus)
        if self._ep() and self.gpus > 1:
            routed = tokens * self._routed_flop_per_token()
            excess = (EP_LOAD_IMBALANCE - 1.0) * routed / linear_rate
            shares = (EP_LOAD_IMBALANCE * shares[0], shares[1])
            return flops, (linear_s + excess + attention_s) / self.gpus, *shares
        return flops, (linear_s + attention_s) / self.gpus, *shares

    def _kv_moved_bytes(self, batch, context, new, cached, prompts) -> tuple:
        """(running requests' KV read, chunks' cached KV read plus new KV written). A
        running request reads the KV it holds, in the decode engine's layout (the one
        admission counts); a chunk reads and writes the architecture's (what prefill
        computes and ships)."""
        running = batch * self._kv_bytes(context, held=True)
        chunk_kv = self._kv_bytes(cached + new)
        return running, where(new > 0, prompts * chunk_kv, 0.0)

    def _moved_bytes(self, batch, context, new, cached, prompts) -> tuple:
        """(bytes all GPUs move, bytes the busiest GPU moves) (`_moved_split`)."""
        return self._moved_split(batch, context, new, cached, prompts)[:2]

    def _moved_split(self, batch, context, new, cached, prompts, decode_tokens=None) -> tuple:
        """(bytes all GPUs move, bytes the busiest GPU moves, of which KV): weights the
        step's tokens touch, the running requests' KV, and chunks' cached KV read plus new
        KV written (together kv(cached + new)); "ep" reads the replicated weights on every
        GPU. The KV share is what an engine profile's KV-read efficiency re-weighs.
        `decode_tokens`: the decode requests' tokens when they verify several each
        (multi-token prediction: weights touched by all, KV read once per request)."""
        tokens = (batch if decode_tokens is None else decode_tokens) + prompts * new
        running, chunk = self._kv_moved_bytes(batch, context, new, cached, prompts)
        if self._ep():
            kv_per_gpu = (running + chunk) / self.gpus
            per_gpu = self.ep_weight_read_bytes_per_gpu(tokens) + kv_per_gpu
            per_gpu = where(tokens > 0, per_gpu, 0.0)
            return per_gpu * self.gpus, per_gpu, where(tokens > 0, kv_per_gpu, 0.0)
        moved = self.weight_read_bytes(tokens) + running
        moved = moved + chunk
        moved = where(tokens > 0, moved, 0.0)
        return moved, moved / self.gpus, where(tokens > 0, (running + chunk) / self.gpus, 0.0)

    def _comm_s(self, tokens):
        """ "tp": two all-reduces per layer of all tokens x hidden x 2 B. "ep": a dispatch and
        a combine per MoE layer of the busiest GPU's tokens (EP_LOAD_IMBALANCE x tokens /
        gpus) x top-k x the experts' input width (the latent width of a latent MoE)."""
        if not self._is_ep:
            reduces, allreduce = self._const("allreduces", self._allreduces)
            message = tokens * self.model.hidden_size * ACTIVATION_BYTES
            return reduces * allreduce.time_s(message)
        alltoall, dispatch, kinds = self._const("alltoalls", self._alltoalls)
        per_gpu = EP_LOAD_IMBALANCE * tokens / self.gpus
        comm = tokens * 0.0
        for n, top_k, width in kinds:
            copies = per_gpu * top_k * width
            comm = comm + n * (
                alltoall.time_s(copies * dispatch) + alltoall.time_s(copies * ACTIVATION_BYTES)
            )
        return comm

    def _allreduces(self) -> tuple[int, AllReduce]:
        """(all-reduces per step: two per layer, the all-reduce on this instance)."""
        return 2 * self.model.num_layers, AllReduce.of(self.gpu, self.gpus)

    def _alltoalls(self) -> tuple[AllToAll, float, list[tuple[int, int, int]]]:
        """(the all-to-all on this instance, bytes per dispatched element, and (layers,
        top-k, experts' input width) per MoE FFN kind)."""
        dispatch = dtype_bytes("fp8") if self.compute_dtype() == "fp8" else ACTIVATION_BYTES
        hidden = self.model.hidden_size
        kinds = [
            (n, f.experts_per_token, f.expert_hidden_size or hidden)
            for n, f in self.model.moe_layout()
        ]
        return AllToAll.of(self.gpu, self.gpus), dispatch, kinds
