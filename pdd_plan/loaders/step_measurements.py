"""Per-iteration step-time measurements for `pdd-plan calibrate steps`.

Two CSV formats (plain or gzip-compressed), told apart by the header:

- vLLM forward-pass metrics ("FPM", aiconfigurator's `fpm_metrics_phase.csv`): one row
  per scheduler iteration with `ctx_tokens`, `ctx_requests`, `ctx_kv_tokens`,
  `decode_requests`, `mean_decode_kv_tokens` (or `decode_kv_tokens`) and `latency_ms`
  (other columns are ignored). The engine configuration comes from an `index.csv` beside
  the file (columns file, model, gpu, tp, ep, dp, kv_cache_dtype, engine,
  engine_version), else from the command line.
- The plain format: `new_tokens` (prefill tokens computed in the iteration, summed over
  its prompts), `cached_tokens` (KV those prompts already held, summed), `prompts`,
  `decode_batch` (requests emitting one token), `decode_context_tokens` (their mean KV
  context), `latency_ms`; optional per-row `model`, `gpu`, `tp`, `ep`, `dp` (catalog ids
  and sizes; the command line's values where absent). Rows of different configurations
  become separate groups.

The first `skip_rows` rows of each file (of each configuration in a plain file) are
dropped (cold-start iterations of an engine that was not warmed up take seconds). A
malformed file is one line naming file, line and column (exit 2).
"""

from __future__ import annotations

import csv
import hashlib
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.loaders.input_files import read_input_bytes, shown_path, utf8_text
from pdd_plan.loaders.strict import did_you_mean
from pdd_plan.model.compute.step_fit import StepSamples

MAX_FILE_BYTES = 256 * 1024 * 1024
WHAT = "a step-time CSV"
SKIP_ROWS = 3
FPM_COLUMNS = ("ctx_tokens", "ctx_requests", "ctx_kv_tokens", "decode_requests", "latency_ms")
PLAIN_COLUMNS = (
    "new_tokens",
    "cached_tokens",
    "prompts",
    "decode_batch",
    "decode_context_tokens",
    "latency_ms",
)
CONFIG_COLUMNS = ("model", "gpu", "tp", "ep", "dp")


@dataclass(frozen=True)
class Config:
    """Where rows come from: catalog model and GPU ids and the engine's parallelism."""

    model: str
    gpu: str
    tp: int = 1
    ep: int = 1
    dp: int = 1
    kv_dtype: str = "bf16"
    engine: str = ""
    engine_version: str = ""


@dataclass(frozen=True)
class Measured:
    samples: StepSamples
    file: str
    sha256: str  # of the uncompressed CSV
    rows: int
    config: Config
    notes: tuple[str, ...] = field(default=())


def _text(path: Path) -> tuple[str, str]:
    """(the CSV's text, sha256 of its uncompressed bytes); gzip is inflated with a cap."""
    name = shown_path(path)
    raw = read_input_bytes(path, WHAT, MAX_FILE_BYTES)
    if raw[:2] == b"\x1f\x8b":
        inflate = zlib.decompressobj(wbits=31)
        try:
            raw = inflate.decompress(raw, MAX_FILE_BYTES + 1)
        except zlib.error as exc:
            raise InputError.single(name, "", f"a broken gzip stream ({exc})", WHAT) from None
        if not inflate.eof and len(raw) <= MAX_FILE_BYTES:
            raise InputError.single(name, "", "a truncated gzip stream", WHAT)
        if len(raw) > MAX_FILE_BYTES:
            raise InputError.single(name, "", "more than 256 MiB uncompressed", WHAT)
    text = utf8_text(raw, name, WHAT, f"{WHAT} with a header and rows")
    return text, hashlib.sha256(raw).hexdigest()


def _columns(name: str, header: list[str]) -> str:
    """ "fpm" or "plain" from the header; a header of neither is one line."""
    have = {h.strip() for h in header}
    for kind, needed in (("fpm", FPM_COLUMNS), ("plain", PLAIN_COLUMNS)):
        if needed[0] in have:
            missing = [c for c in needed if c not in have]
            if kind == "fpm" and not {"mean_decode_kv_tokens", "decode_kv_tokens"} & have:
                missing.append("mean_decode_kv_tokens")
            if missing:
                raise InputError.single(
                    name, f"line 1, column {missing[0]}", "no such column", f"the {kind} columns"
                )
            return kind
    raise InputError.single(
        name,
        "line 1",
        f"the header {','.join(header[:6])!r}",
        f"the FPM columns ({', '.join(FPM_COLUMNS)}) "
        f"or the plain ones ({', '.join(PLAIN_COLUMNS)})",
    )


# The largest cell of one engine iteration: tokens, requests or milliseconds. 1e9 is past
# any (100 requests of 10 M tokens of context; 1e9 ms = 11.6 days); 1e308 overflowed the
# FLOP and byte products of the fit into a traceback.
MAX_CELL = 1e9


def _number(name: str, line: int, column: str, cell: str) -> float:
    try:
        value = float(cell)
    except (TypeError, ValueError):
        value = float("nan")
    if not np.isfinite(value) or not 0 <= value <= MAX_CELL:
        raise InputError.single(
            name, f"line {line}, column {column}", repr(cell), f"a number from 0 to {MAX_CELL:g}"
        )
    return value


def csv_records(name: str, reader) -> Iterator[list]:
    """The records of a csv reader (or DictReader); a record csv cannot read (a field over
    its 131,072-character limit, a NUL byte) is one line naming the file and line."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            line = getattr(reader, "reader", reader).line_num  # a DictReader's is one behind
            raise InputError.single(
                name, f"line {line}", f"a row CSV cannot read ({exc})",
                "CSV cells of at most 131,072 characters",
            ) from None  # fmt: skip
        yield record


def _rows(name: str, text: str) -> tuple[str, list[tuple[int, dict]]]:
    reader = csv.reader(io.StringIO(text))
    header = next(csv_records(name, reader), None) or []
    kind = _columns(name, header)
    header = [h.strip() for h in header]
    rows = []
    for record in csv_records(name, reader):
        if not record or not any(c.strip() for c in record):
            continue
        line = reader.line_num
        if len(record) != len(header):
            raise InputError.single(
                name, f"line {line}", f"{len(record)} cells", f"{len(header)} as in the header"
            )
        rows.append((line, dict(zip(header, record, strict=True))))
    if not rows:
        raise InputError.single(name, "", "a header and no rows", f"{WHAT} with rows")
    return kind, rows


def _fpm_arrays(name: str, rows) -> dict:
    out = {k: [] for k in ("decode", "context", "prompts", "new", "cached", "latency", "line")}
    for line, r in rows:

        def num(column, line=line, r=r):
            return _number(name, line, column, r.get(column))

        decode = num("decode_requests")
        if "mean_decode_kv_tokens" in r:
            context = num("mean_decode_kv_tokens")
        else:
            context = num("decode_kv_tokens") / max(decode, 1.0)
        out["decode"].append(decode)
        out["context"].append(context)
        out["prompts"].append(num("ctx_requests"))
        out["new"].append(num("ctx_tokens"))
        out["cached"].append(num("ctx_kv_tokens"))
        out["latency"].append(num("latency_ms") / 1e3)
        out["line"].append(line)
    return out


def _plain_arrays(name: str, rows) -> dict:
    out = {k: [] for k in ("decode", "context", "prompts", "new", "cached", "latency", "line")}
    columns = dict(
        decode="decode_batch",
        context="decode_context_tokens",
        prompts="prompts",
        new="new_tokens",
        cached="cached_tokens",
    )
    for line, r in rows:
        for key, column in columns.items():
            out[key].append(_number(name, line, column, r[column]))
        out["latency"].append(_number(name, line, "latency_ms", r["latency_ms"]) / 1e3)
        out["line"].append(line)
    return out


def _samples(label: str, config: Config, arrays: dict, skip_rows: int) -> StepSamples:
    a = {k: np.asarray(v[skip_rows:], dtype=float) for k, v in arrays.items() if k != "line"}
    return StepSamples(
        label, config.model, config.gpu, config.tp, config.ep, config.dp, config.kv_dtype,
        a["decode"], a["context"], a["prompts"], a["new"], a["cached"], a["latency"],
    )  # fmt: skip


def _check_rows(name: str, arrays: dict, skip_rows: int) -> None:
    latency = np.asarray(arrays["latency"][skip_rows:])
    if latency.size == 0:
        raise InputError.single(
            name, "", f"{len(arrays['latency'])} rows", f"more than the {skip_rows} warm-up rows"
        )
    if np.any(latency <= 0):
        line = arrays["line"][skip_rows + int(np.argmax(latency <= 0))]
        raise InputError.single(name, f"line {line}, column latency_ms", "0", "a time > 0")


def read_file(path: Path | str, config_for, skip_rows: int = SKIP_ROWS) -> list[Measured]:
    """The groups of one file; `config_for(file, row)` gives the Config of an FPM file
    (row None) or of a plain row (its cells)."""
    path = Path(path)
    name = shown_path(path)
    text, sha = _text(path)
    kind, rows = _rows(name, text)
    if kind == "fpm":
        arrays = _fpm_arrays(name, rows)
        _check_rows(name, arrays, skip_rows)
        config = config_for(path, None)
        return [Measured(_samples(path.name, config, arrays, skip_rows), path.name, sha,
                         len(rows), config)]  # fmt: skip
    groups: dict[Config, list] = {}
    for line, row in rows:
        groups.setdefault(config_for(path, (line, row)), []).append((line, row))
    out = []
    for config, members in groups.items():
        arrays = _plain_arrays(name, members)
        _check_rows(name, arrays, skip_rows)
        label = f"{path.name}:{config.model}/{config.gpu}/tp{config.tp}ep{config.ep}dp{config.dp}"
        samples = _samples(label, config, arrays, skip_rows)
        out.append(Measured(samples, path.name, sha, len(members), config))
    return out


def catalog_model_id(name: str, catalog) -> str | None:
    """A catalog model id from an id or a Hugging Face id ("Qwen/Qwen3-32B" -> the model
    whose `name` is Qwen3-32B, case aside); None when the catalog has no such model."""
    if name in catalog.model_ids():
        return name
    tail = name.rsplit("/", 1)[-1].lower()
    for model_id in catalog.model_ids():
        if str(catalog.model_data(model_id).get("name", "")).lower() == tail:
            return model_id
    return None


def catalog_gpu_id(name: str, catalog) -> str | None:
    """A catalog GPU id, allowing a form factor suffix the catalog leaves off
    ("b300_sxm" -> b300, as aiconfigurator names its systems)."""
    if name in catalog.gpus:
        return name
    for suffix in ("_sxm", "_pcie", "_nvl"):
        if name.endswith(suffix) and name[: -len(suffix)] in catalog.gpus:
            return name[: -len(suffix)]
    return None


def _index_beside(path: Path) -> dict[str, dict]:
    index = path.parent / "index.csv"
    if path.name == "index.csv" or not index.is_file():
        return {}
    text, _ = _text(index)
    reader = csv.DictReader(io.StringIO(text))
    return {r.get("file", ""): r for r in csv_records(shown_path(index), reader)}


class ConfigResolver:
    """The Config of each file or row: index.csv beside an FPM file, a plain row's own
    cells, else the command line's `options` (model, gpu, tp, ep, dp, kv_dtype)."""

    def __init__(self, catalog, options: dict):
        self.catalog, self.options = catalog, options
        self._indexes: dict[Path, dict] = {}

    def __call__(self, path: Path, row) -> Config:
        name = shown_path(path)
        if row is None:
            index = self._indexes.setdefault(path.parent, _index_beside(path))
            entry = index.get(path.name)
            if entry is not None:
                return self._config(str(path.parent / "index.csv"), f"file {path.name}", entry)
            return self._config(name, "command line", {})
        line, cells = row
        return self._config(
            name, f"line {line}", {k: cells[k] for k in CONFIG_COLUMNS if k in cells}
        )

    def _config(self, where: str, at: str, cells: dict) -> Config:
        opt = self.options
        model = cells.get("model") or opt.get("model")
        gpu = cells.get("gpu") or opt.get("gpu")
        if not model or not gpu:
            missing = "model" if not model else "gpu"
            raise InputError.single(
                where,
                f"{at}, {missing}",
                "nothing",
                f"the {missing} (--{missing}, or an index.csv beside the file)",
            )
        model_id = catalog_model_id(model, self.catalog)
        if model_id is None:
            raise InputError.single(
                where, f"{at}, model", repr(model), "a catalog model id or name",
                "import it with `pdd-plan model import CONFIG.json`, or give --model",
            )  # fmt: skip
        gpu_id = catalog_gpu_id(gpu, self.catalog)
        if gpu_id is None:
            hint = did_you_mean(gpu, self.catalog.gpus)
            raise InputError.single(where, f"{at}, gpu", repr(gpu), "a catalog GPU id", hint)
        sizes = {}
        for key in ("tp", "ep", "dp"):
            cell = cells.get(key) or opt.get(key) or 1
            try:
                sizes[key] = int(cell)
            except (TypeError, ValueError):
                sizes[key] = 0
            if not 1 <= sizes[key] <= 100_000:
                raise InputError.single(where, f"{at}, {key}", repr(cell), "a whole number >= 1")
        kv = cells.get("kv_cache_dtype") or opt.get("kv_dtype") or "bf16"
        kv = "bf16" if kv == "auto" else kv
        return Config(
            model_id, gpu_id, sizes["tp"], sizes["ep"], sizes["dp"], kv,
            cells.get("engine", ""), cells.get("engine_version", ""),
        )  # fmt: skip
