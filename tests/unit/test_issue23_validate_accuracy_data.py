"""Issue #23 item 5: the accuracy table's typed data equals its source, and every point
the catalog can model is replayed.

The published serving points in benchmarks/accuracy_points.csv were typed by hand from
../shared/data/hardware-reference.md sections 4.B and 4.C; this reads those tables again
and compares them cell by cell (skipped without ../shared).
"""

import csv
import importlib.util
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
POINTS = list(csv.DictReader((BENCH / "accuracy_points.csv").open()))
MODELS = {"Llama 3.3 70B": "llama_3_3_70b", "Llama 3.1 405B": "llama_3_1_405b",
          "Qwen3-235B-A22B": "qwen3_235b_a22b", "Llama 3.1 8B": "llama_3_1_8b"}  # fmt: skip
GPUS = {"H200": "h200_sxm", "H100": "h100_sxm", "B200": "b200"}
LENGTHS = ((1000, 1000), (2048, 128), (5000, 500), (20000, 2000))


def _section(text: str, title: str) -> list[list[str]]:
    block = text.split(title, 1)[1].split("\n### ", 1)[0]
    rows = [line.strip("| ").split("|") for line in block.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in r] for r in rows if not set(r[0].strip()) <= {"-", ":"}][1:]


def _number(cell: str) -> float:
    return float(re.match(r"[\d,.]+", cell).group(0).replace(",", ""))


def test_nim_points_are_section_4c(shared_dir):
    text = (shared_dir / "data" / "hardware-reference.md").read_text()
    table = _section(text, "### C. NVIDIA NIM benchmark")
    nim = [p for p in POINTS if p["source"] == "nim"]
    assert len(nim) == len(table) == 5
    for point, (concurrency, ttft, itl, tokens) in zip(nim, table, strict=True):
        assert int(point["concurrency"]) == int(_number(concurrency))
        assert float(point["ttft_mean_ms"]) == _number(ttft)
        assert float(point["tpot_mean_ms"]) == _number(itl)  # NIM's ITL is per request
        assert float(point["output_throughput_tokens_per_s"]) == _number(tokens)
        assert (point["model"], point["gpu"], point["tp"]) == ("llama_3_3_70b", "h100_sxm", "2")


def test_trtllm_points_are_section_4b(shared_dir):
    text = (shared_dir / "data" / "hardware-reference.md").read_text()
    table = _section(text, "### B. NVIDIA TensorRT-LLM perf overview")
    typed = {(p["model"], p["gpu"], p["tp"], p["weight_dtype"], int(p["input_tokens"]),
              int(p["output_tokens"])): float(p["output_throughput_tokens_per_s"])
             for p in POINTS if p["source"] == "trtllm"}  # fmt: skip
    expected = {}
    for model, setup, *cells in table:
        gpu, tp, dtype = setup.split()
        for (isl, osl), cell in zip(LENGTHS, cells, strict=True):
            if cell != "n/a":
                key = (MODELS[model], GPUS[gpu], tp.removeprefix("TP"), dtype.lower(), isl, osl)
                expected[key] = _number(cell)
    assert typed == expected


@pytest.mark.slow
def test_every_modelled_point_is_replayed_with_both_kv_dtypes():
    spec = importlib.util.spec_from_file_location("accuracy", BENCH / "accuracy.py")
    accuracy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(accuracy)
    from pdd_plan.loaders.catalog import Catalog

    catalog = Catalog()
    checks, skipped = accuracy.serving_checks(catalog)
    modelled = [p for p in POINTS if p["model"] in catalog.model_ids()]
    assert len(checks) == 2 * len(modelled)
    assert len(skipped) == len(POINTS) - len(modelled)
    for source, point, check in checks:
        stated = sum(bool(point[k]) for k in ("ttft_mean_ms", "tpot_mean_ms",
                                               "output_throughput_tokens_per_s"))  # fmt: skip
        assert len(check.figures) == stated, (source, point)
        assert all(f.model > 0 for f in check.figures)


@pytest.mark.parametrize("column", ["model", "gpu", "tp", "weight_dtype", "kv_dtype"])
def test_no_point_lacks_its_configuration(column):
    assert all(p[column] for p in POINTS)
