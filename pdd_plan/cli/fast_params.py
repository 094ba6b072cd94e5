"""Command-line values that need no conversion skip typer's pydantic adapters (#15 Build 2).

typer 0.29 coerces every parameter's value through a pydantic TypeAdapter, built the first
time the parameter is processed, even when the value is the option's own default or
`--help`'s None: importing pydantic for it costs about 0.1 s of CPU, a quarter of
`evaluate`'s whole budget (0.4 s), for values that are already what the command takes.

Here each plain parameter (str, int, float, bool or an Enum; one value; no parser, range or
file) gets a coercer that answers alone when the answer is certain: a str for a str, a
value of the declared type as it is, an enum's member named by its value (typer's own
choice matching), a decimal integer or float literal. Anything else (a typo, `1_000`,
` 5`, `nan`, a path, a list) goes to typer's own coercer, built on first need, so every
converted value and every error message is typer's (both paths give the same values on a
table of inputs: tests/cli/test_startup_imports_fast_params.py). With a typer that has no lazy
`_runtime_param` (before 0.29) nothing is installed and typer behaves as it always did.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
from enum import Enum
from typing import Any

try:  # typer >= 0.29: runtime coercion, built lazily per parameter
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_choice
except ImportError:  # older typer: click's types convert; nothing to speed up
    RuntimeParam = None

_INT = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)  # fits 64 bits; longer: typer decides
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,3})?", re.ASCII)
_PLAIN = (str, int, float, bool)
_UNSURE = object()  # the fast path cannot tell: typer's coercer decides


def convert(annotation: Any, value: Any, case_sensitive: bool = True, ctx=None) -> Any:
    """`value` as typer's coercer would return it for `annotation`, or _UNSURE."""
    if type(value) is annotation:
        return value  # typer's adapters return a value of the declared type unchanged
    if type(value) is not str:
        return _UNSURE
    if annotation is int and _INT.fullmatch(value):
        return int(value)
    if annotation is float and _FLOAT.fullmatch(value):
        number = float(value)
        return number if math.isfinite(number) else _UNSURE
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        try:  # typer's own matching, which its enum adapter calls
            return coerce_cli_choice(
                value, choices=tuple(annotation), case_sensitive=case_sensitive, ctx=ctx
            )
        except ValueError:
            return _UNSURE  # typer's coercer words the error
    return _UNSURE


if RuntimeParam is not None:

    @dataclasses.dataclass(frozen=True)
    class FastParam(RuntimeParam):
        """typer's RuntimeParam contract (None and multi-value checks in `coerce`), with
        `convert` first and typer's own coercer (built on first need) after it."""

        descriptor: Any = None
        slow: list = dataclasses.field(default_factory=list, compare=False, repr=False)

        def _coerce_value(self, value: Any, param, ctx) -> Any:
            sensitive = self.parameter_info.case_sensitive
            out = convert(self.annotation, value, sensitive, ctx)
            if out is not _UNSURE:
                return out
            if not self.slow:
                self.slow.append(build_runtime_param(self.descriptor))
            try:
                return self.slow[0]._coerce_value(value, param=param, ctx=ctx)
            except Exception as exc:
                raise _in_range_terms(self.parameter_info, value, exc) from None


def _in_range_terms(info, value, exc: Exception) -> Exception:
    """typer's refusal of a bounded option's text (`--jobs abc`: "Input should be a valid
    integer") as the option's own one line, naming the value found and the range
    (bounds.py); any other refusal as typer gave it."""
    bounded = getattr(info, "pdd_range", None)
    if bounded is None or not hasattr(exc, "format_message"):
        return exc
    from pdd_plan.cli.bounds import range_error

    return range_error(bounded[0], repr(value), *bounded[1:])


def _plain(param) -> bool:
    """A parameter whose values `convert` knows: one value of a plain type or an Enum."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or getattr(param, "_runtime_param", 0) is not None:
        return False
    info, kind = desc.parameter_info, desc.annotation
    simple = kind in _PLAIN or (isinstance(kind, type) and issubclass(kind, Enum))
    plain = desc.file_annotation is None and info.parser is None and not info.clamp
    unranged = info.min is None and info.max is None
    return simple and plain and unranged and param.nargs == 1 and not param.multiple


def _speed_up(param) -> None:
    if not _plain(param):
        return
    desc = param.type_descriptor
    # a typer whose RuntimeParam has other fields: its own coercer stays
    with contextlib.suppress(TypeError):
        param._runtime_param = FastParam(
            parameter_info=desc.parameter_info, annotation=desc.annotation, descriptor=desc
        )


def _help_option_getter(original):
    """The command's `get_help_option`, its option (built on first call) sped up."""

    def get_help_option(ctx):
        option = original(ctx)
        if option is not None:
            _speed_up(option)
        return option

    return get_help_option


def install(command):
    """Speed up `command`'s parameters, its help option's and those of every command
    already built under it (a group's); returns `command`."""
    if RuntimeParam is None:
        return command
    for param in command.params:
        _speed_up(param)
    if "get_help_option" not in vars(command):  # once per command object
        command.get_help_option = _help_option_getter(command.get_help_option)
    built = getattr(command, "commands", None)
    if built is not None:
        for sub in getattr(built, "_built", built).values():  # never builds a lazy one
            install(sub)
    return command
