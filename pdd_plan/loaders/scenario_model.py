"""Which model a scenario plans for: `model:` (a catalog id) or `model_file:` (a model
entry file, e.g. what `pdd-plan model import -o` wrote, relative to the scenario file).

Exactly one of the two: a scenario naming both would leave a reader guessing which one
the plan was sized for.
"""

from __future__ import annotations

from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.input_files import path_exists
from pdd_plan.loaders.strict import Node

MODEL_FILE_TEXT = "a path to a model entry file (relative to the scenario file)"


def scenario_model(f: dict[str, Node], catalog: Catalog, scenario_path: Path) -> tuple:
    """(model id or None, the model file's path or "")."""
    has_model, has_file = not f["model"].is_missing, not f["model_file"].is_missing
    if has_model and has_file:
        f["model_file"].fail("no model_file beside model (one of the two names the model)")
        return None, ""
    if not has_file:
        if not has_model:
            f["model"].problems.add(
                "model", "nothing", "this key (it is required)", "or model_file: a model file"
            )
            return None, ""
        return f["model"].reference(catalog.model_ids(), "model"), ""
    relative = f["model_file"].string(required=True, expected=MODEL_FILE_TEXT)
    if relative is None:
        return None, ""
    file = Path(scenario_path).parent / Path(relative).expanduser()
    if not path_exists(file) or file.is_dir():
        f["model_file"].fail(f"{MODEL_FILE_TEXT}: {file} is not a file")
        return None, ""
    spec = catalog.model_at(file)  # its own problems are named on its own keys
    return spec.id, str(file)
