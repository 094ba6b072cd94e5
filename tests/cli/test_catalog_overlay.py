"""An imported model is usable directly (#14 item 9): `model import -o` then a scenario's
`model_file:` (relative to the scenario), or `--catalog-dir DIR` laid over the shipped
catalog (an entry of a shipped id replaces it, with a note)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pdd_plan.loaders.catalog import catalog_dir

# Llama-3.1-8B's shape: 32 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes (BF16)
HF_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
}  # fmt: skip
KV_BYTES_PER_TOKEN = 32 * 8 * 128 * 2 * 2

SCENARIO = """\
name: mine
{model_line}
datacenters:
  - id: dc_a
    roles: [colocated]
    gpus:
      - {{gpu: h100_sxm, max_gpus: 16}}
workload:
  arrival_rate_per_s: 2
  input_tokens: {{kind: fixed, value: 2048}}
  output_tokens: {{kind: fixed, value: 200}}
  prefix_hit_rate: {{kind: fixed, value: 0.5}}
sla: {{ttft_p90_s: 5, tpot_p90_ms: 50}}
"""


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("pdd-plan")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]
    return subprocess.run(
        [*command, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _ok(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def _one_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def imported(tmp_path) -> Path:
    """A config.json imported into an overlay folder's models/: the folder."""
    (tmp_path / "config.json").write_text(json.dumps(HF_CONFIG))
    overlay = tmp_path / "cat"
    (overlay / "models").mkdir(parents=True)
    done = _cli(
        tmp_path, "model", "import", "config.json", "--id", "my_llama_8b", "--name",
        "My Llama 8B", "-o", "cat/models/my_llama_8b.yaml",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return overlay


@pytest.mark.slow
def test_an_imported_model_solves_by_model_file_and_by_catalog_dir_alike(tmp_path, imported):
    shown = _ok(_cli(tmp_path, "model", "show", "my_llama_8b", "--catalog-dir", "cat",
                     "--format", "json"))  # fmt: skip
    assert shown["kv_bytes_per_token"] == KV_BYTES_PER_TOKEN
    # model_file is relative to the scenario, not to where the command runs
    (tmp_path / "by_file.yaml").write_text(
        SCENARIO.format(model_line="model_file: cat/models/my_llama_8b.yaml")
    )
    (tmp_path / "by_id.yaml").write_text(SCENARIO.format(model_line="model: my_llama_8b"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    by_file = _ok(_cli(elsewhere, "solve", "../by_file.yaml", "--format", "json"))
    by_id = _ok(_cli(tmp_path, "solve", "by_id.yaml", "--catalog-dir", "cat", "--format", "json"))
    assert by_file["status"] == by_id["status"] == "optimal"
    assert by_file["plan"] == by_id["plan"]  # the same model, the same answer
    # without the overlay the id is unknown: one line, exit 2
    _one_error(_cli(tmp_path, "solve", "by_id.yaml"), "model", "my_llama_8b")


@pytest.mark.slow
def test_worker_processes_see_the_overlay(tmp_path, imported):
    (tmp_path / "by_id.yaml").write_text(SCENARIO.format(model_line="model: my_llama_8b"))
    swept = _cli(
        tmp_path, "--catalog-dir", "cat", "sweep", "by_id.yaml", "--architecture", "colocated",
        "--vary", "workload.arrival_rate_per_s=1,2", "--jobs", "2", "--format", "json",
    )  # fmt: skip
    result = _ok(swept)
    assert result["jobs"] == 2 and result["points_failed"] == 0


@pytest.mark.slow
def test_a_swept_scenario_keeps_its_model_file(tmp_path, imported):
    (tmp_path / "by_file.yaml").write_text(
        SCENARIO.format(model_line="model_file: cat/models/my_llama_8b.yaml")
    )
    swept = _cli(
        tmp_path, "sweep", "by_file.yaml", "--architecture", "colocated",
        "--vary", "workload.arrival_rate_per_s=1,2", "--jobs", "1", "--format", "json",
    )  # fmt: skip
    assert _ok(swept)["points_failed"] == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model_line", "fragments"),
    [
        ("model: qwen3_32b\nmodel_file: cat/models/my_llama_8b.yaml", ("model_file", "beside")),
        ("model_file: cat/models/absent.yaml", ("model_file", "absent.yaml", "not a file")),
        ("model_file: cat", ("model_file", "not a file")),
        ("model_file: 42", ("model_file", "a path to a model entry file")),
    ],
)
def test_a_bad_model_file_is_one_line(tmp_path, imported, model_line, fragments):
    (tmp_path / "s.yaml").write_text(SCENARIO.format(model_line=model_line))
    _one_error(_cli(tmp_path, "scenario", "validate", "s.yaml"), *fragments)


@pytest.mark.slow
def test_a_broken_model_file_is_named_on_its_own_keys(tmp_path, imported):
    entry = tmp_path / "cat" / "models" / "my_llama_8b.yaml"
    entry.write_text(entry.read_text().replace("hidden_size: 4096", "hidden_size: -1"))
    (tmp_path / "s.yaml").write_text(
        SCENARIO.format(model_line="model_file: cat/models/my_llama_8b.yaml")
    )
    _one_error(_cli(tmp_path, "scenario", "validate", "s.yaml"), "my_llama_8b.yaml", "hidden_size")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--catalog-dir", "absent"), ("--catalog-dir", "no such folder")),
        (("--catalog-dir", "empty"), ("--catalog-dir", "none of the catalog's parts")),
        (("--catalog-dir", "file.txt"), ("--catalog-dir", "not a folder")),
        (("--catalog-dir",), ("--catalog-dir", "found nothing")),
        (("--catalog-dir=cat", "--catalog-dir=empty"), ("--catalog-dir", "one folder")),
    ],
)
def test_a_bad_catalog_dir_is_one_line_before_any_work(tmp_path, imported, args, fragments):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    _one_error(_cli(tmp_path, "catalog", "list", *args), *fragments)


def _shipped(relative: str) -> dict:
    return yaml.safe_load((catalog_dir() / relative).read_text())


@pytest.mark.slow
def test_an_overlay_gpu_replaces_the_shipped_one_with_a_note(tmp_path):
    entry = _shipped("gpus/h100_sxm.yaml")
    entry["rental_usd_per_gpu_hour"] = {"value": 1.25, "source": "my_quote", "note": "ours"}
    (tmp_path / "cat" / "gpus").mkdir(parents=True)
    (tmp_path / "cat" / "gpus" / "h100_sxm.yaml").write_text(yaml.safe_dump(entry))
    sources = {"my_quote": {"title": "Our broker's quote", "reference": "email"}}
    (tmp_path / "cat" / "sources.yaml").write_text(yaml.safe_dump(sources))
    shown = _cli(tmp_path, "catalog", "show", "h100_sxm", "--catalog-dir", "cat",
                 "--format", "json")  # fmt: skip
    assert _ok(shown)["fields"]["rental_usd_per_gpu_hour"]["value"] == 1.25
    assert "note: --catalog-dir cat: gpu h100_sxm replaces the shipped entry" in shown.stderr
    # a scenario that takes the catalog's price pays ours: GPUs x $1.25 an hour
    (tmp_path / "s.yaml").write_text(SCENARIO.format(model_line="model: qwen3_32b"))
    solved = _ok(_cli(tmp_path, "solve", "s.yaml", "--catalog-dir", "cat", "--format", "json"))
    gpus = sum(g["gpus_per_instance"] * g["count"] for g in solved["plan"]["instances"])
    assert solved["metrics"]["cost_usd_per_hour"] == pytest.approx(gpus * 1.25)


def test_an_overlay_line_tier_adds_to_the_shipped_ones(tmp_path):
    tier = {
        "id": "wave_7g", "name": "our 7 Gbit/s wave", "kind": "wavelength",
        "capacity_gbit_per_s": 7,
        "price_usd_per_month": {"value": 500, "source": "my_quote"},
        "install_usd": {"value": 0, "source": "my_quote"},
    }  # fmt: skip
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "lines.yaml").write_text(yaml.safe_dump({"tiers": [tier]}))
    sources = {"my_quote": {"title": "Our carrier's quote", "reference": "email"}}
    (tmp_path / "cat" / "sources.yaml").write_text(yaml.safe_dump(sources))
    listed = _cli(tmp_path, "catalog", "list", "--catalog-dir", "cat", "--format", "json")
    ids = json.dumps(_ok(listed))
    assert "wave_7g" in ids and "wave_10g" in ids  # added, the shipped ones kept
    assert "note:" not in listed.stderr  # an addition replaces nothing


def test_a_resumed_sweep_is_keyed_by_the_overlay_and_the_model_file(tmp_path, monkeypatch):
    """A journal written with one overlay (or model file) is not continued with another:
    the rows would be another catalog's."""
    from types import SimpleNamespace

    from pdd_plan.loaders.catalog_overlay import OVERLAY_ENV
    from pdd_plan.stages.sweeping.sweep_journal import sweep_key

    (tmp_path / "cat" / "models").mkdir(parents=True)
    entry = tmp_path / "cat" / "models" / "m.yaml"
    entry.write_text("id: m\n")
    sweep = SimpleNamespace(
        label=str(tmp_path / "s.yaml"), data={"model_file": "cat/models/m.yaml"}, axes=(),
        architecture="pdd", plan_path=None, resolution=(), time_limit_s=10,
    )  # fmt: skip
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    plain = sweep_key(sweep, catalog_dir())
    monkeypatch.setenv(OVERLAY_ENV, str(tmp_path / "cat"))
    overlaid = sweep_key(sweep, catalog_dir())
    entry.write_text("id: m\nname: changed\n")
    changed = sweep_key(sweep, catalog_dir())
    monkeypatch.delenv(OVERLAY_ENV)
    assert len({plain, overlaid, changed, sweep_key(sweep, catalog_dir())}) == 4


@pytest.mark.slow
def test_the_bill_of_materials_names_the_overlay_and_the_model_file(tmp_path, imported):
    import hashlib

    (tmp_path / "s.yaml").write_text(
        SCENARIO.format(model_line="model_file: cat/models/my_llama_8b.yaml")
    )
    done = _cli(tmp_path, "solve", "s.yaml", "--catalog-dir", "cat", "--bom", "bom.csv")
    assert done.returncode == 0, done.stderr
    rows = [line for line in (tmp_path / "bom.csv").read_text().splitlines() if line[:1] == "#"]
    entry = tmp_path / "cat" / "models" / "my_llama_8b.yaml"
    file_sha = hashlib.sha256(entry.read_bytes()).hexdigest()
    # the overlay holds that one file, at models/my_llama_8b.yaml
    folder_sha = hashlib.sha256(
        b"models/my_llama_8b.yaml\0" + entry.read_bytes() + b"\0"
    ).hexdigest()
    assert any(r.startswith("# model_file,") and file_sha in r for r in rows), rows
    assert any(r.startswith("# catalog_overlay,") and folder_sha in r for r in rows), rows
