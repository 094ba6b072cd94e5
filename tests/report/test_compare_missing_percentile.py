"""A compared architecture whose TPOT percentile is undefined (None in the JSON: its queue
does not reach it) reads "-" in the report's compare table; it once raised a TypeError and
`solve --report` ended in a traceback (found on the default scenario at 100 req/s offered,
`objective: {kind: min_cost, demand_rps: 30}`, `--architecture cdc_pd`)."""

from pdd_plan.report.markdown import _compare


def _entry(arch: str, tpot_s: dict) -> dict:
    metrics = {
        "cost_usd_per_hour": 10.0,
        "goodput_rps": 5.0,
        "bcr_rps_per_usd_hour": 0.5,
        "ttft_s": {"p50": 0.5, "p90": 1.0, "p99": 2.0},
        "tpot_s": tpot_s,
        "wan": {"mean_gbit_per_s": 0.0, "utilization_frac": 0.0},
        "rld_token_share_frac": 0.0,
    }
    plan = {"architecture": arch, "instances": [], "lines": []}
    return {"architecture": arch, "metrics": metrics, "plan": plan}


def test_an_undefined_tpot_percentile_reads_as_a_dash():
    data = {
        "architecture": "cdc_pd",
        "result": {},
        "compare": {
            "architectures": [
                _entry("cdc_pd", {"p50": 0.02, "p90": 0.03, "p99": 0.04}),
                _entry("idc_pd", {"p50": 0.02, "p90": None, "p99": None}),
            ]
        },
    }
    lines = _compare(data)
    idc = next(line for line in lines if line.startswith("| IDC-PD"))
    assert "20 / - / -" in idc  # P50 20 ms by hand, the two undefined ones dashed
    cdc = next(line for line in lines if "(this plan)" in line)
    assert "20 / 30 / 40" in cdc
