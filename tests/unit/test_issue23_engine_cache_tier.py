"""Issue #23 item 2: a cache tier's read-back bandwidth into HBM; DRAM and SSD are not
read alike (defaults by medium, or the catalog's `read_gbyte_per_s_per_gpu`)."""

import shutil

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog, catalog_dir


def test_dram_and_ssd_read_back_at_their_own_bandwidth():
    """2 GB of prefix KV onto 8 GPUs: DRAM over each GPU's PCIe Gen5 link at 50 GB/s,
    2e9 / (8 x 50e9) = 5 ms; SSD at one 7 GB/s drive per GPU, 2e9 / (8 x 7e9) = 35.7 ms."""
    tiers = Catalog().cache_tiers
    assert tiers["dram"].read_back_s(2e9 / 1000, 1000.0, 8) == pytest.approx(5e-3)
    assert tiers["ssd"].read_back_s(2e9 / 1000, 1000.0, 8) == pytest.approx(2 / 56)


def _catalog_with(tmp_path, entry: str) -> Catalog:
    root = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), root)
    path = root / "cache_tiers.yaml"
    text = path.read_text().replace(
        "  - id: ssd\n", f"    read_gbyte_per_s_per_gpu: {entry}\n  - id: ssd\n", 1
    )
    path.write_text(text)
    return Catalog(root=root)


def test_the_catalog_may_state_a_tier_bandwidth(tmp_path):
    cat = _catalog_with(
        tmp_path,
        ("{value: 25, source: hitech_nemix_ddr5_kit, basis: assumed, note: a slower host}"),
    )
    assert cat.cache_tiers["dram"].read_bytes_per_s() == 25e9
    assert cat.cache_tiers["ssd"].read_bytes_per_s() == 7e9


def test_a_bad_bandwidth_is_one_line(tmp_path):
    cat = _catalog_with(tmp_path, "{value: -3, source: hitech_nemix_ddr5_kit}")
    with pytest.raises(InputError) as err:
        cat.cache_tiers  # noqa: B018
    text = str(err.value)
    assert len(text.strip().splitlines()) == 1
    assert "cache_tiers.yaml" in text and "read_gbyte_per_s_per_gpu" in text and "-3" in text
