"""Forgetting: a person takes back a statement, a memory or a turn, everywhere, provably.

`forget` plans and runs it (`_run`), `_text` says what the forgotten text is (as hashes)
and how it is cut out, `_area` lists what the vault keeps for a user, `proof` scans it
all afterwards (`pandafs verify --forgotten`).  docs/forgetting.md tells the design.
"""

from ._run import CHECKS, ForgetReport, check_pending, forget, intent_path, resume_pending
from .proof import Survivor, scan_user, scan_vault

__all__ = [
    "CHECKS",
    "ForgetReport",
    "check_pending",
    "Survivor",
    "forget",
    "intent_path",
    "resume_pending",
    "scan_user",
    "scan_vault",
]
