"""`pdd-plan calibrate observed SCENARIO PLAN.yaml OBSERVED.yaml -o profile.yaml`: an engine
profile fitted so that `evaluate` of a running deployment's plan reproduces what it
was observed to do."""

from __future__ import annotations

import typer

from pdd_plan.cli.calibrate_serving_cmd import accept_poor_fit_option, check_common, warn_poor_fit
from pdd_plan.cli.output import Format, console, print_json, safe, table
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.report.engine_profile_file import profile_yaml
from pdd_plan.report.files import write_atomic


def _figure_text(key: str, value: float) -> str:
    if key == "goodput_rps":
        return f"{value:,.4g} req/s"
    return f"{value * 1e3:,.4g} ms"


def observed_data(c, out: str) -> dict:
    from pdd_plan.calibration_observed import CONTRADICTION_FRAC, FITTED

    targets = dict(c.observed.figures_s)
    if c.observed.goodput_rps is not None:
        targets["goodput_rps"] = c.observed.goodput_rps
    return {
        "profile": c.profile.describe() | {"source": out},
        "fitted": {k: {"start": getattr(c.start, k), "fit": getattr(c.profile, k)} for k in FITTED},
        "not_identified": list(c.unidentified),
        "offered_rps": c.observed.offered_rps,
        "figures": {
            k: {"observed": v, "evaluated": c.evaluated[k], "ratio": c.evaluated[k] / v}
            for k, v in targets.items()
        },
        "contradiction_threshold_frac": CONTRADICTION_FRAC,
    }


def _print(data: dict, out: str) -> None:
    p = data["profile"]
    console.print(
        f"profile {safe(p['name'])} ({p['model']} on {p['gpu']}) fitted at "
        f"{data['offered_rps']:,g} req/s offered",
        markup=False,
    )
    rows = [
        [k, f"{v['start']:.4g}", f"{v['fit']:.4g}",
         "not identified" if k in data["not_identified"] else ""]
        for k, v in data["fitted"].items()
    ]  # fmt: skip
    table("fitted parameters", ["parameter", "before", "fitted", ""], rows)
    rows = [
        [k, _figure_text(k, v["observed"]), _figure_text(k, v["evaluated"]),
         f"{100 * (v['ratio'] - 1):+.1f} %"]
        for k, v in data["figures"].items()
    ]  # fmt: skip
    table("observed vs evaluate with the fitted profile", ["figure", "observed", "evaluated",
          "residual"], rows)  # fmt: skip
    console.print(f"wrote {safe(out)}", markup=False)


def observed(
    scenario: str = typer.Argument(..., help="the scenario file (or shipped name) of the plan"),
    plan: str = typer.Argument(..., help="the running deployment's plan (YAML)"),
    observed_file: str = typer.Argument(
        ..., metavar="OBSERVED", help="offered_rps and ttft_s / tpot_ms percentiles (YAML)"
    ),
    out: str = typer.Option(..., "-o", "--out", help="the profile YAML to write"),
    name: str | None = typer.Option(None, help="the profile's id (default observed_SCENARIO)"),
    accept_poor_fit: bool = accept_poor_fit_option(),
    format: Format = typer.Option(Format.table, "--format"),
) -> None:
    """Fit prefill and decode efficiency to a running deployment's operating point.

    OBSERVED.yaml holds `offered_rps` and any of `ttft_s: {p50, p90, p99}`,
    `tpot_ms: {p50, p90, p99}` and `goodput_rps`. The profile's compute efficiency
    (prefill, so TTFT) and memory efficiency (decode, so TPOT) are fitted so that
    `evaluate SCENARIO PLAN` at that rate reproduces them; the other parameters stay
    the scenario's profile's. Refused (exit 2): fewer figures than the two parameters,
    figures the best fit still misses by more than 25 % (they contradict each other), or
    an efficiency above the datasheet peak or at a bound (--accept-poor-fit keeps it,
    marked).
    Then `compare` and `solve` with `--engine-profile` plan with the fitted profile.
    """
    from pdd_plan.calibration_observed import calibrate_observed
    from pdd_plan.loaders.scenario import resolve_scenario_path

    check_common(out, name, {})
    check_outputs([resolve_scenario_path(scenario), plan, observed_file], {"--out": out})
    result = calibrate_observed(
        scenario, plan, observed_file, name, accept_poor_fit=accept_poor_fit
    )
    write_atomic(out, profile_yaml(result.profile))
    warn_poor_fit(result.profile)
    data = observed_data(result, out)
    if format is Format.json:
        print_json(data)
        return
    _print(data, out)
