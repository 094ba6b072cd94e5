"""`pdd-plan solve [SCENARIO]`: the deployment with the best objective under the SLA."""

from __future__ import annotations

import typer

from pdd_plan.cli.evaluate_cmd import print_result
from pdd_plan.cli.output import Format, console, print_json
from pdd_plan.errors import InfeasibleError, InputError
from pdd_plan.model.deployment import ARCHITECTURE_ROLES
from pdd_plan.report.files import write_atomic


def solve(
    scenario: str = typer.Argument(None, help="a scenario file or shipped name (default: default)"),
    architecture: str = typer.Option(
        "pdd", "--architecture", help="pdd, cdc_pd, idc_pd or colocated"
    ),
    time_limit: float = typer.Option(30.0, "--time-limit", min=0.1, help="seconds per MILP"),
    dump_lp: str = typer.Option(None, "--dump-lp", help="write the winning MILP as an LP file"),
    format: Format = typer.Option(Format.table, "--format", help="table or json"),
) -> None:
    """Choose P, RLD and MD instances, GPU types, line tiers and routing policy."""
    from pdd_plan.api import solve_scenario

    if architecture not in ARCHITECTURE_ROLES:
        raise InputError.single(
            "command line",
            "--architecture",
            repr(architecture),
            f"one of {', '.join(ARCHITECTURE_ROLES)}",
        )
    result, lp_text = solve_scenario(scenario, architecture, time_limit_s=time_limit)
    if result["status"] == "infeasible":
        tried = "; ".join(
            f"threshold {a['rld_hit_threshold']:g} {a['handoff']}: {a['outcome']}"
            for a in result["solver"]["policies_tried"]
        )
        raise InfeasibleError(f"no {architecture} plan meets the SLA ({tried})")
    if dump_lp and lp_text:
        write_atomic(dump_lp, lp_text)
    if format is Format.json:
        print_json(result)
        return
    print_result(result)
    s = result["solver"]
    console.print(
        f"solved in {s['wall_s']:.1f} s with {s['name']} (objective {s['objective']}, "
        f"sized for {s['sized_rate_rps']:.3g} req/s); {len(s['pruned_candidates'])} "
        "candidates pruned (`--format json` lists them with the reason)"
    )
