"""Which catalog files a plan's prices and figures came from, and one digest over them.

The bill of materials and the sizing report print the digest at their top, so a reader can
tell whether two files were priced from the same catalog. The files, in this fixed order:
`sources.yaml`, `lines.yaml`, `cache_tiers.yaml` (only when the scenario offers a
decode-side cache), every `gpus/*.yaml` sorted by name, `line_ends.yaml` and every
`nodes/*.yaml` sorted by name (where the catalog has them: the bill's order hardware), then
the scenario's `models/<id>.yaml` (left out when the model is not a catalog entry). The
digest is the SHA-256 of, for each file in that order, its path relative to the catalog
folder (POSIX, UTF-8), a NUL byte, its bytes and a NUL byte.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def catalog_files(root: Path, model_id: str, cache_tiers: bool = False) -> list[Path]:
    """The catalog files a run reads, relative to `root`, in the digest's order;
    `cache_tiers`: the scenario prices a decode-side cache (cache_tiers.yaml after
    lines.yaml; left out otherwise, so other runs' digests do not change)."""
    gpus = sorted(p.relative_to(root) for p in (Path(root) / "gpus").glob("*.yaml"))
    model = Path("models") / f"{model_id}.yaml"
    models = [model] if (Path(root) / model).is_file() else []
    cache = [Path("cache_tiers.yaml")] if cache_tiers else []
    ends = [Path("line_ends.yaml")] if (Path(root) / "line_ends.yaml").is_file() else []
    nodes = sorted(p.relative_to(root) for p in (Path(root) / "nodes").glob("*.yaml"))
    return [Path("sources.yaml"), Path("lines.yaml"), *cache, *gpus, *ends, *nodes, *models]


def catalog_digest(root: Path, model_id: str, cache_tiers: bool = False) -> str:
    """SHA-256 (hex) over `catalog_files(root, model_id, cache_tiers)`: paths and bytes."""
    digest = hashlib.sha256()
    for rel in catalog_files(root, model_id, cache_tiers):
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update((Path(root) / rel).read_bytes() + b"\0")
    return digest.hexdigest()
