"""The catalog's order hardware: `nodes/*.yaml` (one server configuration per GPU type) and
`line_ends.yaml` (the port and optic each end of a line tier needs), strictly, every
number a `{value, source, basis, note}` figure as in the GPU files (loaders/catalog.py)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from pdd_plan.loaders.catalog_figures import sourced
from pdd_plan.loaders.input_files import path_exists
from pdd_plan.loaders.strict import Node, Problems, did_you_mean, load_yaml
from pdd_plan.model.orders import LineEnd, NodeConfig

# field -> (integer, required non-null, maximum): far past any server sold
NODE_FIGURES = {
    "gpus_per_node": (True, True, 1024),
    "cpu_count": (True, True, 64),
    "cpu_cores_each": (True, True, 1024),
    "host_memory_tb": (False, True, 1024),
    "nic_count": (True, True, 256),
    "nic_gbit_per_s": (False, True, 1e5),
    "nvme_count": (True, True, 1024),
    "nvme_tb_each": (False, True, 1e4),
    "max_power_kw": (False, True, 1e4),
    "rack_units": (True, True, 64),
    "purchase_usd_per_node": (False, False, 1e8),
}
NODE_TEXTS = ("cpu_model", "nic_model")


def load_node(path: Path, sources, gpus) -> NodeConfig:
    """One `nodes/<id>.yaml`; its GPU must exist and have as many GPUs per node."""
    problems = Problems(str(path))
    root = Node(load_yaml(path, "a node catalog entry"), "", problems)
    f = root.mapping(required=("id", "name", "gpu", "spec_source", *NODE_TEXTS, *NODE_FIGURES),
                     optional=("note",))  # fmt: skip
    if f is None:
        problems.raise_if_any()
    node_id = f["id"].identifier(required=True)
    if node_id and node_id != path.stem:
        f["id"].fail(f"the file's stem {path.stem!r}")
    gpu = f["gpu"].reference(gpus, "GPU")
    spec_source = f["spec_source"].string(required=True)
    if spec_source is not None and spec_source not in sources:
        f["spec_source"].fail("a key of sources.yaml", did_you_mean(spec_source, sources))
    figures = {key: sourced(f[key], sources, required, integer, maximum=high)
               for key, (integer, required, high) in NODE_FIGURES.items()}  # fmt: skip
    texts = {key: f[key].string(required=True) for key in ("name", *NODE_TEXTS)}
    note = f["note"].string(default="")
    per_node = figures["gpus_per_node"]
    if gpu and per_node and per_node.value and per_node.value != gpus[gpu].gpus_per_node:
        f["gpus_per_node"].fail(f"{gpus[gpu].gpus_per_node}, the catalog's gpus_per_node of {gpu}")
    problems.raise_if_any()
    values = {key: fig.value for key, fig in figures.items()}
    for key, (integer, _, _) in NODE_FIGURES.items():
        if integer:
            values[key] = int(values[key])
    return NodeConfig(node_id, texts["name"], gpu, **values, **{k: texts[k] for k in NODE_TEXTS},
                      note=note or "", spec_source=spec_source, provenance=figures)  # fmt: skip


def load_nodes(folders: list[Path], sources, gpus) -> dict[str, NodeConfig]:
    """GPU id -> its node configuration, the later folder's (an overlay) over the earlier;
    two configurations for one GPU type in one folder are refused (which would be ordered?)."""
    by_gpu: dict[str, NodeConfig] = {}
    for folder in folders:
        mine: dict[str, Path] = {}
        for path in sorted((folder / "nodes").glob("*.yaml")):
            node = load_node(path, sources, gpus)
            if node.gpu in mine:
                problems = Problems(str(path))
                problems.add(
                    "gpu",
                    repr(node.gpu),
                    f"one node configuration per GPU type ({mine[node.gpu].name} has it)",
                )
                problems.raise_if_any()
            mine[node.gpu] = path
            by_gpu[node.gpu] = node
    return by_gpu


def load_line_ends(path: Path, sources, lines) -> dict[str, LineEnd]:
    """`line_ends.yaml`: tier id -> what each end of one of its lines needs."""
    problems = Problems(str(path))
    root = Node(load_yaml(path, "the line-end catalog"), "", problems)
    f = root.mapping(required=("ends",), optional=("notes",))
    out: dict[str, LineEnd] = {}
    for item in (f["ends"].items(min_items=1) if f else None) or []:
        e = item.mapping(required=("tier", "port", "optic", "optic_usd_each"))
        if e is None:
            continue
        tier = e["tier"].reference(lines, "line tier")
        if tier in out:
            e["tier"].fail("a tier not listed already")
        price = sourced(e["optic_usd_each"], sources, False, allow_zero=True, maximum=1e6)
        port, optic = e["port"].string(required=True), e["optic"].string(required=True)
        if None not in (tier, price, port, optic):
            out[tier] = LineEnd(tier, port, optic, price.value, {"optic_usd_each": price})
    problems.raise_if_any()
    return out


class OrderCatalog:
    """A catalog's order hardware, read on first use, the overlay's over the shipped."""

    def __init__(self, catalog):
        self._catalog = catalog

    @cached_property
    def nodes(self) -> dict[str, NodeConfig]:
        """GPU id -> its node configuration (none where the catalog has no node for it)."""
        c = self._catalog
        return load_nodes(c._folders(), c.sources, c.gpus)

    @cached_property
    def line_ends(self) -> dict[str, LineEnd]:
        """Line tier id -> what each end of one of its lines needs."""
        c, out = self._catalog, {}
        for folder in c._folders():
            if path_exists(folder / "line_ends.yaml"):
                out.update(load_line_ends(folder / "line_ends.yaml", c.sources, c.lines))
        return out
