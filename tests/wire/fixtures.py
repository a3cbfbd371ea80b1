"""Pytest fixtures for the wire server (:mod:`server`).

Import them into a test module (or list this module in ``pytest_plugins`` of a root
``conftest.py``)::

    from wire.fixtures import wire, wire_server  # noqa: F401

``wire_server`` is one :class:`~server.WireServer` for the whole test session; ``wire`` is
the same server, reset before each test (empty queues, no recorded requests), which is what
a test normally wants.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import WireServer


@pytest.fixture(scope="session")
def wire_server() -> Iterator[WireServer]:
    """One scripted server on 127.0.0.1 for the test session."""
    server = WireServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def wire(wire_server: WireServer) -> Iterator[WireServer]:
    """The session's wire server, reset for this test."""
    wire_server.reset()
    yield wire_server
    wire_server.reset()
