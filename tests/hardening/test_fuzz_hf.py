"""Bug hunt (round 21, helper hb): `model import` configs found mis-modelled by fuzzing.

`decoder_sparse_step` (Qwen2/3-MoE, Qwen3-Next) and `moe_layer_freq` (DeepSeek-V2/V3 and
the models built on their code) put the experts on every k-th layer only; the importer
read the key and dropped its value, so a config with k = 2 was imported with experts on
every layer (twice its routed weights), silently, and k = 0, 1.5 or "2" was accepted.
A `moe_intermediate_size` of 0 was replaced by the dense `intermediate_size`, silently.
docs/guarantees.md promises that `model import` refuses a config it would model wrongly, naming
its key. The layer rule is the engines' own:
  Qwen: layer i is MoE iff (i + 1) % decoder_sparse_step == 0 (transformers'
        Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer / Qwen3NextDecoderLayer);
  DeepSeek: layer i is MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0
        (DeepseekV3DecoderLayer of the model's own code, as vLLM's deepseek_v2.py reads it).
"""

from __future__ import annotations

import json

import pytest

from pdd_plan.loaders.hf_config import import_hf_config
from pdd_plan.loaders.model_file import model_from_dict
from tests.hardening.conftest import assert_one_error_line

# small configs written here: every number easy to check by hand
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 4096,
    "vocab_size": 32000,
    "torch_dtype": "bfloat16",
    "num_experts": 16,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 512,
}
DEEPSEEK_V3 = {
    **QWEN3_MOE,
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 6,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "n_routed_experts": 16,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
}
# one routed expert: SwiGLU gate, up and down, 3 x hidden x expert intermediate
EXPERT_PARAMS = 3 * 1024 * 512  # 1,572,864
LAYER_EXPERTS = 16 * EXPERT_PARAMS  # 25,165,824 routed parameters per MoE layer


def ffn_per_layer(config: dict) -> list[str]:
    model = model_from_dict(import_hf_config(config, "c", "m", "M", "test"), "c")
    return [g.ffn for g in model.layer_groups for _ in range(g.repeat)]


def routed_params(config: dict) -> float:
    model = model_from_dict(import_hf_config(config, "c", "m", "M", "test"), "c")
    return model.routed_expert_params()


def test_qwen_decoder_sparse_step_2_puts_experts_on_layers_1_and_3():
    """4 layers, k = 2: (i + 1) % 2 == 0 at i = 1 and 3; layers 0 and 2 are dense."""
    config = {**QWEN3_MOE, "decoder_sparse_step": 2}
    assert ffn_per_layer(config) == ["dense", "moe", "dense", "moe"]
    assert routed_params(config) == pytest.approx(2 * LAYER_EXPERTS)
    assert routed_params(QWEN3_MOE) == pytest.approx(4 * LAYER_EXPERTS)  # k = 1: as before
    assert ffn_per_layer({**QWEN3_MOE, "decoder_sparse_step": 1}) == ["moe"] * 4


def test_deepseek_moe_layer_freq_2_keeps_odd_layers_dense():
    """6 layers, first_k_dense_replace 1, k = 2: MoE at i >= 1 with i % 2 == 0, i.e. 2, 4."""
    config = {**DEEPSEEK_V3, "moe_layer_freq": 2}
    assert ffn_per_layer(config) == ["dense", "dense", "moe", "dense", "moe", "dense"]
    assert routed_params(config) == pytest.approx(2 * LAYER_EXPERTS)
    assert ffn_per_layer({**DEEPSEEK_V3, "moe_layer_freq": 1}) == ["dense"] + ["moe"] * 5


STEP = "a whole number of at least 1"


@pytest.mark.parametrize("config,key,expected", [
    ({**QWEN3_MOE, "decoder_sparse_step": 0}, "decoder_sparse_step", STEP),
    ({**QWEN3_MOE, "decoder_sparse_step": 1.5}, "decoder_sparse_step", STEP),
    ({**DEEPSEEK_V3, "moe_layer_freq": "2"}, "moe_layer_freq", STEP),
    # a 0 expert width was silently replaced by the dense intermediate_size (4096 here)
    ({**QWEN3_MOE, "moe_intermediate_size": 0}, "moe_intermediate_size", "a whole number from 1"),
])  # fmt: skip
def test_a_layer_step_or_width_that_is_no_whole_number_from_1_is_refused_naming_the_key(
    cli, tmp_path, config, key, expected
):
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = cli("model", "import", "config.json")
    assert_one_error_line(result, 2, f"config.json: {key}: found", expected)
    assert result.stdout == ""


@pytest.mark.parametrize("given,hint", [("Q-1", " (try 'q_1')"), ("", "")])
def test_a_bad_id_on_the_command_line_is_named_as_the_command_lines(cli, tmp_path, given, hint):
    """`--id Q-1` was reported as the config's value ("config.json: the imported entry's
    id ... (a config value out of the catalog's range)"): the config is not what to fix."""
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_MOE), encoding="utf-8")
    done = cli("model", "import", "config.json", "--id", given, "-o", "m.yaml")
    line = assert_one_error_line(done, 2)
    assert line == (f"error: command line: --id: found {given!r}; expected an id of lower-case "
                    f"letters, digits and _{hint}"), line  # fmt: skip
    assert not (tmp_path / "m.yaml").exists()
