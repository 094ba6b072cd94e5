"""Where each architecture's roles may sit, relative to prefill's datacenter.

The architectures differ by what crosses the dedicated line (pdd-system.md, sections 4-5):
- IDC-PD (same-datacenter PD): prefill and decode in ONE datacenter, KV over RDMA;
- CDC-PD: main decode in ANOTHER datacenter than prefill, KV over the line;
- PDD: relay decode BESIDE prefill (RDMA, tens of ms), main decode in another datacenter;
- colocated: each instance serves alone, anywhere.
A plan that breaks these would be priced and timed as something it is not (an IDC-PD plan
with decode across a line and no line in its bill), so the scenario loader refuses roles
that can never be placed, plan files that break them are refused, and the search walks
only plans that keep them.
"""

from __future__ import annotations

from collections.abc import Iterable

# roles that must share prefill's datacenter, and roles that must not (each role belongs
# to the architectures of model/deployment.py alone, so the rule is the role's)
BESIDE_ROLES = ("relay_decode", "decode")
ACROSS_ROLES = ("main_decode",)
BESIDE_PREFILL = {"pdd": ("relay_decode",), "idc_pd": ("decode",)}
ACROSS_THE_LINE = {"pdd": ("main_decode",), "cdc_pd": ("main_decode",)}
# why, in a reader's words
WHY_BESIDE = {
    "relay_decode": "PDD's relay takes the KV from prefill over RDMA",
    "decode": "IDC-PD is same-datacenter PD: its KV never crosses a line",
}
WHY_ACROSS = "main decode is the far end of the line (a line within one datacenter is no line)"


def placement_problem(architecture: str, groups: Iterable) -> str:
    """Why instance groups (anything with .role, .datacenter, .count) break the
    architecture's placement; "" when they keep it. Prefill is one datacenter's. Groups
    without a count (the search's choices, one per role) count as present."""
    groups = [g for g in groups if getattr(g, "count", 1) > 0]
    prefill = {g.datacenter for g in groups if g.role == "prefill"}
    if len(prefill) > 1:
        return f"prefill instances in several datacenters ({', '.join(sorted(prefill))})"
    if not prefill:
        return ""
    (home,) = prefill
    for g in groups:
        if g.role in BESIDE_PREFILL.get(architecture, ()) and g.datacenter != home:
            return (
                f"{g.role} in {g.datacenter}, prefill in {home}: {architecture} keeps "
                f"{g.role} beside prefill ({WHY_BESIDE[g.role]})"
            )
        if g.role in ACROSS_THE_LINE.get(architecture, ()) and g.datacenter == home:
            return f"{g.role} in {home}, prefill's datacenter: {WHY_ACROSS}"
    return ""


def prefill_sites(architecture: str, datacenters) -> list[str]:
    """Datacenters where the architecture's prefill can sit with every other role placed:
    its beside-prefill roles allowed there, its across-the-line roles allowed elsewhere."""
    sites = []
    for dc in datacenters:
        if "prefill" not in dc.roles:
            continue
        beside = BESIDE_PREFILL.get(architecture, ())
        across = ACROSS_THE_LINE.get(architecture, ())
        if all(r in dc.roles for r in beside) and all(
            any(r in other.roles for other in datacenters if other.id != dc.id) for r in across
        ):
            sites.append(dc.id)
    return sites


def architecture_placeable(architecture: str, datacenters) -> bool:
    if architecture == "colocated":
        return any("colocated" in dc.roles for dc in datacenters)
    return bool(prefill_sites(architecture, datacenters))


def unplaceable_role(role: str, dc, datacenters) -> str:
    """Why `role` allowed in datacenter `dc` can never be used ("" when it can)."""
    if role in WHY_BESIDE and "prefill" not in dc.roles:
        return (
            f"{role} only in a datacenter that also allows prefill ({dc.id} does not): "
            f"{WHY_BESIDE[role]}; for decode across the line, main_decode (CDC-PD, PDD)"
        )
    if role == "main_decode" and not any(
        "prefill" in other.roles for other in datacenters if other.id != dc.id
    ):
        return (
            f"main_decode only where another datacenter allows prefill (none but {dc.id} "
            f"does): {WHY_ACROSS}; for decode beside prefill, decode (IDC-PD)"
        )
    return ""


def placement_needs(architecture: str) -> str:
    """What the architecture asks of the datacenters, in words."""
    beside = BESIDE_PREFILL.get(architecture, ())
    across = ACROSS_THE_LINE.get(architecture, ())
    parts = ["a datacenter allowing prefill"]
    parts += [f"{r} there too" for r in beside]
    parts += [f"{r} in another datacenter" for r in across]
    return ", ".join(parts) if architecture != "colocated" else "a datacenter allowing colocated"


def placement_summary(architecture: str, datacenters) -> str:
    """Where the architecture's roles can sit, in words (for `scenario validate`)."""
    if architecture == "colocated":
        return "colocated in " + ", ".join(d.id for d in datacenters if "colocated" in d.roles)
    parts = []
    for home in prefill_sites(architecture, datacenters):
        beside = " + ".join(("prefill", *BESIDE_PREFILL.get(architecture, ())))
        text = f"{beside} in {home}"
        for role in ACROSS_THE_LINE.get(architecture, ()):
            far = [d.id for d in datacenters if d.id != home and role in d.roles]
            text += f", {role} in {' or '.join(far)} (over the line)"
        parts.append(text)
    return (
        "; or ".join(parts) if parts else f"cannot be placed: needs {placement_needs(architecture)}"
    )
