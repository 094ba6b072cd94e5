"""The versions every written file is pinned to, with the schema each is checked against.

Each target names the API (and CRD or chart) version its files are written for, the
engine image they run, and the vendored schema (schemas/SOURCES.md gives each one's
repository, path and commit). `--image` replaces the image; nothing else moves with it,
so a different image must speak the same engine flags (vLLM 0.11 / SGLang 0.5 here)."""

from __future__ import annotations

from dataclasses import dataclass

KUBERNETES_VERSION = "v1.33.0"
K8S_SCHEMA = "kubernetes-v1.33.0-strict.json"
DYNAMO_API = "nvidia.com/v1alpha1"
DYNAMO_CRD_COMMIT = "967e177c"  # ai-dynamo/dynamo: the CRD the vendored schema is cut from
LLMD_CHART = "llm-d-modelservice"
LLMD_CHART_VERSION = "v0.4.0"


@dataclass(frozen=True)
class Target:
    name: str
    api: str  # what the files' main documents are, and their version
    images: dict[str, str]  # engine -> the image the files run
    label: str  # the version label value (<= 63 characters, [a-z0-9.-])


TARGETS = {
    "dynamo": Target(
        "dynamo",
        f"DynamoGraphDeployment {DYNAMO_API} (CRD schema of ai-dynamo/dynamo@{DYNAMO_CRD_COMMIT})",
        {
            "vllm": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.1",
            "sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.8.1",
        },
        f"dynamo-v1alpha1-crd-{DYNAMO_CRD_COMMIT}",
    ),
    "llm-d": Target(
        "llm-d",
        f"Helm values of the {LLMD_CHART} chart {LLMD_CHART_VERSION} (its values.schema.json)",
        {"vllm": "ghcr.io/llm-d/llm-d-cuda:v0.4.0"},
        f"llm-d-modelservice-{LLMD_CHART_VERSION}",
    ),
    "k8s": Target(
        "k8s",
        f"apps/v1 Deployment and v1 Service (Kubernetes {KUBERNETES_VERSION} schemas)",
        {"vllm": "vllm/vllm-openai:v0.11.0", "sglang": "lmsysorg/sglang:v0.5.3"},
        f"kubernetes-{KUBERNETES_VERSION}",
    ),
}
ENGINES = ("vllm", "sglang")


def versions_text(target: Target, image: str) -> str:
    """The versions line of a file's header."""
    return f"{target.api}; image {image}; Kubernetes API {KUBERNETES_VERSION}"
