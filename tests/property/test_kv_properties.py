"""Properties of the KV arithmetic that hold for every catalog model."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdd_plan.loaders.catalog import Catalog

MODELS = Catalog().model_ids()


@pytest.mark.parametrize("model_id", MODELS)
@settings(max_examples=30, deadline=None)
@given(a=st.integers(0, 2_000_000), b=st.integers(0, 2_000_000))
def test_kv_bytes_never_shrink_with_length(model_id, a, b):
    model = Catalog().model(model_id)
    short, long = sorted((a, b))
    assert model.kv_bytes(short) <= model.kv_bytes(long)


@pytest.mark.parametrize("model_id", MODELS)
def test_long_context_slope_is_bytes_per_token(catalog, model_id):
    """Far beyond every window, one more block of tokens costs exactly the growing part."""
    model = catalog.model(model_id)
    step = 1024 * 128  # a multiple of every compression ratio
    lengths = np.array([4 * step, 5 * step])
    slope = np.diff(model.kv_bytes(lengths))[0] / step
    assert slope == pytest.approx(model.kv_bytes_per_token())


@pytest.mark.parametrize("model_id", MODELS)
def test_fp8_kv_is_no_larger_than_bf16(catalog, model_id):
    model = catalog.model(model_id)
    assert model.kv_bytes(50_000, "fp8") <= model.kv_bytes(50_000, "bf16")
