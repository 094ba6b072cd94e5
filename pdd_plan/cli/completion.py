"""`pdd-plan --show-completion [SHELL]` and `--install-completion [SHELL]`: shell completion
by typer's machinery (its scripts, its installer, its completion classes).

typer's own pair (`add_completion=True`) are bare flags wherever `shellingham` is installed:
the shell cannot be named, and outside an interactive shell (a script, a container's
entrypoint, CI) detection finds none and typer prints "Shell  not supported" and exits 1.
Here they are flags too (typer 0.29's options cannot take an optional value), but a shell
named right after one is taken off the command line first (`take_shell_names`) and used;
none named: the shell this process runs under (shellingham), else the login shell
($SHELL). A shell neither named nor found, or one typer has no script for, is one
`error:` line, exit 2. Nothing here costs a command's start: typer's completion modules
are imported when an option runs, or when the shell asks for completions.
"""

from __future__ import annotations

import os

import typer

from pdd_plan.errors import InputError

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")  # those typer writes a script for
COMPLETE_VAR = "_PDD_PLAN_COMPLETE"  # set by the completion script when the shell asks
OPTIONS = ("--show-completion", "--install-completion")
_named: dict[str, str] = {}  # option -> the shell named after it on this command line


def take_shell_names(args: list[str]) -> list[str]:
    """`args` without the shell named after one of OPTIONS among the leading options
    (`pdd-plan --show-completion bash`), kept for the option's callback: typer's flags
    take no value, and the name would otherwise be read as a command."""
    _named.clear()
    for i, arg in enumerate(args):
        if not arg.startswith("-"):
            break
        if arg in OPTIONS and i + 1 < len(args) and not args[i + 1].startswith("-"):
            _named[arg] = args[i + 1]
            return args[: i + 1] + args[i + 2 :]
    return args


def enable_completion() -> None:
    """typer's completion classes, registered when the shell asks for completions."""
    if COMPLETE_VAR in os.environ:
        from typer.completion import completion_init

        completion_init()


def detected_shell() -> str | None:
    """The shell this process runs under (its parents), else the login shell; None when
    neither is one of SHELLS."""
    try:
        import shellingham

        name = shellingham.detect_shell()[0]
    except Exception:  # not installed, or no shell among the parents (ShellDetectionFailure)
        name = None
    if name not in SHELLS:
        name = os.path.basename(os.environ.get("SHELL", "")).lower()
    return name if name in SHELLS else None


def shell_named(option: str) -> str:
    """The shell `option` means: the one named after it, checked, or the detected one."""
    expected = f"one of {', '.join(SHELLS)}"
    named = _named.get(option)
    if named is not None:
        if named.lower() not in SHELLS:
            raise InputError.single("command line", option, repr(named), expected)
        return named.lower()
    shell = detected_shell()
    if shell is None:
        found = f"no shell named, none detected (SHELL={os.environ.get('SHELL', '')!r})"
        raise InputError.single("command line", option, found, f"{expected} named after it")
    return shell


def _show(ctx: typer.Context, param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from typer.completion import show_callback

    show_callback(ctx, param, shell_named("--show-completion"))  # prints it, exits 0


def _install(ctx: typer.Context, param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from typer.completion import install_callback

    install_callback(ctx, param, shell_named("--install-completion"))  # exits 0


def _option(name: str, callback, what: str):
    return typer.Option(
        False,
        name,
        is_eager=True,
        expose_value=False,
        callback=callback,
        help=f"{what}; `{name} SHELL` names the shell ({', '.join(SHELLS)}; default: the "
        "shell this runs in, else $SHELL)",
    )


def show_option():
    return _option("--show-completion", _show, "print the completion script")


def install_option():
    return _option("--install-completion", _install,
                   "install completion in your home's shell start-up files")  # fmt: skip
