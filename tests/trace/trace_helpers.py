"""Small hand-made traces written by the tests."""

from __future__ import annotations

import json
from pathlib import Path


def write_mooncake(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def row(timestamp_ms: float, input_length: int, hash_ids: list, output_length: int = 10) -> dict:
    return {
        "timestamp": timestamp_ms,
        "input_length": input_length,
        "output_length": output_length,
        "hash_ids": hash_ids,
    }
