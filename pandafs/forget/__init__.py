"""Forgetting: take back a statement, memory or turn, everywhere, provably (docs/forgetting.md)."""

from ._run import CHECKS, ForgetReport, forget, intent_path, resume_pending
from .proof import Survivor, scan_user, scan_vault

__all__ = [
    "CHECKS",
    "ForgetReport",
    "Survivor",
    "forget",
    "intent_path",
    "resume_pending",
    "scan_user",
    "scan_vault",
]
