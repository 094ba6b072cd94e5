"""The decode side: admission, continuous-batching pools, the relay (RLD), the
extend-decode handoff to MD, mixed pools, and the TPOT distribution."""
