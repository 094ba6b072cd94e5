"""Hugging Face `config.json` -> a model catalog entry (a plain dict, YAML-ready).

Each known family has a mapper. An unknown `model_type` goes through the generic
GQA mapper, which refuses the config if it carries architecture keys it cannot map
(linear-attention, compression, layer-type lists...), naming them: a planner must never
silently treat a hybrid model as a dense one.
"""

from __future__ import annotations

from typing import Any

from pdd_plan.errors import InputError, Problem
from pdd_plan.loaders.hf_families import GENERIC_KNOWN, MAPPERS, map_generic_gqa
from pdd_plan.loaders.hf_reader import (
    ARCHITECTURE_KEY,
    HARMLESS_KEYS,
    Config,
    run_length,
    weight_dtypes,
)
from pdd_plan.loaders.model_file import model_from_dict
from pdd_plan.loaders.strict import describe


# Keys that change what a layer stores or computes. A generic import that leaves one of
# these unread would mis-model the architecture, so it is refused instead.
def _text_config(config: dict) -> tuple[dict, str]:
    """Vision-language wrappers keep the language model under `text_config`."""
    if isinstance(config.get("text_config"), dict):
        return config["text_config"], "text_config."
    return config, ""


def _architecture(text: dict, config: dict, model_type: str) -> str:
    """The first `architectures` entry (e.g. LlamaForCausalLM), else the model type."""
    for names in (text.get("architectures"), config.get("architectures")):
        if isinstance(names, list) and names and isinstance(names[0], str):
            return names[0]
    return model_type


def import_hf_config(config: Any, file: str, model_id: str, name: str, source: str) -> dict:
    """Map a parsed `config.json` to a catalog entry dict; InputError names what failed."""
    if not isinstance(config, dict):
        raise InputError.single(file, "", describe(config), "a JSON object (a config.json)")
    text, prefix = _text_config(config)
    c = Config(text, file, prefix)
    model_type = str(text.get("model_type") or config.get("model_type") or "")
    c.used.update({"model_type", "architectures"})
    mapper = MAPPERS.get(model_type, map_generic_gqa)
    mapped = mapper(c)
    hidden, vocab = c.req("hidden_size"), c.req("vocab_size")
    tie = bool(c.opt("tie_word_embeddings", config.get("tie_word_embeddings") is True, bool))
    dense_dtype, expert_dtype = weight_dtypes(c, text)
    problems = c.problems()
    if model_type not in MAPPERS and model_type not in GENERIC_KNOWN:
        unmapped = sorted(
            k
            for k in text
            if k not in c.used and k not in HARMLESS_KEYS and ARCHITECTURE_KEY.search(k)
        )
        if unmapped:
            problems.append(
                Problem(
                    file,
                    prefix + "model_type",
                    repr(model_type or None),
                    "an architecture pdd-plan can map",
                    f"could not map: {', '.join(prefix + k for k in unmapped)}",
                )
            )
    if problems:
        raise InputError(problems)
    entry = {
        "id": model_id,
        "name": name,
        "architecture": _architecture(text, config, model_type),
        "source": source,
        "hidden_size": hidden,
        "vocab_size": vocab,
        "tie_word_embeddings": tie,
        "weight_dtype": dense_dtype,
        "expert_weight_dtype": expert_dtype,
        "mtp_layers": int(mapped["mtp_layers"] or 0),
        "attention_types": mapped["attention_types"],
        "ffn_types": mapped["ffn_types"],
        "layers": run_length(mapped["per_layer"]),
    }
    _loads_back(entry, file)
    return entry


def _loads_back(entry: dict, file: str) -> None:
    """The entry must load as a catalog entry. The checks above name the config's keys;
    anything they miss is one line naming the entry's key, never a cascade (a bad
    attention type would fail every layer that uses it too)."""
    try:
        model_from_dict(entry, file)
    except InputError as exc:
        first = exc.problems[0]
        raise InputError.single(
            file,
            f"the imported entry's {first.key_path}",
            first.found,
            first.expected,
            "a config value out of the catalog's range",
        ) from None
