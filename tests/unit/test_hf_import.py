"""`model import`: configs map to the catalog entries; unknown architectures are refused."""

import json

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.hf_config import import_hf_config
from pdd_plan.loaders.model_file import model_from_dict

CONFIG_OF = {
    "deepseek_v3": "DeepSeek-V3.json", "deepseek_v3_2": "DeepSeek-V3.2.json",
    "deepseek_v4_pro": "DeepSeek-V4-Pro.json", "kimi_k2_5": "Kimi-K2.5.json",
    "kimi_k3": "Kimi-K3.json", "glm_5": "GLM-5.json",
    "qwen3_next_80b": "Qwen3-Next-80B-A3B-Thinking.json",
    "qwen3_5_397b": "Qwen3.5-397B-A17B.json", "minimax_m1": "MiniMax-M1.json",
    "gpt_oss_120b": "gpt-oss-120b.json", "mimo_v2_flash": "MiMo-V2-Flash.json",
    "llama_3_1_70b": "Meta-Llama-3.1-70B.json",
}  # fmt: skip
ARCHITECTURE_KEYS = (
    "attention_types",
    "ffn_types",
    "layers",
    "hidden_size",
    "vocab_size",
    "weight_dtype",
    "expert_weight_dtype",
    "mtp_layers",
)


@pytest.mark.parametrize("model_id", sorted(CONFIG_OF))
def test_shipped_entries_are_what_import_gives(shared_dir, catalog, model_id):
    config = json.loads((shared_dir / "data/model_configs" / CONFIG_OF[model_id]).read_text())
    entry = import_hf_config(config, "cfg", model_id, "n", "s")
    shipped = catalog.model_data(model_id)
    for key in ARCHITECTURE_KEYS:
        assert entry[key] == shipped[key], key


def test_import_round_trips_through_the_loader():
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
    }  # fmt: skip
    model = model_from_dict(import_hf_config(config, "c", "llama_8b", "Llama 8B", "test"), "c")
    # Llama-3.1-8B: 32 x 8 x (128 + 128) x 2 B = 131,072 B/token; 8.03B parameters
    assert model.kv_bytes_per_token() == 131_072
    assert model.params_total() == pytest.approx(8.03e9, rel=0.01)


def test_unknown_architecture_is_refused_naming_fields():
    config = {
        "architectures": ["FancyForCausalLM"], "model_type": "fancy", "hidden_size": 1024,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
        "intermediate_size": 4096, "vocab_size": 1000, "my_linear_attn_layers": [1, 2],
        "compress_factor": 4,
    }  # fmt: skip
    with pytest.raises(InputError) as err:
        import_hf_config(config, "fancy.json", "fancy", "Fancy", "test")
    message = str(err.value)
    assert "my_linear_attn_layers" in message and "compress_factor" in message
    assert "fancy.json" in message


def test_missing_fields_are_named():
    config = {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "vocab_size": 1000,
        "num_hidden_layers": 4,
    }
    with pytest.raises(InputError) as err:
        import_hf_config(config, "ds.json", "ds", "DS", "test")
    assert "kv_lora_rank" in str(err.value) and "num_attention_heads" in str(err.value)
