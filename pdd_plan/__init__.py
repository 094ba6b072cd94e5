"""pdd-plan: plan the hardware for cross-datacenter PD-disaggregated LLM serving."""

__version__ = "0.1.0"
