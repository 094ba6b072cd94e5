"""How the active flows share the WAN line: the M/G/R processor-sharing model of flow-level
TCP (Lindberger, ITC 16, 1999; Riedl et al. 2000), with R = goodput / per-flow cap servers,
a real number (model/network/network.py's docstring, mechanism 2).
Pure: numbers only, no I/O.
"""

from __future__ import annotations

import math

from scipy.special import gammaincc, gammaln


def erlang_c_continuous(servers: float, offered_load: float) -> float:
    """Erlang C for a real number of servers (the PS model's R = goodput / cap is rarely whole).

    Erlang B extended by the incomplete gamma function (Jagerman 1974):
    B(x, a) = a^x e^-a / Gamma(x + 1) / Q(x + 1, a), equal to the recursion at integer x and
    decreasing in x; then C = B / (1 - rho (1 - B)). Requires offered_load < servers.
    """
    if not servers > 0:
        raise ValueError(f"servers must be > 0, got {servers}")
    if not 0 <= offered_load < servers:
        raise ValueError(f"offered_load must be in [0, servers), got {offered_load}")
    if offered_load == 0:
        return 0.0
    log_pmf = servers * math.log(offered_load) - offered_load - gammaln(servers + 1.0)
    b = min(1.0, math.exp(log_pmf) / gammaincc(servers + 1.0, offered_load))
    rho = offered_load / servers
    return b / (1.0 - rho * (1.0 - b))


def ps_slowdown(servers: float, offered_load: float) -> float:
    """M/G/R-PS mean stretch of a flow's time at full rate: 1 + E2(R, A) / (R - A)."""
    return 1.0 + erlang_c_continuous(servers, offered_load) / (servers - offered_load)
