"""Engine flags for one instance group: parallelism, KV transfer, prefix caching and the
plan's batch limits, for vLLM 0.11 or SGLang 0.5 (the images of versions.py).

vLLM counts `--max-num-seqs` and `--max-num-batched-tokens` per engine rank, and "ep"
runs one rank per GPU, so the instance's figure is divided among its GPUs; SGLang divides
`--max-running-requests` and `--chunked-prefill-size` among its data-parallel ranks
itself, so it gets the instance's figure. Prefix caching: vLLM's flag is written; SGLang's
radix cache is on unless disabled, so nothing is needed."""

from __future__ import annotations

import json
import re

from pdd_plan.report.manifests.shapes import GroupShape

KV_CONNECTOR = {"vllm": "NixlConnector (NIXL)", "sglang": "nixl"}
_NIXL = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))


def model_reference(model) -> str:
    """The model's repository id for the engine: from its catalog source where that names
    one (`owner/name @ commit, config.json`, or aiconfigurator's `org--name_config.json`),
    else its name; `--model-ref` replaces it."""
    source = model.source or ""
    named = re.match(r"([\w.-]+/[\w.-]+) @ [0-9a-f]+, config\.json$", source)
    if named:
        return named.group(1)
    config = re.search(r"([\w.-]+)--([\w.-]+)_config\.json$", source)
    return f"{config.group(1)}/{config.group(2)}" if config else model.name


def vllm_args(shape: GroupShape, kv_dtype: str, disaggregated: bool) -> list[str]:
    args = ["--enable-prefix-caching"]
    if kv_dtype.startswith("fp8"):
        args += ["--kv-cache-dtype", "fp8"]
    if shape.mode == "tp":
        args += ["--tensor-parallel-size", str(shape.gpus)]
        if shape.nodes > 1:
            args += ["--distributed-executor-backend", "ray"]
    else:
        args += ["--data-parallel-size", str(shape.gpus), "--enable-expert-parallel"]
        if shape.nodes > 1:
            args += ["--data-parallel-size-local", str(shape.gpus_per_pod)]
    args += _vllm_batching(shape)
    if disaggregated:
        args += ["--kv-transfer-config", _NIXL]
    return args


def _vllm_batching(shape: GroupShape) -> list[str]:
    args = []
    if shape.max_batch_requests is not None:
        args += ["--max-num-seqs", str(shape.per_rank(shape.max_batch_requests))]
    if shape.role in ("prefill", "colocated"):
        if shape.prefill_tokens_per_step is None:  # one request a step, unchunked
            args += ["--no-enable-chunked-prefill"]
            if shape.role == "prefill":
                args += ["--max-num-seqs", "1"]
        else:
            args += ["--max-num-batched-tokens", str(shape.per_rank(shape.prefill_tokens_per_step))]
    return args


def sglang_args(shape: GroupShape, kv_dtype: str, disaggregated: bool) -> list[str]:
    args = ["--tp-size", str(shape.gpus)]
    if kv_dtype.startswith("fp8"):
        args += ["--kv-cache-dtype", "fp8_e4m3"]
    if shape.mode == "ep":
        args += [
            "--dp-size",
            str(shape.gpus),
            "--enable-dp-attention",
            "--ep-size",
            str(shape.gpus),
        ]
    if shape.nodes > 1:
        args += ["--nnodes", str(shape.nodes)]
    if shape.max_batch_requests is not None:
        args += ["--max-running-requests", str(shape.max_batch_requests)]
    if shape.role in ("prefill", "colocated"):
        tokens = shape.prefill_tokens_per_step
        args += ["--chunked-prefill-size", str(-1 if tokens is None else tokens)]
    if disaggregated:
        mode = "prefill" if shape.role == "prefill" else "decode"
        args += ["--disaggregation-mode", mode, "--disaggregation-transfer-backend", "nixl"]
    return args


def engine_args(engine: str, shape: GroupShape, kv_dtype: str, disaggregated: bool) -> list[str]:
    build = vllm_args if engine == "vllm" else sglang_args
    return build(shape, kv_dtype, disaggregated)
