"""The router's policy as a v1 ConfigMap, in each datacenter where requests come in: the
plan's hit threshold, handoff mode and short-output cut-off (with the threshold in force:
the scenario's, or the default routing.resolved_cutoff derives), and the pools it routes
to. No stock router reads it (gaps.py says which mechanism each target lacks); it is
the policy a custom router or scorer is configured from."""

from __future__ import annotations

from pdd_plan.model.deployment import Deployment
from pdd_plan.model.routing import resolved_cutoff
from pdd_plan.report.manifests.common import Settings, group_name, labels
from pdd_plan.report.manifests.shapes import GroupShape

ROUTES = {
    "pdd": "hit rate >= rld_hit_threshold: prefill -> main_decode; below: prefill -> "
    "relay_decode -> main_decode (handoff); never prefill -> relay_decode only",
    "cdc_pd": "prefill -> main_decode (across the leased line)",
    "idc_pd": "prefill -> decode (one datacenter)",
    "colocated": "colocated (prefill and decode on one instance)",
}


def policy_data(d: Deployment, scenario, shapes: list[GroupShape]) -> dict:
    p, cutoff = d.policy, resolved_cutoff(scenario)
    choices = {}
    if d.architecture == "pdd":  # the only architecture whose router has choices to make
        choices = {
            "rld_hit_threshold": p.rld_hit_threshold,
            "handoff": p.handoff,
            "short_output_cutoff": {
                "enabled": p.short_output_cutoff,
                "min_uncached_bytes_per_output_token": cutoff.min_uncached_bytes_per_output_token,
            },
        }
    return {
        "architecture": d.architecture,
        "routes": ROUTES[d.architecture],
        **choices,
        "pools": [
            {
                "role": s.role,
                "datacenter": s.datacenter,
                "service": group_name(s),
                "gpu": s.group.gpu,
                "gpus_per_instance": s.gpus,
                "instances": s.group.count,
            }
            for s in shapes
        ],
    }


def config_map(settings: Settings, datacenter: str, policy_yaml: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pdd-plan-router-policy", "labels": labels(settings, datacenter)},
        "data": {"policy.yaml": policy_yaml},
    }
