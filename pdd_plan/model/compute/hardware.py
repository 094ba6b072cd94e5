"""Accelerators and WAN line tiers, in SI units, with the provenance of every figure."""

from __future__ import annotations

from dataclasses import dataclass, field

from pdd_plan.model.units import HOURS_PER_MONTH

BASES = ("published", "measured", "derived", "assumed", "low_confidence")


@dataclass(frozen=True)
class Sourced:
    """A catalog figure as written: value in the file's unit, its source and basis."""

    value: float | None
    source: str
    basis: str = "published"
    note: str = ""


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    vendor: str
    bf16_flop_per_s: float
    fp8_flop_per_s: float | None
    fp4_flop_per_s: float | None
    hbm_bytes: float
    hbm_bytes_per_s: float
    scale_up_bytes_per_s: float  # per GPU, one direction
    scale_up_domain_gpus: int
    scale_out_bits_per_s: float  # RDMA NIC per GPU
    gpus_per_node: int
    tdp_w: float
    rental_usd_per_gpu_hour: float
    purchase_usd_per_gpu: float | None
    bf16_mfu_frac: float
    fp8_mfu_frac: float | None
    hbm_efficiency_frac: float
    scale_up_efficiency_frac: float
    usable_memory_frac: float
    provenance: dict[str, Sourced] = field(default_factory=dict, compare=False, repr=False)

    def facility_power_w(self, pue: float) -> float:
        """Power a datacenter provisions for this GPU: board power (TDP) x PUE."""
        return self.tdp_w * pue

    def peak_flop_per_s(self, dtype: str) -> float | None:
        """Dense tensor peak for a compute dtype; None where the chip lacks it."""
        if dtype in ("bf16", "fp16"):
            return self.bf16_flop_per_s
        if dtype in ("fp8", "int8"):
            return self.fp8_flop_per_s
        if dtype in ("fp4", "mxfp4", "int4"):
            return self.fp4_flop_per_s
        raise KeyError(f"no compute peak for dtype {dtype!r}")


@dataclass(frozen=True)
class LineTier:
    id: str
    name: str
    kind: str  # wavelength | cloud_port
    capacity_bits_per_s: float
    price_usd_per_month: float
    install_usd: float
    provenance: dict[str, Sourced] = field(default_factory=dict, compare=False, repr=False)

    @property
    def price_usd_per_hour(self) -> float:
        return self.price_usd_per_month / HOURS_PER_MONTH
