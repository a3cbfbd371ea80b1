"""The session file format version (its own module: reading a file's header needs nothing else)."""

CURRENT_VERSION = 3
"""The session file format version written (pi's version 3)."""
