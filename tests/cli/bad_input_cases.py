"""The broken inputs of test_bad_inputs.py: what each breaks and what its one-line error
must say."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from broken_scenario import (
    TEMPLATE,
    a_directory,
    alias_bomb,
    binary,
    drop_key,
    mutated,
    nested_lists,
    not_utf8,
    raw,
    rename_key,
    replace_line,
    set_key,
    template,
    template_text,
)


# ---- cases -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[Path], Path]
    expect: tuple[str, ...]  # every fragment must appear in the message
    lines: int = 1  # problems reported (one line each)


RATE = "workload.arrival_rate_per_s"
HITS = "workload.prefix_hit_rate"
UTF8_BYTE = template_text().encode().index(b"template") + 1  # the byte after the t
SYNTAX_LINE = template_text().splitlines().index(f"model: {TEMPLATE['model']}") + 1
SYNTAX_COLUMN = len(f"model: {TEMPLATE['model']}") + 1  # where the stray ': ' starts

CLI_CASES = [
    # wrong types
    Case("string_for_number", mutated(set_key(RATE, "fast")), (f": {RATE}: found 'fast';",)),
    Case(
        "list_for_mapping",
        mutated(set_key("wan", [1, 2])),
        (": wan: found a list of 2 items; expected a mapping",),
    ),
    Case(
        "mapping_for_list",
        mutated(set_key("wan.tiers", {"wave_10g": 1})),
        (": wan.tiers: found a mapping with keys wave_10g; expected a list",),
    ),
    Case("bool_for_number", mutated(set_key("costs.pue", True)), (": costs.pue: found true;",)),
    # out-of-range and non-finite numbers
    Case("negative_rate", mutated(set_key(RATE, -5)), (f": {RATE}: found -5;", ">= 1e-06")),
    Case("nan_rate", mutated(set_key(RATE, float("nan"))), (f": {RATE}: found nan;",)),
    Case(
        "raw_1e400",
        raw(replace_line("  arrival_rate_per_s: 20", "  arrival_rate_per_s: 1e400")),
        (f": {RATE}: found ", "1e400", "expected a number"),
    ),
    Case(
        "integer_of_5000_digits",
        raw(replace_line("  arrival_rate_per_s: 20", "  arrival_rate_per_s: 1" + "0" * 5000)),
        ("scenario.yaml: found a value YAML cannot convert", "5001 digits"),
    ),
    # unknown keys and ids, with did-you-mean
    Case(
        "misspelt_top_level_key",
        mutated(rename_key("workload", "worklaod")),
        (
            ": worklaod: found an unknown key",
            "(did you mean 'workload'?)",
            ": workload: found nothing",
        ),
        lines=2,  # the misspelt key, and the required key it should have been
    ),
    Case(
        "unknown_sla_key",
        mutated(rename_key("sla.ttft_p90_s", "ttft_p90")),
        (": sla.ttft_p90: found an unknown key", "(did you mean 'ttft_p90_s'?)"),
    ),
    Case(
        "unknown_wan_key",
        mutated(rename_key("wan.rtt_ms", "rtt")),
        (
            ": wan.rtt: found an unknown key",
            "(did you mean 'rtt_ms'?)",
            ": wan.rtt_ms: found nothing",
        ),
        lines=2,
    ),
    Case(
        "unknown_gpu",
        mutated(set_key("datacenters.0.gpus.0.gpu", "h100_sx")),
        (": datacenters[0].gpus[0].gpu: found 'h100_sx';", "(did you mean 'h100_sxm'?)"),
    ),
    Case(
        "unknown_model",
        mutated(set_key("model", "deepseek_v4_pr")),
        (": model: found 'deepseek_v4_pr';", "(did you mean 'deepseek_v4_pro'?)"),
    ),
    Case(
        "unknown_line_tier",
        mutated(set_key("wan.tiers.0", "wave_10gg")),
        (": wan.tiers[0]: found 'wave_10gg';", "(did you mean 'wave_10g'?)"),
    ),
    Case(
        "unknown_role",
        mutated(set_key("datacenters.0.roles.0", "prefil")),
        (": datacenters[0].roles[0]: found 'prefil';", "(did you mean 'prefill'?)"),
    ),
    Case(
        "misspelt_handoff",
        mutated(set_key("policy.handoff", "catchup")),
        (": policy.handoff: found 'catchup';", "(did you mean 'catch_up'?)"),
    ),
    # cross-key rules
    Case(
        "duplicated_datacenter_id",
        mutated(lambda d: d["datacenters"].append(copy.deepcopy(d["datacenters"][0]))),
        (": datacenters[2].id: found 'dc_a'; expected an id not used by another datacenter",),
    ),
    Case(
        "wan_missing_with_two_datacenters",
        mutated(drop_key("wan")),
        (": wan: found nothing; expected a wan section",),
    ),
    Case(
        "max_goodput_without_budget",
        mutated(set_key("objective.kind", "max_goodput")),
        (": objective.budget_usd_per_hour: found nothing (null); expected a budget",),
    ),
    # distributions
    Case(
        "bin_shares_not_summing_to_1",
        mutated(set_key(f"{HITS}.bins.2.share", 0.70)),
        (f": {HITS}.bins: found shares summing to 0.95; expected shares summing to 1",),
    ),
    Case(
        "bin_high_below_low",
        mutated(set_key(f"{HITS}.bins.0.high", 0.01)),
        (f": {HITS}.bins[0].high: found 0.01; expected a number >= low (0.02)",),
    ),
    Case(
        "beta_high_not_above_low",
        mutated(set_key("workload.prefix_hit_rate_alternatives.narrow.high", 0.0)),
        (": workload.prefix_hit_rate_alternatives.narrow.high: found 0.0;", "> low (0)"),
    ),
    Case(
        "empirical_weights_wrong_length",
        mutated(
            set_key(
                "workload.input_tokens",
                {"kind": "empirical", "values": [1000, 2000, 3000], "weights": [1, 2]},
            )
        ),
        (": workload.input_tokens.weights: found a list of 2 items;", "as long as values (3)"),
    ),
    Case(
        "lognormal_sigma_zero",
        mutated(set_key("workload.output_tokens.sigma", 0)),
        (": workload.output_tokens.sigma: found 0; expected a number > 0",),
    ),
    # required keys and the SLA
    Case(
        "missing_model",
        mutated(drop_key("model")),
        (": model: found nothing; expected this key (it is required)",),
    ),
    Case(
        "sla_with_only_ttft",
        mutated(drop_key("sla.tpot_p90_ms")),
        (": sla.tpot_pNN_ms: found no TPOT limit;", "tpot_p90_ms"),
    ),
    Case(
        "tpot_in_seconds",
        mutated(drop_key("sla.tpot_p90_ms"), set_key("sla.tpot_p90_s", 0.05)),
        (": sla.tpot_p90_s: found a tpot limit in s; expected tpot_p90_ms",),
    ),
    Case(
        "percentile_100",
        mutated(rename_key("sla.ttft_p90_s", "ttft_p100_s")),
        (": sla.ttft_p100_s: found percentile 100;",),
    ),
    # files that are not a scenario at all
    Case("empty_file", raw(lambda text: b""), ("scenario.yaml: found an empty file",)),
    Case(
        "whitespace_only_file",
        raw(lambda text: " \n\t\n   \n"),
        ("scenario.yaml: found an empty file",),
    ),
    Case(
        "yaml_syntax_error",
        raw(replace_line(f"model: {TEMPLATE['model']}", f"model: {TEMPLATE['model']}: extra")),
        (f"line {SYNTAX_LINE}, column {SYNTAX_COLUMN}: found invalid YAML",),
    ),
    Case(
        "duplicated_key",
        raw(replace_line("name: template", "name: template\nname: again")),
        ("line 2, column 1: found invalid YAML (found the key 'name' twice)",),
    ),
    Case("binary_file", raw(binary), ("scenario.yaml: found binary data (NUL bytes)",)),
    Case(
        "not_utf8",
        raw(not_utf8),
        (f"scenario.yaml: found bytes that are not UTF-8 (at byte {UTF8_BYTE})",),
    ),
    Case(
        "top_level_list",
        raw(lambda text: yaml.safe_dump([template()])),
        (": (top level): found a list of 1 item; expected a mapping",),
    ),
    Case(
        "200_levels_of_nested_lists",
        mutated(set_key("description", nested_lists(200))),
        (": description[0][0]", "found nesting deeper than 40 levels"),
    ),
    Case(
        "alias_bomb",
        raw(alias_bomb),
        (": description: found a list of 9 items; expected a text",),
    ),
    Case(
        "file_does_not_exist",
        lambda tmp: tmp / "no_such_scenario.yaml",
        ("no_such_scenario.yaml: found no such file",),
    ),
    Case("directory_as_file", a_directory, ("scenario.yaml: found a directory",)),
    Case(
        "engine_layout_without_source",
        mutated(set_key("engine", {"kv_uncompressed_tokens": "all"})),
        (": engine.kv_layout_source: found nothing", "expected a source"),
    ),
    Case(
        "engine_layout_negative",
        mutated(set_key("engine", {"kv_uncompressed_tokens": -1, "kv_layout_source": "x"})),
        (": engine.kv_uncompressed_tokens: found -1;",),
    ),
]

# the same checks, through `load_scenario` (no process start)
API_CASES = [
    Case("zero_rate", mutated(set_key(RATE, 0)), (f": {RATE}: found 0;",)),
    # a traceback before (TypeError: iterating the None a failed list read returns)
    Case(
        "number_for_links",
        mutated(set_key("wan.links", 7)),
        (": wan.links: found 7; expected a list",),
    ),
    Case(
        "inf_ttft",
        mutated(set_key("sla.ttft_p90_s", float("inf"))),
        (": sla.ttft_p90_s: found inf;",),
    ),
    Case(
        "raw_1.0e+400",
        raw(replace_line("  arrival_rate_per_s: 20", "  arrival_rate_per_s: 1.0e+400")),
        (f": {RATE}: found inf;",),
    ),
    Case(
        "ten_to_the_30",
        mutated(set_key(RATE, 10**30)),
        (f": {RATE}: found 1000000000000000000000000000000;", "<= 1e+07"),
    ),
    Case(
        "hit_rate_above_1",
        mutated(set_key(f"{HITS}.bins.2.high", 1.5)),
        (f": {HITS}.bins[2].high: found 1.5; expected a number >= 0 and <= 1",),
    ),
    Case(
        "lognormal_sigma_negative",
        mutated(set_key("workload.output_tokens.sigma", -1.0)),
        (": workload.output_tokens.sigma: found -1.0;",),
    ),
    Case(
        "max_goodput_budget_key_absent",
        mutated(
            set_key("objective.kind", "max_goodput"), drop_key("objective.budget_usd_per_hour")
        ),
        (": objective.budget_usd_per_hour: found nothing; expected a budget",),
    ),
    Case(
        "datacenters_as_mapping",
        mutated(set_key("datacenters", {"id": "dc_a"})),
        (": datacenters: found a mapping with keys id; expected a list",),
    ),
    Case(
        "unknown_role_of_second_datacenter",
        mutated(set_key("datacenters.1.roles.0", "main_decod")),
        (": datacenters[1].roles[0]: found 'main_decod';", "(did you mean 'main_decode'?)"),
    ),
    Case(
        "explicit_int_tag_on_text",
        raw(replace_line("name: template", "name: !!int abc")),
        ("scenario.yaml: found a value YAML cannot convert",),
    ),
    Case(
        "sla_percentile_key_as_number",
        mutated(set_key("sla", {"ttft_p90_s": 10, "tpot_p90_ms": 50, 90: 1})),
        (": sla.90: found an unknown key; expected ttft_pNN_s or tpot_pNN_ms",),
    ),
    Case(
        "architecture_misspelt",
        mutated(set_key("architectures.0", "pdd2")),
        (": architectures[0]: found 'pdd2';", "(did you mean 'pdd'?)"),
    ),
]
