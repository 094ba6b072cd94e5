"""What a target cannot express of a plan: each a one-line sentence, written as a comment
in the files of the datacenters it concerns and printed on stderr by the command. A PDD
mechanism no target runs (the relay decode's routing by hit rate, the RLD -> MD handoff,
the short-output cut-off, the decode-side cache tier, the datacenters joined over the
leased line) is never dropped silently."""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.model.deployment import Deployment
from pdd_plan.report.manifests.shapes import GroupShape

CHART_ACCELERATORS = ("nvidia", "amd")  # the llm-d chart's types among the catalog's vendors


@dataclass(frozen=True)
class Gap:
    text: str
    datacenters: tuple[str, ...]


def _line_text(d: Deployment) -> str:
    leased = ", ".join(f"{x.count} x {x.tier}" for x in d.lines if x.count) or "none"
    return leased


def plan_gaps(target: str, engine: str, d: Deployment, shapes: list[GroupShape]) -> list[Gap]:
    """The plan's mechanisms `target` has no field for, in a fixed order."""
    by_role = {s.role: s.datacenter for s in shapes}
    every = tuple(sorted({s.datacenter for s in shapes}))
    gaps = []
    if d.architecture in ("pdd", "cdc_pd"):
        gaps.append(
            Gap(
                f"cross-datacenter KV transfer from prefill in {by_role['prefill']} to main "
                f"decode in {by_role['main_decode']} over the leased line ({_line_text(d)}): "
                f"{target} runs one cluster per file, so the two datacenters' KV connectors "
                "(NIXL) must be made to reach each other over the line by hand",
                every,
            )
        )
    if d.architecture == "pdd":
        p = d.policy
        gaps.append(
            Gap(
                f"relay decode: no {target} router sends requests under the hit threshold "
                f"{p.rld_hit_threshold:g} P -> RLD -> MD and the rest P -> MD; relay_decode "
                "runs as a plain decode pool and router-policy.yaml holds the policy for a "
                "custom router",
                (by_role["relay_decode"],),
            )
        )
        gaps.append(
            Gap(
                f"{p.handoff} handoff RLD -> MD (token ids, extend-decode on MD): {engine} has no "
                "flag for it",
                (by_role["relay_decode"], by_role["main_decode"]),
            )
        )
    gaps += _policy_gaps(target, d, every)
    gaps += _target_gaps(target, d, shapes)
    return gaps


def _policy_gaps(target: str, d: Deployment, every: tuple[str, ...]) -> list[Gap]:
    gaps = []
    if d.policy.short_output_cutoff:
        gaps.append(
            Gap(
                "short-output cut-off (long-input, short-output requests finished "
                f"beside prefill): no {target} router has it; router-policy.yaml "
                "holds it",
                every,
            )
        )
    cache = d.decode_cache
    if cache is not None and cache.tb > 0:
        md = tuple(sorted({g.datacenter for g in d.role("main_decode")}))
        gaps.append(
            Gap(
                f"decode-side cache tier {cache.tier} ({cache.tb:g} TB) for main "
                f"decode: {target} has no resource for it",
                md,
            )
        )
    return gaps


def _target_gaps(target: str, d: Deployment, shapes: list[GroupShape]) -> list[Gap]:
    gaps = []
    if target == "k8s":
        for s in shapes:
            if s.nodes > 1:
                gaps.append(
                    Gap(
                        f"a {s.gpus}-GPU {s.role} instance spans {s.nodes} pods: an apps/v1 "
                        "Deployment has no pod group, so they are not tied into one engine (use "
                        "--target dynamo or llm-d, or a LeaderWorkerSet)",
                        (s.datacenter,),
                    )
                )
        if d.architecture != "colocated":
            gaps.append(
                Gap(
                    "prefill/decode disaggregation needs a proxy that sends each request to a "
                    "prefill then a decode instance: Kubernetes has none, so the Services are "
                    "written and the proxy is not",
                    tuple(sorted({s.datacenter for s in shapes})),
                )
            )
    if target == "llm-d":
        for vendor in sorted({s.vendor for s in shapes} - set(CHART_ACCELERATORS)):
            dcs = tuple(sorted({s.datacenter for s in shapes if s.vendor == vendor}))
            gaps.append(
                Gap(
                    f"accelerator vendor {vendor} is not among the chart's types; "
                    "its GPUs are requested as container resource limits",
                    dcs,
                )
            )
    return gaps
