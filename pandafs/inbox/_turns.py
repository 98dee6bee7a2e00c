"""Starting each claim's turn exactly once (find it, adopt a dead run's empty folder, or
allocate one), and its index commit, written behind the answer, landed once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from events.errors import LogBusyError, NotInVault
from events.fsio import is_real_dir, read_vault_file
from events.layout import turn_name
from events.log import EventWriter, read_log, repair_torn_tail
from events.schema import TornTailRepaired, TurnStarted

from ..pipeline import Pipeline
from ..pipeline.recovery import recover
from ..turns import EVENTS_FILE
from ..vault import Vault
from ._claims import ClaimPlan, Stuck
from ._parse import Query, Rejection, validate_query

ADOPT_PROBE_MISSES = 16


def outcome_of(vault: Vault, user: str, turn: str) -> str | None:
    try:
        rel = vault.rel(vault.layout.turn_dir(user, turn) / "metadata.json")
        meta = orjson.loads(read_vault_file(vault.root, rel)[0])
    except (OSError, NotInVault, orjson.JSONDecodeError):
        return None
    value = meta.get("outcome")
    return value if isinstance(value, str) else None


class TurnStarts:
    """Starts each claim's turn exactly once, through the inbox's pipeline (`pipeline()`,
    made when first needed); `checkpoint(step)` as for `ClaimFolders`."""

    def __init__(
        self,
        vault: Vault,
        pipeline: Callable[[], Pipeline],
        *,
        log: Callable[[str], None],
        checkpoint: Callable[[str], None],
    ) -> None:
        self.vault = vault
        self._pipeline = pipeline
        self._log = log
        self._checkpoint = checkpoint

    @property
    def pipeline(self) -> Pipeline:
        return self._pipeline()

    def read_query(self, plan: ClaimPlan, query_path: Path) -> Query:
        verdict = validate_query(self.vault, plan.source, query_path)
        if isinstance(verdict, Rejection):  # the claimed copy is ours alone: cannot happen
            raise Stuck(f"{plan.source} no longer reads as a query: {verdict.message}")
        return verdict

    def find_turn(self, plan: ClaimPlan) -> str | list[tuple[str, Path]]:
        """The turn started for this plan, or the empty turn folders that may be ours (probed
        above `plan.after`: one a dead process allocated, or another writer is about to fill)."""
        assert plan.user is not None
        turns = self.vault.layout.turns_dir(plan.user)
        empties: list[tuple[str, Path]] = []
        number, misses = plan.after + 1, 0
        while misses < ADOPT_PROBE_MISSES:
            name = turn_name(number)
            folder = turns / name
            number += 1
            if not is_real_dir(folder):  # a linked folder is nobody's turn to adopt
                misses += 1
                continue
            misses = 0
            log = read_log(folder / EVENTS_FILE, root=self.vault.root)
            if log.records:
                first = log.records[0]
                data = first.get("data") or {}
                if first.get("type") == "turn_started" and data.get("inbox_file") == plan.turn_key:
                    return name
            else:
                empties.append((name, folder))
        return empties

    def start(self, plan: ClaimPlan, query_path: Path, found: str | list[tuple[str, Path]]) -> str:
        """Start the turn: adopt the empty folder a dead run allocated, or allocate one."""
        assert plan.user is not None
        user = plan.user
        query = self.read_query(plan, query_path)
        candidates = found if isinstance(found, list) else []
        planned = plan.planned_fs_ns or int(plan.planned_at.timestamp() * 1e9)
        planned_ns = planned - 1_000_000_000
        for turn, folder in candidates:
            try:
                mtime = folder.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            if mtime < planned_ns:
                continue
            with self.vault.held_turn(user, turn) as held:  # not held: its allocator died
                if held and self.begin(user, turn, plan, query):
                    self._log(f"adopted {user}/{turn}, allocated for {plan.source} before a crash")
                    return turn
        with self.vault.new_turn(user) as turn:  # held until its first event: never taken for dead
            self._checkpoint("allocated")
            if not self.begin(user, turn, plan, query):
                raise Stuck(f"{user}/{turn} was taken by another writer")
        return turn

    def begin(self, user: str, turn: str, plan: ClaimPlan, query: Query) -> bool:
        """Write `turn_started` into an empty turn folder; False if another writer has it."""
        path = self.vault.layout.turn_dir(user, turn) / EVENTS_FILE
        started = TurnStarted(
            query=query.text,
            source="inbox",
            occurred_at=query.now or self.pipeline.clock(),
            asked_at=query.now,
            inbox_file=plan.turn_key,
            backend=self.pipeline.backend.name,
        )
        try:
            if not path.exists():
                with EventWriter(path, user=user, turn=turn, new=True, root=self.vault.root) as writer:
                    writer.append(started)
            else:
                log = read_log(path, root=self.vault.root)
                if log.records:
                    return False
                moved = repair_torn_tail(path, root=self.vault.root) if log.torn_tail is not None else 0
                with EventWriter(path, user=user, turn=turn, root=self.vault.root) as writer:
                    if writer.next_seq:  # decided again under the lock: another writer started it
                        return False
                    writer.append(started)
                    if moved:
                        writer.append(TornTailRepaired(bytes_moved=moved, moved_to="events.jsonl.torn"))
        except (FileExistsError, LogBusyError):
            return False
        self._checkpoint("started")
        return True

    def index_again(self, user: str, turn: str | None) -> None:
        """Index an answered turn whose index commit, written behind its answer, died
        with the run that answered it (still marked `.indexing`: `recovery.UNINDEXED`)."""
        if turn is not None:
            recover(self.pipeline, user, turn, by="watch")

    def settle_index(self, user: str, turn: str | None) -> None:
        """Wait for the index commit written behind the answer; a failure is logged, not raised
        (the turn keeps its `.indexing` mark and upkeep indexes it again)."""
        try:
            self.pipeline.settle()
        except Exception as exc:  # any failure of the commit is logged the same way
            self._log(f"{user}/{turn} answered, its index commit failed ({exc}); upkeep indexes it again")
