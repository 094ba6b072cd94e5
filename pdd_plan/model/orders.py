"""What the bill of materials orders beyond GPU-hours: node configurations (the server an
order line buys) and the hardware at each end of a leased line. Plain data with the
provenance of every figure (catalog `nodes/*.yaml` and `line_ends.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pdd_plan.model.compute.hardware import Sourced

HOURS_PER_YEAR = 8760.0  # 365 x 24: the kWh-per-year convention of the bill


@dataclass(frozen=True)
class NodeConfig:
    """One server configuration for a GPU type, as a vendor sells it."""

    id: str
    name: str
    gpu: str
    gpus_per_node: int
    cpu_model: str
    cpu_count: int
    cpu_cores_each: int
    host_memory_tb: float
    nic_model: str
    nic_count: int
    nic_gbit_per_s: float
    nvme_count: int
    nvme_tb_each: float
    max_power_kw: float
    rack_units: int
    purchase_usd_per_node: float | None
    note: str = ""
    spec_source: str = ""  # the source of the text fields (CPU and NIC models)
    provenance: dict[str, Sourced] = field(default_factory=dict, compare=False, repr=False)

    def summary(self) -> str:
        """The configuration on one line, as an order line states it."""
        return (f"{self.gpus_per_node} GPUs; {self.cpu_count}x {self.cpu_model} "
                f"({self.cpu_cores_each} cores each); {self.host_memory_tb:g} TB host memory; "
                f"{self.nic_count}x {self.nic_model} at {self.nic_gbit_per_s:g} Gbit/s; "
                f"{self.nvme_count}x {self.nvme_tb_each:g} TB NVMe; "
                f"{self.max_power_kw:g} kW max; {self.rack_units}U")  # fmt: skip


@dataclass(frozen=True)
class LineEnd:
    """What one end of a line of a tier needs: a port and a transceiver."""

    tier: str
    port: str
    optic: str
    optic_usd_each: float | None
    provenance: dict[str, Sourced] = field(default_factory=dict, compare=False, repr=False)
