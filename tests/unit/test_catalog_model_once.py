"""Catalog.model reads a model's file once per catalog: a report asks for the same model
dozens of times. The answer must still follow the id asked for, and an error must still be
raised every time for an id the catalog lacks."""

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog


def test_a_model_is_parsed_once_and_shared(monkeypatch):
    catalog = Catalog()
    ids = catalog.model_ids()
    reads = []
    original = catalog.model_data
    monkeypatch.setattr(catalog, "model_data", lambda m: reads.append(m) or original(m))
    first = catalog.model(ids[0])
    assert catalog.model(ids[0]) is first
    assert reads == [ids[0]]
    other = catalog.model(ids[1])
    assert other.id == ids[1] and other is not first
    assert reads == [ids[0], ids[1]]


def test_a_fresh_catalog_reads_again():
    ids = Catalog().model_ids()
    assert Catalog().model(ids[0]) is not Catalog().model(ids[0])


def test_an_unknown_model_is_refused_every_time():
    catalog = Catalog()
    for _ in range(2):
        with pytest.raises(InputError):
            catalog.model("no_such_model")
