"""Compute: the model's layers (attention, FFN), its KV bytes, weights and FLOPs, the
accelerators, and the roofline of one instance's steps with its fitted engine profile."""
