"""Pure numbers-in, numbers-out models: no I/O, no printing, no solver."""
