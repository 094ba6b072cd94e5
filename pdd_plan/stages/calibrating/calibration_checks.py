"""Whether a fitted engine profile is physically possible and fits its data (issue #22).

`calibrate steps|serving|observed` refuse a fit (exit 2, one line per finding: the
parameter, its fitted value, its physical range; the error and its limit) when a
parameter is outside its physical range or at a bound of it, or the fit's error is
above MAX_ERROR_FRAC. `--accept-poor-fit` keeps it instead, with the findings as the
profile's `poor_fit` notes, which the profile file stores and every answer made with it
repeats (loaders/engine_profile.py `profile_line`, `profile_summary`, `profile_facts`).

The physical ranges, in the profile's units (its efficiencies multiply the catalog's
measured ones, model/compute/engine_profile.py):

- compute_efficiency_frac: above 0, at most 1 / the catalog's GEMM efficiency of the
  compute dtype (`bf16_mfu_frac` or `fp8_mfu_frac`) on every GPU fitted: nothing runs
  above the datasheet peak. Its lower end is the fit's own bound (2 % of the catalog's
  efficiency): an engine there is no engine, the model, GPU or dtype is wrong.
- memory_efficiency_frac: the same with `hbm_efficiency_frac`: nothing streams HBM
  faster than the datasheet bandwidth.
- expert_gemm_efficiency_frac, attention_efficiency_frac, kv_read_efficiency_frac
  (issue #23): relative to the fitted compute (resp. memory) efficiency, so their ceiling
  is the datasheet peak over what that one already reaches: 1 / (the catalog's GEMM
  efficiency x compute_efficiency_frac) for grouped-expert GEMMs; the same x the
  generation-attention fraction (kernels.GENERATION_ATTENTION_FLOP_EFF_FRAC, the larger
  of the two attention fractions) for attention; 1 / (hbm_efficiency_frac x
  memory_efficiency_frac) for the KV reads. Lower end: the fit's bound (5 %).
- comm_overlap_frac and alltoall_overlap_frac: 0 to 1, both reachable: 0 is the plain
  roofline's communication after the compute, 1 all of it hidden behind the compute.
  Not a finding at either end.
- the seconds terms (kernel_latency_s, up to 50 us a kernel, included) and
  layer_latency_frac: 0 upwards, 0 reachable (a cost the data do
  not show, or the kernel floor folded into fixed_step_s); their upper bounds
  (`PARAMETERS`, 1 s for a step's fixed cost) are the fit's ceilings, far above any
  engine's: a fit there ran out of room.

A value within AT_BOUND_REL_FRAC of a bound that is not reachable counts as at it: a
least-squares fit that stops there is held by the bound, not by the data (the data ask
for a value beyond it, and the other parameters bend to make up for it). For an
efficiency that means at or above 0.99 of the datasheet peak.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pdd_plan.errors import InputError, Problem
from pdd_plan.model.compute.engine_profile import PARAMETERS, EngineProfile
from pdd_plan.model.compute.kernels import GENERATION_ATTENTION_FLOP_EFF_FRAC

AT_BOUND_REL_FRAC = 0.01
# the largest median error a profile may carry: the tolerance `calibrate observed` has
# refused contradictory observations at since issue #13, for every calibration
MAX_ERROR_FRAC = 0.25
EFFICIENCIES = (
    "compute_efficiency_frac", "memory_efficiency_frac", "expert_gemm_efficiency_frac",
    "attention_efficiency_frac", "kv_read_efficiency_frac",
)  # fmt: skip
# each relative efficiency: (the efficiency it multiplies, its ceiling's name, the
# catalog fraction's factor for its kernels)
RELATIVE = {
    "expert_gemm_efficiency_frac": ("compute_efficiency_frac", "grouped-expert GEMM", 1.0),
    "attention_efficiency_frac": (
        "compute_efficiency_frac", "attention", GENERATION_ATTENTION_FLOP_EFF_FRAC,
    ),
    "kv_read_efficiency_frac": ("memory_efficiency_frac", "KV-read HBM bandwidth", 1.0),
}  # fmt: skip
REACHABLE_BOTH_ENDS = ("comm_overlap_frac", "alltoall_overlap_frac")
HINT = "--accept-poor-fit keeps it, marked in every answer that uses it"


@dataclass(frozen=True)
class Finding:
    """One reason a fit is poor: where (a parameter, an error), what, what was expected."""

    key: str
    found: str
    expected: str
    hint: str = ""  # what to check besides (the message's parenthesis, before HINT)

    def note(self) -> str:
        return f"{self.key} {self.found}, expected {self.expected}"


@dataclass(frozen=True)
class Ceiling:
    """The datasheet ceiling of one efficiency on the GPUs fitted: the largest catalog
    fraction sets it (1 / that fraction), and the GPU and dtype it comes from."""

    catalog_frac: float
    gpu: str
    what: str  # "BF16 GEMM", "FP8 GEMM", "HBM bandwidth"

    @property
    def profile_max(self) -> float:
        return 1.0 / self.catalog_frac


def ceilings(instances) -> dict[str, Ceiling]:
    """Each efficiency's datasheet ceiling over the roofline `Instance`s fitted."""
    compute, memory = [], []
    for inst in instances:
        gpu, dtype = inst.gpu, inst.compute_dtype()
        gemm = gpu.fp8_mfu_frac if dtype == "fp8" else gpu.bf16_mfu_frac
        compute.append(Ceiling(gemm, gpu.id, f"{dtype.upper()} GEMM"))
        memory.append(Ceiling(gpu.hbm_efficiency_frac, gpu.id, "HBM bandwidth"))
    pick = lambda c: max(c, key=lambda x: x.catalog_frac)  # noqa: E731
    return {"compute_efficiency_frac": pick(compute), "memory_efficiency_frac": pick(memory)}


def _efficiency(name: str, value: float, ceiling: Ceiling) -> Finding | None:
    low, high = PARAMETERS[name][1], PARAMETERS[name][2]
    peak = ceiling.profile_max  # the datasheet peak in the profile's units
    limit = min(peak, high)
    why = f"the fit's ceiling (the peak is {peak:.4g})"
    if peak <= high:
        why = (
            f"the datasheet peak, 1 / {ceiling.gpu}'s catalog {ceiling.what} efficiency "
            f"{ceiling.catalog_frac:g}"
        )
    expected = f"above {low:g} and below {limit:.4g}, {why} (within {AT_BOUND_REL_FRAC:.0%}: at it)"
    found = f"{value:.4g} ({value / peak:.3g} x {ceiling.gpu}'s {ceiling.what} datasheet peak)"
    if value >= limit * (1 - AT_BOUND_REL_FRAC) or value <= low * (1 + AT_BOUND_REL_FRAC):
        return Finding(name, found, expected)
    return None


def _ceiling(name: str, value: float) -> Finding | None:
    high = PARAMETERS[name][2]
    if name in REACHABLE_BOTH_ENDS or not value >= high * (1 - AT_BOUND_REL_FRAC):
        return None
    return Finding(name, f"{value:.4g} (at the fit's ceiling {high:g})", f"below {high:g}")


def relative_ceilings(profile: EngineProfile, limits: dict) -> dict[str, Ceiling]:
    """The ceilings of the relative efficiencies (RELATIVE): the datasheet peak over what
    the efficiency they multiply already reaches."""
    out = {}
    for name, (parent, what, factor) in RELATIVE.items():
        base = limits[parent]
        frac = base.catalog_frac * factor * getattr(profile, parent)
        out[name] = Ceiling(frac, base.gpu, f"{what} (x {parent} {getattr(profile, parent):.4g})")
    return out


def parameter_findings(profile: EngineProfile, instances) -> list[Finding]:
    """The parameters outside their physical range or at a bound of it."""
    limits = ceilings(instances)
    limits.update(relative_ceilings(profile, limits))
    out = []
    for name in PARAMETERS:
        value = getattr(profile, name)
        if name in RELATIVE and value == PARAMETERS[name][0]:
            continue  # at 1, the efficiency it multiplies answers for it (its finding)
        if name in EFFICIENCIES:
            out.append(_efficiency(name, value, limits[name]))
        else:
            out.append(_ceiling(name, value))
    return [f for f in out if f is not None]


def error_findings(errors: dict, cross_validated: bool) -> list[Finding]:
    """Each phase or figure whose median error is above MAX_ERROR_FRAC (`errors`: name ->
    fraction; cross-validated, else the error on the data fitted)."""
    where = "cv_error_frac.{}" if cross_validated else "{} median error on the data fitted"
    return [
        Finding(where.format(name), f"{v:.3g} ({100 * v:.0f} %)",
                f"at most {MAX_ERROR_FRAC:g} ({100 * MAX_ERROR_FRAC:g} %)")
        for name, v in errors.items()
        if not v <= MAX_ERROR_FRAC
    ]  # fmt: skip


def settled(profile: EngineProfile, findings, file: str, accept: bool) -> EngineProfile:
    """The profile to write: unchanged for a sound fit; with its `poor_fit` notes when
    `accept` (--accept-poor-fit); else InputError, one line per finding naming `file`
    (the measurements fitted)."""
    if not findings:
        return profile
    if not accept:
        raise InputError([
            Problem(file, f.key, f.found, f.expected, f"{f.hint}; {HINT}" if f.hint else HINT)
            for f in findings
        ])  # fmt: skip
    return replace(profile, poor_fit=tuple(f.note() for f in findings))
