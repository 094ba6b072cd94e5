"""A serving-benchmark file, whatever its format, read into `ServingRun`s.

The format is told by the content (loaders/serving_results.py lists them): a CSV, one
JSON object, or JSONL lines; each object is dispatched to its reader (vLLM and SGLang in
serving_results.py, genai-perf, aiperf and GuideLLM in serving_exports.py). This module
sits above both readers so that neither imports the other.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders import serving_exports as more
from pdd_plan.loaders.input_files import read_input_bytes, shown_path, utf8_text
from pdd_plan.loaders.serving_results import (
    MAX_FILE_BYTES,
    WHAT,
    ServingFile,
    _bench_serve_run,
    _csv_runs,
    _Fields,
)
from pdd_plan.loaders.step_measurements import Config, ConfigResolver


def _json_objects(name: str, text: str) -> list[tuple[int, object]]:
    """The file's JSON object, or its JSONL lines (line number, value)."""
    try:
        return [(1, json.loads(text))]
    except (json.JSONDecodeError, RecursionError):
        pass
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((number, json.loads(line)))
            except (json.JSONDecodeError, RecursionError) as exc:
                found = f"text that is not JSON ({exc.msg if hasattr(exc, 'msg') else exc})"
                raise InputError.single(name, f"line {number}", found, WHAT) from None
    return out


def _kind(name: str, obj, where: str) -> str:
    if not isinstance(obj, dict):
        raise InputError.single(name, where, type(obj).__name__, "a JSON object of one run")
    if isinstance(obj.get("benchmarks"), list):
        return "guidellm"
    if "time_to_first_token" in obj or "inter_token_latency" in obj:
        config = obj.get("input_config")  # aiperf nests it: endpoint, loadgen, input
        aiperf = isinstance(config, dict) and ("loadgen" in config or "endpoint" in config)
        return "aiperf" if aiperf else "genai-perf"
    if any(k.endswith(("_ttft_ms", "_tpot_ms")) for k in obj):
        return (
            "sglang"
            if "random_input_len" in obj or "sglang" in str(obj.get("backend"))
            else ("vllm")
        )
    raise InputError.single(
        name,
        where,
        "no TTFT or TPOT keys",
        "a vLLM, SGLang, genai-perf, aiperf or GuideLLM result object",
    )


def _read_text(path: Path | str) -> tuple[str, str]:
    """(the file's text, sha256 of its bytes); binary, non-UTF-8 or empty is one line."""
    name = shown_path(path)
    raw = read_input_bytes(path, WHAT, MAX_FILE_BYTES)
    return utf8_text(raw, name, WHAT), hashlib.sha256(raw).hexdigest()


def _resolver(catalog, options: dict):
    """The Config of a run: the command line's model and GPU win over the file's (a
    result names the model as the server was started, often a local path)."""
    resolve = ConfigResolver(catalog, options)._config  # noqa: SLF001  (as calibrate steps)

    def config(name: str, at: str, cells: dict) -> Config:
        cells = {k: v for k, v in cells.items() if v not in (None, "") and not options.get(k)}
        for key in ("model", "gpu"):
            if key not in cells and not options.get(key):
                raise InputError.single(
                    name, f"{at}, {key}", "nothing", f"the {key} (--{key}, or the file's own)"
                )
        return resolve(name, at, {k: str(v) for k, v in cells.items()})

    return config


def read_serving_file(path: Path | str, options: dict, catalog) -> ServingFile:
    """Every run of one file (`options`: the command line's model, gpu, tp, ep, dp,
    kv_dtype, used where the file does not say)."""
    name = shown_path(path)
    text, sha = _read_text(path)
    resolve = _resolver(catalog, options)
    first = text.lstrip()[:1]
    if first not in ("{", "["):
        return ServingFile(name, sha, "csv", tuple(_csv_runs(name, text, resolve)))
    objects = _json_objects(name, text)
    runs, kinds = [], set()
    for number, obj in objects:
        where = f"line {number}" if len(objects) > 1 else ""
        kind = _kind(name, obj, where or "top level")
        kinds.add(kind)
        f = _Fields(name, where, obj)
        if kind == "guidellm":
            runs.extend(more.guidellm_runs(f, resolve))
        elif kind == "aiperf":
            runs.append(more.aiperf_run(f, resolve))
        elif kind == "genai-perf":
            runs.append(more.genai_perf_run(f, resolve))
        else:
            runs.append(_bench_serve_run(f, resolve, where or "run 1"))
    return ServingFile(name, sha, "+".join(sorted(kinds)), tuple(runs))
