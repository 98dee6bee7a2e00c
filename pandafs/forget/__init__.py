"""Forgetting: take back a statement, memory or turn, everywhere, provably (docs/forgetting.md)."""

from ._run import CHECKS, forget, intent_path, resume_pending
from .proof import scan_user

__all__ = [
    "CHECKS",
    "forget",
    "intent_path",
    "resume_pending",
    "scan_user",
]
