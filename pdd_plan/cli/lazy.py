"""Subcommands registered by name and imported when they run (#15 Build 2).

Importing every command's module at start-up cost `--help` about 0.3 s of CPU (the
catalog, the models, numpy through them). The top level therefore knows each command only
by its module, its attribute and the one paragraph its listing shows; `pdd-plan CMD ...`
imports CMD's module alone and builds the command exactly as `app.command` /
`app.add_typer` would have (same typer settings), so its own `--help` is unchanged. The
listing's paragraph is a copy of the command's docstring's first paragraph:
tests/cli/test_startup_lazy.py checks every copy against the real command.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass

import typer
from typer.core import TyperCommand, TyperGroup

from pdd_plan.cli.fast_params import install


@dataclass(frozen=True)
class Lazy:
    """One subcommand: `attr` of `module` is a function (a command) or a Typer (a group);
    `summary` is the first paragraph of its help, as the top level's listing shows it."""

    module: str
    attr: str
    summary: str


def build(name: str, spec: Lazy):
    """The click command `name` as the eager registration built it."""
    target = getattr(importlib.import_module(spec.module), spec.attr)
    # the same settings as the top-level app, which typer hands down to its commands
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    return install(typer.main.get_group(holder).commands[name])  # values without pydantic


class _Commands(MutableMapping):
    """A group's commands by name, in listing order: a lazy one is imported the first
    time its value is read (running it, or walking `.items()`), never for `in`, `len` or
    the names."""

    def __init__(self, eager: dict, table: dict[str, Lazy], order: tuple[str, ...]):
        self._built = dict(eager)
        self._table = table
        self._order = [n for n in order if n in eager or n in table]
        self._order += [n for n in eager if n not in self._order]

    def __getitem__(self, name: str):
        if name not in self._built and name in self._table:
            self._built[name] = build(name, self._table[name])
        return self._built[name]

    def __setitem__(self, name: str, command) -> None:
        self._built[name] = command
        if name not in self._order:
            self._order.append(name)

    def __delitem__(self, name: str) -> None:
        self._built.pop(name, None)
        self._table = {k: v for k, v in self._table.items() if k != name}
        self._order.remove(name)

    def __contains__(self, name: object) -> bool:
        return name in self._order

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def listed(self, name: str):
        """What the listing shows for `name`: the command when built, else a stand-in
        carrying its summary (never run: resolve_command builds the real one first)."""
        if name in self._built:
            return self._built[name]
        if name in self._table:
            return TyperCommand(name=name, help=self._table[name].summary)
        return None


def lazy_group(table: dict[str, Lazy], order: tuple[str, ...]) -> type[TyperGroup]:
    """A TyperGroup class (for `typer.Typer(cls=...)`) whose commands include `table`'s,
    listed in `order` (names of eagerly registered commands included)."""

    class LazyGroup(TyperGroup):
        def __init__(self, *, commands=None, **attrs) -> None:
            super().__init__(commands=_Commands(dict(commands or {}), table, order), **attrs)

        def list_commands(self, ctx) -> list[str]:
            return list(self.commands)  # typer's walks `.items()`, which would build them

        def get_command(self, ctx, cmd_name: str):
            return self.commands.listed(cmd_name)

        def resolve_command(self, ctx, args: list[str]):
            if args and args[0] in self.commands:
                self.commands[args[0]]  # import and build it: it is about to run
            return super().resolve_command(ctx, args)

    return LazyGroup
