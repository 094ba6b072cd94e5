"""The line as engines use it (issue #12 item 5): KV streamed during prefill, transfers
striped over pooled connections, connections held until the handoff. Each figure is worked
by hand below, then the closed form (`wan_transfer`) and the simulator (`simulate_wan`) are
held to it."""

import dataclasses
import math

import numpy as np
import pytest

from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model import routing as rt
from pdd_plan.model.evaluate import prepare, snapshot
from pdd_plan.model.network.network import WanLink, send_time_s, wan_transfer
from pdd_plan.sim.run import SimConfig, simulate
from pdd_plan.sim.wan import simulate_wan

RTT_S = 0.025
CAP_BITS_PER_S = 100e6
# a 10 Gbit/s line carries ~99 flows at the cap: one or a few flows never share it
LINE_BITS_PER_S = 10e9
LOW_RATE_PER_S = 0.01  # the pool and the line are idle: no waiting, no sharing


def flat_link(pool: int = 8, stripes: int = 1, slow_start: bool = False) -> WanLink:
    return WanLink(
        LINE_BITS_PER_S, RTT_S, CAP_BITS_PER_S, pool, 9000, 10, slow_start, stripes
    )  # fmt: skip


# ---------------------------------------------------------------------------- streaming

# 50 MB at 100 Mbit/s: 4 s to send; 5 MB: 0.4 s. Prefill 1.5 s over 10 layers.
BIG_BYTES, SMALL_BYTES, PREFILL_S, LAYERS = 50e6, 5e6, 1.5, 10


def test_streaming_by_hand_closed_form():
    """Big: sending (4 s) outlasts prefill (1.5 s): after prefill end 4 - 1.5 + RTT = 2.525 s
    instead of 4.025 s, less by exactly the prefill; the connection is held 4.025 s either
    way. Small: prefill outlasts sending (0.4 s), so what is left is the last layer, 0.4 / 10
    = 0.04 s, + RTT = 0.065 s; the connection is held from prefill start, 1.5 + 0.065 =
    1.565 s instead of 0.425 s."""
    link = flat_link()
    x, w = np.array([BIG_BYTES, SMALL_BYTES]), np.array([0.5, 0.5])
    plain = wan_transfer(link, x, w, LOW_RATE_PER_S)
    streamed = wan_transfer(
        link, x, w, LOW_RATE_PER_S, prefill_s=np.full(2, PREFILL_S), num_layers=LAYERS
    )
    assert plain.transfer_s == pytest.approx([4.025, 0.425], rel=1e-9)
    assert streamed.transfer_s == pytest.approx([2.525, 0.065], rel=1e-9)
    assert plain.transfer_s[0] - streamed.transfer_s[0] == pytest.approx(PREFILL_S, rel=1e-9)
    assert streamed.hold_s == pytest.approx([4.025, 1.565], rel=1e-9)
    # Little: busy connections = rate x mean hold; streaming raises it
    pool = link.connection_pool_size
    assert plain.pool_utilization_frac == pytest.approx(0.01 * (4.025 + 0.425) / 2 / pool)
    assert streamed.pool_utilization_frac == pytest.approx(0.01 * (4.025 + 1.565) / 2 / pool)


def test_streaming_by_hand_simulator():
    """The same two transfers, each alone on the line, prefill from 0 to 1.5 s: the big one
    is acknowledged at 4.025 s, the small one at 1.5 + 0.04 + 0.025 = 1.565 s; each took its
    connection at prefill start."""
    link = flat_link()
    bits = np.array([BIG_BYTES, SMALL_BYTES]) * 8
    last_layer_s = bits / LAYERS / CAP_BITS_PER_S
    start = np.array([0.0, 100.0])  # far apart: never on the line together
    run = simulate_wan(link, start, bits, start + PREFILL_S + last_layer_s)
    assert run.connect_s == pytest.approx(start)
    assert run.done_s - start == pytest.approx([4.025, 1.565], rel=1e-9)
    assert run.release_s == pytest.approx(run.done_s)


def _paper(catalog, arch: str, **wan):
    scenario = load_scenario(resolve_scenario_path("pdd-paper"), catalog)
    scenario = dataclasses.replace(scenario, wan=dataclasses.replace(scenario.wan, **wan))
    plan = load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", scenario, catalog)
    model = catalog.model_for(scenario)
    return prepare(scenario, plan, model, catalog.gpus, catalog.lines, (1, 12, 24))


def test_direct_ttft_falls_by_the_overlapped_part(catalog):
    """CDC-PD on the paper's workload at 2 req/s: every class's TTFT delay (prefill service
    + what shows of the transfer + MD steps) falls by min(prefill S, send - last layer),
    send = T - RTT the time the unstreamed transfer spends sending and last layer = bits /
    (layers x the flow's rate): exactly S where the send outlasts the prefill."""
    plain, streamed = (
        _paper(catalog, "cdc_pd"),
        _paper(catalog, "cdc_pd", stream_during_prefill=True),
    )
    rate = 2.0
    a, b = snapshot(plain, rate), snapshot(streamed, rate)
    c = plain.classes
    service = np.asarray(plain.prefill.instance.prefill_time_s(c.uncached_tokens, c.cached_tokens))
    x = plain.routes.wan_payload_bytes
    unstreamed = wan_transfer(plain.link, x, c.weight, rate)
    send_s = unstreamed.transfer_s - plain.link.rtt_s
    last_layer_s = x * 8 / (plain.model.num_layers * unstreamed.flow_rate_bits_per_s)
    overlap = np.minimum(service, send_s - last_layer_s)
    drop = a.ttft_groups[0].delays_s - b.ttft_groups[0].delays_s
    assert drop == pytest.approx(overlap, rel=1e-6, abs=1e-9)
    long = send_s - last_layer_s > service
    assert long.any() and drop[long] == pytest.approx(service[long], rel=1e-6)
    assert b.ttft_s["p50"] < a.ttft_s["p50"] and b.ttft_s["p99"] < a.ttft_s["p99"]


def test_simulated_streamed_transfers_end_where_the_hand_puts_them(catalog):
    """A short simulated run at 0.5 req/s (a few flows on a line that carries 165 at the
    cap): each request's transfer ends at max(prefill start + send, prefill end + last
    layer) + RTT, send from the single-flow primitive at the connection's rate."""
    setup = _paper(catalog, "cdc_pd", stream_during_prefill=True)
    run = simulate(setup, SimConfig(requests=60, seed=3, rate_per_s=0.5))
    tr, link = run.trace, setup.link
    bits = tr.wan_payload_bytes * 8
    send_s = send_time_s(bits, link.flow_cap_bits_per_s, link)
    last_layer_s = bits / (setup.model.num_layers * link.flow_cap_bits_per_s)
    expected = np.maximum(tr.prefill.start_s + send_s, tr.prefill.end_s + last_layer_s) + link.rtt_s
    assert tr.wan.done_s == pytest.approx(expected, rel=1e-9)
    assert tr.wan.connect_s == pytest.approx(tr.prefill.start_s)


# ---------------------------------------------------------------------------- striping

TRANSFER_BYTES = 100e6  # 800 Mbit


def _by_hand_slow_start_send_s(bits: float) -> float:
    """RFC 6928 IW10 of 8,948-byte segments doubling each RTT up to the window c x RTT
    (fluid), the rest at c."""
    b0 = 10 * 8948 * 8  # 715,840 bits
    window = CAP_BITS_PER_S * RTT_S  # 2.5 Mbit
    ramp_bits = (window - b0) / math.log(2)  # 2.574 Mbit
    ramp_s = RTT_S * math.log2(window / b0)  # 45.1 ms
    return ramp_s + (bits - ramp_bits) / CAP_BITS_PER_S


def test_striping_by_hand():
    """800 Mbit on one connection: ~8.02 s; on 4 stripes of 200 Mbit each with its own slow
    start: ~2.02 s, holding 4 connections (pool occupancy 4 x the hold)."""
    one = _by_hand_slow_start_send_s(800e6) + RTT_S
    four = _by_hand_slow_start_send_s(200e6) + RTT_S
    assert one == pytest.approx(8.044, abs=1e-3) and four == pytest.approx(2.044, abs=1e-3)
    x, w = np.array([TRANSFER_BYTES]), np.array([1.0])
    r1 = wan_transfer(flat_link(slow_start=True), x, w, LOW_RATE_PER_S)
    r4 = wan_transfer(flat_link(stripes=4, slow_start=True), x, w, LOW_RATE_PER_S)
    assert r1.transfer_s[0] == pytest.approx(one, rel=1e-9)
    assert r4.transfer_s[0] == pytest.approx(four, rel=1e-9)
    assert r4.pool_utilization_frac == pytest.approx(LOW_RATE_PER_S * 4 * four / 8, rel=1e-9)
    assert r4.mean_load_bits_per_s == pytest.approx(r1.mean_load_bits_per_s)  # same bits
    # the simulator: the same end; a second transfer on a pool of 4 waits for the first's
    # four connections
    link = flat_link(pool=4, stripes=4, slow_start=True)
    run = simulate_wan(link, np.array([0.0, 0.5]), np.full(2, TRANSFER_BYTES * 8))
    assert run.done_s[0] == pytest.approx(four, rel=1e-9)
    assert run.connect_s[1] == pytest.approx(four, rel=1e-9)
    assert run.done_s[1] == pytest.approx(2 * four, rel=1e-9)


def test_stripes_beyond_the_pool_are_refused():
    with pytest.raises(ValueError, match="stripes_per_transfer"):
        flat_link(pool=4, stripes=5)


# ---------------------------------------------------------------------------- pool hold

HANDOFF_S = 0.8


def test_pool_hold_until_handoff_by_little():
    """30 % of requests relayed, each holding its connection 0.8 s past its transfer:
    occupancy = rate x (E[transfer] + 0.3 x 0.8) / pool (Little)."""
    link = flat_link(slow_start=False)
    x, w = np.array([BIG_BYTES, SMALL_BYTES]), np.array([0.3, 0.7])
    rate = 1.0
    r = wan_transfer(link, x, w, rate, extra_hold_s=np.array([HANDOFF_S, 0.0]))
    mean_transfer = 0.3 * 4.025 + 0.7 * 0.425
    assert r.pool_utilization_frac == pytest.approx(
        rate * (mean_transfer + 0.3 * HANDOFF_S) / link.connection_pool_size, rel=1e-9
    )
    assert r.transfer_s == pytest.approx([4.025, 0.425], rel=1e-9)  # latency unchanged


def test_pool_hold_until_handoff_simulator():
    """One connection: the second transfer takes it only when the first's handoff ends."""
    link = flat_link(pool=1)
    bits = np.full(2, SMALL_BYTES * 8)
    ready = np.array([0.0, 0.1])
    run = simulate_wan(link, ready, bits, extra_hold_s=np.array([HANDOFF_S, 0.0]))
    assert run.done_s[0] == pytest.approx(0.425)
    assert run.release_s[0] == pytest.approx(0.425 + HANDOFF_S)
    assert run.connect_s[1] == pytest.approx(0.425 + HANDOFF_S)


def test_handoff_end_adds_the_relayed_handoffs_to_the_pool(catalog):
    """PDD on the paper's workload at 10 req/s, threshold 0.95: holding through the handoff
    adds rate x sum over relayed classes of weight x kept x handoff to the busy connections
    (the handoff from the decode side), and moves no latency of the transfer itself."""
    plain = _paper(catalog, "pdd")
    held = _paper(catalog, "pdd", pool_hold="handoff_end")
    rate = 10.0
    a, b = snapshot(plain, rate), snapshot(held, rate)
    relay = plain.routes.path == rt.RELAY
    assert relay.any()
    handoff = b.handoff_s
    mean_handoff = sum(handoff.values())  # the parts' means: their sum is the mean handoff
    c = plain.classes
    kept = 1.0 - b.relay_overflow_frac
    added = rate * float(c.weight[relay].sum()) * kept * mean_handoff
    pool = plain.link.connection_pool_size
    assert (b.wan_pool_utilization_frac - a.wan_pool_utilization_frac) * pool == pytest.approx(
        added, rel=0.02
    )
    assert b.wan_transfer_s["p50"] == pytest.approx(a.wan_transfer_s["p50"], rel=1e-3)


def test_handoff_end_simulated_pool_is_busier(catalog):
    """A short simulated PDD run: with connections held through the handoff each relayed
    request kept by RLD holds its connection from its transfer's end until MD's first token
    (RTT + the engine's 0.24 s + slot wait + boundary + extend step, as simulated), so the
    connection-seconds grow by exactly the sum of those handoffs (the 256-connection pool
    never makes anyone wait here), and the measured occupancy rises."""
    from pdd_plan.sim.measure import measure

    cfg = SimConfig(requests=150, seed=1, rate_per_s=10.0)
    runs = {
        hold: simulate(_paper(catalog, "pdd", pool_hold=hold), cfg)
        for hold in ("transfer_end", "handoff_end")
    }
    a, b = (runs[h].trace for h in ("transfer_end", "handoff_end"))
    handed = (b.path == rt.RELAY) & ~b.overflowed & (b.main_tokens > 0)
    assert handed.sum() > 10
    handoff = np.where(handed, b.main_first_s - b.wan.done_s, 0.0)
    assert np.all(handoff[handed] > 0.25)  # at least RTT + the engine's fixed 0.24 s
    assert b.wan.done_s == pytest.approx(a.wan.done_s)  # the transfers themselves unmoved
    held_a = (a.wan.release_s - a.wan.connect_s).sum()
    held_b = (b.wan.release_s - b.wan.connect_s).sum()
    assert held_b - held_a == pytest.approx(handoff.sum(), rel=1e-9)
    assert (
        measure(runs["handoff_end"]).wan_pool_utilization_frac
        > measure(runs["transfer_end"]).wan_pool_utilization_frac
    )


# ---------------------------------------------------------------------------- scenario keys


def _scenario_with(tmp_path, lines: str):
    """The shipped paper scenario with `lines` added to its wan section, in tmp_path."""
    text = (resolve_scenario_path("pdd-paper")).read_text()
    text = text.replace("  max_lines: 4\n", "  max_lines: 4\n" + lines, 1)
    assert lines in text
    (tmp_path / "s.yaml").write_text(text)
    plan = scenarios_dir() / "plans" / "pdd-paper-pdd.yaml"
    (tmp_path / "plan.yaml").write_text(plan.read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("  pool_hold: handof_end\n", "wan.pool_hold: found 'handof_end'; expected one of"),
        ("  stripes_per_transfer: 300\n", "wan.stripes_per_transfer: found 300; expected"),
        ("  stripes_per_transfer: 0\n", "wan.stripes_per_transfer: found 0; expected"),
        ("  stream_during_prefill: maybe\n", "wan.stream_during_prefill: found 'maybe'"),
        ("  stripes_per_transfers: 2\n", "did you mean 'stripes_per_transfer'"),
    ],
)
def test_bad_wan_engine_keys_are_one_line_errors(tmp_path, run_cli, line, message):
    _scenario_with(tmp_path, line)
    result = run_cli("evaluate", "s.yaml", "plan.yaml")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: s.yaml: ") and message in lines[0]


def test_the_keys_reach_the_model(tmp_path, catalog):
    _scenario_with(
        tmp_path,
        "  stream_during_prefill: true\n  stripes_per_transfer: 4\n  pool_hold: handoff_end\n",
    )
    s = load_scenario(tmp_path / "s.yaml", catalog)
    assert (s.wan.stream_during_prefill, s.wan.stripes_per_transfer, s.wan.pool_hold) == (
        True,
        4,
        "handoff_end",
    )
    plan = load_plan(tmp_path / "plan.yaml", s, catalog)
    setup = prepare(s, plan, catalog.model_for(s), catalog.gpus, catalog.lines, (1, 12, 24))
    assert setup.link.stripes_per_transfer == 4


def test_closed_form_and_simulator_agree_with_every_knob_on(catalog):
    """PDD on the paper's workload at 50 req/s, streaming, 4 stripes and connections held
    through the handoff: a 3,000-request simulated run and the closed form agree on TTFT,
    the transfer's percentiles and the pool (measured: 0.30/0.41/0.54 s vs 0.30/0.40/0.55 s;
    transfer P99 4.1 vs 4.2 s; pool 56 % vs 54 %)."""
    from pdd_plan.sim.measure import measure

    setup = _paper(
        catalog, "pdd", stream_during_prefill=True, stripes_per_transfer=4, pool_hold="handoff_end"
    )
    closed = snapshot(setup, 50.0)
    sim = measure(simulate(setup, SimConfig(requests=3000, seed=2, rate_per_s=50.0)))
    for q, tol in (("p50", 0.1), ("p90", 0.1), ("p99", 0.15)):
        assert sim.ttft_s[q].value == pytest.approx(closed.ttft_s[q], rel=tol)
    for q, tol in (("p50", 0.1), ("p99", 0.15)):
        assert sim.wan_transfer_s[q].value == pytest.approx(closed.wan_transfer_s[q], rel=tol)
    assert sim.wan_pool_utilization_frac == pytest.approx(
        closed.wan_pool_utilization_frac, abs=0.05
    )


def test_the_resolved_scenario_keeps_the_knobs(tmp_path, catalog):
    """scenario.json (what a run records) names the knobs set away from their defaults and
    loads back to the same ones; a scenario at the defaults records none of them."""
    import yaml

    from pdd_plan.report.resolved import scenario_json

    _scenario_with(tmp_path, "  stream_during_prefill: true\n  stripes_per_transfer: 3\n")
    s = load_scenario(tmp_path / "s.yaml", catalog)
    written = scenario_json(s)["wan"]
    assert written["stream_during_prefill"] is True and written["stripes_per_transfer"] == 3
    assert "pool_hold" not in written
    (tmp_path / "again.yaml").write_text(yaml.safe_dump(scenario_json(s)))
    again = load_scenario(tmp_path / "again.yaml", catalog)
    assert again.wan == s.wan
