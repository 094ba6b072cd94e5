"""Formatting only: tables, JSON, files. Numbers come from model/ already computed."""
