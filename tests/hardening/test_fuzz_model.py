"""Bug hunt (round 21, helper hb): model catalog entries (`model_file:`, `--catalog-dir`)
found wrong by fuzzing.

An attention (or FFN) type with one bad figure (`num_heads: 1.5`) gave two lines: the
figure, and then `layers[0].attention: found 'full'; expected a known attention type id`
for every layer group naming the type, although the file declares it: one problem, one
line (docs/guarantees.md). A name the file does not declare is still refused with a did-you-mean.
"""

from __future__ import annotations

import copy

import yaml

from pdd_plan.loaders.catalog import catalog_dir
from tests.hardening.conftest import TINY, assert_one_error_line


def write(tmp_path, edit) -> str:
    model = yaml.safe_load((catalog_dir() / "models" / "qwen3_32b.yaml").read_text())
    model["id"] = "mine"
    model["layers"] = [{"repeat": 32, "attention": "full", "ffn": "dense"}] * 2  # two groups
    edit(model)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(model))
    scenario = copy.deepcopy(TINY)
    del scenario["model"]
    scenario["model_file"] = "mine.yaml"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    return "s.yaml"


def test_a_bad_figure_of_a_declared_type_is_one_line(cli, tmp_path):
    path = write(tmp_path, lambda m: m["attention_types"]["full"].update(num_heads=1.5))
    assert_one_error_line(cli("scenario", "validate", path), 2,
                          "mine.yaml: attention_types.full.num_heads: found 1.5")  # fmt: skip


def test_a_bad_ffn_type_is_one_line(cli, tmp_path):
    path = write(tmp_path, lambda m: m["ffn_types"]["dense"].update(intermediate_size=-1))
    assert_one_error_line(cli("scenario", "validate", path), 2,
                          "mine.yaml: ffn_types.dense.intermediate_size: found -1")  # fmt: skip


def test_an_undeclared_type_is_still_refused_with_a_suggestion(cli, tmp_path):
    def typo(model):
        model["layers"] = [{"repeat": 64, "attention": "fulll", "ffn": "dense"}]

    assert_one_error_line(cli("scenario", "validate", write(tmp_path, typo)), 2,
                          "layers[0].attention: found 'fulll'", "did you mean 'full'")  # fmt: skip
