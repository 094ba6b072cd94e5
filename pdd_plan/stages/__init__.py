"""The application layer: one package per stage a command runs (solving, sweeping,
reporting, calibrating), above plan/, sim/, report/ (formatting) and loaders/, below the
face (api.py) and the CLI."""
