"""`costs.spares`: the N+k spare nodes the bill of materials orders per role.

Either one whole number k for every role, or a mapping role -> k (a role not named: 0).
Spares are ordered, never charged in the answer's hourly cost (docs/bom.md).
"""

from __future__ import annotations

from pdd_plan.loaders.strict import Node
from pdd_plan.model.scenario import ROLES

MAX_SPARE_NODES = 1000  # per role: far past any N+k policy, short of a typo's millions


def spare_nodes_per_role(node: Node) -> dict[str, int]:
    """role -> k spare nodes (empty: no spares, the default)."""
    if node.is_missing or node.value is None:
        return {}
    if not isinstance(node.value, dict):
        k = node.integer(minimum=0, maximum=MAX_SPARE_NODES, unit="nodes per role")
        return {role: k for role in ROLES} if k else {}
    f = node.mapping(optional=ROLES) or {}
    counts = {role: f[role].integer(minimum=0, maximum=MAX_SPARE_NODES, unit="nodes")
              for role in ROLES if not f[role].is_missing}  # fmt: skip
    return {role: k for role, k in counts.items() if k}
