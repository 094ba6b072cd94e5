"""Issue #23 item 2: multi-token prediction. A decode step verifies k + 1 tokens per
request (its weights and KV read once), runs the one-layer draft module k times, and
emits the acceptance length L tokens per request: time per token = step x (1 + k /
layers) / L."""

import numpy as np
import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import load_engine_profile
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import Load, serve

CAT = Catalog()
QWEN = CAT.model("qwen3_32b")  # 64 layers
MTP = EngineProfile(mtp_draft_tokens=1.0, mtp_accepted_tokens=1.8)


def _inst(profile=MTP, gpus=1):
    return Instance(QWEN, CAT.gpus["h100_sxm"], gpus, engine_profile=profile)


def test_memory_bound_decode_emits_l_tokens_for_one_read_of_the_weights():
    """Batch 1 at 4k context is memory-bound with 2 tokens as with 1 (the verify reads the
    same weights and KV), so the time per token is the plain step x (1 + 1/64) / 1.8."""
    plain = _inst(EngineProfile()).decode_breakdown(1, 4000)
    assert plain["bound"] == "memory"
    expected = plain["total_s"] * (1 + 1 / 64) / 1.8
    assert _inst().decode_step_s(1, 4000) == pytest.approx(expected, rel=1e-12)
    assert _inst().decode_breakdown(1, 4000)["total_s"] == pytest.approx(expected, rel=1e-12)


def test_compute_bound_batches_gain_less():
    """A verify of 2 tokens per request doubles the linear FLOPs: once compute-bound, the
    step grows and MTP's gain falls below L."""
    gain = [
        _inst(EngineProfile()).decode_step_s(b, 100) / _inst().decode_step_s(b, 100)
        for b in (1, 1024)
    ]
    assert _inst().decode_breakdown(1024, 100)["bound"] == "compute"
    assert gain[0] == pytest.approx(1.8 / (1 + 1 / 64))
    assert gain[1] < gain[0]


def test_a_mixed_step_pays_the_verify_without_the_credit():
    plain = _inst(EngineProfile()).mixed_step_s(8, 3000, 512, 0)
    with_mtp = _inst().mixed_step_s(8, 3000, 512, 0)
    assert with_mtp >= plain * (1 + 1 / 64) * (1 - 1e-12)
    assert _inst().prefill_time_s(2000) == _inst(EngineProfile()).prefill_time_s(2000)


def test_served_tpot_falls_by_the_acceptance_length():
    """`estimate --concurrency 1`: one request decoding alone, every step decode-only but
    its first; its TPOT is the plain one x (1 + 1/64) / 1.8."""
    load = Load(1000, 200, 5, 1)
    plain = np.mean(serve(_inst(EngineProfile()), load).tpot_s)
    mtp = np.mean(serve(_inst(), load).tpot_s)
    assert mtp == pytest.approx(plain * (1 + 1 / 64) / 1.8, rel=0.01)


def test_impossible_pairs_are_refused(tmp_path):
    with pytest.raises(ValueError):
        EngineProfile(mtp_draft_tokens=1.0, mtp_accepted_tokens=2.5)
    with pytest.raises(ValueError):
        EngineProfile(mtp_draft_tokens=1.5, mtp_accepted_tokens=1.2)
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nparameters: {}\nmtp: {draft_tokens: 1, accepted_tokens: 2.5}\n")
    with pytest.raises(InputError) as err:
        load_engine_profile(path)
    text = str(err.value)
    assert len(text.strip().splitlines()) == 1
    assert "p.yaml" in text and "mtp.accepted_tokens" in text and "2.5" in text
    path.write_text("name: p\nparameters: {}\nmtp: {draft_tokens: 2, accepted_tokens: 2.5}\n")
    assert load_engine_profile(path).mtp_accepted_tokens == 2.5
