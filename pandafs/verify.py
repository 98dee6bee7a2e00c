"""`pandafs verify`: check everything that can be checked against its source.

Each problem is `{path, kind, message}` (kinds listed in docs/safety.md; `repaired=True`: a
repair `--repair` made).  Turns are checked here, the index by `check_index`, what only a
path decides by `check_claims`, each other area by the checkers it publishes as `CHECKS`
(`default_checks()`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from events.errors import EventLogError, EventsError, LogBusyError, NotInVault
from events.fsio import REASONS, is_real_file, read_vault_file
from events.layout import candidate_paths, classify, effective_scope, is_user_id
from events.ledger import Anchor, LedgerRead, ledger_path, read_ledger, record_turns
from events.log import EventWriter, check_chain, read_log, repair_torn_tail, torn_path, typed_events
from events.projection import TurnView, project_turn
from events.render import render_turn
from events.schema import TornTailRepaired
from indexers.documents import IndexDoc, Skipped, load_index_doc
from indexers.errors import REBUILD, IndexDamaged, without_advice
from indexers.sync import count_mismatch, scan_documents
from indexers.walk import NOT_UTF8, refused_files, walk_documents

from . import archive, forget, pipeline
from .assembly import open_memory
from .checks import Checker, Problem, frontmatter_of
from .errors import first_line
from .learning import api as learning_api
from .memory.api import Memory
from .memory.editing import EXPIRED
from .memory.store import check_published, norm_statement, parse_entries
from .turns import Drift, TurnRef, cut_tail_of, drift_of, is_abandoned, iter_turns, project, remove_abandoned
from .vault import Vault

__all__ = ["default_checks", "verify_vault"]


@dataclass
class VerifyReport:
    checked_turns: int = 0
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    repaired: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        found = {k: [p.as_json() for p in getattr(self, k)] for k in ("problems", "warnings", "repaired")}
        return {"ok": self.ok, "checked_turns": self.checked_turns, **found}


def _verify_turn(
    vault: Vault,
    ref: TurnRef,
    repair: bool,
    report: VerifyReport,
    ledgers: dict[str, LedgerRead],
    saved: dict[str, set[str] | None],
) -> None:
    rel = vault.rel(ref.path) + "/events.jsonl"
    if ref.events_path.is_symlink():
        report.problems.append(Problem(rel, "unreadable", "events.jsonl is a symbolic link (never followed)"))
        return
    if is_abandoned(ref):
        empty = Problem(vault.rel(ref.path), "empty_turn", "turn folder holds no events")
        if repair and remove_abandoned(vault, ref):
            report.repaired.append(Problem(empty.path, empty.kind, "removed the empty turn folder"))
            return
        with vault.held_turn(ref.user, ref.turn) as held:
            if held and is_abandoned(ref):  # not a live allocation about to write its first event
                report.problems.append(empty)
        return
    if not ref.events_path.exists():  # an empty folder is `is_abandoned` above
        report.problems.append(Problem(rel, "missing", "turn folder has files but no events"))
        return
    try:
        log = read_log(ref.events_path, root=vault.root)
    except EventLogError as exc:  # a fifo or device: never read (it would block)
        report.problems.append(Problem(rel, "unreadable", str(exc).removeprefix(f"{ref.events_path}: ")))
        return
    noted = False
    if log.torn_tail is not None:
        after = f" after seq {len(log.records) - 1}" if log.records else " before any event"
        size = len(log.torn_tail)
        torn = Problem(rel, "torn_tail", f"ends in a torn line of {size} bytes{after}")
        if repair:
            try:
                moved = repair_torn_tail(ref.events_path, root=vault.root)
            except LogBusyError:
                return  # a live writer is appending that line: nothing torn, nothing to check yet
            report.repaired.append(torn)
            log = read_log(ref.events_path, root=vault.root)
            ledger = _ledger_of(vault, ref, ledgers, report)
            anchor = ledger.anchors.get(ref.turn) if ledger.problem is None else None
            # the repair is recorded in the log's own history, unless the ledger does not vouch for
            # the log: then it is left as evidence
            if log.records and anchor in (None, _end(ref, log.records)):
                with EventWriter(ref.events_path, user=ref.user, turn=ref.turn, root=vault.root) as writer:
                    writer.append(TornTailRepaired(bytes_moved=moved, moved_to="events.jsonl.torn"))
                log = read_log(ref.events_path, root=vault.root)
                noted = True
                if anchor:  # its writer recorded the new end in the ledger file
                    ledger.anchors[ref.turn] = _end(ref, log.records)
        else:
            report.problems.append(torn)
    problem = check_chain(log)
    if problem is not None:
        report.problems.append(Problem(rel, "chain", str(problem).removeprefix(f"{rel}: ")))
        return
    if not log.records:
        if log.torn_tail is not None:
            return
        kept = torn_path(ref.events_path)
        if is_real_file(kept):  # its only line was torn and moved aside: a turn that never
            # began, bytes kept; nothing `--repair` could clear, so a warning
            why = f"no event: its only line was torn and is kept in {kept.name}"
            report.warnings.append(Problem(rel, "empty_turn", why))
        else:
            report.problems.append(Problem(rel, "empty_turn", "events.jsonl holds no events"))
        return
    stray = next((r for r in log.records if (r.get("user"), r.get("turn")) != (ref.user, ref.turn)), None)
    if stray is not None:
        names = f"{stray.get('user')}/{stray.get('turn')}"
        report.problems.append(Problem(rel, "misplaced", f"seq {stray.get('seq')} names {names}"))
        return
    _check_anchor(vault, ref, log.records, repair, report, ledgers)
    try:
        view = project_turn(typed_events(ref.events_path, log.records))
    except (EventsError, ValueError) as exc:
        report.problems.append(Problem(rel, "unreadable", first_line(exc)))
        return
    for kind in sorted(set(view.unknown_types)):
        report.warnings.append(
            Problem(rel, "unknown_event", f"event type {kind!r} from a newer version (kept)")
        )
    if view.committed and not any(r.get("type") == "forgotten" for r in log.records):
        _check_commits(vault, ref, view, report, saved)
    if noted:  # metadata.json counts the repair event (context.md is left alone)
        project(ref, view, files={"metadata.json": render_turn(view)["metadata.json"]})
    cut = cut_tail_of(vault, ref, view)
    if cut is not None:
        report.problems.append(Problem(cut.path, "cut_tail", cut.message))
        return  # its projection holds more than the log: re-projecting would lose it
    drifts = drift_of(vault, ref, view)
    if not any(d.kind == "missing" for d in drifts):
        report.problems += [_drift_problem(d) for d in drifts]
        return
    with ExitStack() as held:
        try:  # the log's writer lock: a turn being written holds it until its files are projected
            writer = held.enter_context(
                EventWriter(ref.events_path, user=ref.user, turn=ref.turn, root=vault.root)
            )
        except LogBusyError:
            return  # a live process is writing the turn: its files come at its end
        except EventsError:  # (a torn tail left unrepaired: named above) as first read
            report.problems += [_drift_problem(d) for d in drifts]
            return
        # read again under the lock: the turn may have ended since, from a longer log
        view = project_turn(writer.history())
        for drift in drift_of(vault, ref, view):
            if repair and drift.kind == "missing":
                project(ref, view)
                report.repaired.append(_drift_problem(drift))
            else:
                report.problems.append(_drift_problem(drift))


def _ledger_of(
    vault: Vault, ref: TurnRef, ledgers: dict[str, LedgerRead], report: VerifyReport
) -> LedgerRead:
    """The user's ledger, read once a run; a damaged one is named when first read."""
    ledger = ledgers.get(ref.user)
    if ledger is None:
        ledger = ledgers[ref.user] = read_ledger(vault.root, ref.turns)
        if ledger.problem is not None:
            path = vault.rel(ledger_path(ref.turns))
            report.problems.append(
                Problem(path, "ledger", f"{ledger.problem}; the turns' ends cannot be vouched for")
            )
    return ledger


def _check_anchor(
    vault: Vault,
    ref: TurnRef,
    records: list[dict[str, Any]],
    repair: bool,
    report: VerifyReport,
    ledgers: dict[str, LedgerRead],
) -> None:
    """That the turn's log ends as the user's ledger recorded it, else a `ledger` problem (a log
    rewritten whole passes its chain check, not this); a completed turn the ledger does not
    name is the warning `unanchored`, which `--repair` records."""
    ledger = _ledger_of(vault, ref, ledgers, report)
    if ledger.problem is not None:
        return
    rel = vault.rel(ref.path) + "/events.jsonl"
    events, last = len(records), records[-1].get("hash", "")
    anchor = ledger.anchors.get(ref.turn)
    if anchor is None:
        if not any(r.get("type") == "turn_completed" for r in records):
            return  # a turn still running (or interrupted) is recorded when it completes
        if repair:
            ledger.anchors[ref.turn] = Anchor(ref.turn, events, last)
            record_turns(ref.turns, [ledger.anchors[ref.turn]], root=vault.root)
            report.repaired.append(Problem(rel, "unanchored", "recorded in the ledger as it is now"))
        else:
            why = "a completed turn the ledger does not name (`--repair` records it)"
            report.warnings.append(Problem(rel, "unanchored", why))
        return
    if (anchor.events, anchor.last_hash) == (events, last):
        return
    report.problems.append(
        Problem(
            rel,
            "ledger",
            f"ends at hash {last[:12]}… after {events} events, but the ledger recorded "
            f"{anchor.last_hash[:12]}… after {anchor.events}: the log was rewritten after the turn completed",
        )
    )


def _saved_statements(vault: Vault, rel: str, saved: dict[str, set[str] | None]) -> set[str] | None:
    """The normalized statements of the list at `rel`, deleted ones too; None if unreadable."""
    if rel not in saved:
        try:
            data, _ = read_vault_file(vault.root, rel)
            text = _DELETED.sub("", data.decode("utf-8"))
            entries = parse_entries(text)
            saved[rel] = {norm_statement(e.value) for e in entries} | {
                norm_statement(e.text) for e in entries
            }
        except FileNotFoundError:
            saved[rel] = set()
        except (OSError, NotInVault, UnicodeDecodeError):
            saved[rel] = None
    return saved[rel]


_DELETED = re.compile(r"\s*<!-- deleted [^>]*-->[ \t]*$", re.MULTILINE)


def _check_commits(
    vault: Vault, ref: TurnRef, view: TurnView, report: VerifyReport, saved: dict[str, set[str] | None]
) -> None:
    """Each memory the turn committed is in its document or deleted, else `commit_missing`."""
    staged = {c.candidate_id: c for c in view.staged}
    for commit in view.committed:
        candidate = staged.get(commit.candidate_id)
        expired = f"{EXPIRED}/{commit.doc_path}"
        if candidate is None or candidate.doc_type == "memory":
            if any(is_real_file(vault.root / p) for p in (commit.doc_path, expired)):
                continue
            what = f"the memory {commit.doc_id}"
        else:
            wanted = norm_statement(candidate.content)
            held = [_saved_statements(vault, p, saved) for p in (commit.doc_path, expired)]
            if not wanted or any(h is None or wanted in h for h in held):
                continue
            what = f"the {candidate.doc_type} {candidate.content[:80]!r}"
        report.warnings.append(
            Problem(
                vault.rel(ref.path) + "/events.jsonl",
                "commit_missing",
                f"the turn committed {what} to {commit.doc_path}, which does not hold it and no "
                "deletion is recorded: lost, or edited or removed by hand",
            )
        )


def _drift_problem(drift: Drift) -> Problem:
    return Problem(drift.path, "drift" if drift.kind == "modified" else "missing", drift.message)


def _end(ref: TurnRef, records: list[dict[str, Any]]) -> Anchor:
    return Anchor(ref.turn, len(records), records[-1].get("hash", ""))


def check_index(vault: Vault, repair: bool) -> list[Problem]:
    """Every document on disk is in the index at its current bytes, or named with the reason it
    is not; nothing gone lingers; every refused file is named.  `--repair` reconciles and checks
    again; an index damaged, missing or holding documents its state does not name is rebuilt."""
    memory = open_memory(vault)
    found = _index_problems(vault, memory)
    if not repair:
        return found
    repaired: list[Problem] = []
    whole = _index_itself(vault, memory)
    stale = [p for p in found if p.kind == "index_stale" and p.path != whole]
    if stale and not any(p.kind == "index_damaged" for p in found):
        report = memory.reconcile()
        # reconcile re-reads only what moved: one skipped then, readable now, is re-read by name
        again = memory.index_paths([p.path for p in stale], force=True)
        skipped = {s.path for s in report.skipped} | {s.path for s in again.skipped}
        repaired += [
            Problem(p.path, p.kind, f"{p.message}: reconciled", repaired=True)
            for p in stale
            if p.path not in skipped
        ]
        # checked again in full: the document count spans the whole index
        found = _index_problems(vault, memory)
    to_rebuild = [p for p in found if p.kind == "index_damaged" or p.path == whole]
    if to_rebuild:
        memory.rebuild()  # beside the live index, then swapped in
        repaired += [  # the advice to rebuild is done: not in the repair's line
            Problem(p.path, p.kind, f"{without_advice(p.message)}: rebuilt", repaired=True)
            for p in to_rebuild
        ]
        found = _index_problems(vault, memory)
    return repaired + found


def _index_itself(vault: Vault, memory: Memory) -> str:
    """The path a problem of the index as a whole is named by (`indexes/fulltext`)."""
    return vault.rel(memory.index.folder.dir)


def _index_problems(vault: Vault, memory: Memory) -> list[Problem]:
    refused: list[Skipped] = []
    files = scan_documents(vault.root, refused=refused)
    problems = [  # documents or not: every file the one rule refuses, wherever it is
        Problem(path, kind, f"{REASONS[kind]}: never read, indexed or written")
        for path, kind in refused_files(vault.root)
    ]
    problems += [
        Problem(r.path, "skipped", f"not indexed: {r.reason}") for r in refused if r.reason == NOT_UTF8
    ]
    whole = _index_itself(vault, memory)
    if not memory.index.folder.exists():
        if files:
            problems.append(Problem(whole, "index_stale", f"index is missing ({len(files)} documents)"))
        return problems
    state = memory.index.state()
    max_bytes = vault.config.index.max_file_bytes
    for path, (mtime, size) in sorted(files.items()):
        entry = state.get(path)
        if entry is None:
            problems.append(Problem(path, "index_stale", "not in the index"))
        elif (entry.mtime_ns, entry.size) != (mtime, size):
            problems.append(Problem(path, "index_stale", "changed since it was indexed"))
        elif entry.skipped:
            loaded = load_index_doc(vault.root, path, max_bytes=max_bytes)
            if isinstance(loaded, Skipped):
                problems.append(Problem(path, "skipped", f"not indexed: {loaded.reason}"))
            elif isinstance(loaded, IndexDoc):
                problems.append(Problem(path, "index_stale", "skipped when indexed, readable now"))
    for path in sorted(p for p in state if p not in files):
        problems.append(Problem(path, "index_stale", "indexed but the file is gone"))
    damage = _index_damage(memory)
    if damage is not None:
        return [*problems, damage]
    try:
        mismatch = count_mismatch(*memory.index.counts())  # under the writer lock: no commit between
    except IndexDamaged as exc:
        return [*problems, Problem(whole, "index_damaged", str(exc))]
    if not problems and mismatch is not None:
        problems.append(Problem(whole, "index_stale", f"{mismatch}; {REBUILD}"))
    return problems


def _index_damage(memory: Memory) -> Problem | None:
    """The first file of the index that does not read as tantivy wrote it, as `index_damaged`."""
    found = memory.index.folder.damaged_file()
    if found is None:
        return None
    path, why = found
    return Problem(path, "index_damaged", f"a file of the index is damaged: {why}; {REBUILD}")


def repair_damaged_index(vault: Vault, repair: bool) -> list[Problem]:
    """Under `--repair`, before any other check writes to the index: rebuild a damaged index."""
    if not repair:
        return []
    memory = open_memory(vault)
    if not memory.index.folder.exists():
        return []
    damage = _index_damage(memory)
    if damage is None:
        try:
            memory.index.counts()
            return []
        except IndexDamaged as exc:  # damage the files' checksums do not show
            damage = Problem(_index_itself(vault, memory), "index_damaged", str(exc))
    memory.rebuild()  # beside the live index, then swapped in
    return [damage._replace(message=f"{without_advice(damage.message)}: rebuilt", repaired=True)]


NOT_A_USER = "its name is reserved or no user id: nothing in it is searched or served"


def check_claims(vault: Vault, repair: bool) -> list[Problem]:
    """Frontmatter that claims what only the path decides: `scope: global` on a user's document,
    an `id:` other than the path's (a warning, unless another document's), a folder under
    users/ that is no user's.  `--repair` changes nothing: the file is the person's to edit."""
    problems: list[Problem] = []
    roots = ["knowledge"]
    for e in sorted(vault.layout.users_dir.iterdir()) if vault.layout.users_dir.is_dir() else []:
        if e.is_dir() and not e.is_symlink() and not e.name.startswith("."):
            if is_user_id(e.name):
                roots.append(f"users/{e.name}")
            else:  # reserved (`knowledge`, `site`) or no user id: nothing in it is read
                problems.append(
                    Problem(f"users/{e.name}", "not_a_user", "is no user's folder: " + NOT_A_USER)
                )
    for top in roots:  # turn folders are listed aside, not entered: a turn claims nothing
        for rel in sorted(rel for rel, _ in walk_documents(vault.root, top, turn_folders=[])):
            ref = classify(rel)
            front = frontmatter_of(vault, rel) if ref is not None else None
            if ref is None or front is None:
                continue
            claimed = front.get("scope")
            if claimed == "global" and effective_scope(ref, claimed) != "global":
                problems.append(
                    Problem(
                        rel,
                        "scope_claim",
                        "says `scope: global`, but what a user keeps under users/ stays theirs "
                        "(searched as theirs); publish it with `pandafs save --scope global`",
                    )
                )
            claimed_id = front.get("id")
            if claimed_id not in (None, ref.doc_id):
                why = f"says `id: {claimed_id}`, but its id is {ref.doc_id} (ids come from paths: "
                taken = [p for p in candidate_paths(str(claimed_id)) if (vault.root / p).is_file()]
                if taken:  # another document's id: a reader of the file could mistake the two
                    problems.append(Problem(rel, "id_claim", f"{why}{taken[0]} has that id)"))
                else:  # a note's own id, as people and other tools write them: ignored, named
                    problems.append(Problem(rel, "id_claim", why + "the id is ignored)", warning=True))
    return problems


CHECKS: tuple[Checker, ...] = (check_index, check_claims, check_published)


def default_checks() -> list[Checker]:
    """Every vault-wide checker: a damaged index rebuilt first, each area's `CHECKS`, the vault's."""
    return [
        repair_damaged_index,
        *forget.CHECKS,
        *archive.CHECKS,
        *learning_api.CHECKS,
        *pipeline.CHECKS,
        *CHECKS,
    ]


def verify_vault(
    vault: Vault,
    *,
    repair: bool = False,
    target: str | None = None,
    checks: Iterable[Checker] = (),
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> VerifyReport:
    """Check every live turn of `target` (a user, a turn, or all), then run `checks`."""
    report = VerifyReport()
    ledgers: dict[str, LedgerRead] = {}
    if repair:  # a half-done forget first: what it rewrites would otherwise show as drift
        for intent in forget.resume_pending(vault):
            report.repaired.append(
                Problem(intent, "forget_pending", "finished a forget a killed process left")
            )
    saved: dict[str, set[str] | None] = {}  # memory documents read once, for every turn's commits
    for ref in iter_turns(vault, target, on_total=on_total):
        report.checked_turns += 1
        _verify_turn(vault, ref, repair, report, ledgers, saved)
        if progress is not None:
            progress(1)
    for checker in checks:
        found, fixed = _run_checker(checker, vault, repair)
        report.problems += [p for p in found if not p.warning]
        report.warnings += [p for p in found if p.warning]
        report.repaired += fixed
    return report


def _run_checker(checker: Checker, vault: Vault, repair: bool) -> tuple[list[Problem], list[Problem]]:
    """(still wrong, repaired) of one check.  Under `--repair` it runs first without repairing:
    what it saw then and no longer sees was repaired, even by a checker that repairs silently."""
    if not repair:
        return list(checker(vault, False)), []
    before = list(checker(vault, False))
    after = list(checker(vault, True))
    still = [p for p in after if not p.repaired]
    fixed = [p for p in after if p.repaired]
    named = {(p.path, p.kind) for p in after}
    fixed += [p._replace(repaired=True) for p in before if (p.path, p.kind) not in named]
    return still, fixed
