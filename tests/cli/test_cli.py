"""The CLI as a user runs it: from a directory that is not the repository."""

import json

import pytest
import yaml

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.report import views


def test_runs_outside_the_repository_and_finds_its_data(run_cli, tmp_path):
    result = run_cli("catalog", "list", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {g["id"] for g in data["gpus"]} >= {"h100_sxm", "h200_sxm", "mi300x"}
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran


def test_model_show_json_equals_the_api(run_cli):
    result = run_cli("model", "show", "deepseek_v3", "--kv-dtype", "bf16", "--format", "json")
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    api = views.model_detail(Catalog().model("deepseek_v3"), "bf16", None, 65536)
    assert cli == json.loads(json.dumps(api))
    assert cli["kv_bytes_per_token"] == 61 * 576 * 2


def test_model_show_table_breaks_kv_down_by_layer_type(run_cli):
    result = run_cli("model", "show", "qwen3_next_80b")
    assert result.returncode == 0, result.stderr
    assert "full attention" in result.stdout and "gated_deltanet" in result.stdout


def test_scenario_validate_default_and_template(run_cli):
    for args in (("scenario", "validate"), ("scenario", "validate", "default")):
        result = run_cli(*args, "--format", "json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["scenario"]["name"] == "default"
    template = run_cli("scenario", "template")
    assert template.returncode == 0
    assert yaml.safe_load(template.stdout)["name"] == "template"


@pytest.mark.slow
def test_template_output_is_itself_valid(run_cli, tmp_path):
    text = run_cli("scenario", "template").stdout
    (tmp_path / "mine.yaml").write_text(text)
    result = run_cli("scenario", "validate", "mine.yaml")
    assert result.returncode == 0, result.stderr


def test_model_import_writes_a_loadable_entry(run_cli, tmp_path, shared_dir):
    config = shared_dir / "data/model_configs/Qwen3-32B.json"
    result = run_cli("model", "import", str(config), "--id", "q32", "-o", "q32.yaml")
    assert result.returncode == 0, result.stderr
    entry = yaml.safe_load((tmp_path / "q32.yaml").read_text())
    assert entry["id"] == "q32" and entry["layers"] == [
        {"repeat": 64, "attention": "full", "ffn": "dense"}
    ]


def test_catalog_show_gives_sources(run_cli):
    result = run_cli("catalog", "show", "h100_sxm", "--format", "json")
    fields = json.loads(result.stdout)["fields"]
    assert fields["hbm_gib"]["value"] == 80 and fields["hbm_gib"]["source"]


@pytest.mark.parametrize("args", [("--help",), ("model", "--help"), ()])
def test_help_exits_zero(run_cli, args):
    result = run_cli(*args)
    assert result.returncode == 0 and "Usage" in result.stdout


def test_python_dash_m_works(tmp_path):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "pdd_plan", "version"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.strip()
