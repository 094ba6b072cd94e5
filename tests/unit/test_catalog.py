"""The shipped catalog: complete, loadable, and every number sourced."""

from pathlib import Path

import pytest
import yaml

from pdd_plan.loaders.catalog import GPU_FIELDS, catalog_dir

ROOT = catalog_dir()
REQUIRED_GPUS = {
    "h100_sxm", "h800_sxm", "h200_sxm", "h20_96g", "b200", "b300", "gb200", "a100_80g_sxm",
    "l40s", "l20", "rtx_pro_6000_server", "mi300x", "mi325x", "mi355x", "ascend_910b",
    "ascend_910c",
}  # fmt: skip
REQUIRED_MODELS = {
    "deepseek_v3", "deepseek_r1", "deepseek_v3_2", "deepseek_v4_pro", "deepseek_v4_flash",
    "kimi_k2", "kimi_k2_5", "kimi_k3", "glm_5", "glm_4_7", "qwen3_235b_a22b", "qwen3_32b",
    "qwen3_coder_480b", "qwen3_next_80b", "qwen3_5_397b", "llama_3_1_70b", "llama_3_1_405b",
    "minimax_m1", "minimax_m2_5", "gpt_oss_120b", "mimo_v2_flash",
}  # fmt: skip
# Numbers that define an entry rather than measure something: a tier's capacity.
DEFINITIONAL_KEYS = {"capacity_gbit_per_s"}


def numeric_leaves_outside_sourced(data, path=""):
    """Every number that is not the `value` of a `{value, source}` mapping."""
    if isinstance(data, dict):
        if "value" in data and "source" in data:
            return []
        out = []
        for key, child in data.items():
            if key in DEFINITIONAL_KEYS and isinstance(child, int | float):
                continue
            out += numeric_leaves_outside_sourced(child, f"{path}.{key}")
        return out
    if isinstance(data, list):
        return [
            x for i, c in enumerate(data) for x in numeric_leaves_outside_sourced(c, f"{path}[{i}]")
        ]
    if isinstance(data, int | float) and not isinstance(data, bool):
        return [path]
    return []


SOURCED_FILES = sorted((ROOT / "gpus").glob("*.yaml")) + [
    ROOT / "lines.yaml",
    ROOT / "cache_tiers.yaml",
]


@pytest.mark.parametrize("path", SOURCED_FILES, ids=lambda p: p.stem)
def test_every_number_has_a_source(path: Path):
    data = yaml.safe_load(path.read_text())
    assert numeric_leaves_outside_sourced(data) == []


def test_the_source_check_can_fail():
    assert numeric_leaves_outside_sourced({"hbm_gib": 80}) == [".hbm_gib"]
    assert numeric_leaves_outside_sourced({"x": {"value": 80}}) == [".x.value"]
    assert numeric_leaves_outside_sourced({"x": {"value": 80, "source": "s"}}) == []


def test_sources_cited_exist_and_assumptions_are_explained():
    sources = set(yaml.safe_load((ROOT / "sources.yaml").read_text()))
    for path in SOURCED_FILES:
        text = yaml.safe_load(path.read_text())
        figures = (
            list(text.values())
            if "tiers" not in text
            else [v for tier in text["tiers"] for v in tier.values()]
        )
        for fig in figures:
            if isinstance(fig, dict) and "source" in fig:
                assert fig["source"] in sources, (path.name, fig)
                if (
                    fig.get("basis") in ("assumed", "low_confidence", "derived")
                    or fig["value"] is None
                ):
                    assert fig.get("note"), (path.name, fig)


def test_all_required_gpus_load_with_every_field(catalog):
    assert set(catalog.gpus) >= REQUIRED_GPUS
    for gpu in catalog.gpus.values():
        assert set(gpu.provenance) == set(GPU_FIELDS)
        assert gpu.rental_usd_per_gpu_hour > 0
        assert 0 < gpu.hbm_efficiency_frac <= 1 and 0 < gpu.usable_memory_frac <= 1


def test_gpu_units_are_converted_once(catalog):
    """H100 SXM: 80 GiB, 3.35 TB/s, 989 dense BF16 TFLOP/s, 450 GB/s NVLink per direction."""
    h100 = catalog.gpus["h100_sxm"]
    assert h100.hbm_bytes == 80 * 2**30
    assert h100.hbm_bytes_per_s == pytest.approx(3.35e12)
    assert h100.bf16_flop_per_s == pytest.approx(989e12)
    assert h100.scale_up_bytes_per_s == pytest.approx(450e9)
    assert h100.scale_out_bits_per_s == pytest.approx(400e9)


def test_line_tiers(catalog):
    capacities = {t.id: t.capacity_bits_per_s for t in catalog.lines.values()}
    for gbit in (1, 10, 100, 400):
        assert gbit * 1e9 in capacities.values()
    assert catalog.lines["wave_10g"].price_usd_per_month == pytest.approx(724)
    assert catalog.lines["wave_10g"].price_usd_per_hour == pytest.approx(724 / 730)


def test_all_required_models_load(catalog):
    assert set(catalog.model_ids()) >= REQUIRED_MODELS
    for model_id in catalog.model_ids():
        model = catalog.model(model_id)
        assert model.id == model_id and model.source
        assert model.params_total() >= model.params_active() > 0
