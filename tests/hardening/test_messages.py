"""Messages that read wrong (#10 C, item 21): "-0 allowed" for `wan.max_lines: 0`, and
"expected one of (no keys)" for a badly named hit-rate mix; and their siblings."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.strict import Node, Problems
from tests.hardening.conftest import assert_one_error_line

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "scenarios" / "default.yaml").read_text(encoding="utf-8"))
NEGATIVE_ZERO = re.compile(r"(?<![\w.])-0(?:\.0+)?(?![\d.])")  # "-0", "-0.00", not "-0.5"


def _scenario(tmp_path: Path, edit) -> None:
    data = copy.deepcopy(DEFAULT)
    edit(data)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_negative_zero_pattern_is_what_we_think():
    assert NEGATIVE_ZERO.search("needs 1, -0 allowed")
    assert NEGATIVE_ZERO.search("budget $-0.00/h")
    assert not NEGATIVE_ZERO.search("needs 1, 0 allowed; -0.5 s; dc-0")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["solve", "explain"])
def test_no_line_allowed_is_one_line_without_minus_zero(cli, tmp_path, command):
    """Two datacenters and no line: PDD cannot be planned (the WAN ceiling check answers
    first; with no line it divided by zero for the utilisation-cap relaxation)."""
    _scenario(tmp_path, lambda d: d["wan"].__setitem__("max_lines", 0))
    result = cli(command, "s.yaml", "--architecture", "pdd", "--time-limit", "5")
    line = assert_one_error_line(result, 3, "wan.max_lines at least 1 (now 0)")
    assert not NEGATIVE_ZERO.search(line), line


def test_the_elastic_diagnosis_says_0_allowed(tmp_path):
    """The elastic MILP's line shortfall at wan.max_lines 0: its limit is the -0.0 of a
    zero right-hand side unless clamped ("needs 1, -0 allowed")."""
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.loaders.scenario import load_scenario
    from pdd_plan.plan import elastic
    from pdd_plan.plan import solve as sv

    _scenario(tmp_path, lambda d: d["wan"].__setitem__("max_lines", 0))
    catalog = Catalog()
    s = load_scenario(tmp_path / "s.yaml", catalog)
    policy = next(iter(sv._policies(s, "pdd")))
    found = elastic.diagnose(
        s, catalog.model_for(s), catalog.gpus, catalog.lines, "pdd", policy,
        s.policy.utilization_cap_frac, (2, 2, 2), 5,
    )  # fmt: skip
    lines = [x for x in found.shortfalls if x.family.subject == "WAN lines"]
    assert [x.line() for x in lines] == ["WAN lines: needs 1, 0 allowed (wan.max_lines)"]
    assert math.copysign(1.0, lines[0].limit) == 1.0  # +0.0, not -0.0


def test_a_badly_named_mix_says_what_a_name_may_be(cli, tmp_path):
    def edit(d):
        d["workload"]["prefix_hit_rate_alternatives"] = {
            "Bad-Name": {"kind": "fixed", "value": 0.5}
        }

    _scenario(tmp_path, edit)
    result = cli("scenario", "validate", "s.yaml")
    line = assert_one_error_line(
        result,
        2,
        "s.yaml: workload.prefix_hit_rate_alternatives.Bad-Name: found the key 'Bad-Name';",
        "expected a mix name of lower-case letters, digits and _",
    )
    assert "(no keys)" not in line


def _problem(value, **mapping_args) -> str:
    problems = Problems("f.yaml")
    Node(value, "root", problems).mapping(**mapping_args)
    with pytest.raises(InputError) as raised:
        problems.raise_if_any()
    return str(raised.value)


@pytest.mark.parametrize(
    "mapping_args, expected",
    [
        # free names only: what a name may be (the bug: "one of (no keys)")
        ({"patterns": (r"[a-z]+",)}, "expected a key matching [a-z]+"),
        # known keys and free names: both said
        (
            {"optional": ("b", "a"), "patterns": (r"x\d",), "pattern_text": "x and a digit"},
            "expected one of a, b or x and a digit",
        ),
        # neither: the mapping must be empty, and the message says so
        ({}, "expected no keys (an empty mapping)"),
    ],
)
def test_every_kind_of_mapping_names_its_keys(mapping_args, expected):
    message = _problem({"Q!": 1}, **mapping_args)
    assert "one of (no keys)" not in message and "one of ," not in message
    assert expected in message, message
