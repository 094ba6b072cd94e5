"""A small two-datacenter Llama-3.1-70B scenario for optimiser tests: H100 for prefill and
decode in dc_a, H200 for main decode in dc_b, one 10 Gbit/s tier, fixed lengths (1,000-token
prompts, 100-token outputs, no prefix hits) at 2 req/s, a loose SLA: solved in a moment.
`over`: `section__key=value` replaces one key (`wan__connection_pool_size=64`)."""

from __future__ import annotations


def two_dc_llama(**over) -> dict:
    data = {
        "name": "relax",
        "model": "llama_3_1_70b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill", "decode"],
             "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]},
            {"id": "dc_b", "roles": ["main_decode"], "gpus": [{"gpu": "h200_sxm", "max_gpus": 64}]},
        ],
        "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "per_connection_gbit_per_s": 1.0,
                "connection_pool_size": 4, "max_lines": 4},
        "workload": {
            "arrival_rate_per_s": 2.0,
            "input_tokens": {"kind": "fixed", "value": 1000},
            "output_tokens": {"kind": "fixed", "value": 100},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 60, "tpot_p90_ms": 100},
        "objective": {"kind": "min_cost"},
    }  # fmt: skip
    for key, value in over.items():
        section, name = key.split("__")
        data[section][name] = value
    return data
