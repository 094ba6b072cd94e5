"""The bill of materials' header fact about quoted prices: how many figures were quoted and
in which file (the scenario's `prices:` section and figures it sets in place, a `--prices`
file with its SHA-256), so a reader can tell which quotes a bill was priced from."""

from __future__ import annotations

from pathlib import Path

from pdd_plan.model.scenario import Scenario


def quote_facts(s: Scenario) -> list[tuple[str, str]]:
    """The `quoted_prices` header row."""
    quotes = s.quotes.every()
    if not quotes:
        return [("quoted_prices", "none: every price is the catalog's (prices:, --prices)")]
    files = dict.fromkeys(q.file for q in quotes)
    parts = []
    for file in files:
        n = sum(1 for q in quotes if q.file == file)
        digest = f" (sha256 {s.quotes.file_sha256})" if file == s.quotes.file else ""
        parts.append(f"{n} in {Path(file).name}{digest}")
    return [
        (
            "quoted_prices",
            f"{len(quotes)} figures quoted: {'; '.join(parts)}; each quoted row says basis quoted",
        )
    ]
