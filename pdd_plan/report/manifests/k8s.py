"""Plain Kubernetes: per instance group an apps/v1 Deployment and a v1 Service. A pod is
one node's share of an instance (`replicas` = instances x pods per instance), so the
GPUs requested add up to the plan's; a Deployment cannot tie the pods of a multi-node
instance into one engine (gaps.py says so)."""

from __future__ import annotations

from pdd_plan.report.manifests.common import (
    SERVICE_PORT,
    Settings,
    gpu_resource,
    group_name,
    labels,
)
from pdd_plan.report.manifests.engine_args import engine_args
from pdd_plan.report.manifests.shapes import GroupShape


def _command(settings: Settings) -> list[str]:
    if settings.engine == "vllm":
        return ["vllm", "serve", settings.model_ref, "--port", str(SERVICE_PORT)]
    return [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        settings.model_ref,
        "--host",
        "0.0.0.0",
        "--port",
        str(SERVICE_PORT),
    ]


def deployment(settings: Settings, shape: GroupShape) -> dict:
    name = group_name(shape)
    selector = {"app.kubernetes.io/name": name}
    pod_labels = {**labels(settings, shape.datacenter), **selector}
    gpus = {gpu_resource(shape.vendor): str(shape.gpus_per_pod)}
    container = {
        "name": "engine",
        "image": settings.image,
        "command": _command(settings),
        "args": engine_args(settings.engine, shape, settings.kv_dtype, settings.disaggregated),
        "ports": [{"name": "http", "containerPort": SERVICE_PORT}],
        "resources": {"limits": gpus, "requests": gpus},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": pod_labels},
        "spec": {
            "replicas": shape.group.count * shape.nodes,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": pod_labels}, "spec": {"containers": [container]}},
        },
    }


def service(settings: Settings, shape: GroupShape) -> dict:
    name = group_name(shape)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels(settings, shape.datacenter)},
        "spec": {
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": SERVICE_PORT}],
        },
    }
