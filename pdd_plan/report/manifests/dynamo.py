"""One DynamoGraphDeployment (nvidia.com/v1alpha1) per datacenter: a frontend where
requests come in, and a worker service per instance group with its GPUs per pod
(`resources.limits.gpu`), its pods per instance (`multinode.nodeCount`, the operator's
"total GPUs = nodes x GPU limit") and its engine flags."""

from __future__ import annotations

from pdd_plan.report.manifests.common import (
    ENTRY_ROLES,
    SERVICE_PORT,
    Settings,
    dns,
    gpu_resource,
    group_name,
    labels,
)
from pdd_plan.report.manifests.engine_args import engine_args
from pdd_plan.report.manifests.shapes import GroupShape
from pdd_plan.report.manifests.versions import DYNAMO_API


def _container(settings: Settings, command: list[str], args: list[str]) -> dict:
    return {
        "extraPodSpec": {
            "mainContainer": {
                "name": "main",
                "image": settings.image,
                "command": command,
                "args": args,
            }
        }
    }


def _worker(settings: Settings, shape: GroupShape) -> dict:
    engine = engine_args(settings.engine, shape, settings.kv_dtype, settings.disaggregated)
    if settings.engine == "vllm":
        role_flag = ["--is-prefill-worker"] if shape.role == "prefill" else []
        args = ["--model", settings.model_ref, *role_flag, *engine]
    else:
        args = ["--model-path", settings.model_ref, *engine]
    limits = {"gpu": str(shape.gpus_per_pod)}
    if shape.vendor != "nvidia":
        limits["gpuType"] = gpu_resource(shape.vendor)
    service = {"componentType": "worker"}
    if settings.disaggregated:  # an aggregated (colocated) worker has no sub-role
        service["subComponentType"] = "prefill" if shape.role == "prefill" else "decode"
    service |= {
        "replicas": shape.group.count,
        "resources": {"limits": limits},
        **_container(settings, ["python3", "-m", f"dynamo.{settings.engine}"], args),
    }
    if shape.nodes > 1:
        service["multinode"] = {"nodeCount": shape.nodes}
    return service


def graph(settings: Settings, datacenter: str, shapes: list[GroupShape]) -> dict:
    services = {}
    if any(s.role in ENTRY_ROLES for s in shapes):
        args = ["--router-mode", "kv", "--http-port", str(SERVICE_PORT)]
        services["frontend"] = {
            "componentType": "frontend",
            "replicas": 1,
            **_container(settings, ["python3", "-m", "dynamo.frontend"], args),
        }
    for shape in shapes:
        services[group_name(shape)] = _worker(settings, shape)
    return {
        "apiVersion": DYNAMO_API,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": f"pdd-plan-{dns(datacenter)}", "labels": labels(settings, datacenter)},
        "spec": {"backendFramework": settings.engine, "services": services},
    }
