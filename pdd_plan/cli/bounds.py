"""Numeric command-line options with a documented range: one way to declare one.

`bounded(default, "--isl", low=1, high=MAX_TOKENS, help=...)` is a typer option whose
range shows in `--help` ("[1 to 10,000,000]") and is checked while the command line is
parsed, before any file is read or any work starts: a value outside it (or NaN, or an
infinity) is one line, `error: command line: --isl: found 9223372036854775808; expected
a whole number from 1 to 10,000,000`, exit 2. Every numeric option of every command is
declared this way, with a bound from the table below.
"""

from __future__ import annotations

import math

import typer

from pdd_plan.errors import InputError

# The bounds, and why each: far beyond any real use, low enough that the arithmetic
# behind the option stays finite and the run stays bounded.
MAX_TOKENS = 10_000_000  # tokens of one request: the scenario files' own cap
MAX_BATCH = 1_000_000  # running requests in one decode step of one instance
MAX_GPUS_PER_INSTANCE = 4096  # the scenario files' cap on an instance shape
TIME_LIMIT_S = (0.1, 86_400.0)  # a solve: HiGHS needs a moment; a day is past any use
MAX_JOBS = 1024  # worker processes
MAX_REQUESTS = 10_000_000  # simulated requests (as sim/entry.py): 100,000 take about 9 s
MAX_SEED = 2**63 - 1  # a seed is any non-negative 64-bit integer (as sim/entry.py)
MAX_WARMUP_FRAC = 0.9  # leaves at least a tenth of the requests to measure
MAX_BLOCK_TOKENS = 1_048_576  # tokens per prefix-hash block (real engines: 16 to 512)
MAX_CACHE_TOKENS = 10**15  # an LRU cache capacity, as the scenario's decode cache


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,g}"


def range_text(low: float, high: float, unit: str = "") -> str:
    return f"{_number(low)} to {_number(high)}{' ' + unit if unit else ''}"


def check_range(
    option: str, value, low: float, high: float, unit: str = "", found: str | None = None
) -> None:
    """Raise the one-line InputError unless `low <= value <= high` (NaN never is);
    `found`: the value as the user wrote it (default: its repr)."""
    if value is None:
        return
    finite = not isinstance(value, float) or math.isfinite(value)
    if finite and low <= value <= high:
        return
    raise range_error(option, found or repr(value), low, high, unit)


def range_error(option: str, found: str, low: float, high: float, unit: str = "") -> InputError:
    """The one line for a value outside an option's range, or not a number at all."""
    kind = "a whole number" if isinstance(low, int) and isinstance(high, int) else "a number"
    return InputError.single(
        "command line", option, found, f"{kind} from {range_text(low, high, unit)}"
    )


def bounded(default, *names: str, low: float, high: float, help: str, unit: str = ""):
    """A typer option holding a number in [low, high] (integers when both are ints);
    None (an optional option left out) is never checked."""

    def check(value):
        check_range(names[0], value, low, high, unit)
        return value

    info = typer.Option(
        default, *names, help=f"{help} [{range_text(low, high, unit)}]", callback=check
    )
    # text that is no number at all (`abc`, `0x10`, `''`) is refused by typer's converter
    # before `check` runs; fast_params.py words that refusal with this range instead
    info.pdd_range = (names[0], low, high, unit)
    return info


def id_from_text(text: str) -> str:
    """An id made of `text`: lower case, every other character `_` (`Q-1` -> `q_1`)."""
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


def check_id_option(option: str, value: str | None) -> None:
    """An id option (`--id`, `--name`) as typed, before any file is read: lower-case
    letters, digits and _, with the id to try when the text makes one."""
    from pdd_plan.loaders.strict import ID_PATTERN  # the loaders' rule; loads on use only

    if value is None or ID_PATTERN.fullmatch(value):
        return
    fixed = id_from_text(value)
    hint = f"try {fixed!r}" if fixed and ID_PATTERN.fullmatch(fixed) else ""
    raise InputError.single("command line", option, repr(value),
                            "an id of lower-case letters, digits and _", hint)  # fmt: skip


def time_limit_option():
    """`--time-limit`, as every solving command declares it."""
    return bounded(
        30.0, "--time-limit", low=TIME_LIMIT_S[0], high=TIME_LIMIT_S[1], unit="s",
        help="seconds to solve (set-up, MILPs and search; a stop without a plan exits 5)",
    )  # fmt: skip


def jobs_option():
    """`--jobs`, as every command with worker processes declares it."""
    return bounded(
        None, "--jobs", low=1, high=MAX_JOBS, help="worker processes (default: CPU count)"
    )


def parallel_size_option(flag: str, what: str):
    """`--tp`, `--ep` or `--dp`: an optional parallel size up to the largest instance."""
    return bounded(None, flag, low=1, high=MAX_GPUS_PER_INSTANCE, help=f"{what} size")
