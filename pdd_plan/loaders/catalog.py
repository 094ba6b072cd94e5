"""The hardware catalog on disk -> Gpu, LineTier and ModelSpec objects.

The catalog directory is found, in order: `$PDD_PLAN_CATALOG_DIR`; the copy shipped
inside the installed package (`pdd_plan/_data/hardware_catalog`); the repository's
top-level `hardware_catalog/` (source checkouts and editable installs).
"""

from __future__ import annotations

import dataclasses
import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog_figures import sourced
from pdd_plan.loaders.catalog_overlay import overlay_dir
from pdd_plan.loaders.input_files import path_exists
from pdd_plan.loaders.strict import ID_PATTERN, Node, Problems, did_you_mean, load_yaml
from pdd_plan.model.caches.cache_tier import MEDIA, NO_TIER, CacheTier
from pdd_plan.model.compute.hardware import Gpu, LineTier
from pdd_plan.model.units import GBIT_BITS, GIB_BYTES, TERA

if TYPE_CHECKING:  # the model classes (and numpy under them) load with the first model
    from pdd_plan.model.compute.llm import ModelSpec
    from pdd_plan.model.scenario import Scenario

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_REPO_DIR = _PACKAGE_DIR.parent


def data_dir(name: str, env_var: str | None = None) -> Path:
    """Locate a shipped data folder (`hardware_catalog` or `scenarios`)."""
    if env_var and os.environ.get(env_var):
        return Path(os.environ[env_var])
    for candidate in (_PACKAGE_DIR / "_data" / name, _REPO_DIR / name):
        if candidate.is_dir():
            return candidate
    raise InputError.single(
        str(_PACKAGE_DIR / "_data" / name),
        "",
        "no such folder",
        f"the shipped {name} folder (reinstall pdd-plan)",
    )


def catalog_dir() -> Path:
    return data_dir("hardware_catalog", "PDD_PLAN_CATALOG_DIR")


# field -> (scale to SI, required non-null)
GPU_FIELDS: dict[str, tuple[float, bool]] = {
    "bf16_dense_tflop_per_s": (TERA, True),
    "fp8_dense_tflop_per_s": (TERA, False),
    "fp4_dense_tflop_per_s": (TERA, False),
    "hbm_gib": (GIB_BYTES, True),
    "hbm_tbyte_per_s": (TERA, True),
    "scale_up_gbyte_per_s_per_direction": (1e9, True),
    "scale_up_domain_gpus": (1, True),
    "scale_out_gbit_per_s_per_gpu": (GBIT_BITS, True),
    "gpus_per_node": (1, True),
    "tdp_w": (1, True),
    "rental_usd_per_gpu_hour": (1, True),
    "purchase_usd_per_gpu": (1, False),
    "bf16_mfu_frac": (1, True),
    "fp8_mfu_frac": (1, False),
    "hbm_efficiency_frac": (1, True),
    "scale_up_efficiency_frac": (1, True),
    "usable_memory_frac": (1, True),
}
_FRACTION_FIELDS = {k for k in GPU_FIELDS if k.endswith("_frac")}
# Peak dense compute of at least 1 TFLOP/s: a hundredth of the slowest shipped GPU (119.5
# BF16), below every datacenter GPU of the last decade (a 2016 P100 PCIe: 18.7 FP16). Far below
# it (10 MFLOP/s) a decode step takes days and evaluate's percentile search, which
# brackets steps up to 1e6 s, failed with a traceback; a typo (0.001 for 1000) it stops.
MIN_DENSE_TFLOP_PER_S = 1.0
# The bandwidths by the same rule, a hundredth of the slowest shipped GPU rounded down to one
# figure: HBM 0.008 TB/s (L20: 0.864; a 2016 P100 PCIe had 0.732), scale-up 0.3 GB/s per
# direction (L20's PCIe 4.0 x16: 32), scale-out 2 Gbit/s (A100: 200). An efficiency (a
# fraction of the datasheet the engine reaches) at least a hundredth of it: the least
# shipped is 0.47. At 1e-300 a prefill or step took 1e300 s and its square overflowed
# (plan/bounds.py, a traceback); at these floors together every figure stays finite
# (tests/hardening/test_issue22_inputs.py).
MIN_HBM_TBYTE_PER_S = 0.008
MIN_SCALE_UP_GBYTE_PER_S = 0.3
MIN_SCALE_OUT_GBIT_PER_S = 2.0
MIN_EFFICIENCY_FRAC = 0.01
_FLOOR = {
    **{k: MIN_DENSE_TFLOP_PER_S for k in GPU_FIELDS if k.endswith("_dense_tflop_per_s")},
    **{k: MIN_EFFICIENCY_FRAC for k in GPU_FIELDS if k.endswith(("_mfu_frac", "_efficiency_frac"))},
    "hbm_tbyte_per_s": MIN_HBM_TBYTE_PER_S,
    "scale_up_gbyte_per_s_per_direction": MIN_SCALE_UP_GBYTE_PER_S,
    "scale_out_gbit_per_s_per_gpu": MIN_SCALE_OUT_GBIT_PER_S,
}
_INTEGER_FIELDS = {"scale_up_domain_gpus", "gpus_per_node"}


def load_sources(root: Path) -> dict[str, dict]:
    """The source registry: key -> {title, reference, accessed}."""
    path = root / "sources.yaml"
    data = load_yaml(path, "the catalog's sources.yaml")
    problems = Problems(str(path))
    if not isinstance(data, dict):
        Node(data, "", problems).fail("a mapping of source keys")
    else:
        for key, value in data.items():
            entry = Node(value, str(key), problems).mapping(
                required=("title", "reference"), optional=("accessed",)
            )
            if entry:
                entry["title"].string(required=True)
                entry["reference"].string(required=True)
    problems.raise_if_any()
    return dict(data)


def load_gpu(path: Path, sources: set[str]) -> Gpu:
    problems = Problems(str(path))
    root = Node(load_yaml(path, "a GPU catalog entry"), "", problems)
    f = root.mapping(required=("id", "name", "vendor", *GPU_FIELDS))
    if f is None:
        problems.raise_if_any()
    gpu_id = f["id"].identifier(required=True)
    if gpu_id and gpu_id != path.stem:
        f["id"].fail(f"the file's stem {path.stem!r}")
    provenance = {}
    for key, (_, required) in GPU_FIELDS.items():
        if not f[key].is_missing:
            provenance[key] = sourced(
                f[key], sources, required, key in _INTEGER_FIELDS, key in _FRACTION_FIELDS,
                floor=_FLOOR.get(key, 0.0),
            )  # fmt: skip
    name = f["name"].string(required=True)
    vendor = f["vendor"].choice(("nvidia", "amd", "huawei"), required=True)
    problems.raise_if_any()

    def si(key):
        figure = provenance[key]
        return None if figure.value is None else figure.value * GPU_FIELDS[key][0]

    return Gpu(
        id=gpu_id,
        name=name,
        vendor=vendor,
        bf16_flop_per_s=si("bf16_dense_tflop_per_s"),
        fp8_flop_per_s=si("fp8_dense_tflop_per_s"),
        fp4_flop_per_s=si("fp4_dense_tflop_per_s"),
        hbm_bytes=si("hbm_gib"),
        hbm_bytes_per_s=si("hbm_tbyte_per_s"),
        scale_up_bytes_per_s=si("scale_up_gbyte_per_s_per_direction"),
        scale_up_domain_gpus=int(si("scale_up_domain_gpus")),
        scale_out_bits_per_s=si("scale_out_gbit_per_s_per_gpu"),
        gpus_per_node=int(si("gpus_per_node")),
        tdp_w=si("tdp_w"),
        rental_usd_per_gpu_hour=si("rental_usd_per_gpu_hour"),
        purchase_usd_per_gpu=si("purchase_usd_per_gpu"),
        bf16_mfu_frac=si("bf16_mfu_frac"),
        fp8_mfu_frac=si("fp8_mfu_frac"),
        hbm_efficiency_frac=si("hbm_efficiency_frac"),
        scale_up_efficiency_frac=si("scale_up_efficiency_frac"),
        usable_memory_frac=si("usable_memory_frac"),
        provenance=provenance,
    )


def load_lines(path: Path, sources: set[str]) -> dict[str, LineTier]:
    problems = Problems(str(path))
    root = Node(load_yaml(path, "the line-tier catalog"), "", problems)
    f = root.mapping(required=("tiers",), optional=("notes",))
    tiers: dict[str, LineTier] = {}
    for item in (f["tiers"].items(min_items=1) if f else None) or []:
        t = item.mapping(
            required=(
                "id",
                "name",
                "kind",
                "capacity_gbit_per_s",
                "price_usd_per_month",
                "install_usd",
            ),
            optional=("note",),
        )
        if t is None:
            continue
        tier_id = t["id"].identifier(required=True)
        if tier_id in tiers:
            t["id"].fail("an id not used by another tier")
        capacity = t["capacity_gbit_per_s"].number(
            required=True, minimum=0, exclusive_minimum=True, maximum=1e6
        )
        price = sourced(t["price_usd_per_month"], sources, True)
        install = sourced(t["install_usd"], sources, False, allow_zero=True)
        kind = t["kind"].choice(("wavelength", "cloud_port"), required=True)
        name = t["name"].string(required=True)
        if None in (tier_id, capacity, price, install, kind, name) or price.value is None:
            continue
        tiers[tier_id] = LineTier(
            tier_id,
            name,
            kind,
            capacity * GBIT_BITS,
            price.value,
            install.value or 0.0,
            {"price_usd_per_month": price, "install_usd": install},
        )
    problems.raise_if_any()
    return tiers


def load_cache_tiers(path: Path, sources: set[str]) -> dict[str, CacheTier]:
    """The decode-side cache tiers (cache_tiers.yaml): id -> CacheTier."""
    problems = Problems(str(path))
    root = Node(load_yaml(path, "the cache-tier catalog"), "", problems)
    f = root.mapping(required=("tiers",), optional=("notes",))
    tiers: dict[str, CacheTier] = {}
    for item in (f["tiers"].items(min_items=1) if f else None) or []:
        t = item.mapping(
            required=("id", "name", "medium", "price_usd_per_tb_month", "purchase_usd_per_tb"),
            optional=("note", "read_gbyte_per_s_per_gpu"),
        )
        if t is None:
            continue
        tier_id = t["id"].identifier(required=True)
        if tier_id in tiers or tier_id == NO_TIER:
            t["id"].fail(f"an id not used by another tier, and not {NO_TIER!r}")
        price = sourced(t["price_usd_per_tb_month"], sources, True)
        purchase = sourced(t["purchase_usd_per_tb"], sources, False)
        medium = t["medium"].choice(MEDIA, required=True)
        name = t["name"].string(required=True)
        read = t["read_gbyte_per_s_per_gpu"]  # optional (issue #23; default by medium)
        read = None if read.is_missing else sourced(read, sources, True)
        if None in (tier_id, price, purchase, medium, name) or price.value is None:
            continue
        tiers[tier_id] = CacheTier(
            tier_id, name, medium, price.value, purchase.value,
            {"price_usd_per_tb_month": price, "purchase_usd_per_tb": purchase},
            read.value * 1e9 if read is not None and read.value else None,
        )  # fmt: skip
    problems.raise_if_any()
    return tiers


class Catalog:
    """GPUs, line tiers and models of one catalog directory, loaded on first use, with the
    run's `--catalog-dir` overlay (catalog_overlay.py) over it when `root` is not given:
    an overlay entry adds to the shipped ones or replaces the one of the same id."""

    def __init__(self, root: Path | None = None, overlay: Path | None = None):
        self.root = Path(root) if root else catalog_dir()
        self.overlay = Path(overlay) if overlay else (None if root else overlay_dir())
        self._model_files: dict[str, ModelSpec] = {}

    def _folders(self) -> list[Path]:
        """The shipped folder, then the overlay (a later one wins)."""
        return [self.root] + ([self.overlay] if self.overlay else [])

    def _entries(self, kind: str) -> dict[str, Path]:
        """id -> file of `gpus` or `models`, the overlay's over the shipped."""
        return {p.stem: p for root in self._folders() for p in sorted((root / kind).glob("*.yaml"))}

    @cached_property
    def sources(self) -> dict[str, dict]:
        """Source key -> {title, reference, accessed} (a key's membership is what the
        loaders check; the bill of materials cites the rest)."""
        merged = load_sources(self.root)
        if self.overlay and path_exists(self.overlay / "sources.yaml"):
            merged.update(load_sources(self.overlay))
        return merged

    @cached_property
    def gpus(self) -> dict[str, Gpu]:
        return {i: load_gpu(p, self.sources) for i, p in sorted(self._entries("gpus").items())}

    @cached_property
    def lines(self) -> dict[str, LineTier]:
        tiers = load_lines(self.root / "lines.yaml", self.sources)
        if self.overlay and path_exists(self.overlay / "lines.yaml"):
            tiers.update(load_lines(self.overlay / "lines.yaml", self.sources))
        return tiers

    @cached_property
    def cache_tiers(self) -> dict[str, CacheTier]:
        """Decode-side cache tiers; none where the catalog has no cache_tiers.yaml (an
        older or hand-made catalog: the scenario then cannot offer a tier)."""
        tiers: dict[str, CacheTier] = {}
        for folder in self._folders():
            if path_exists(folder / "cache_tiers.yaml"):
                tiers.update(load_cache_tiers(folder / "cache_tiers.yaml", self.sources))
        return tiers

    @cached_property
    def orders(self):
        """Node configurations and line-end hardware: the bill's (loaders/catalog_orders.py)."""
        from pdd_plan.loaders.catalog_orders import OrderCatalog

        return OrderCatalog(self)

    def model_ids(self) -> list[str]:
        return sorted(self._entries("models"))

    def model_data(self, model_id: str) -> dict:
        path = self._entries("models").get(model_id, self.root / "models" / f"{model_id}.yaml")
        if not ID_PATTERN.fullmatch(model_id) or not path_exists(path):
            raise InputError.single(
                "model",
                "",
                repr(model_id),
                "a model id of the catalog",
                did_you_mean(model_id, self.model_ids()) or "see `pdd-plan model list`",
            )
        return load_yaml(path, "a model catalog entry")

    def model(self, model_id: str) -> ModelSpec:
        """A catalog model, read once per catalog (a report asks ~76 times, 5 ms a parse); the
        spec is frozen, and its step memo, shared by every caller, is keyed on all inputs."""
        from pdd_plan.loaders.model_file import model_from_dict  # numpy: not for GPUs alone

        key = f"catalog:{model_id}"
        if key not in self._model_files:
            data = self.model_data(model_id)
            path = self._entries("models").get(model_id, self.root / "models" / f"{model_id}.yaml")
            spec = model_from_dict(data, str(path))
            if spec.id != model_id:
                raise InputError.single(
                    str(path), "id", repr(spec.id), f"the file's stem {model_id!r}"
                )
            self._model_files[key] = spec
        return self._model_files[key]

    def model_at(self, path: Path | str) -> ModelSpec:
        """A model entry file outside the catalog (a scenario's `model_file`), read once."""
        from pdd_plan.loaders.model_file import model_from_dict  # numpy: not for GPUs alone

        key = str(Path(path).resolve())
        if key not in self._model_files:
            data = load_yaml(path, "a model catalog entry")
            self._model_files[key] = model_from_dict(data, str(path))
        return self._model_files[key]

    def model_for(self, scenario: Scenario) -> ModelSpec:
        """The scenario's model, with what its `engine:` section says about the layout."""
        model_file = getattr(scenario, "model_file", "")
        spec = self.model_at(model_file) if model_file else self.model(scenario.model)
        layout = scenario.engine.kv_layout
        if layout is None:
            return spec
        return dataclasses.replace(spec, decode_kv_layout=layout, _cache={})

    def gpu(self, gpu_id: str) -> Gpu:
        if gpu_id not in self.gpus:
            raise InputError.single(
                "gpu",
                "",
                repr(gpu_id),
                "a GPU id of the catalog",
                did_you_mean(gpu_id, self.gpus) or "see `pdd-plan catalog list`",
            )
        return self.gpus[gpu_id]
