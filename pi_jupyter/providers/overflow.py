"""Context-overflow detection; kept in :mod:`pi_jupyter.messages.overflow` (compaction needs it too)."""

from ..messages.overflow import NON_OVERFLOW_PATTERNS, OVERFLOW_PATTERNS, is_context_overflow

__all__ = ["NON_OVERFLOW_PATTERNS", "OVERFLOW_PATTERNS", "is_context_overflow"]
