"""One decode KV layout for capacity and traffic (issue #23, item 1).

The HBM a decoding request holds (admission, the batch limit) and the KV each decode step
reads come from one layout: the model's own unless the scenario's engine declares how many
of a request's latest tokens it keeps uncompressed. Expectations are hand arithmetic from
DeepSeek-V4-Pro's published config: 61 layers, each with one 512-wide KV head (FP8: 512 B
an entry) and a 128-token uncompressed window; 30 CSA layers compress 4 tokens into one
entry and add a 128-wide lightning-indexer key per entry (FP4: 0.5 B + one 8-bit scale per
32 elements); 31 HCA layers compress 128 tokens into one entry.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.caches.cache_tier import kv_bytes_per_token
from pdd_plan.model.compute.roofline import Instance

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "scenarios" / "pdd-paper.yaml"

ENTRY_B = 512 * 1.0  # one KV head of 512 at FP8
INDEXER_ENTRY_B = 128 * (0.5 + 1 / 32)  # FP4 indexer key, 68 B
UNCOMPRESSED_B_PER_TOKEN = 61 * ENTRY_B  # 31,232
COMPRESSED_B_PER_TOKEN = 30 * (ENTRY_B + INDEXER_ENTRY_B) / 4 + 31 * ENTRY_B / 128  # 4,474
WINDOW = 128


def hand_bytes(tokens: int, uncompressed: int | None = WINDOW) -> float:
    """One request of `tokens` (a multiple of 128): its last `uncompressed` tokens (None:
    all) at full width, and every token's compressed entries."""
    kept = tokens if uncompressed is None else min(tokens, uncompressed)
    return kept * UNCOMPRESSED_B_PER_TOKEN + tokens * COMPRESSED_B_PER_TOKEN


def scenario_with_engine(tmp_path: Path, engine: dict, name: str = "s.yaml") -> Path:
    data = yaml.safe_load(PAPER.read_text())
    data["engine"] = engine
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def md_instance(catalog, scenario, gpus: int = 16, parallelism: str = "auto") -> Instance:
    model = catalog.model_for(scenario)
    return Instance(model, catalog.gpus["h200_sxm"], gpus, "fp8", parallelism=parallelism)


def step_kv_read(inst: Instance, context: int, base: int = WINDOW) -> float:
    """KV one running request's decode step reads between two contexts: the step's bytes
    at `context` less those at `base` (the weights read do not depend on the context)."""
    return inst.decode_breakdown(1, context)["bytes"] - inst.decode_breakdown(1, base)["bytes"]


def test_the_hand_figures_are_the_issues():
    assert UNCOMPRESSED_B_PER_TOKEN == 31_232  # "about 31 KB/token"
    assert round(COMPRESSED_B_PER_TOKEN, 9) == 4_474  # "4.4 KB/token"


def test_paper_request_holds_and_reads_the_same_hand_bytes(catalog):
    s = load_scenario(PAPER, catalog)
    inst = md_instance(catalog, s)
    assert inst.kv_tp_degree() == 1  # expert parallel: each request's KV on one GPU
    tokens = 65_536
    assert inst.held_kv_bytes(tokens) == pytest.approx(hand_bytes(tokens), rel=1e-12)
    read = step_kv_read(inst, tokens)
    assert read == pytest.approx(hand_bytes(tokens) - hand_bytes(WINDOW), rel=1e-9)


def test_paper_request_matches_the_published_23_gb_for_80(catalog):
    s = load_scenario(PAPER, catalog)
    per_request = float(catalog.model_for(s).resident_kv_bytes(65_536, "fp8"))
    assert per_request == pytest.approx(128 * 31_232 + 65_536 * 4_474)  # 0.297 GB
    # "about 23 GB for 80 x 64K requests" (../shared/pdd-system.md section 2): 0.29 GB
    assert 80 * per_request == pytest.approx(23e9, rel=0.05)


@pytest.mark.parametrize("uncompressed", [None, 8_192])
def test_a_declared_layout_moves_capacity_and_traffic_together(catalog, tmp_path, uncompressed):
    value = "all" if uncompressed is None else uncompressed
    path = scenario_with_engine(tmp_path, {"kv_uncompressed_tokens": value,
                                           "kv_layout_source": "test"})  # fmt: skip
    inst = md_instance(catalog, load_scenario(path, catalog))
    tokens = 65_536
    held = hand_bytes(tokens, uncompressed)
    assert held > 1.5 * hand_bytes(tokens)  # the layout matters here
    assert inst.held_kv_bytes(tokens) == pytest.approx(held, rel=1e-12)
    expected_read = held - hand_bytes(WINDOW, uncompressed)
    assert step_kv_read(inst, tokens) == pytest.approx(expected_read, rel=1e-9)
    assert inst.max_batch(tokens) == inst.gpus * int(inst.kv_capacity_bytes() / inst.gpus // held)


def test_tensor_parallel_holds_the_one_kv_head_on_every_gpu(catalog, tmp_path):
    path = scenario_with_engine(tmp_path, {"kv_uncompressed_tokens": "all",
                                           "kv_layout_source": "test"})  # fmt: skip
    inst = md_instance(catalog, load_scenario(path, catalog), gpus=8, parallelism="tp")
    tokens = 16_384
    # one KV head (and one indexer key) per layer: TP8 replicates it 8 times
    assert inst.held_kv_bytes(tokens) == pytest.approx(8 * hand_bytes(tokens, None), rel=1e-12)
    assert step_kv_read(inst, tokens) == pytest.approx(
        8 * (hand_bytes(tokens, None) - hand_bytes(WINDOW, None)), rel=1e-9
    )


def test_the_models_own_layout_is_the_identity(catalog, tmp_path):
    own = scenario_with_engine(tmp_path, {"kv_uncompressed_tokens": 128,
                                          "kv_layout_source": "test"})  # fmt: skip
    none = scenario_with_engine(tmp_path, {}, "none.yaml")
    a, b = (md_instance(catalog, load_scenario(p, catalog)) for p in (own, none))
    for tokens in (1, 100, 129, 65_536, 100_001):
        assert a.held_kv_bytes(tokens) == b.held_kv_bytes(tokens)
        assert a.held_kv_bytes(tokens) == b.model.kv_bytes(tokens, "fp8")
        assert a.decode_step_s(32, tokens) == b.decode_step_s(32, tokens)


def test_a_decode_side_cache_token_takes_the_layouts_bytes(catalog, tmp_path):
    engine = {"kv_uncompressed_tokens": "all", "kv_layout_source": "t"}
    s_all = load_scenario(scenario_with_engine(tmp_path, engine), catalog)
    s_own = load_scenario(PAPER, catalog)
    assert kv_bytes_per_token(s_own, catalog.model_for(s_own)) == pytest.approx(4_474)
    assert kv_bytes_per_token(s_all, catalog.model_for(s_all)) == pytest.approx(31_232 + 4_474)


def test_prefill_ships_the_architectures_layout_whatever_the_decode_engine_keeps(catalog, tmp_path):
    path = scenario_with_engine(tmp_path, {"kv_uncompressed_tokens": "all",
                                           "kv_layout_source": "test"})  # fmt: skip
    model = catalog.model_for(load_scenario(path, catalog))
    assert model.kv_bytes(65_536, "fp8") == pytest.approx(hand_bytes(65_536))
    assert model.shipped_bytes_per_token("fp8") == pytest.approx(4_474)


def one_problem(path: Path, catalog) -> str:
    with pytest.raises(InputError) as info:
        load_scenario(path, catalog)
    assert len(info.value.problems) == 1, str(info.value)
    return info.value.problems[0].line()


def test_the_retired_flat_figure_is_refused_naming_its_replacement(catalog, tmp_path):
    path = scenario_with_engine(tmp_path, {"decode_kv_bytes_per_token": 46490,
                                           "decode_kv_source": "handoff benchmark"})  # fmt: skip
    line = one_problem(path, catalog)
    assert "engine.decode_kv_bytes_per_token: found 46490" in line
    assert "engine.kv_uncompressed_tokens" in line and "\n" not in line


@pytest.mark.parametrize(
    ("value", "expected"),
    [(64, "at least 128"), (0, "from 1 to"), ("most", "or all"), (1.5, "or all"),
     (True, "or all")],
)  # fmt: skip
def test_a_bad_layout_is_one_line_naming_the_key(catalog, tmp_path, value, expected):
    path = scenario_with_engine(tmp_path, {"kv_uncompressed_tokens": value,
                                           "kv_layout_source": "x"})  # fmt: skip
    line = one_problem(path, catalog)
    assert "engine.kv_uncompressed_tokens: found" in line and expected in line


def test_a_layout_needs_its_source(catalog, tmp_path):
    path = scenario_with_engine(tmp_path, {"kv_uncompressed_tokens": "all"})
    assert "engine.kv_layout_source: found nothing" in one_problem(path, catalog)


def test_the_cli_refuses_the_retired_key_with_exit_2(tmp_path, run_cli):
    path = scenario_with_engine(tmp_path, {"decode_kv_bytes_per_token": 46490,
                                           "decode_kv_source": "x"})  # fmt: skip
    done = run_cli("scenario", "validate", str(path))
    assert done.returncode == 2
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "kv_uncompressed_tokens" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
