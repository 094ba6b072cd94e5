"""Issue #25: bad quoted prices are refused, never used. A `--prices` file (or a scenario's
`prices:` section) with an unknown key, an id that does not exist, a figure that is not a
finite number within bounds, or one figure at two values is one `error:` line naming the
file and the key path (exit 2), before any work; so is a bad `costs.spares`. The CLI cases
run `scenario validate`, which loads the scenario with the file; each case is also checked
through the loader (fast)."""

from __future__ import annotations

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from tests.hardening.conftest import REPO, assert_one_error_line

H100 = "gpus:\n  - {gpu: h100_sxm, %s}\n"
CASES = [  # (id, price file, scenario, fragments of the one line)
    ("unknown_key", H100 % "rental_usd_per_gpu_hour: 2, purchase_usd_per_gpux: 3", "default",
     ("gpus[0].purchase_usd_per_gpux", "did you mean 'purchase_usd_per_gpu'")),
    ("unknown_gpu", "gpus:\n  - {gpu: h100, rental_usd_per_gpu_hour: 2}\n", "default",
     ("gpus[0].gpu", "'h100'", "did you mean 'h100_sxm'")),
    ("unknown_datacenter", H100 % "datacenter: dc_c, rental_usd_per_gpu_hour: 2", "default",
     ("gpus[0].datacenter", "'dc_c'", "a known datacenter id")),
    ("gpu_not_offered_there", "gpus:\n  - {gpu: h200_sxm, datacenter: dc_a, "
     "rental_usd_per_gpu_hour: 2}\n", "default", ("gpus[0].gpu", "a GPU datacenter dc_a offers")),
    ("unknown_tier", "lines:\n  - {tier: wave_10G, install_usd: 5}\n", "default",
     ("lines[0].tier", "did you mean 'wave_10g'")),
    ("negative", H100 % "rental_usd_per_gpu_hour: -1", "default",
     ("gpus[0].rental_usd_per_gpu_hour", "found -1", "> 0")),
    ("nan", H100 % "rental_usd_per_gpu_hour: .nan", "default",
     ("gpus[0].rental_usd_per_gpu_hour", "found nan")),
    ("infinite", H100 % "purchase_usd_per_node: .inf", "default",
     ("gpus[0].purchase_usd_per_node", "found inf")),
    ("absurd", H100 % "purchase_usd_per_gpu: 1.0e12", "default",
     ("gpus[0].purchase_usd_per_gpu", "<= 1e+07")),
    ("bool", H100 % "rental_usd_per_gpu_hour: true", "default",
     ("gpus[0].rental_usd_per_gpu_hour", "found true")),
    ("quoted_twice", "gpus:\n  - {gpu: h100_sxm, rental_usd_per_gpu_hour: 2}\n"
     "  - {gpu: h100_sxm, rental_usd_per_gpu_hour: 3}\n", "default",
     ("gpus[1].rental_usd_per_gpu_hour", "one value per figure", "gpus[0]")),
    ("conflicts_with_the_scenario", H100 % "rental_usd_per_gpu_hour: 2", "pdd-paper",
     ("rental_usd_per_gpu_hour: found 2", "datacenters[0].gpus[0].price_usd_per_gpu_hour")),
    ("no_figure", H100 % "note: a quote without a price", "default",
     ("gpus[0]", "an entry quoting at least one of")),
    ("bad_date", H100 % "rental_usd_per_gpu_hour: 2, valid_until: next year", "default",
     ("gpus[0].valid_until", "a date YYYY-MM-DD")),
    ("absurd_lead_time", H100 % "rental_usd_per_gpu_hour: 2, lead_time_weeks: 10000", "default",
     ("gpus[0].lead_time_weeks", "<= 520")),
    ("negative_tariff", "power:\n  - {usd_per_kwh: -0.1}\n", "default",
     ("power[0].usd_per_kwh", "found -0.1")),
    ("not_a_mapping", "- {gpu: h100_sxm, rental_usd_per_gpu_hour: 2}\n", "default",
     ("found a list of 1 item", "expected a mapping")),
    ("unknown_section", "gpu:\n  - {gpu: h100_sxm, rental_usd_per_gpu_hour: 2}\n", "default",
     ("gpu: found an unknown key", "did you mean 'gpus'")),
    ("empty", "", "default", ("an empty file",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "text", "scenario", "fragments"), CASES, ids=[c[0] for c in CASES]
)
def test_a_bad_price_file_is_one_line_through_the_loader(tmp_path, case, text, scenario, fragments):
    from pdd_plan.loaders.prices_apply import run_prices

    (tmp_path / "quotes.yaml").write_text(text)
    with pytest.raises(InputError) as caught, run_prices(str(tmp_path / "quotes.yaml")):
        load_scenario(resolve_scenario_path(scenario))
    (problem,) = caught.value.problems
    line = problem.line()
    assert "quotes.yaml" in problem.file
    for fragment in fragments:
        assert fragment in line, (fragment, line)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "text", "scenario", "fragments"), CASES, ids=[c[0] for c in CASES]
)
def test_a_bad_price_file_is_one_line_through_the_cli(cli, tmp_path, case, text, scenario,
                                                      fragments):  # fmt: skip
    (tmp_path / "quotes.yaml").write_text(text)
    done = cli("scenario", "validate", scenario, "--prices", "quotes.yaml")
    assert_one_error_line(done, 2, "quotes.yaml", *fragments)


def test_a_missing_price_file_is_one_line(cli, tmp_path):
    done = cli("solve", "--prices", "nowhere.yaml", "--bom", "b.csv")
    assert_one_error_line(done, 2, "nowhere.yaml")
    assert not (tmp_path / "b.csv").exists()


def test_an_output_onto_the_price_file_is_refused_before_any_work(cli, tmp_path):
    (tmp_path / "q.yaml").write_text(H100 % "rental_usd_per_gpu_hour: 2")
    before = (tmp_path / "q.yaml").read_bytes()
    done = cli("solve", "--prices", "q.yaml", "--bom", "q.yaml")
    assert_one_error_line(done, 2, "--bom", "q.yaml")
    assert (tmp_path / "q.yaml").read_bytes() == before


SPARES = [("-1", "costs.spares", "found -1"), ("{prefil: 1}", "costs.spares.prefil",
           "did you mean 'prefill'"), ("1.5", "costs.spares", "a whole number")]  # fmt: skip


@pytest.mark.parametrize(("value", "path", "fragment"), SPARES)
def test_bad_spares_are_refused_with_their_key_path(tmp_path, value, path, fragment):
    text = (REPO / "scenarios" / "default.yaml").read_text()
    (tmp_path / "s.yaml").write_text(text + f"costs:\n  spares: {value}\n")
    with pytest.raises(InputError) as caught:
        load_scenario(tmp_path / "s.yaml")
    (problem,) = caught.value.problems
    assert problem.key_path == path and fragment in problem.line()
