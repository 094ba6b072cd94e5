"""Malformed inputs through the real CLI: exit 2, one `error: ` line per problem, no traceback.

Each scenario case loads scenarios/template.yaml, breaks exactly one thing and runs
`pdd-plan scenario validate` on the result; the message must name the key path, and where
it helps the value found and a did-you-mean. A few more cases go through `model import`,
`model show` and `catalog show`; some extra ones call the loaders directly.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from bad_input_cases import API_CASES, CLI_CASES, RATE
from broken_scenario import REPO, mutated, set_key

from pdd_plan.errors import InputError
from pdd_plan.loaders.hf_config import import_hf_config
from pdd_plan.loaders.scenario import load_scenario


@pytest.fixture(autouse=True)
def _cli_imports_this_checkout(monkeypatch):
    """Without an installed `pdd-plan` script, conftest runs `python -m pdd_plan` from a
    temporary directory: let that interpreter import the package from this checkout."""
    if not Path(sys.executable).with_name("pdd-plan").exists():
        paths = [str(REPO), os.environ.get("PYTHONPATH", "")]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


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
