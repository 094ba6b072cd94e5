"""Helm values for the llm-d-modelservice chart (v0.4.0), one release per instance group:
the chart holds one prefill and one decode pool a release and `multinode` (a
LeaderWorkerSet) for the whole release, while a plan may place several groups of
different shapes in one datacenter. Releases of one model share the pool labels
(`llm-d.ai/model`), so the inference scheduler sees them as one pool.

Parallelism as the chart counts it: GPUs per pod = tensor x dataLocal, pods per
instance = workers; "tp" is tensor = GPUs per pod over `workers` pods, "ep" is data =
the instance's GPUs with dataLocal per pod. The engine command is written whole
(`modelCommand: custom`): decode pods listen behind the chart's routing sidecar (port
8200), prefill pods on the service port."""

from __future__ import annotations

from pdd_plan.report.manifests.common import SERVICE_PORT, Settings, dns, gpu_resource
from pdd_plan.report.manifests.engine_args import engine_args
from pdd_plan.report.manifests.gaps import CHART_ACCELERATORS
from pdd_plan.report.manifests.shapes import GroupShape

PROXY_PORT = 8200  # the chart's routing.proxy.targetPort default
PROXY_CONNECTOR = "nixlv2"


def _parallelism(shape: GroupShape) -> dict:
    if shape.mode == "tp":
        return {"tensor": shape.gpus_per_pod, "data": 1, "dataLocal": 1, "workers": shape.nodes}
    return {
        "tensor": 1,
        "data": shape.gpus,
        "dataLocal": shape.gpus_per_pod,
        "workers": shape.nodes,
    }


def _pool(settings: Settings, shape: GroupShape, port: int) -> dict:
    args = [
        *engine_args("vllm", shape, settings.kv_dtype, settings.disaggregated),
        "--port",
        str(port),
    ]
    gpus = {gpu_resource(shape.vendor): str(shape.gpus_per_pod)}
    return {
        "create": True,
        "replicas": shape.group.count,
        "parallelism": _parallelism(shape),
        "containers": [
            {
                "name": "vllm",
                "image": settings.image,
                "modelCommand": "custom",
                "command": ["vllm", "serve", settings.model_ref],
                "args": args,
                "resources": {"limits": gpus, "requests": gpus},
                "mountModelVolume": True,
            }
        ],
    }


def values(settings: Settings, shape: GroupShape) -> dict:
    """The values of the release that runs `shape`."""
    is_prefill = shape.role == "prefill"
    behind_proxy = settings.disaggregated and not is_prefill
    pool = _pool(settings, shape, PROXY_PORT if behind_proxy else SERVICE_PORT)
    doc = {
        "modelArtifacts": {
            "name": settings.model_ref,
            "uri": f"hf://{settings.model_ref}",
            "labels": {
                "llm-d.ai/inferenceServing": "true",
                "llm-d.ai/model": dns(settings.model_ref.replace("/", "-")),
            },
        },
        "multinode": shape.nodes > 1,
        "routing": {
            "servicePort": SERVICE_PORT,
            "proxy": {
                "enabled": behind_proxy,
                "connector": PROXY_CONNECTOR,
                "targetPort": PROXY_PORT,
            },
        },
        "prefill": pool if is_prefill else {"create": False, "replicas": 0},
        "decode": {"create": False, "replicas": 0} if is_prefill else pool,
    }
    if shape.vendor in CHART_ACCELERATORS:
        doc["accelerator"] = {"type": shape.vendor}
    return doc
