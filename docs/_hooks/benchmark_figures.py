"""MkDocs hook: serve the plots the benchmarks draw (benchmarks/results/*.png, *.svg) as
`figures/NAME`, so a page shows the file a benchmark last wrote instead of a copy of it.

MkDocs reads pages and assets from docs/ only; this adds the results folder's images to the
site's files at build time, where links to them are checked like any other (a missing plot
is a broken link, which `mkdocs build --strict` refuses).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
KINDS = ("*.png", "*.svg")


def on_files(files: Files, config) -> Files:
    for kind in KINDS:
        for image in sorted(RESULTS.glob(kind)):
            files.append(File.generated(config, f"figures/{image.name}", abs_src_path=str(image)))
    return files
