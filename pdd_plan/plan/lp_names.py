"""Names of the MILP's variables and constraints: sentences in an LP dump, bounded in length.

The scenario's ids (datacenters, GPUs, line tiers) have no length limit, but an LP file's
names do: PuLP refuses to write a variable name over 100 characters (`--dump-lp`, and every
solve keeps its LP text), and the CPLEX LP format allows 255. An id longer than
ID_KEEP_CHARS reads in a name as its first ID_PREFIX_CHARS letters plus a stable hash of the
whole id: a shortened id (21 characters) is never as short as a kept one, and two long ids
differ in their hash, so names stay unique; every name fits MAX_NAME_CHARS
(tests/hardening/test_issue22_inputs.py checks it at ids of 50 to 500 characters).
The catalog's ids (the longest, `rtx_pro_6000_server`, has 19) read in full.
"""

from __future__ import annotations

import hashlib

MAX_NAME_CHARS = 100  # PuLP's writeLP limit on a variable's name
ID_KEEP_CHARS = 20  # an id up to this long reads in full
ID_PREFIX_CHARS = 12  # what a longer one keeps before its hash
HASH_HEX_CHARS = 8


def short_id(identifier: str) -> str:
    """The id as it reads in a name (sha256: stable across runs, unlike `hash`)."""
    if len(identifier) <= ID_KEEP_CHARS:
        return identifier
    digest = hashlib.sha256(identifier.encode("utf-8")).hexdigest()[:HASH_HEX_CHARS]
    return f"{identifier[:ID_PREFIX_CHARS]}_{digest}"


def candidate_name(role: str, datacenter: str, gpu: str, gpus_per_instance: int) -> str:
    """e.g. `prefill_dc_a_h100_sxm_x32`: Candidate.key with its ids shortened."""
    return f"{role}_{short_id(datacenter)}_{short_id(gpu)}_x{gpus_per_instance}"


def of_candidate(c) -> str:
    return candidate_name(c.role, c.datacenter, c.gpu, c.gpus_per_instance)


def instances_var(c) -> str:
    return f"instances_of_{of_candidate(c)}"


def chosen_var(c) -> str:
    return f"{of_candidate(c)}_is_the_type_chosen_for_its_role"


def only_chosen_constraint(c) -> str:
    return f"only_the_chosen_type_of_{of_candidate(c)}"


def beside_prefill_constraint(c) -> str:
    return f"{of_candidate(c)}_only_beside_prefill"


def across_the_line_constraint(c) -> str:
    return f"{of_candidate(c)}_only_across_the_line_from_prefill"


def lines_var(tier: str) -> str:
    return f"lines_of_{short_id(tier)}"


def capacity_constraint(role: str) -> str:
    return f"{role}_capacity_covers_its_demand"


def availability_constraint(gpu: str, datacenter: str) -> str:
    return f"{short_id(gpu)}_in_{short_id(datacenter)}_within_availability"


def power_constraint(datacenter: str) -> str:
    return f"power_in_{short_id(datacenter)}_within_its_budget_kw"


def spending_constraint(datacenter: str) -> str:
    return f"spending_in_{short_id(datacenter)}_within_its_budget"


def shortfall_var(constraint: str) -> str:
    """The elastic copy's slack on a constraint (plan/elastic.py)."""
    return f"shortfall_of_{constraint}"
