"""Issue #24 item 4: `--format yaml` wherever `--format json` is offered, with the JSON's
content: for every command that has `--format`, `yaml.safe_load` of its YAML equals
`json.loads` of its JSON, key order included (the figures no two runs share, wall times,
left out of both).

The commands are found by walking the CLI, so a command that gains `--format` without a
case here fails the first test.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import typer
import yaml

from pdd_plan.cli.app import app, main
from tests.cli.test_calibrate import _fpm_text
from tests.cli.test_calibrate_serving import RUNS as SERVING_RUNS
from tests.cli.test_calibrate_serving import _csv
from tests.cli.test_issue23_validate_cli import ARGS as VALIDATE_ARGS
from tests.cli.test_issue23_validate_cli import _write as write_benchmarks
from tests.cli.test_startup_imports import PLAN
from tests.hardening.test_hf_import_refusals import LLAMA
from tests.trace.trace_helpers import row, write_mooncake

REPO = Path(__file__).resolve().parents[2]
PAPER = str(REPO / "scenarios" / "pdd-paper.yaml")
PAPER_PLAN = str(REPO / "scenarios" / "plans" / "pdd-paper-idc_pd.yaml")
VOLATILE_KEYS = ("wall_s",)  # a key ending so is a time measured by the run
# the longest computations (10 s and 4 s a run): the second run prints the first's answer
# (a copy), as the printing is what differs between the two formats
ANSWERED_ONCE = {"explain": "explain_scenario", "compare": "compare_architectures"}


def _plan(tmp: Path) -> str:
    (tmp / "plan.yaml").write_text(json.dumps(PLAN))
    return "plan.yaml"


def _observed(tmp: Path) -> list[str]:
    (tmp / "obs.yaml").write_text(
        yaml.safe_dump(
            {
                "offered_rps": 1.0,
                "ttft_s": {"p50": 1.0, "p90": 2.0, "p99": 3.0},
                "tpot_ms": {"p50": 40.0, "p90": 50.0, "p99": 60.0},
            }  # fmt: skip
        )
    )
    return ["calibrate", "observed", PAPER, PAPER_PLAN, "obs.yaml", "-o", "p.yaml",
            "--accept-poor-fit"]  # fmt: skip


def _trace(tmp: Path) -> str:
    """Ten requests behind one shared first block, one a second."""
    rows = [row(1000.0 * i, 512 * (i % 3 + 1), list(range(i % 3 + 1))) for i in range(10)]
    return str(write_mooncake(tmp / "t.jsonl", rows))


def _curve(tmp: Path) -> str:
    """tests/sweep/tiny.yaml over two six-hour periods (`schedule` plans it in a second)."""
    data = yaml.safe_load((Path(__file__).parents[1] / "sweep" / "tiny.yaml").read_text())
    data["workload"]["load_curve"] = [
        {"start_h": 0, "duration_h": 6, "arrival_rate_per_s": 2},
        {"start_h": 6, "duration_h": 6, "arrival_rate_per_s": 4},
    ]
    return _write(tmp, "curve.yaml", yaml.safe_dump(data))


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return name


# each command with --format -> its arguments (files it reads written in the tmp folder)
CASES = {
    "estimate": lambda t: [
        "estimate",
        "--model",
        "qwen3_32b",
        "--gpu",
        "h200_sxm",
        "--isl",
        "1000",
        "--osl",
        "100",
    ],  # fmt: skip
    "evaluate": lambda t: ["evaluate", "default", _plan(t)],
    "solve": lambda t: ["solve", "default", "--architecture", "cdc_pd"],
    "compare": lambda t: ["compare", "pdd-paper"],
    "schedule": lambda t: ["schedule", _curve(t), "--architecture", "colocated"],
    "explain": lambda t: ["explain", "default", "--architecture", "cdc_pd"],
    "simulate": lambda t: [
        "simulate",
        "default",
        _plan(t),
        "--requests",
        "2000",
        "--warmup-frac",
        "0",
    ],  # fmt: skip,
    "sweep": lambda t: [
        "sweep",
        "default",
        "--vary",
        "workload.arrival_rate_per_s=10,20",
        "--architecture",
        "cdc_pd",
        "--jobs",
        "1",
    ],  # fmt: skip
    "validate": lambda t: ["validate", *write_benchmarks(t), *VALIDATE_ARGS],
    "catalog list": lambda t: ["catalog", "list"],
    "catalog show": lambda t: ["catalog", "show", "h100_sxm"],
    "model list": lambda t: ["model", "list"],
    "model show": lambda t: ["model", "show", "qwen3_32b"],
    "model import": lambda t: [
        "model",
        "import",
        _write(t, "config.json", json.dumps(LLAMA)),
        "--id",
        "tiny_llama",
    ],  # fmt: skip
    "scenario validate": lambda t: ["scenario", "validate", "default"],
    "trace analyze": lambda t: ["trace", "analyze", _trace(t)],
    "calibrate steps": lambda t: [
        "calibrate",
        "steps",
        _write(t, "fpm.csv", _fpm_text()),
        "--model",
        "qwen3_32b",
        "--gpu",
        "b300",
        "-o",
        "p.yaml",
        "--no-cv",
    ],  # fmt: skip
    "calibrate serving": lambda t: [
        "calibrate",
        "serving",
        _write(t, "runs.csv", _csv(SERVING_RUNS)),
        "--gpu",
        "h200_sxm",
        "-o",
        "p.yaml",
    ],  # fmt: skip
    "calibrate observed": _observed,
}


def _commands_with_format() -> dict[str, object]:
    found = {}

    def walk(command, path: list[str]) -> None:
        subs = getattr(command, "commands", None)
        if subs is not None:
            for name in list(subs):
                walk(subs[name], [*path, name])
            return
        for param in command.params:
            if "--format" in getattr(param, "opts", ()):
                found[" ".join(path)] = param

    walk(typer.main.get_command(app), [])
    return found


def test_every_command_with_format_offers_yaml_and_has_a_case_here():
    found = _commands_with_format()
    assert sorted(found) == sorted(CASES)
    for name, param in found.items():
        choices = [str(c) for c in param.type_descriptor.annotation]
        assert "yaml" in choices and "json" in choices, name
        assert "yaml" in (param.help or ""), name  # its help names it


def _without_volatile(data):
    if isinstance(data, dict):
        return {k: _without_volatile(v) for k, v in data.items() if not k.endswith(VOLATILE_KEYS)}
    if isinstance(data, list):
        return [_without_volatile(v) for v in data]
    return data


def _run(capsys, args: list[str]) -> str:
    capsys.readouterr()
    try:
        main(args)
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr().err
    return capsys.readouterr().out


# the cases that solve or fit (seconds each) run in the full set only: `pytest -m ""`
SLOW_CASES = {"explain", "compare", "schedule", "calibrate serving", "calibrate observed"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CASES else n for n in sorted(CASES)],
)
def test_yaml_output_loads_to_the_json_output(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("PDD_PLAN_DEBUG", raising=False)
    args = CASES[name](tmp_path)
    if name in ANSWERED_ONCE:
        from pdd_plan import api

        monkeypatch.setattr(api, ANSWERED_ONCE[name], _once(getattr(api, ANSWERED_ONCE[name])))
    as_json = json.loads(_run(capsys, [*args, "--format", "json"]))
    as_yaml = yaml.safe_load(_run(capsys, [*args, "--format", "yaml"]))
    as_json, as_yaml = _without_volatile(as_json), _without_volatile(as_yaml)
    assert as_yaml == as_json
    assert _key_orders(as_yaml) == _key_orders(as_json)  # `==` of dicts ignores order


def _once(function):
    answers = []

    def answer(*args, **kwargs):
        if not answers:
            answers.append(function(*args, **kwargs))
        return copy.deepcopy(answers[0])

    return answer


def _key_orders(data) -> list:
    if isinstance(data, dict):
        return [list(data), *(_key_orders(v) for v in data.values())]
    if isinstance(data, list):
        return [_key_orders(v) for v in data]
    return []


def test_yaml_text_is_the_json_content_for_what_json_changes():
    """Tuples become lists, integer keys strings, key order kept, no anchors for a value
    met twice, text that YAML would read as another type stays text."""
    from pdd_plan.cli.output import yaml_text

    shared = {"x": 1}
    data = {"b": (1, 2.5), 3: None, "a": [shared, shared], "yes": "no", "t": "1e3",
            "unicode": "µs", "big": 2**63, "small": 1e-300}  # fmt: skip
    text = yaml_text(data)
    assert "&" not in text and "*" not in text
    loaded = yaml.safe_load(text)
    assert loaded == json.loads(json.dumps(data))
    assert list(loaded) == ["b", "3", "a", "yes", "t", "unicode", "big", "small"]
    assert math.isclose(loaded["small"], 1e-300)
