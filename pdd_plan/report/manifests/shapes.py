"""What each instance group of a plan runs: its pods, parallelism and batch limits.

The parallelism is the model's (model/compute/roofline.py `Instance.parallel_mode`): "tp"
splits every weight over all the instance's GPUs (tensor parallel size = its GPUs); "ep"
runs data-parallel attention with the routed experts sharded (data parallel size = its
GPUs, expert parallel on). The model never pipelines, so pipeline parallel size is 1.

An instance wider than one node spans `nodes` pods of `gpus_per_pod` GPUs each: the
largest divisor of its GPUs that fits one node, so pods x GPUs per pod is exactly the
plan's GPUs (24 GPUs on 8-GPU nodes: 3 pods of 8)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.deployment import InstanceGroup
from pdd_plan.model.setup import Setup, batch_limit_context_tokens, tpot_batch_limit

DECODE_ROLES = ("relay_decode", "main_decode", "decode", "colocated")


@dataclass(frozen=True)
class GroupShape:
    group: InstanceGroup
    vendor: str
    mode: str  # "tp" or "ep"
    nodes: int  # pods per instance
    gpus_per_pod: int
    # decode roles: the batch at which a step reaches the TPOT limit (the plan's sizing);
    # prefill: None
    max_batch_requests: int | None
    # tokens one prefill step carries over the whole instance; None: batching off
    prefill_tokens_per_step: int | None

    @property
    def role(self) -> str:
        return self.group.role

    @property
    def datacenter(self) -> str:
        return self.group.datacenter

    @property
    def gpus(self) -> int:
        return self.group.gpus_per_instance

    @property
    def tensor_parallel(self) -> int:
        return self.gpus if self.mode == "tp" else 1

    @property
    def data_parallel(self) -> int:
        return self.gpus if self.mode == "ep" else 1

    def per_rank(self, figure: int) -> int:
        """A figure of the whole instance per engine rank: "ep" runs one rank per GPU,
        each with its share (at least 1); "tp" runs one rank for the instance."""
        return figure if self.mode == "tp" else max(1, figure // self.gpus)

    def shape_text(self) -> str:
        kind = (
            f"TP{self.gpus}"
            if self.mode == "tp"
            else f"EP{self.gpus} (data-parallel attention, experts sharded)"
        )
        pods = f", {self.nodes} pods of {self.gpus_per_pod} GPUs" if self.nodes > 1 else ""
        return f"{kind}, PP1{pods}"


def pod_split(gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """(pods, GPUs per pod) of an instance: the largest divisor of `gpus` that fits a node."""
    per_pod = max(d for d in range(1, min(gpus, gpus_per_node) + 1) if gpus % d == 0)
    return gpus // per_pod, per_pod


def group_shapes(setup: Setup, gpus: dict) -> list[GroupShape]:
    """Every instance group with a count, in the plan's order."""
    s = setup.scenario
    context = batch_limit_context_tokens(setup.classes)
    budget = s.engine.prefill_token_budget_per_gpu
    shapes = []
    for g in setup.deployment.instances:
        if g.count <= 0:
            continue
        gpu = gpus[g.gpu]
        instance = Instance(
            setup.model,
            gpu,
            g.gpus_per_instance,
            s.kv_dtype,
            s.weight_dtype,
            engine_profile=s.engine.profile,
        )
        nodes, per_pod = pod_split(g.gpus_per_instance, gpu.gpus_per_node)
        batch = tpot_batch_limit(instance, s, context) if g.role in DECODE_ROLES else None
        tokens = (
            None
            if budget is None or g.role not in ("prefill", "colocated")
            else (budget * g.gpus_per_instance)
        )
        shapes.append(
            GroupShape(
                g,
                gpu.vendor,
                instance.parallel_mode(),
                nodes,
                per_pod,
                None if batch is None else int(math.floor(batch)),
                tokens,
            )
        )
    return shapes
