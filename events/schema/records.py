"""The payloads that are not a phase's decision: failures, repairs, and what the learning
loop and the tiers record beside the phases (extractions, scope changes, feedback)."""

# No `from __future__ import annotations`: the models' annotations are objects when the
# classes are built, which pydantic would otherwise compile from their strings one by one.

from typing import Literal

from .phases import Payload, PhaseMetrics

# --- failures and housekeeping ---------------------------------------------------------


class PhaseFailed(Payload):
    TYPE = "phase_failed"
    PHASE = "system"
    phase: str
    error_type: str
    message: str
    attempt: int = 0
    metrics: PhaseMetrics | None = None  # what the phase spent before it failed


class TornTailRepaired(Payload):
    TYPE = "torn_tail_repaired"
    PHASE = "system"
    bytes_moved: int
    moved_to: str


class TierFailed(Payload):
    """A context tier could not be assembled, or the unified search (`search`) could not
    read the index; the turn goes on without it."""

    TYPE = "tier_failed"
    PHASE = "context_gatherer"
    tier: Literal["hot", "warm", "cold", "search"]
    error_type: str
    message: str


class ExtractionRecorded(Payload):
    """How extracting one page went (folded into the per-domain reliability table)."""

    TYPE = "extraction_recorded"
    PHASE = "coordinator"
    domain: str
    url: str
    success: bool
    items: int = 0
    fields_present: list[str] = []
    confidence: float = 0.0
    error: str | None = None


class ScopeChanged(Payload):
    """A document was promoted or demoted (new ↔ user ↔ global) or expired, and why."""

    TYPE = "scope_changed"
    PHASE = "save"
    doc_id: str
    doc_path: str
    old_scope: str
    new_scope: str
    reason: str
    trust: float | None = None
    usage_count: int = 0


class FeedbackRecorded(Payload):
    TYPE = "feedback_recorded"
    PHASE = "query_analyzer"
    target_turn: str
    status: Literal["accepted", "rejected"]
    signal: str


class Forgotten(Payload):
    """A person made the vault forget something: the one rewrite of history, recorded.

    In the owner's maintenance log it is the forgetting itself (who, when, what kind, and
    salted hashes of the forgotten words, so `verify --forgotten` can prove they are gone
    without the text being kept); at the end of a turn log it anchors the chain that was
    rewritten without the forgotten payload (`redacted`: how many events changed;
    `replaces`: the hash the log ended with before, so a record of each turn's final
    hash can follow the log from the old end to the new one)."""

    TYPE = "forgotten"
    PHASE = "system"
    forget_id: str
    by: str
    kind: Literal["statement", "memory", "turn", "words"]
    targets: int = 0
    redacted: int = 0
    replaces: str = ""
    salt: str = ""
    word_hashes: list[str] = []
    sentence_hashes: list[str] = []
    all_of_hashes: list[str] = []
