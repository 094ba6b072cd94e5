"""cli/fast_params.py: a value coerced without pydantic is the value typer's own coercer
gives, and every value the fast path cannot vouch for (and every error) is typer's.

The reference is typer's coercer itself (`build_runtime_param`), run on the same
parameter, value and context; the table mixes values the fast path answers alone
(defaults, decimal literals, enum values) with ones it must hand over (`1_000`, ` 5`,
`nan`, `1e400`, non-ASCII digits, typos), so a fast path that answered wrongly or
answered for a value typer converts differently fails here.
"""

from __future__ import annotations

import math
from enum import StrEnum

import pytest
import typer

fast_params = pytest.importorskip("pdd_plan.cli.fast_params")
if fast_params.RuntimeParam is None:  # typer < 0.29 converts with click: nothing installed
    pytest.skip("typer without lazy runtime coercion", allow_module_level=True)
from typer._coercion import build_runtime_param  # noqa: E402


class Shade(StrEnum):
    light = "light"
    dark = "dark"


def _command(install: bool = False):
    """A command with one parameter of each kind the fast path takes, and two it leaves;
    its context (made after `install` when asked: making it processes the defaults)."""

    def cmd(
        text: str = "x",
        count: int = 3,
        rate: float = 0.5,
        flag: bool = False,
        shade: Shade = Shade.light,
        loose: Shade = typer.Option(Shade.light, case_sensitive=False),
        ranged: int = typer.Option(1, min=0, max=9),
        many: list[str] = typer.Option(None),
    ) -> None:
        pass

    holder = typer.Typer(add_completion=False)
    holder.command()(cmd)
    command = typer.main.get_command(holder)
    if install:
        fast_params.install(command)
    ctx = command.make_context("t", [], resilient_parsing=True)
    return command, ctx, {p.name: p for p in command.params}


VALUES = [
    "abc", "", "5", "007", "+5", "-0", "-12", " 5", "5 ", "1_000", "5.0", "3.5", ".5", "5.",
    "1e3", "1E-3", "-2.5e+2", "1e400", "nan", "inf", "-inf", "0x10", "\u0663",
    "light", "dark", "LIGHT", "Dark", "lite", "true", "0",
    3, 0, -7, 2.5, 3.0, True, False, Shade.light, Shade.dark, 10**20, float("inf"),
]  # fmt: skip


def _outcome(runtime, param, ctx, value):
    try:
        return "ok", runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # typer's BadParameter: compare its words
        return type(exc).__name__, str(exc)


def _same(a, b) -> bool:
    if a[0] != b[0] or type(a[1]) is not type(b[1]):
        return False
    if isinstance(a[1], float) and math.isnan(a[1]):
        return math.isnan(b[1])
    return a[1] == b[1]


@pytest.mark.parametrize("name", ["text", "count", "rate", "flag", "shade", "loose"])
def test_fast_coercion_equals_typers_on_every_value(name):
    _, ctx, params = _command()
    param = params[name]
    desc = param.type_descriptor
    fast = fast_params.FastParam(
        parameter_info=desc.parameter_info, annotation=desc.annotation, descriptor=desc
    )
    slow = build_runtime_param(desc)
    for value in VALUES:
        got, want = _outcome(fast, param, ctx, value), _outcome(slow, param, ctx, value)
        assert _same(got, want), (name, value, got, want)


# values typer converts that the fast path must answer alone (else it saves nothing):
# (annotation, value, what typer gives)
ANSWERED = [
    (str, "default", "default"),
    (int, "007", 7),
    (int, "-12", -12),
    (int, 3, 3),
    (float, "1e3", 1000.0),
    (float, ".5", 0.5),
    (float, 2.5, 2.5),
    (Shade, "dark", Shade.dark),
    (Shade, Shade.light, Shade.light),
]


@pytest.mark.parametrize(("annotation", "value", "want"), ANSWERED)
def test_the_fast_path_answers_plain_values_itself(annotation, value, want):
    got = fast_params.convert(annotation, value)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize(
    ("annotation", "value"),
    [(int, "1_000"), (int, " 5"), (int, "5.0"), (int, "\u0663"), (float, "nan"),
     (float, "1e400"), (int, 2.5), (float, 3), (Shade, "DARK"), (bool, "true"),
     (int, "1" * 19)],
)  # fmt: skip
def test_values_typer_converts_its_own_way_are_handed_over(annotation, value):
    assert fast_params.convert(annotation, value) is fast_params._UNSURE


def test_install_takes_plain_parameters_and_leaves_ranged_and_multiple_ones():
    command, ctx, params = _command(install=True)
    for name in ("text", "count", "rate", "flag", "shade", "loose"):
        assert isinstance(params[name]._runtime_param, fast_params.FastParam), name
    for name in ("ranged", "many"):
        assert not isinstance(params[name]._runtime_param, fast_params.FastParam), name
    help_option = command.get_help_option(ctx)
    assert isinstance(help_option._runtime_param, fast_params.FastParam)


def test_a_command_through_typer_gets_the_same_values_and_errors(capsys):
    """End to end through typer's parser: the converted values reach the command as
    typer would give them; an invalid value is refused with typer's message."""
    seen = {}

    def cmd(count: int = 3, rate: float = 0.5, shade: Shade = Shade.light) -> None:
        seen.update(count=count, rate=rate, shade=shade)

    holder = typer.Typer(add_completion=False)
    holder.command()(cmd)
    command = fast_params.install(typer.main.get_command(holder))
    command.main(["--count", "12", "--rate", "2e-3", "--shade", "dark"], standalone_mode=False)
    assert seen == {"count": 12, "rate": 0.002, "shade": Shade.dark}
    assert type(seen["count"]) is int and type(seen["rate"]) is float
    with pytest.raises(Exception) as refused:
        command.main(["--count", "twelve"], standalone_mode=False)
    assert "--count" in refused.value.format_message()
    assert "valid integer" in refused.value.format_message()
