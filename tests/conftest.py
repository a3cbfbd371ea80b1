"""Shared test setup: the wire server fixtures (``wire``, ``wire_server``) for every test module."""

pytest_plugins = ["wire.fixtures"]


def pytest_collection_modifyitems(session, config, items):
    """Run the real-browser tests last.

    Playwright's sync API keeps an event loop running in the main thread while its browser is
    open (a session-wide fixture), and ``asyncio.run`` refuses to start inside a running loop.
    """
    items.sort(key=lambda item: "/browser/" in str(item.fspath).replace("\\", "/"))
