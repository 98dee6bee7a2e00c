"""Source reliability: per-domain extraction outcomes folded into one global table,
`indexes/source_reliability.parquet` (`apply`: one turn's `extraction_recorded` events,
once; `rebuild`: every turn's).  The research tool ranks and skips domains by

    reliability = (successes + 1) / (attempts + 2) · (½ + ½ · mean confidence)

An unknown domain has no score (the tool assumes ½); three failed pages bring a domain to
0.1, under the default `min_reliability` of 0.2.  Each domain also has a note,
`site_knowledge/{domain}.md`, rewritten only when its numbers change."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_type_hints

from events.documents import DocumentMetadata, parse_document, render_document
from events.errors import EventsError, FrontmatterError, NotInVault
from events.fsio import atomic_file, atomic_write, is_real_dir, read_vault_file
from events.layout import turn_number
from events.schema import ExtractionRecorded
from events.stamps import format_ts

from ..vault import Vault, file_lock

__all__ = ["ReliabilityTable"]

TABLE = "source_reliability.parquet"


@dataclass(eq=False)
class DomainStats:
    """How the research tool fared on one domain: attempts, successes, the last outcomes."""

    domain: str
    attempts: int = 0
    successes: int = 0
    items: int = 0
    confidence_sum: float = 0.0
    last_success: str | None = None
    last_failure: str | None = None
    last_error: str | None = None
    worked_url: str | None = None
    worked_fields: list[str] = field(default_factory=list)
    recovered: bool = False  # failed before, then succeeded: site knowledge worth writing
    turns: list[str] = field(default_factory=list)

    @property
    def reliability(self) -> float:
        mean_confidence = self.confidence_sum / self.attempts if self.attempts else 0.0
        return (self.successes + 1) / (self.attempts + 2) * (0.5 + 0.5 * mean_confidence)

    def as_row(self) -> dict[str, Any]:
        return {**self.__dict__, "reliability": round(self.reliability, 4)}


def _fold(
    stats: dict[str, DomainStats], turn: str, events: Iterable[ExtractionRecorded], when: str
) -> set[str]:
    changed: set[str] = set()
    for event in events:
        row = stats.setdefault(event.domain, DomainStats(event.domain))
        if turn in row.turns and event.domain not in changed:
            continue  # this turn was folded into this domain before
        if turn not in row.turns:
            row.turns.append(turn)
        row.attempts += 1
        row.items += event.items
        row.confidence_sum += event.confidence
        if event.success:
            if row.last_failure is not None and row.successes == 0:
                row.recovered = True
            row.successes += 1
            row.last_success = when
            row.worked_url = event.url
            row.worked_fields = list(event.fields_present)
        else:
            row.last_failure = when
            row.last_error = event.error
        changed.add(event.domain)
    return changed


class ReliabilityTable:
    """The per-domain table of one vault (read on demand, written under a lock)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.path = vault.layout.indexes / TABLE
        self._cache: tuple[int, dict[str, DomainStats]] | None = None

    def load(self) -> dict[str, DomainStats]:
        try:
            mtime = self.path.lstat().st_mtime_ns
        except FileNotFoundError:
            return {}
        if self._cache is not None and self._cache[0] == mtime:
            return self._cache[1]
        from indexers.parquet import read_parquet  # pyarrow: only where the table exists

        rows = read_parquet(self.vault.root, self.path).to_pylist()  # a link: NotInVault
        stats = {}
        for row in rows:
            row.pop("reliability", None)
            stats[row["domain"]] = DomainStats(**row)
        self._cache = (mtime, stats)
        return stats

    def _locked(self) -> AbstractContextManager[None]:
        lock = self.vault.layout.indexes / "source_reliability.lock"
        return file_lock(lock, what="reliability table", root=self.vault.root)

    def score(self, domain: str) -> float | None:
        row = self.load().get(domain)
        return None if row is None else row.reliability

    def _write(self, stats: dict[str, DomainStats]) -> None:
        import pyarrow as pa  # only a turn that researched (or a rebuild) writes the table
        import pyarrow.parquet as pq

        # the columns of `DomainStats` (the rest are text), then the score
        arrow = {int: pa.int64(), float: pa.float64(), bool: pa.bool_(), list[str]: pa.list_(pa.string())}
        columns = [(name, arrow.get(kind, pa.string())) for name, kind in get_type_hints(DomainStats).items()]
        schema = pa.schema([*columns, ("reliability", pa.float64())])
        table = pa.Table.from_pylist([stats[d].as_row() for d in sorted(stats)], schema=schema)
        # derived from the events: rebuilt from them
        with atomic_file(self.path, durable=False, root=self.vault.root) as out:
            pq.write_table(table, out, compression="zstd")
        self._cache = None

    def apply(self, turn: str, events: list[ExtractionRecorded], at: datetime) -> list[str]:
        """Fold one turn's outcomes in (once), at the turn's time `at` (never the clock, so a
        rebuild reproduces it); the site notes it rewrote."""
        if not events:
            return []
        when = format_ts(at)
        with self._locked():
            stats = copy.deepcopy(self.load())  # the cached table stays as read
            changed = _fold(stats, turn, events, when)
            if not changed:  # folded before
                return []
            self._write(stats)
            # the notes project the table: written under its lock, or a slower turn's
            # older numbers could overwrite a newer turn's note
            return [write_site_note(self.vault, stats[d], at) for d in sorted(changed)]

    def rebuild(self, *, known: TurnsRead | None = None) -> dict[str, DomainStats]:
        """Recompute the table from every live turn's events.  `known` holds what the learning
        fold already read, so each log is read once; a note is dated by its domain's latest
        outcome, not the clock, so a rebuild writes the same note."""
        from ..turns import iter_turns, load_view

        stats: dict[str, DomainStats] = {}
        for ref in iter_turns(self.vault):  # (a turn's `path` is made only for the few read here)
            if known is not None and known.has_read(ref.user, ref.turn):
                found = known.found.get(ref.doc_id)
            else:
                try:
                    view = load_view(ref)
                except (EventsError, FileNotFoundError):
                    continue
                found = (view.extractions, view.occurred_at) if view.extractions else None
            if found is not None:
                _fold(stats, ref.doc_id, found[0], format_ts(found[1]))
        with self._locked():
            self._write(stats)
            for row in stats.values():
                latest = max(t for t in (row.last_success, row.last_failure) if t is not None)
                write_site_note(self.vault, row, datetime.fromisoformat(latest))
        return stats


Extracted = tuple[tuple[Any, ...], datetime]
"""A turn's extraction events and when it happened."""


class TurnsRead:
    """What a learning fold read of the live turns, for `ReliabilityTable.rebuild`: the
    extractions by doc id, and which turns were read, one bit per turn number of each user
    (a rebuild holds it through its indexing)."""

    def __init__(self) -> None:
        self.found: dict[str, Extracted] = {}
        self._read: dict[str, bytearray] = {}

    def add(self, user: str, turn: str, extracted: Extracted | None) -> None:
        """The fold read `user`'s turn `turn` (a `turn_NNNNNN` name): `extracted`, or None."""
        bits = self._read.setdefault(user, bytearray())
        number = turn_number(turn)
        if number >> 3 >= len(bits):
            bits.extend(bytes((number >> 3) + 1 - len(bits)))
        bits[number >> 3] |= 1 << (number & 7)
        if extracted is not None:
            self.found[f"{user}/{turn}"] = extracted

    def has_read(self, user: str, turn: str) -> bool:
        bits = self._read.get(user)
        number = turn_number(turn)
        return bits is not None and number >> 3 < len(bits) and bool(bits[number >> 3] & 1 << (number & 7))


def write_site_note(vault: Vault, row: DomainStats, at: datetime) -> str:
    """The readable `site_knowledge/{domain}.md`, rewritten only when its numbers change (`at`
    dates a new note).  Call with the reliability table's lock held."""
    path = vault.layout.site_knowledge / f"{row.domain}.md"
    rel = f"site_knowledge/{row.domain}.md"
    created: Any = at
    extra: dict[str, Any] = {}
    try:
        old: str | None = read_vault_file(vault.root, rel)[0].decode("utf-8")
    except FileNotFoundError:
        old = None
        if path.parent.is_symlink() or (path.parent.exists() and not is_real_dir(path.parent)):
            return rel  # never write through a linked folder
    except (NotInVault, UnicodeDecodeError):
        return rel  # a link (never followed, never written through) or not text: verify names it
    if old is not None:
        try:
            front = parse_document(old, rel).frontmatter
            created = front.get("created_at", created)
            extra = {k: v for k, v in front.items() if k not in DocumentMetadata.model_fields}
        except FrontmatterError:
            return rel  # a person broke it; never overwrite their edit
    extra.update(
        domain=row.domain,
        reliability=round(row.reliability, 3),
        attempts=row.attempts,
        successes=row.successes,
    )
    meta = DocumentMetadata(
        id=f"site/{row.domain}",
        title=f"Site knowledge: {row.domain}",
        primary_topic=f"site.{row.domain.replace('.', '_')}",
        keywords=[row.domain, "reliability", "extraction"],
        content_types=["site_pattern"],
        scope="global",
        quality=round(min(1.0, max(0.0, row.reliability)), 3),
        created_at=created,
        tags=["pandafs/site"],
        **extra,
    )
    body = [
        f"# {row.domain}\n",
        "| Attempts | Successes | Reliability | Items found | Last success | Last failure |",
        "|---|---|---|---|---|---|",
        f"| {row.attempts} | {row.successes} | {row.reliability:.2f} | {row.items} | "
        f"{row.last_success or '-'} | {row.last_failure or '-'} |",
        "",
    ]
    if row.last_error:
        body.append(f"**Last error:** {row.last_error}\n")
    if row.recovered and row.worked_url:
        body += [
            "## What worked",
            "",
            f"Extraction failed here before and later succeeded on {row.worked_url}, "
            f"finding: {', '.join(row.worked_fields) or 'the page text'}. Prefer pages like it.",
            "",
        ]
    text = render_document(meta, "\n".join(body))
    if old != text:
        atomic_write(path, text, root=vault.root)
    return rel
