"""What every target's files share: the run's settings, names, labels, GPU resources."""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan import __version__
from pdd_plan.report.manifests.shapes import GroupShape
from pdd_plan.report.manifests.versions import Target

# the device plugins' resource names (NVIDIA, AMD, Huawei Ascend)
GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "huawei": "huawei.com/Ascend910"}
SERVICE_PORT = 8000
ENTRY_ROLES = ("prefill", "colocated")  # where requests come in (the router's datacenter)


@dataclass(frozen=True)
class Settings:
    target: Target
    engine: str  # vllm | sglang
    image: str
    model_ref: str  # the engine's --model
    kv_dtype: str
    architecture: str

    @property
    def disaggregated(self) -> bool:
        return self.architecture != "colocated"


def dns(text: str) -> str:
    """An id as a Kubernetes name (lower-case letters, digits, `-`)."""
    return text.lower().replace("_", "-")


def group_name(shape: GroupShape) -> str:
    """`prefill-h100-sxm-32g`: role, GPU and instance size tell groups of one role apart."""
    return f"{dns(shape.role)}-{dns(shape.group.gpu)}-{shape.gpus}g"


def gpu_resource(vendor: str) -> str:
    return GPU_RESOURCE.get(vendor, f"{vendor}.com/gpu")


def labels(settings: Settings, datacenter: str) -> dict[str, str]:
    """The version labels every Kubernetes object carries."""
    return {
        "app.kubernetes.io/managed-by": "pdd-plan",
        "pdd-plan/version": __version__,
        "pdd-plan/target-version": settings.target.label,
        "pdd-plan/datacenter": dns(datacenter),
        "pdd-plan/architecture": dns(settings.architecture),
    }
