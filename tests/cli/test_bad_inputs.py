"""Malformed inputs through the real CLI: exit 2, one `error: ` line per problem, no traceback.

Each scenario case loads scenarios/template.yaml, breaks exactly one thing and runs
`pdd-plan scenario validate` on the result; the message must name the key path, and where
it helps the value found and a did-you-mean. A few more cases go through `model import`,
`model show` and `catalog show`; some extra ones call the loaders directly.
"""

from __future__ import annotations

import copy
import json
import os
import random
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.hf_config import import_hf_config
from pdd_plan.loaders.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = yaml.safe_load((REPO / "scenarios" / "template.yaml").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _cli_imports_this_checkout(monkeypatch):
    """Without an installed `pdd-plan` script, conftest runs `python -m pdd_plan` from a
    temporary directory: let that interpreter import the package from this checkout."""
    if not Path(sys.executable).with_name("pdd-plan").exists():
        paths = [str(REPO), os.environ.get("PYTHONPATH", "")]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


# ---- building one broken scenario ----------------------------------------------------------
def template() -> dict:
    return copy.deepcopy(TEMPLATE)


def template_text() -> str:
    return yaml.safe_dump(template(), sort_keys=False)


def _parent(data, dotted: str):
    keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    for key in keys[:-1]:
        data = data[key]
    return data, keys[-1]


def set_key(dotted: str, value) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        parent, key = _parent(data, dotted)
        parent[key] = value

    return mutate


def drop_key(dotted: str) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        parent, key = _parent(data, dotted)
        del parent[key]

    return mutate


def rename_key(dotted: str, new_key: str) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        parent, key = _parent(data, dotted)
        parent[new_key] = parent.pop(key)

    return mutate


def _write(tmp: Path, content: bytes) -> Path:
    path = tmp / "scenario.yaml"
    path.write_bytes(content)
    return path


def mutated(*mutations: Callable[[dict], None]) -> Callable[[Path], Path]:
    """The template with `mutations` applied, dumped to a file."""

    def make(tmp: Path) -> Path:
        data = template()
        for mutate in mutations:
            mutate(data)
        return _write(tmp, yaml.safe_dump(data, sort_keys=False).encode())

    return make


def raw(edit: Callable[[str], str | bytes]) -> Callable[[Path], Path]:
    """The dumped template's text, edited as text (for what a dict cannot express)."""

    def make(tmp: Path) -> Path:
        content = edit(template_text())
        return _write(tmp, content.encode() if isinstance(content, str) else content)

    return make


def replace_line(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert f"{old}\n" in text, old
        return text.replace(f"{old}\n", f"{new}\n", 1)

    return edit


def nested_lists(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def alias_bomb(text: str) -> str:
    """`description` as 9 levels of 9 aliases: 9**9 strings if expanded, 700 bytes on disk."""
    levels = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"&{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    bomb = "description: [" + ", ".join(levels) + "]"
    return replace_line(f"description: {TEMPLATE['description']}", bomb)(text)


def not_utf8(text: str) -> bytes:
    return text.encode().replace(b"template", b"t\xe9mplate", 1)


def binary(text: str) -> bytes:
    noise = random.Random(0).randbytes(2048)
    return noise[:1000] + b"\x00" + noise[1000:]


def a_directory(tmp: Path) -> Path:
    path = tmp / "scenario.yaml"
    path.mkdir()
    return path


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


def assert_rejected(result, expect: tuple[str, ...], lines: int) -> None:
    """Exit 2, nothing on stdout, `lines` stderr lines each starting `error: `, no traceback."""
    out, err = result.stdout, result.stderr
    assert "Traceback" not in out + err, err
    assert result.returncode == 2, f"exit {result.returncode}\n{err}"
    assert out == "", out
    err_lines = err.splitlines()
    assert err_lines, "nothing on stderr"
    assert all(line.startswith("error: ") for line in err_lines), err
    assert len(err_lines) == lines, err
    for fragment in expect:
        assert fragment in err, f"{fragment!r} not in:\n{err}"


@pytest.fixture(scope="module")
def validated() -> dict[str, Future]:
    """`scenario validate` runs by case id, filled by the first test that needs one."""
    return {}


def validate_all(run_cli, tmp_path: Path, runs: dict[str, Future]) -> dict[str, Future]:
    """Run `scenario validate` on every CLI case at once (a CLI start costs about a
    second, nearly all of it imports; one at a time the cases take over a minute)."""
    if not runs:
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            for case in CLI_CASES:
                folder = tmp_path / case.id
                folder.mkdir()
                path = str(case.make(folder))
                runs[case.id] = pool.submit(run_cli, "scenario", "validate", path, cwd=folder)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CLI_CASES])
def test_scenario_validate_rejects(run_cli, tmp_path, validated, case):
    result = validate_all(run_cli, tmp_path, validated)[case.id].result()  # or its exception
    assert_rejected(result, case.expect, case.lines)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in API_CASES])
def test_load_scenario_rejects(catalog, tmp_path, case):
    with pytest.raises(InputError) as raised:
        load_scenario(case.make(tmp_path), catalog)
    message = str(raised.value)
    assert len(message.splitlines()) == case.lines, message
    for fragment in case.expect:
        assert fragment in message, f"{fragment!r} not in:\n{message}"


def test_three_problems_are_reported_together(run_cli, tmp_path):
    broken = mutated(
        set_key(RATE, "fast"),
        set_key("datacenters.0.gpus.0.gpu", "h100_sx"),
        set_key("policy.handoff", "catchup"),
    )
    result = run_cli("scenario", "validate", str(broken(tmp_path)))
    assert_rejected(result, (), lines=3)
    paths = (RATE, "datacenters[0].gpus[0].gpu", "policy.handoff")
    for line in result.stderr.splitlines():
        assert sum(f": {path}: found" in line for path in paths) == 1, line
    for path in paths:
        assert f": {path}: found" in result.stderr, path


# ---- model import, model show, catalog show -------------------------------------------------
LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
}  # fmt: skip


def llama(**changes) -> dict:
    return {**LLAMA_CONFIG, **changes}


IMPORT_CASES = [
    pytest.param(
        llama(model_type="my_hybrid", my_linear_attn_layers=[1, 2], compress_factor=4),
        (
            ": model_type: found 'my_hybrid'; expected an architecture pdd-plan can map",
            "could not map: compress_factor, my_linear_attn_layers",
        ),
        id="unknown_architecture",
    ),
    pytest.param(
        [1, 2],
        ("config.json: found a list of 2 items; expected a JSON object",),
        id="not_an_object",
    ),
    pytest.param(
        llama(num_hidden_layers=10**30),
        (": num_hidden_layers: found 1000000000000000000000000000000;",),
        id="layers_10_to_the_30",
    ),
]


@pytest.mark.parametrize(("config", "expect"), IMPORT_CASES)
def test_model_import_rejects(run_cli, tmp_path, config, expect):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert_rejected(run_cli("model", "import", str(path)), expect, lines=1)


@pytest.mark.parametrize(
    ("config", "expect"),
    [
        pytest.param(
            llama(quantization_config=[1]),
            ": quantization_config: found a list of 1 item; expected an object",
            id="quantization_config_list",
        ),
        pytest.param(
            llama(head_dim="128"),
            ": head_dim: found '128'; expected a whole number",
            id="head_dim_string",
        ),
        pytest.param(
            llama(
                model_type="qwen3_moe",
                num_experts=8,
                num_experts_per_tok=2,
                moe_intermediate_size=1024,
                mlp_only_layers=5,
            ),
            ": mlp_only_layers: found 5; expected a list of whole numbers",
            id="mlp_only_layers_number",
        ),
        pytest.param(
            llama(tie_word_embeddings="no"),
            ": tie_word_embeddings: found 'no'; expected true or false",
            id="tie_word_embeddings_string",
        ),
    ],
)
def test_import_hf_config_rejects(config, expect):
    with pytest.raises(InputError) as raised:
        import_hf_config(config, "config.json", "m", "M", "test")
    message = str(raised.value)
    assert len(message.splitlines()) == 1, message
    assert expect in message, message


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        pytest.param(
            ("model", "show", "deepseek_v4_pr"),
            ("found 'deepseek_v4_pr';", "(did you mean 'deepseek_v4_pro'?)"),
            id="model_show_unknown_id",
        ),
        pytest.param(
            ("model", "show", "deepseek_v4_pro", "--kv-dtype", "fp9"),
            (": --kv-dtype: found 'fp9';", "(did you mean 'fp8'?)"),
            id="model_show_kv_dtype_fp9",
        ),
        pytest.param(
            ("catalog", "show", "h100"),
            (": ID: found 'h100';", "(did you mean 'h100_sxm'?)"),
            id="catalog_show_h100",
        ),
    ],
)
def test_show_rejects(run_cli, args, expect):
    assert_rejected(run_cli(*args), expect, lines=1)
