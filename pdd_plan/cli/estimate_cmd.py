"""`pdd-plan estimate`: one instance's prefill and decode latencies from the roofline."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from pdd_plan.cli.bounds import MAX_BATCH, MAX_GPUS_PER_INSTANCE, MAX_SEED, MAX_TOKENS, bounded
from pdd_plan.cli.estimate_serving import (
    MAX_RATE_PER_S,
    MAX_SERVING_REQUESTS,
    print_serving,
    serving_data,
    serving_load,
)
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.errors import InputError, Problem
from pdd_plan.model.units import DTYPE_BYTES, MS_S, format_bytes

if TYPE_CHECKING:  # the catalog and the models load when the command runs, not at --help
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.model.compute.roofline import Instance

PARTS = ("compute_s", "memory_s", "comm_s", "overhead_s", "total_s")


def _check(problems: list[Problem], option: str, value, ok: bool, expected: str, hint=""):
    if not ok:
        problems.append(Problem("command line", option, repr(value), expected, hint))


def _validate(catalog: Catalog, gpu, weight_dtype, kv_dtype, parallelism) -> None:
    """The ids and names (the numbers are checked by their options' bounds)."""
    from pdd_plan.loaders.strict import did_you_mean
    from pdd_plan.model.compute.roofline import PARALLELISMS

    problems: list[Problem] = []
    known_gpus = list(catalog.gpus)
    _check(
        problems,
        "--gpu",
        gpu,
        gpu in catalog.gpus,
        "a GPU id of the catalog",
        did_you_mean(gpu, known_gpus) or "see `pdd-plan catalog list`",
    )
    dtypes = ", ".join(DTYPE_BYTES)
    for option, value in (("--weight-dtype", weight_dtype), ("--kv-dtype", kv_dtype)):
        ok = value is None or value in DTYPE_BYTES
        hint = "" if ok else did_you_mean(value, DTYPE_BYTES)
        _check(problems, option, value, ok, f"one of {dtypes}", hint)
    ok = parallelism in PARALLELISMS
    hint = "" if ok else did_you_mean(parallelism, PARALLELISMS)
    _check(problems, "--parallelism", parallelism, ok, f"one of {', '.join(PARALLELISMS)}", hint)
    if problems:
        raise InputError(problems)


def estimate_data(inst: Instance, isl: int, osl: int, batch: int) -> dict:
    """The JSON of `estimate`: prefill of one request alone, decode at `batch`."""
    from pdd_plan.loaders.engine_profile import profile_summary, transfer_notes

    mean_context = isl + osl / 2
    prefill = inst.prefill_breakdown(isl)
    decode = inst.decode_breakdown(batch, mean_context)
    return {
        "model": inst.model.id,
        "gpu": inst.gpu.id,
        "gpus_per_instance": inst.gpus,
        "parallelism": inst.parallel_mode(),
        "parallelism_requested": inst.parallelism,
        "weight_dtype": inst.weight_dtype or inst.model.weight_dtype,
        "expert_weight_dtype": inst.weight_dtype or inst.model.expert_weight_dtype,
        "kv_dtype": inst.kv_dtype,
        "compute_dtype": inst.compute_dtype(),
        "isl": isl,
        "osl": osl,
        "batch": batch,
        "mean_context_tokens": mean_context,
        "prefill_s": prefill["total_s"],
        "tpot_s": decode["total_s"],
        "max_batch": inst.max_batch(isl + osl),
        "max_batch_context_tokens": isl + osl,
        "fits": inst.fits(),
        "weight_bytes_per_gpu": inst.weight_bytes_per_gpu(),
        "kv_capacity_bytes": inst.kv_capacity_bytes(),
        "prefill": prefill,
        "decode": decode,
        "engine_profile": profile_summary(inst.engine_profile),
        "warnings": transfer_notes(inst.engine_profile, [inst.gpu.id], inst.model.id),
        "batch_exceeds_max_batch": batch > inst.max_batch(isl + osl),
        "sizing_warnings": sizing_warnings(inst, isl, osl, batch),
    }


def sizing_warnings(inst: Instance, isl: int, osl: int, batch: int) -> list[str]:
    """Where the figures describe an instance no engine would run as asked (#14 item 12):
    a batch whose KV does not fit HBM, heads that the tensor-parallel degree does not split."""
    out = []
    fit = inst.max_batch(isl + osl)
    if batch > fit:
        out.append(f"batch {batch:,} exceeds the HBM batch: {fit:,} requests of "
                   f"{isl + osl:,} tokens fit; the decode step is computed as if all "
                   f"{batch:,} did")  # fmt: skip
    if inst.parallel_mode() == "tp" and inst.gpus > 1:
        out += _head_warnings(inst.model, inst.gpus)
    return out


def _head_warnings(model, tp: int) -> list[str]:
    """Engines split attention by heads: a degree that does not divide them pads or fails."""
    out = []
    heads = sorted({a.num_heads for a in model.attention_types.values()
                    if getattr(a, "num_heads", None)})  # fmt: skip
    kv_heads = sorted({a.num_kv_heads for a in model.attention_types.values()
                       if getattr(a, "num_kv_heads", None)})  # fmt: skip
    for n in heads:
        if n % tp:
            out.append(f"{n} attention heads are not divisible by the tensor-parallel degree "
                       f"{tp}: engines refuse it or pad heads")  # fmt: skip
    for n in kv_heads:
        if n % tp and tp % n:
            out.append(f"{n} KV heads are not divisible by the tensor-parallel degree {tp} "
                       f"(nor {tp} by {n}): engines refuse it or pad heads")  # fmt: skip
        elif n < tp:
            out.append(f"{n} KV heads under tensor-parallel degree {tp}: each KV head is "
                       f"replicated on {tp // n} GPUs, as engines do (counted in the KV room, "
                       f"the max batch and the step's KV reads)")  # fmt: skip
    return out


def estimate(
    model: str = typer.Option(..., "--model", help="a model id of the catalog"),
    gpu: str = typer.Option(..., "--gpu", help="a GPU id of the catalog"),
    gpus_per_instance: int = bounded(
        1, "--gpus-per-instance", low=1, high=MAX_GPUS_PER_INSTANCE, help="TP/EP degree"
    ),
    isl: int = bounded(..., "--isl", low=1, high=MAX_TOKENS, help="input tokens of one request"),
    osl: int = bounded(..., "--osl", low=1, high=MAX_TOKENS, help="output tokens of one request"),
    batch: int = bounded(
        1, "--batch", low=1, high=MAX_BATCH, help="running requests in a decode step"
    ),
    weight_dtype: str = typer.Option(
        None, "--weight-dtype", help="fp8, bf16, fp4 (default native)"
    ),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="dtype of the KV cache"),
    parallelism: str = typer.Option(
        "auto",
        "--parallelism",
        help="tp (tensor parallel), ep (DP attention + expert parallel, MoE models) or "
        "auto (ep for an MoE model on more than 8 GPUs, else tp)",
    ),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    concurrency: int | None = bounded(
        None, "--concurrency", low=1, high=MAX_BATCH,
        help="also serve a closed-loop benchmark of N clients (TTFT/TPOT percentiles)",
    ),
    rate: float | None = bounded(
        None, "--rate", low=1e-6, high=MAX_RATE_PER_S, unit="req/s",
        help="also serve an open-loop benchmark of Poisson arrivals at R req/s",
    ),
    requests: int | None = bounded(
        None, "--requests", low=1, high=MAX_SERVING_REQUESTS,
        help="requests of that benchmark (default 10 x N, at least 100; 1,000 with --rate)",
    ),
    seed: int = bounded(0, "--seed", low=0, high=MAX_SEED, help="seed of --rate's arrivals"),
    max_batched_tokens: int = bounded(
        8192, "--max-batched-tokens", low=1, high=MAX_TOKENS,
        help="the engine's token budget per iteration (chunked prefill)",
    ),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:  # fmt: skip
    """One instance's prefill time, decode step (TPOT) and max batch, with the roofline
    breakdown: compute vs memory vs communication vs fixed overhead.

    With --concurrency N (or --rate R) the instance also serves a benchmark the way
    `vllm bench serve` runs one: N clients each sending its next request when the last
    finishes (or Poisson arrivals), every request ISL -> OSL tokens, chunked prefill mixed
    into decode iterations up to --max-batched-tokens (vLLM's scheduler): TTFT and TPOT
    percentiles, request and output-token throughput, the mean decode batch.

    Prefill is one request of ISL tokens alone; the decode step runs BATCH requests at a
    mean context of ISL + OSL/2; the max batch is what fits HBM at ISL + OSL tokens each.
    With --parallelism ep (data-parallel attention, sharded experts, an all-to-all per
    MoE layer) a step's tokens are spread evenly over the GPUs.
    """
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.loaders.engine_profile import profile_summary, use_engine_profile
    from pdd_plan.model.compute.engine_profile import IDENTITY
    from pdd_plan.model.compute.roofline import Instance

    profile = use_engine_profile(engine_profile) or IDENTITY
    catalog = Catalog()
    _validate(catalog, gpu, weight_dtype, kv_dtype, parallelism)
    spec = catalog.model(model)
    if parallelism == "ep" and not spec.routed_expert_params():
        raise InputError.single(
            "command line",
            "--parallelism",
            repr(parallelism),
            "tp or auto",
            f"ep needs a model with routed experts; {spec.id} has none",
        )
    inst = Instance(
        spec,
        catalog.gpus[gpu],
        gpus_per_instance,
        kv_dtype,
        weight_dtype,
        parallelism=parallelism,
        engine_profile=profile,
    )
    load = serving_load(isl, osl, concurrency, rate, requests, seed, max_batched_tokens)
    data = estimate_data(inst, isl, osl, batch)
    if profile.members:  # a profile set: which member this GPU runs, fitted or carried
        data["engine_profile"] = profile_summary(profile, [gpu])
    if load is not None:
        data["serving"] = serving_data(inst, load)
    if format.structured:
        print_structured(data, format)
        return
    _print_table(data)
    if load is not None:
        print_serving(data["serving"])


def _print_table(d: dict) -> None:
    from pdd_plan.loaders.engine_profile import profile_line

    for note in d["warnings"]:
        console.print(f"note: {note}", markup=False)
    console.print(profile_line(d["engine_profile"]), markup=False)
    console.print(
        f"[bold]{d['model']}[/] on {d['gpus_per_instance']} x {d['gpu']} "
        f"({d['parallelism']}): weights "
        f"{d['weight_dtype']} / experts {d['expert_weight_dtype']}, KV {d['kv_dtype']}, "
        f"compute {d['compute_dtype']}; weights {format_bytes(d['weight_bytes_per_gpu'])} per GPU"
    )
    rows = [
        [f"prefill {d['isl']:,} tokens", *(d["prefill"][k] / MS_S for k in PARTS)]
        + [d["prefill"]["bound"]],
        [f"decode step, batch {d['batch']:,}", *(d["decode"][k] / MS_S for k in PARTS)]
        + [d["decode"]["bound"]],
    ]
    table(
        "Roofline (ms)",
        ["step", "compute", "memory", "comm", "overhead", "total", "bound"],
        rows,
        caption=f"decode at a mean context of {d['mean_context_tokens']:,.0f} tokens",
    )
    if d["fits"]:
        console.print(
            f"max batch {d['max_batch']:,} requests of {d['max_batch_context_tokens']:,} tokens "
            f"(KV room {format_bytes(d['kv_capacity_bytes'])})"
        )
    else:
        console.print(
            f"[bold red]does not fit[/]: the weights exceed usable HBM by "
            f"{format_bytes(-d['kv_capacity_bytes'])}; max batch 0"
        )
    for warning in d["sizing_warnings"]:
        console.print(f"[yellow]warning[/]: {safe(warning)}")
