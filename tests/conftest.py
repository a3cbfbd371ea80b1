"""Shared test setup: the wire server fixtures (``wire``, ``wire_server``) for every test module."""

pytest_plugins = ["wire.fixtures"]
