"""Issue #22, points 9 and 12 (helper "inputs"): ids and catalog figures that crashed the
planner, and outputs that varied or went where they should not.

- Any id the loaders accept solves: the MILP's names stay within an LP file's limits
  (plan/lp_names.py), and renaming an id changes no figure of the answer.
- GPU catalog figures have physical floors (loaders/catalog.py): below one, one error line;
  at every floor together, an answer, never an overflow.
- `model import` refuses a checkpoint dtype torch does not name (it became bf16).
- `--plot` refuses standard output, saying why; `sweep` draws no bar on a stderr that is no
  terminal unless forced; the same trace or sweep gives the same figure bytes.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import NamedTuple

import pytest
import yaml

from pdd_plan.loaders.catalog import catalog_dir
from pdd_plan.plan import lp_names
from tests.hardening.conftest import (
    TINY,
    assert_no_traceback,
    assert_one_error_line,
    cli_command,
    cli_env,
)

LONG_DC = "d" * 50  # the datacenter id
LONG_GPU = "g" * 95  # the overlay GPU id
PULP_LP_NAME_CHARS = 100  # PuLP's writeLP refuses a longer variable name


def renamed(data, old: str, new: str):
    """The scenario with every occurrence of the id `old` (a whole value) replaced."""
    if isinstance(data, dict):
        return {k: renamed(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [renamed(v, old, new) for v in data]
    return new if data == old else data


def overlay_gpu(folder, base: str, new_id: str, **values) -> None:
    """`folder/gpus/<new_id>.yaml`: the shipped `base` entry under another id, with
    `values` replacing figures."""
    entry = yaml.safe_load((catalog_dir() / "gpus" / f"{base}.yaml").read_text())
    entry["id"] = new_id
    for key, value in values.items():
        entry[key]["value"] = value
    (folder / "gpus").mkdir(parents=True, exist_ok=True)
    (folder / "gpus" / f"{new_id}.yaml").write_text(yaml.safe_dump(entry))


def solve_json(cli, tmp_path, scenario: dict, *extra: str) -> dict:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    done = cli(*extra, "solve", "s.yaml", "--format", "json", "--dump-lp", "plan.lp")
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def answer_figures(out: dict) -> tuple:
    """What renaming an id must not change: cost, rate and each group's shape and count."""
    instances = out["plan"]["instances"]
    groups = sorted((g["role"], g["gpus_per_instance"], g["count"]) for g in instances)
    metrics = out["metrics"]
    return metrics["cost_usd_per_hour"], metrics["goodput_rps"], groups


# ---- point 9a: long ids ------------------------------------------------------------------


def lp_names_in(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["datacenter", "overlay_gpu"])
def test_a_long_id_solves_to_the_same_answer_with_bounded_lp_names(cli, tmp_path, where):
    """The issue's 50-character datacenter id and 95-character overlay GPU id ended in
    PuLP's 'Variable names too long'. An id is a name: the answer under a long one is the
    answer under the short one, and every name in the LP dump fits PuLP's limit."""
    short = solve_json(cli, tmp_path, TINY)
    if where == "datacenter":
        long_out = solve_json(cli, tmp_path, renamed(TINY, "dc_a", LONG_DC))
    else:
        overlay_gpu(tmp_path / "cat", "l40s", LONG_GPU)
        scenario = renamed(TINY, "l40s", LONG_GPU)
        long_out = solve_json(cli, tmp_path, scenario, "--catalog-dir", "cat")
    assert answer_figures(long_out) == answer_figures(short)
    names = lp_names_in((tmp_path / "plan.lp").read_text())
    assert max(map(len, names)) <= PULP_LP_NAME_CHARS
    assert any(n.startswith("instances_of_") for n in names)  # the dump still reads


class Cand(NamedTuple):  # what the candidates' names read of a candidate
    role: str
    datacenter: str
    gpu: str
    gpus_per_instance: int


def test_lp_names_are_bounded_and_unique_for_any_id_length():
    """Every name formulate and the elastic copy build fits PuLP's limit at ids of up to
    5,000 characters, and distinct ids (even sharing a long prefix, or a kept id that
    looks like a shortened one) never share a name."""
    ids = ["dc_a", "a" * 20, "a" * 21, "a" * 22, "a" * 500 + "x", "a" * 500 + "y", "b" * 5000]
    ids.append(lp_names.short_id("a" * 21))  # a 21-character id spelled like a short form
    shorts = [lp_names.short_id(i) for i in ids]
    assert len(set(shorts)) == len(ids)
    assert lp_names.short_id("dc_a") == "dc_a"  # the catalog's and the usual ids read whole
    assert lp_names.short_id("rtx_pro_6000_server") == "rtx_pro_6000_server"
    longest_role = "relay_decode"
    for dc in ids:
        for gpu in ids:
            candidate = lp_names.candidate_name(longest_role, dc, gpu, 4096)
            names = [
                f"instances_of_{candidate}",
                f"{candidate}_is_the_type_chosen_for_its_role",
                f"only_the_chosen_type_of_{candidate}",
                lp_names.shortfall_var(lp_names.availability_constraint(gpu, dc)),
                lp_names.shortfall_var(lp_names.spending_constraint(dc)),
                lp_names.shortfall_var(lp_names.power_constraint(dc)),
                lp_names.lines_var(gpu),
                lp_names.across_the_line_constraint(Cand(longest_role, dc, gpu, 4096)),
                lp_names.beside_prefill_constraint(Cand(longest_role, dc, gpu, 4096)),
            ]
            assert max(map(len, names)) <= PULP_LP_NAME_CHARS, names


# ---- point 9b: catalog figures below their physical floor ---------------------------------

FLOORS = {  # a hundredth of the slowest shipped GPU; an efficiency a hundredth of the datasheet
    "hbm_tbyte_per_s": 0.008,
    "scale_up_gbyte_per_s_per_direction": 0.3,
    "scale_out_gbit_per_s_per_gpu": 2,
    "bf16_mfu_frac": 0.01,
    "hbm_efficiency_frac": 0.01,
}


def test_the_floors_refuse_no_shipped_gpu():
    """A bandwidth's floor is at most a hundredth of the slowest shipped GPU's (the compute
    floor's rule), an efficiency's at most a tenth of the least shipped one."""
    entries = [yaml.safe_load(p.read_text()) for p in (catalog_dir() / "gpus").glob("*.yaml")]
    for key, floor in FLOORS.items():
        slowest = min(e[key]["value"] for e in entries)
        assert floor <= slowest / (10 if key.endswith("_frac") else 100), (key, floor, slowest)


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(FLOORS))
def test_a_figure_below_its_floor_is_one_error_line(cli, tmp_path, key):
    """1e-300 overflowed in plan/bounds.py (a traceback); it names file, key, value, range."""
    overlay_gpu(tmp_path / "cat", "h100_sxm", "h100_sxm", **{key: 1e-300})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    done = cli("--catalog-dir", "cat", "solve", "s.yaml")
    errors = [x for x in done.stderr.splitlines() if not x.startswith("note: ")]
    top = "1" if key.endswith("_frac") else "1e+09"
    where = tmp_path / "cat" / "gpus" / "h100_sxm.yaml"
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    expected = f"a number >= {FLOORS[key]:g} and <= {top}"
    assert errors == [f"error: {where}: {key}.value: found 1e-300; expected {expected}"]


@pytest.mark.slow
def test_every_gpu_at_every_floor_together_answers_without_overflow(cli, tmp_path):
    """The slowest GPU the loader accepts (every figure at its floor, compute included) is
    planned: no plan meets the SLA (exit 3, named), and a plan on it is evaluated (exit 0)
    with finite, positive latencies."""
    floors = {**FLOORS, "bf16_dense_tflop_per_s": 1, "fp8_dense_tflop_per_s": 1}
    for gpu in ("h100_sxm", "l40s"):
        overlay_gpu(tmp_path / "cat", gpu, gpu, **floors)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    solved = cli("--catalog-dir", "cat", "solve", "s.yaml")
    assert_no_traceback(solved)
    assert solved.returncode == 3, solved.stderr
    plan = {"plan": {"architecture": "colocated", "instances": [
        {"role": "colocated", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 2,
         "count": 2}]}}  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(plan))
    # a prefill takes hours at these floors: one request a day keeps the queue stable
    slow = {**TINY, "workload": {**TINY["workload"], "arrival_rate_per_s": 1e-5}}
    (tmp_path / "slow.yaml").write_text(yaml.safe_dump(slow))
    done = cli("--catalog-dir", "cat", "evaluate", "slow.yaml", "p.yaml", "--format", "json")
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    for figure in ("ttft_s", "tpot_s"):
        assert all(0 < v < float("inf") for v in metrics[figure].values()), metrics[figure]


# ---- point 12c: model import's weight dtype ---------------------------------------------

LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
    "intermediate_size": 4096, "vocab_size": 32000,
}  # fmt: skip


@pytest.mark.parametrize("key", ["torch_dtype", "dtype"])
@pytest.mark.parametrize("value", ["abc", 0, -1, True, ["bfloat16"]])
def test_an_unknown_checkpoint_dtype_is_refused(cli, tmp_path, key, value):
    """`torch_dtype: "abc"`, 0 or -1 became bf16 weights, silently: one line naming the
    config and the key, nothing written."""
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA_CONFIG, key: value}))
    done = cli("model", "import", "config.json", "--id", "mine", "-o", "mine.yaml")
    line = assert_one_error_line(done, 2, "config.json", f"{key}: found ", "a torch dtype")
    assert "absent: bf16" in line  # what a config without one gets
    assert not (tmp_path / "mine.yaml").exists()


@pytest.mark.parametrize(
    ("dtypes", "weights"),
    [
        ({}, "bf16"),  # absent: the documented default
        ({"torch_dtype": "bfloat16"}, "bf16"),
        ({"torch_dtype": "float32"}, "bf16"),  # served in 16 bits
        ({"dtype": "float16"}, "bf16"),
        ({"torch_dtype": "float8_e4m3fn"}, "fp8"),
        ({"torch_dtype": "float32", "dtype": "float8_e4m3fn"}, "fp8"),  # `dtype` governs
    ],
)
def test_a_known_checkpoint_dtype_sets_the_weights(cli, tmp_path, dtypes, weights):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA_CONFIG, **dtypes}))
    done = cli("model", "import", "config.json", "--id", "mine", "-o", "mine.yaml")
    assert done.returncode == 0, done.stderr
    entry = yaml.safe_load((tmp_path / "mine.yaml").read_text())
    assert (entry["weight_dtype"], entry["expert_weight_dtype"]) == (weights, weights)


# ---- point 12d-f: the plot option, progress on a pipe, identical outputs -------------------

BAR_GLYPH = "━"  # rich's bar: on stderr only where a bar is drawn


def hashed_trace(path) -> None:
    """A Mooncake trace with prefix hashes (what --plot needs): 60 requests, 10 a second."""
    rows = [
        {"timestamp": 100 * i, "input_length": 1024, "output_length": 10,
         "hash_ids": [i % 7, (3 * i) % 11]}
        for i in range(60)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_plot_to_stdout_is_refused_saying_why(cli, tmp_path):
    """`-` is stdout for the text outputs; a plot is not written there (its format comes
    from its name, and the summary is printed there): the refusal says so, and nothing
    reaches stdout."""
    hashed_trace(tmp_path / "t.jsonl")
    done = cli("trace", "analyze", "t.jsonl", "--plot", "-")
    line = assert_one_error_line(done, 2, "--plot", "'-'", "standard output")
    assert "never written to standard output" in line
    assert done.stdout == ""


def test_a_plot_named_as_the_file_stdout_goes_to_is_refused(tmp_path):
    """`--plot x.svg > x.svg` wrote the summary and the image into one file."""
    hashed_trace(tmp_path / "t.jsonl")
    target = tmp_path / "x.svg"
    with open(target, "w") as stdout:
        done = subprocess.run([*cli_command(), "trace", "analyze", "t.jsonl", "--plot", "x.svg"],
                              cwd=tmp_path, env=cli_env(), stdout=stdout, stderr=subprocess.PIPE,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 2 and "never written to standard output" in done.stderr
    assert target.read_text() == ""


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("--format", "json")])
def test_sweep_draws_no_progress_on_a_pipe(cli, tmp_path, extra):
    """`sweep | head -1` printed the bar's last frame to a stderr that is no terminal."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    done = cli("sweep", "s.yaml", "--vary", "workload.arrival_rate_per_s=1,2", "--jobs", "1",
               *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert BAR_GLYPH not in done.stderr and "sweep (" not in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("option", "env"), [("--progress", ""), ("", "1")])
def test_sweep_draws_its_bar_when_forced(cli, tmp_path, option, env):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    args = ["sweep", "s.yaml", "--vary", "workload.arrival_rate_per_s=1,2", "--jobs", "1"]
    done = cli(*args, *([option] if option else []), PDD_PLAN_PROGRESS=env)
    assert done.returncode == 0, done.stderr
    assert "sweep (1 process)" in done.stderr and "2/2" in done.stderr
    assert BAR_GLYPH in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_the_trace_plot_is_the_same_bytes_for_the_same_trace(cli, tmp_path, suffix):
    """Random clip-path ids and the date made two runs differ."""
    hashed_trace(tmp_path / "t.jsonl")
    for name in ("a", "b"):
        done = cli("trace", "analyze", "t.jsonl", "--plot", name + suffix)
        assert done.returncode == 0, done.stderr
    first, second = ((tmp_path / n).with_suffix(suffix).read_bytes() for n in ("a", "b"))
    assert first == second
    if suffix == ".svg":
        assert b"clip-path" in first and b"<dc:date>" not in first


@pytest.mark.slow
def test_the_sweeps_plots_are_the_same_bytes_for_the_same_sweep(cli, tmp_path):
    """Every figure a sweep writes (SVG and PNG): only sweep.csv, sweep.json and run.json
    carry the wall times, which are measurements."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    for out in ("one", "two"):
        done = cli("sweep", "s.yaml", "--vary", "workload.arrival_rate_per_s=1,2", "--jobs", "1",
                   "--out", out)  # fmt: skip
        assert done.returncode == 0, done.stderr
    figures = sorted(p.name for p in (tmp_path / "one").iterdir() if p.suffix in (".svg", ".png"))
    assert figures
    for name in figures:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
