"""An output file's format follows its name's extension (#24 item 4).

Each output option lists the formats it can write and the extensions that name each:
`solve --report x.html` writes the report as HTML, `x.md` as Markdown. A name with an
extension the option does not write (`--report x.txt`, `--bom x.json`) is refused before
any work (after the checks of output_paths.py, which say more: an output that would
replace an input), one line naming the option, the path and the extensions it takes: the
file would hold something its name misstates. A name without an extension (a FIFO's, say)
and `-` (standard output) get the option's default format, as they always did.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from pdd_plan.errors import InputError
from pdd_plan.report.files import standard_stream


@dataclass(frozen=True)
class Formats:
    """What an output option can write: format -> the extensions naming it, and the
    format of a name with none."""

    extensions: Mapping[str, tuple[str, ...]]
    default: str
    default_note: str = ""  # what else decides the format of a name without extension

    def of(self, extension: str) -> str | None:
        wanted = extension.lower()
        return next((f for f, exts in self.extensions.items() if wanted in exts), None)

    def expected(self) -> str:
        named = [f"{' or '.join(exts)} ({what})" for what, exts in self.extensions.items()]
        text = "a name ending " + ", ".join(named[:-1]) + (" or " if named[1:] else "")
        text += named[-1]
        return f"{text}; with no extension (or - for stdout), {self.default}{self.default_note}"


MARKDOWN = "Markdown"
HTML = "HTML"
CSV = "CSV"
YAML = "YAML"
JSON = "JSON"
LP = "LP"

_EXTENSIONS = {
    MARKDOWN: (".md", ".markdown"),
    HTML: (".html", ".htm"),
    CSV: (".csv",),
    YAML: (".yaml", ".yml"),
    JSON: (".json",),
    LP: (".lp",),
}


def formats(*names: str, default_note: str = "") -> Formats:
    """The Formats of `names` (of _EXTENSIONS), the first the default."""
    return Formats({n: _EXTENSIONS[n] for n in names}, names[0], default_note)


REPORT = formats(MARKDOWN, HTML)  # `solve --report`
CATALOG_ENTRY = formats(YAML, JSON, default_note=" (JSON with --format json)")  # model import
HTML_ONLY = formats(HTML)
MARKDOWN_ONLY = formats(MARKDOWN)
CSV_ONLY = formats(CSV)
YAML_ONLY = formats(YAML)
LP_ONLY = formats(LP)


def extension(path: str) -> str:
    """The extension of the path's last name ('' for none, for `-`, for `.bashrc`)."""
    name = os.path.basename(path.rstrip(os.sep))
    stem, ext = os.path.splitext(name)
    return ext if stem and ext != "." else ""


def named_extension(path: str) -> str:
    """The extension the path's name gives ('' for stdout and a name without one)."""
    return "" if standard_stream(path) is not None else extension(path)


def output_format(option: str, path: str, allowed: Formats) -> str:
    """The format `option` writes `path` in, or InputError (exit 2) naming the option,
    the path and the extensions it takes."""
    ext = named_extension(path)
    chosen = allowed.of(ext) if ext else allowed.default
    if chosen is None:
        raise InputError.single(path, option, f"the extension {ext}", allowed.expected())
    return chosen


def output_formats(
    files: Mapping[str, str | os.PathLike | None], allowed: Mapping[str, Formats]
) -> dict[str, str]:
    """option -> the format of its file, for each option of `allowed` given a path."""
    return {
        option: output_format(option, str(files[option]), formats_)
        for option, formats_ in allowed.items()
        if files.get(option) is not None
    }
