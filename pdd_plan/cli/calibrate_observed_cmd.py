"""`pdd-plan calibrate observed SCENARIO PLAN.yaml OBSERVED.yaml -o profile.yaml`: an engine
profile fitted so that `evaluate` of a running deployment's plans reproduces what they
were observed to do at one or several operating points."""

from __future__ import annotations

import math

import typer

from pdd_plan.cli.calibrate_serving_cmd import accept_poor_fit_option, check_common, warn_poor_fit
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.output_formats import YAML_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.model.compute.engine_profile import PARAMETERS
from pdd_plan.report.engine_profile_file import profile_yaml
from pdd_plan.report.files import write_atomic


def _figure_text(key: str, value: float) -> str:
    if key.endswith("_rps"):
        return f"{value:,.4g} req/s"
    if key == "mean_batch":
        return f"{value:,.4g}"
    return f"{value * 1e3:,.4g} ms"


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _parameters(c) -> dict:
    rel = c.fit.rel_std()
    out = {}
    for i, k in enumerate(c.fit.names):
        low, high = PARAMETERS[k][1], PARAMETERS[k][2]
        out[k] = {
            "start": getattr(c.start, k), "fit": getattr(c.profile, k),
            "std": _finite(c.fit.std[i]), "rel_std": _finite(rel[i]),
            "range": [low, high], "at_bound": k in c.fit.at_bound,
        }  # fmt: skip
    return out


def _points(c) -> list[dict]:
    out = []
    for point, got in zip(c.observed.points, c.evaluated, strict=True):
        figures = {
            k: {"observed": v, "evaluated": _finite(got[k]), "ratio": _finite(got[k] / v)}
            for k, v in point.figures
        }  # fmt: skip
        out.append({"label": point.label, "plan": point.plan, "source": point.source,
                    "offered_rps": point.offered_rps, "figures": figures})  # fmt: skip
    return out


def observed_data(c, out: str) -> dict:
    from pdd_plan.stages.calibrating.calibration_observed import CONTRADICTION_FRAC

    points = _points(c)
    return {
        "profile": c.profile.describe() | {"source": out},
        "fitted": _parameters(c),
        "not_identified": list(c.unidentified),
        "residual_noise_frac": c.fit.noise_frac,
        "offered_rps": c.observed.points[0].offered_rps,
        "figures": points[0]["figures"] if len(points) == 1 else {},
        "points": points,
        "held_out": {"folds": c.held_out.folds,
                     "ratio": {k: list(v) for k, v in c.held_out.by_metric().items()}},
        "contradiction_threshold_frac": CONTRADICTION_FRAC,
    }  # fmt: skip


def _value(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def _print(data: dict, out: str) -> None:
    p = data["profile"]
    rates = sorted({pt["offered_rps"] for pt in data["points"]})
    console.print(
        f"profile {safe(p['name'])} ({p['model']} on {p['gpu']}) fitted to "
        f"{len(data['points'])} operating point(s) at {', '.join(f'{r:,g}' for r in rates)} "
        f"req/s offered",
        markup=False,
    )
    rows = [
        [k, _value(v["start"]), _value(v["fit"]),
         "at bound" if v["at_bound"] else f"± {_value(v['std'])}"
         + ("" if v["rel_std"] is None else f" ({100 * v['rel_std']:.1f} %)"),
         f"[{v['range'][0]:g}, {v['range'][1]:g}]"]
        for k, v in data["fitted"].items()
    ]  # fmt: skip
    table("fitted parameters", ["parameter", "before", "fitted", "± 1 s.e.", "range"], rows)
    rows = [
        [pt["label"] or "-", k, _figure_text(k, v["observed"]),
         "-" if v["evaluated"] is None else _figure_text(k, v["evaluated"]),
         "-" if v["ratio"] is None else f"{100 * (v['ratio'] - 1):+.1f} %"]
        for pt in data["points"] for k, v in pt["figures"].items()
    ]  # fmt: skip
    table("observed vs evaluate with the fitted profile",
          ["point", "figure", "observed", "evaluated", "residual"], rows)  # fmt: skip
    held = data["held_out"]
    if held["folds"]:
        text = "; ".join(
            f"{m} observed/predicted {min(v):.3g} to {max(v):.3g} ({len(v)} figures)"
            for m, v in held["ratio"].items()
        )  # fmt: skip
        console.print(f"held out (each point left out in turn, {held['folds']} folds): {text}",
                      markup=False)  # fmt: skip
    else:
        console.print("held out: none (one point; solve --confidence needs two or more)",
                      markup=False)  # fmt: skip
    console.print(f"wrote {safe(out)}", markup=False)


def observed(
    scenario: str = typer.Argument(..., help="the scenario file (or shipped name) of the plan"),
    plan: str = typer.Argument(..., help="the running deployment's plan (YAML)"),
    observed_file: str = typer.Argument(
        ..., metavar="OBSERVED", help="operating points: offered_rps, ttft_s / tpot_ms (YAML)"
    ),
    out: str = typer.Option(..., "-o", "--out", help="the profile YAML to write (.yaml)"),
    name: str | None = typer.Option(None, help="the profile's id (default observed_SCENARIO)"),
    fit: list[str] = typer.Option(
        None,
        "--fit",
        help="an engine parameter to fit (repeat; default compute and memory efficiency)",
    ),  # fmt: skip
    accept_poor_fit: bool = accept_poor_fit_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Fit engine parameters to a running deployment's operating points.

    OBSERVED.yaml holds `points:`, each with `offered_rps` and any of `ttft_s: {p50,
    p90, p99}`, `tpot_ms: {p50, p90, p99}`, `goodput_rps`, `throughput_rps`,
    `mean_batch`, and optionally its own `plan:` (relative to the file) and `source:`;
    the keys of one point at the top level are read as a list of one. The parameters
    (--fit; default compute efficiency, which sets prefill, so TTFT, and memory
    efficiency, which sets decode, so TPOT) are fitted jointly so that `evaluate` of each
    point's plan at its rate reproduces its figures; each gets its standard error, and
    leaving each point out in turn gives the held-out error stored in the profile
    (`solve --confidence`). Refused (exit 2): fewer figures than parameters, a parameter
    the points do not identify, figures the best fit still misses by more than 25 %, or
    an efficiency above the datasheet peak or at a bound (--accept-poor-fit keeps the
    last two, marked). Then `compare` and `solve` with `--engine-profile` plan with it.
    """
    from pdd_plan.loaders.scenario import resolve_scenario_path
    from pdd_plan.stages.calibrating.calibration_observed import FITTED, calibrate_observed

    check_common(out, name, {})
    check_outputs([resolve_scenario_path(scenario), plan, observed_file], {"--out": out},
                  formats={"--out": YAML_ONLY})  # fmt: skip
    result = calibrate_observed(
        scenario, plan, observed_file, name, accept_poor_fit=accept_poor_fit,
        fit=tuple(fit) if fit else FITTED,
    )  # fmt: skip
    check_outputs([p.plan for p in result.observed.points if p.plan], {"--out": out})
    write_atomic(out, profile_yaml(result.profile))
    warn_poor_fit(result.profile)
    data = observed_data(result, out)
    if format.structured:
        print_structured(data, format)
        return
    _print(data, out)
