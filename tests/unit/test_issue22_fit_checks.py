"""Issue #22, point 6: the physical ranges of a fitted engine profile, bound by bound
(calibration_checks.py), and the shipped profiles against them."""

from __future__ import annotations

import dataclasses

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import engines_dir, load_engine_profile, profile_summary
from pdd_plan.model.compute.engine_profile import IDENTITY
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.stages.calibrating import calibration_checks as checks

CAT = Catalog()
# qwen3_32b is BF16: its GEMMs run at b300's catalog BF16 efficiency, 0.663 of the peak
B300 = [Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1)]
PEAK_COMPUTE = 1 / 0.663  # the profile's compute efficiency at the datasheet peak
PEAK_MEMORY = 1 / 0.864  # b300's catalog HBM efficiency


def _keys(**values) -> list[str]:
    profile = dataclasses.replace(IDENTITY, **values)
    return [f.key for f in checks.parameter_findings(profile, B300)]


def test_the_catalog_fractions_are_the_ones_this_test_assumes():
    gpu = CAT.gpus["b300"]
    assert (gpu.bf16_mfu_frac, gpu.hbm_efficiency_frac) == (0.663, 0.864)
    assert B300[0].compute_dtype() == "bf16"


@pytest.mark.parametrize(
    "values, keys",
    [
        ({}, []),  # the plain roofline: the catalog's own efficiencies
        ({"compute_efficiency_frac": 0.98 * PEAK_COMPUTE}, []),  # 0.98 of the peak: possible
        ({"compute_efficiency_frac": 0.995 * PEAK_COMPUTE}, ["compute_efficiency_frac"]),
        ({"compute_efficiency_frac": 1.02 * PEAK_COMPUTE}, ["compute_efficiency_frac"]),
        ({"memory_efficiency_frac": 1.01 * PEAK_MEMORY}, ["memory_efficiency_frac"]),
        ({"memory_efficiency_frac": 0.0201}, ["memory_efficiency_frac"]),  # the lower bound
        ({"memory_efficiency_frac": 0.05}, []),
        ({"comm_overlap_frac": 1.0}, []),  # all communication hidden: reachable
        ({"comm_overlap_frac": 0.0}, []),
        ({"fixed_step_s": 0.0, "prefill_request_s": 0.0}, []),  # costs the data do not show
        ({"fixed_step_s": 0.995}, ["fixed_step_s"]),  # the fit's 1 s ceiling
        ({"serial_token_s": 0.01}, ["serial_token_s"]),
        ({"layer_latency_frac": 10.0}, ["layer_latency_frac"]),
    ],
)
def test_each_bound(values, keys):
    assert _keys(**values) == keys


def test_the_tightest_gpu_sets_the_ceiling():
    """Fitted on H100 and B300 at once: the larger catalog fraction (H100's BF16 0.791)
    gives the lower ceiling, 1 / 0.791."""
    both = [*B300, Instance(CAT.model("qwen3_32b"), CAT.gpus["h100_sxm"], 1)]
    limit = checks.ceilings(both)["compute_efficiency_frac"]
    assert (limit.gpu, limit.catalog_frac) == ("h100_sxm", 0.791)
    profile = dataclasses.replace(IDENTITY, compute_efficiency_frac=1.3)  # 1.03 x H100's peak
    assert [f.key for f in checks.parameter_findings(profile, both)] == ["compute_efficiency_frac"]


def test_errors_above_25_percent():
    found = checks.error_findings({"decode": 0.1, "prefill": 2.45, "mixed": 0.25}, True)
    assert [f.key for f in found] == ["cv_error_frac.prefill"]
    assert found[0].found == "2.45 (245 %)"


def test_settled_refuses_or_marks():
    findings = checks.error_findings({"prefill": 0.5}, True)
    with pytest.raises(InputError) as err:
        checks.settled(IDENTITY, findings, "a.csv", accept=False)
    assert str(err.value).startswith("a.csv: cv_error_frac.prefill: found 0.5 (50 %)")
    kept = checks.settled(IDENTITY, findings, "a.csv", accept=True)
    assert kept.poor_fit == ("cv_error_frac.prefill 0.5 (50 %), expected at most 0.25 (25 %)",)
    assert profile_summary(kept)["poor_fit"] == list(kept.poor_fit)
    assert "poor_fit" not in profile_summary(IDENTITY)  # answers without one are unchanged


# Shipped profiles the checks would refuse today (written before them; not re-fitted
# here): vllm_0_20_b300_deepseek_v4_flash's memory efficiency 1.25 is the fit's ceiling,
# 1.25 x 0.864 = 1.08 x b300's datasheet HBM bandwidth.
KNOWN_POOR = {"vllm_0_20_b300_deepseek_v4_flash": ["memory_efficiency_frac"]}


@pytest.mark.parametrize("path", sorted(engines_dir().glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_profiles_load_and_only_the_known_one_is_a_poor_fit(path):
    profile = load_engine_profile(path)
    assert not profile.poor_fit  # none is marked
    if profile.is_identity():
        return
    model, gpu = CAT.model(profile.model), CAT.gpus[profile.gpu]
    gpus = dict(profile.parallelism).get("tp", 1)
    found = checks.parameter_findings(profile, [Instance(model, gpu, gpus)])
    found += checks.error_findings(dict(profile.cv_error_frac), True)
    assert [f.key for f in found] == KNOWN_POOR.get(path.stem, []), [f.note() for f in found]
