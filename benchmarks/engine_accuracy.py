"""Issue #23 accuracy targets of the engine model, measured on ../shared/data.

1. Leave-one-configuration-out on the vLLM FPM runs of Qwen3-32B (B300, TP 1/2/4/8):
   fit a profile on three TP degrees, predict the fourth's iterations; the median
   absolute error (MdAPE) of the step time per TP and phase. Three columns: the plain
   roofline (identity profile), "before" (the issue-#22 fit: a constant per-step floor
   and a constant per-request decode cost, `BEFORE_FREE`) and "after" (the default fit:
   a floor per kernel launched and the KV reads at their own efficiency,
   step_fit.HELD_BY_DEFAULT). Target: decode and prefill within 8 % at every TP.
2. The signed TPOT error at each concurrency on NVIDIA NIM's published Llama-3.3-70B FP8
   serving points (hardware-reference.md 4.C, 2 x H100 TP2, 5,000 in / 500 out), served
   by `estimate --concurrency N` (sim/aggregated.py), uncalibrated. NIM (genai-perf)
   reports ITL as (request latency - TTFT) / (output tokens - 1), averaged over requests:
   what vLLM and this tool call TPOT, so it is compared with the mean TPOT. Target: within
   +-10 % at every concurrency.
3. The TensorRT-LLM max-throughput rows (4.B) of the dense models: output tokens/s at an
   unbounded closed loop (every request sent at once, the KV cache the limit) against
   the published figure, signed. Informative (a throughput, not a TPOT; the published
   runs' batch limits are not given).

Run: python benchmarks/engine_accuracy.py [SHARED_DATA_DIR]  (prints Markdown tables;
asserts nothing; tests/unit/test_issue23_engine_accuracy.py holds the bounds)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute import step_fit as sf
from pdd_plan.model.compute.engine_profile import IDENTITY, PARAMETERS
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import Load, serve
from pdd_plan.stages.calibrating.calibration import prepared, read_measurements

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
QWEN_FILES = "fpm_upfront_qwen32_full_once_*__tp[1248]_ep1_past4096.csv.gz"
# the issue-#22 default fit: a constant floor and a constant per-request decode cost
BEFORE_FREE = (
    "fixed_step_s", "compute_efficiency_frac", "memory_efficiency_frac", "comm_overlap_frac",
    "prefill_fixed_s", "prefill_request_s", "decode_request_s", "serial_token_s",
    "eager_mode_step_s",
)  # fmt: skip
NIM = {"model": "llama_3_3_70b", "gpu": "h100_sxm", "gpus": 2, "isl": 5000, "osl": 500}
TRTLLM_DENSE = {  # 4.B rows of dense models: (model, GPU, GPUs, weight dtype)
    "Llama 3.3 70B | H200 TP1 FP8": ("llama_3_3_70b", "h200_sxm", 1, "fp8"),
    "Llama 3.3 70B | H100 TP2 FP8": ("llama_3_3_70b", "h100_sxm", 2, "fp8"),
    "Llama 3.1 405B | H200 TP8 FP8": ("llama_3_1_405b", "h200_sxm", 8, "fp8"),
    "Llama 3.1 405B | H100 TP8 FP8": ("llama_3_1_405b", "h100_sxm", 8, "fp8"),
}
TRTLLM_SHAPES = ((1000, 1000), (2048, 128), (5000, 500), (20000, 2000))


def qwen_data(data_dir: Path, catalog: Catalog):
    files = sorted((data_dir / "perf" / "fpm").glob(QWEN_FILES))
    measured = read_measurements(files, {}, catalog)
    return measured, prepared(measured, catalog)


def loco_errors(data: sf.Prepared, free) -> dict[int, dict[str, float]]:
    """Per held-out configuration (group index), its MdAPE per phase when the profile
    is fitted on the others (`free`: None = the default fit)."""
    start = IDENTITY
    if free is not None:  # the layer floor folded into the fitted floor, as the default
        values = zip(PARAMETERS, IDENTITY.vector(), strict=True)
        start = IDENTITY.with_vector([0.0 if k in sf.ZEROED_BY_DEFAULT else v for k, v in values])
    out = {}
    for group in np.unique(data.group):
        held = data.group == group
        profile, _ = sf.fit_profile(data.select(~held), start, free)
        test = data.select(held)
        out[int(group)] = sf.phase_errors(
            sf.predict_s(profile.vector(), test), test.latency_s, test.phase
        )
    return out


def fpm_table(data_dir: Path, catalog: Catalog) -> dict:
    measured, data = qwen_data(data_dir, catalog)
    plain = sf.predict_s(IDENTITY.vector(), data)
    before, after = loco_errors(data, BEFORE_FREE), loco_errors(data, None)
    print("| Qwen3-32B held out | phase | plain roofline | before (#22 fit) | after | <= 8 % |")
    print("|---|---|---:|---:|---:|---|")
    rows = {}
    for i, m in enumerate(measured):
        one = data.group == i
        flat = sf.phase_errors(plain[one], data.latency_s[one], data.phase[one])
        for phase in sf.PHASES:
            ok = "yes" if after[i][phase] <= 0.08 else "no"
            print(f"| TP{m.samples.tp} | {phase} | {_pct(flat[phase])} | "
                  f"{_pct(before[i][phase])} | {_pct(after[i][phase])} | {ok} |")  # fmt: skip
        rows[m.samples.tp] = after[i]
    return rows


def nim_points(data_dir: Path) -> list[tuple[int, float]]:
    """(concurrency, ITL s) of hardware-reference.md 4.C, below saturation."""
    text = (data_dir / "hardware-reference.md").read_text()
    section = text.split("### C. NVIDIA NIM", 1)[1].split("###", 1)[0]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].isdigit() and "saturated" not in line:
            out.append((int(cells[0]), float(cells[2].replace(",", "")) / 1e3))
    return out


def nim_instance(catalog: Catalog, profile=IDENTITY) -> Instance:
    model, gpu = catalog.model(NIM["model"]), catalog.gpus[NIM["gpu"]]
    return Instance(model, gpu, NIM["gpus"], "fp8", "fp8", engine_profile=profile)


def tpot_signed_errors(data_dir: Path, catalog: Catalog, profile=IDENTITY) -> dict[int, float]:
    """Signed error of the mean TPOT against NIM's ITL, per concurrency."""
    inst = nim_instance(catalog, profile)
    out = {}
    for concurrency, itl_s in nim_points(data_dir):
        load = Load(NIM["isl"], NIM["osl"], max(10 * concurrency, 100), concurrency)
        tpot_s = float(np.mean(serve(inst, load).tpot_s))
        out[concurrency] = tpot_s / itl_s - 1.0
    return out


def nim_table(data_dir: Path, catalog: Catalog) -> None:
    errors = tpot_signed_errors(data_dir, catalog)
    print("\n| NIM Llama-3.3-70B FP8, 2 x H100 TP2 | measured ITL | TPOT (mean) | signed error |")
    print("|---|---:|---:|---:|")
    for concurrency, itl_s in nim_points(data_dir):
        tpot = itl_s * (1 + errors[concurrency])
        print(f"| concurrency {concurrency} | {1e3 * itl_s:.2f} ms | {1e3 * tpot:.2f} ms | "
              f"{100 * errors[concurrency]:+.1f} % |")  # fmt: skip


def trtllm_rows(data_dir: Path) -> dict[str, list[float | None]]:
    text = (data_dir / "hardware-reference.md").read_text()
    section = text.split("### B. NVIDIA TensorRT-LLM", 1)[1].split("###", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        key = " | ".join(cells[:2])
        if key in TRTLLM_DENSE:
            out[key] = [None if c == "n/a" else float(c.replace(",", "")) for c in cells[2:6]]
    return out


def trtllm_table(data_dir: Path, catalog: Catalog) -> None:
    print("\n| TRT-LLM 4.B row | ISL/OSL | published out tok/s | modelled | signed error |")
    print("|---|---|---:|---:|---:|")
    for key, published in trtllm_rows(data_dir).items():
        model, gpu, gpus, dtype = TRTLLM_DENSE[key]
        inst = Instance(catalog.model(model), catalog.gpus[gpu], gpus, "fp8", dtype)
        for (isl, osl), figure in zip(TRTLLM_SHAPES, published, strict=True):
            if figure is None or inst.max_batch(isl + osl) < 1:
                continue
            load = Load(isl, osl, 2000, 2000)
            modelled = serve(inst, load).summary()["output_throughput_tokens_per_s"]
            print(f"| {key} | {isl}/{osl} | {figure:,.0f} | {modelled:,.0f} | "
                  f"{100 * (modelled / figure - 1):+.1f} % |")  # fmt: skip


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def main() -> None:
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    catalog = Catalog()
    fpm_table(data_dir, catalog)
    nim_table(data_dir, catalog)
    trtllm_table(data_dir, catalog)


if __name__ == "__main__":
    main()
