"""Queueing: Erlang and Allen-Cunneen waits, tails and mixtures, loss systems, and the
batched prefill's pool, gate and step composition."""
