"""Hit rate joint with context length (#12 item 7): per-bin lengths in a hit-rate `bins`,
against hand arithmetic and the independent case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.workload import workload as wl
from pdd_plan.plan.variants import with_hit_rate_mean
from pdd_plan.report import resolved
from pdd_plan.sim.sampling import draw_requests

# two bins: short prompts (1,000 tokens) mostly miss, long ones (30,000) mostly hit
JOINT_HITS = {
    "kind": "bins",
    "bins": [
        {"low": 0.0, "high": 0.5, "share": 0.3, "input_tokens": {"kind": "fixed", "value": 1000}},
        {"low": 0.5, "high": 1.0, "share": 0.7, "input_tokens": {"kind": "fixed", "value": 30000}},
    ],
}


def _scenario_file(tmp_path, workload_changes: dict, drop=()) -> str:
    data = yaml.safe_load(resolve_scenario_path("default").read_text())
    data["workload"].update(workload_changes)
    for key in drop:
        data["workload"].pop(key, None)
    data["workload"].pop("prefix_hit_rate_alternatives", None)
    path = tmp_path / "joint.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _joint(tmp_path, catalog, hits=JOINT_HITS, drop=("input_tokens",)):
    out = {"kind": "fixed", "value": 100}
    path = _scenario_file(tmp_path, {"prefix_hit_rate": hits, "output_tokens": out}, drop)
    return load_scenario(path, catalog)


def test_two_bin_joint_classes_by_hand(tmp_path, catalog):
    """24 hit points split 12 per bin; each bin's classes carry exactly its share.
    Mean input 0.3 x 1,000 + 0.7 x 30,000 = 21,300; mean hit 0.3 x 0.25 + 0.7 x 0.75 =
    0.6; cached tokens per request E[h x in] = 0.3 x 0.25 x 1,000 + 0.7 x 0.75 x 30,000 =
    15,825, where independence would give 0.6 x 21,300 = 12,780."""
    w = _joint(tmp_path, catalog).workload
    assert w.input_tokens.mean() == pytest.approx(21300)  # the mixture's mean
    c = wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate, (8, 10, 24))
    assert len(c) == 24
    short = c.input_tokens == 1000
    assert c.weight[short].sum() == pytest.approx(0.3) and c.weight.sum() == pytest.approx(1)
    assert np.all(c.weight[short] == pytest.approx(0.3 / 12))
    assert np.all(c.hit_rate[short] < 0.5) and np.all(c.hit_rate[~short] >= 0.5)
    assert c.mean(c.input_tokens) == pytest.approx(21300)
    assert c.mean(c.hit_rate) == pytest.approx(0.6)
    assert c.mean(c.hit_rate * c.input_tokens) == pytest.approx(15825)
    assert c.mean(c.output_tokens) == pytest.approx(100)


def test_per_bin_output_and_fallback(tmp_path, catalog):
    """A bin without input_tokens takes the workload's (fixed 4,000); output per bin:
    0.5 x 50 + 0.5 x 300 = 175."""
    hits = {
        "kind": "bins",
        "bins": [
            {
                "low": 0.0,
                "high": 0.2,
                "share": 0.5,
                "output_tokens": {"kind": "fixed", "value": 50},
            },
            {
                "low": 0.8,
                "high": 1.0,
                "share": 0.5,
                "input_tokens": {"kind": "fixed", "value": 20000},
                "output_tokens": {"kind": "fixed", "value": 300},
            },
        ],
    }
    path = _scenario_file(
        tmp_path,
        {"prefix_hit_rate": hits, "input_tokens": {"kind": "fixed", "value": 4000}},
        drop=("output_tokens",),
    )
    w = load_scenario(path, catalog).workload
    assert w.input_tokens.mean() == pytest.approx(0.5 * 4000 + 0.5 * 20000)
    assert w.output_tokens.mean() == pytest.approx(175)
    c = wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate, (4, 4, 8))
    long = c.input_tokens == 20000
    assert np.all(c.output_tokens[long] == 300) and np.all(c.output_tokens[~long] == 50)
    assert np.all(c.hit_rate[long] >= 0.8) and np.all(c.hit_rate[~long] <= 0.2)


def test_without_per_bin_lengths_the_classes_are_the_product(catalog):
    """Regression property: a hit-rate `bins` without per-bin lengths gives the product of
    the three marginals, and giving every bin the workload's own lengths changes nothing
    but the order of the classes."""
    w = load_scenario(resolve_scenario_path("default"), catalog).workload
    assert not w.prefix_hit_rate.is_joint and w.input_tokens.kind != "mixture"
    res = (4, 5, 12)
    c = wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate, res)
    dists = (w.input_tokens, w.output_tokens, w.prefix_hit_rate)
    tails = (wl.LENGTH_TAIL, wl.LENGTH_TAIL, wl.HIT_TAIL)  # the tails the latencies live in
    (iv, iw), (ov, ow), (hv, hw) = (
        d.discretise(n, tail) for d, n, tail in zip(dists, res, tails, strict=True)
    )
    expected_weight = (iw[:, None, None] * ow[None, :, None] * hw[None, None, :]).ravel()
    assert c.weight == pytest.approx(expected_weight / expected_weight.sum())
    assert c.input_tokens == pytest.approx(np.repeat(np.round(iv), len(ov) * len(hv)))
    n = len(w.prefix_hit_rate.shares)
    same = wl.Bins(
        w.prefix_hit_rate.lows,
        w.prefix_hit_rate.highs,
        w.prefix_hit_rate.shares,
        input_tokens=(w.input_tokens,) * n,
        output_tokens=(w.output_tokens,) * n,
    )
    j = wl.request_classes(w.input_tokens, w.output_tokens, same, res)

    def rows(x):
        cols = (x.input_tokens, x.output_tokens, np.round(x.hit_rate, 12), x.weight)
        return sorted(zip(*cols, strict=True))

    assert [r[:3] for r in rows(j)] == [r[:3] for r in rows(c)]
    assert [r[3] for r in rows(j)] == pytest.approx([r[3] for r in rows(c)])


def test_the_simulator_samples_jointly(tmp_path, catalog):
    """First the bin, then its lengths: every request with hit >= 0.5 has 30,000 tokens,
    every other 1,000, and the sample mean is the mixture's 21,300 (standard error
    28,000 x sqrt(0.21) / sqrt(20,000) ~ 90 tokens; 4 of them allowed)."""
    w = _joint(tmp_path, catalog).workload
    req = draw_requests(w, 1.0, 20_000, np.random.default_rng(7))
    high = req.hit_rate >= 0.5
    assert np.all(req.input_tokens[high] == 30000) and np.all(req.input_tokens[~high] == 1000)
    assert req.input_tokens.mean() == pytest.approx(21300, abs=360)
    assert high.mean() == pytest.approx(0.7, abs=0.015)
    # an alternative mix (independent of the lengths) draws from the mixture's marginal
    alt = draw_requests(w, 1.0, 20_000, np.random.default_rng(8), wl.Fixed(0.5))
    assert alt.input_tokens.mean() == pytest.approx(21300, abs=360)


def test_the_resolved_scenario_reads_back_joint(tmp_path, catalog):
    """`--out`'s scenario.json keeps the per-bin lengths and loads back to the same mean."""
    workload = resolved._workload(_joint(tmp_path, catalog).workload)
    assert "input_tokens" not in workload
    assert workload["prefix_hit_rate"]["bins"][1]["input_tokens"] == {
        "kind": "fixed",
        "value": 30000,
    }
    data = yaml.safe_load(resolve_scenario_path("default").read_text())
    data["workload"] = workload
    path = tmp_path / "back.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    back = load_scenario(path, catalog).workload
    assert back.input_tokens.mean() == pytest.approx(21300)


@pytest.mark.parametrize(
    ("change", "key_path", "expected"),
    [
        (  # a misspelt per-bin key: refused with a did-you-mean
            {"input_tokenz": {"kind": "fixed", "value": 5}},
            "workload.prefix_hit_rate.bins[0].input_tokenz",
            "input_tokens",
        ),
        (  # a per-bin length out of range
            {"input_tokens": {"kind": "fixed", "value": 0}},
            "workload.prefix_hit_rate.bins[0].input_tokens.value",
            ">= 1",
        ),
    ],
)
def test_bad_per_bin_lengths_are_one_line_each(tmp_path, catalog, change, key_path, expected):
    hits = {
        "kind": "bins",
        "bins": [{"low": 0.0, "high": 1.0, "share": 1.0, **change}],
    }
    with pytest.raises(InputError) as err:
        _joint(tmp_path, catalog, hits, drop=())
    text = str(err.value)
    assert key_path in text and expected in text


def test_joint_keys_only_where_they_mean_something(tmp_path, catalog):
    """Per-bin lengths in an alternative mix are refused (alternatives replace the hit rate
    alone); a workload input_tokens that no bin would read is refused too."""
    alt = {"narrow": JOINT_HITS}
    path = _scenario_file(tmp_path, {"prefix_hit_rate": JOINT_HITS})
    data = yaml.safe_load(Path(path).read_text())
    data["workload"]["prefix_hit_rate_alternatives"] = alt
    (tmp_path / "alt.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path / "alt.yaml", catalog)
    assert "prefix_hit_rate_alternatives.narrow.bins[0].input_tokens" in str(err.value)
    assert "workload.input_tokens" in str(err.value)  # every bin has its own


def test_moving_the_hit_mean_keeps_each_bin_with_its_lengths(tmp_path, catalog):
    """Hit mean 0.6 -> 0.8: each miss rate is multiplied by (1 - 0.8) / (1 - 0.6) = 0.5, so
    [0, 0.5) -> [0.5, 0.75) (1,000 tokens) and [0.5, 1] -> [0.75, 1] (30,000 tokens):
    cached tokens per request 0.3 x 0.625 x 1,000 + 0.7 x 0.875 x 30,000 = 18,562.5."""
    s = with_hit_rate_mean(_joint(tmp_path, catalog), 0.8)
    w = s.workload
    assert w.prefix_hit_rate.lows == pytest.approx((0.5, 0.75))
    assert w.prefix_hit_rate.input_tokens[1].value == 30000
    c = wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate)
    assert c.mean(c.hit_rate) == pytest.approx(0.8)
    assert c.mean(c.hit_rate * c.input_tokens) == pytest.approx(18562.5)
