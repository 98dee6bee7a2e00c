"""The archive and restore jobs, on-demand expansion, the idempotent steps that finish a
batch (restoring entries, recovering journals), and `pandafs verify`'s archive check: the
protocol of the package docstring."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext, suppress
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from events.clock import utcnow
from events.documents import parse_document
from events.errors import NotInVault
from events.fsio import (
    atomic_write,
    checked_folders,
    is_real_dir,
    read_vault_file,
    remove_tree_in_vault,
    rename_in_vault,
    sync_all,
    unlink_in_vault,
    vault_folder,
)
from events.layout import TURN_DIR_RE
from events.stamps import format_ts
from indexers.archive import PartContents
from indexers.errors import ArchiveError
from indexers.sync import chunked
from indexers.turn_folder import TurnFiles, collect_turn_files, folder_signature, write_turn_folder

from ..checks import Problem
from ..errors import BadInput
from ..learning.state import learned_memory
from ..memory.api import Memory
from ..memory.retrieved import Expansion
from ..memory.turn_records import parse_time
from ..vault import Vault
from ._common import (
    POINT_LOOKUPS,
    RELINK_FILE,
    STAGING_DIR,
    TRASH_DIR,
    Progress,
    TurnKey,
    archive_lock,
    as_utc,
    aside,
    document_paths,
    finish_relink,
    live_matches,
    log_held,
    mark_relink,
    new_id,
    parse_turn_id,
    pending_journals,
    pending_relink,
    reindex,
    store_of,
    stub_relpath,
    write_journal,
)
from ._policy import Candidate, expansion_counts, find_candidates, record_expansion
from ._stubs import StubInfo, all_stubs, read_stub, render_stub, stub_or_none


@dataclass
class ArchiveReport:
    dry_run: bool = False
    archived: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    parquet_bytes: int = 0
    stub_bytes: int = 0
    turns: list[dict[str, Any]] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    relinked: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        share = self.parquet_bytes / self.bytes_before if self.bytes_before else 0.0
        return _timed(self, self.archived, eligible=len(self.turns), parquet_share=round(share, 4))


def _timed(report: ArchiveReport | RestoreReport, moved: int, **more: Any) -> dict[str, Any]:
    """A job's report as JSON, its seconds rounded and the turns it moved per second beside them."""
    rate = moved / report.seconds if report.seconds else 0.0
    return {**asdict(report), **more, "seconds": round(report.seconds, 3), "turns_per_s": round(rate, 1)}


def archive_turns(
    vault: Vault,
    *,
    age_days: int | None = None,
    user: str | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
    batch_size: int | None = None,
    progress: Progress | None = None,
    on_total: Callable[[int], None] | None = None,
) -> ArchiveReport:
    """Move every eligible turn to Parquet and leave a stub (`dry_run`: only say what and why)."""
    started = time.perf_counter()
    report = ArchiveReport(dry_run=dry_run)
    if age_days is not None and age_days < 0:
        raise BadInput("--age-days must be 0 or more")
    if user is not None:
        vault.require_user(user)
    batch_size = batch_size or vault.config.archive.batch_size
    if batch_size < 1:
        raise BadInput("batch size must be at least 1")
    now = as_utc(now)  # the one time of this job: the policy's cut-off and every stub's archived_at
    memory = learned_memory(vault)
    if not dry_run and (pending_journals(vault) or leftovers(vault) or pending_relink(vault)):
        with archive_lock(vault):
            report.recovered += recover(vault, memory)
    eligible, kept, skipped = find_candidates(vault, age_days=age_days, user=user, now=now)
    report.kept = [c.as_json() for c in kept]
    report.skipped = skipped
    if on_total is not None:
        on_total(len(eligible))
    if eligible and not dry_run:
        mark_relink(vault, {c.user for c in eligible})
    try:
        for chunk in chunked(eligible, batch_size):
            if dry_run:
                _estimate_batch(vault, chunk, report, now)
            else:
                with archive_lock(vault):
                    if pending_journals(vault):
                        report.recovered += recover(vault, memory)
                    _archive_batch(vault, memory, chunk, report, now)
            if progress is not None:
                progress(len(chunk))
    finally:  # a batch that failed moved nothing, but the batches before it did
        if eligible and not dry_run:
            with archive_lock(vault):
                report.relinked = finish_relink(vault, memory)
    report.bytes_after = report.parquet_bytes + report.stub_bytes
    report.seconds = time.perf_counter() - started
    return report


def _collect(vault: Vault, candidate: Candidate, report: ArchiveReport) -> TurnFiles | None:
    try:
        return collect_turn_files(
            candidate.path, candidate.user, candidate.turn, candidate.created_at, root=vault.root
        )
    except ArchiveError as exc:
        report.skipped.append({"doc_id": candidate.doc_id, "reason": str(exc)})
        return None


def _estimate_batch(vault: Vault, chunk: Sequence[Candidate], report: ArchiveReport, now: datetime) -> None:
    """Dry run: write this batch's Parquet to memory only, to say what it would cost."""
    batch = "dry-run"
    plan = [(c, files) for c in chunk if (files := _collect(vault, c, report)) is not None]
    if not plan:
        return
    month_bytes = store_of(vault).encoded_sizes([files for _, files in plan], batch=batch, archived_at=now)
    month_raw: Counter[str] = Counter()
    for _, files in plan:
        month_raw[files.month] += files.size
    for candidate, files in plan:
        share = round(month_bytes[files.month] * files.size / max(1, month_raw[files.month]))
        archive_file = f"archive/turns/month={files.month}/part-{batch}.parquet"
        stub = len(render_stub(files, archived_at=now, batch=batch, archive_file=archive_file).encode())
        item, saves = candidate.as_json(), files.size - share - stub
        item.update(bytes=files.size, parquet_bytes=share, stub_bytes=stub, saves=saves, month=files.month)
        report.turns.append(item)
        report.bytes_before += files.size
        report.parquet_bytes += share
        report.stub_bytes += stub


def _archive_batch(
    vault: Vault, memory: Memory, chunk: Sequence[Candidate], report: ArchiveReport, archived_at: datetime
) -> None:
    """Steps 1-7 of the package docstring for one batch.  Call with the archive lock held."""
    store = store_of(vault)
    batch = new_id()
    plan: list[tuple[Candidate, TurnFiles]] = []
    for candidate in chunk:
        if not candidate.path.is_dir() or vault.layout.archive_stub(*candidate.key).exists():
            report.skipped.append({"doc_id": candidate.doc_id, "reason": "archived or removed meanwhile"})
            continue
        files = _collect(vault, candidate, report)
        if files is not None:
            plan.append((candidate, files))
    if not plan:
        return
    months = sorted({files.month for _, files in plan})
    parts = {m: vault.rel(store.part_path(m, batch)) for m in months}
    turns = [{"user": f.user, "turn": f.turn, "month": f.month} for _, f in plan]
    at = format_ts(archived_at)
    journal = write_journal(
        vault, batch, {"op": "archive", "batch": batch, "archived_at": at, "parts": parts, "turns": turns}
    )
    written = store.write_parts([f for _, f in plan], batch=batch, archived_at=archived_at)
    for month, path in written.items():
        contents = store.read_part(path)
        expected = {f.key: f.checksums() for _, f in plan if f.month == month}
        found = {key: files.checksums() for key, files in contents.turns.items()}
        if contents.bad_rows or contents.duplicate_rows or found != expected:
            with checked_folders(vault.root) as parts_dirs:
                for part in written.values():
                    parts_dirs.unlink(part, missing_ok=True)
            unlink_in_vault(vault.root, journal)
            raise ArchiveError(
                f"{vault.rel(path)}: the Parquet copy does not read back as written; nothing was removed"
            )
    stubs: dict[TurnKey, int] = {}
    for user in {files.key[0] for _, files in plan}:  # a linked stub folder is refused before any write
        vault_folder(vault.root, vault.layout.stubs_dir(user))
    for _, files in plan:
        text = render_stub(
            files, archived_at=archived_at, batch=batch, archive_file=parts[files.month]
        ).encode("utf-8")
        atomic_write(vault.layout.archive_stub(*files.key), text, durable=False, root=vault.root)
        stubs[files.key] = len(text)
    sync_all()
    touched: list[str] = []
    trash: list[Path] = []
    dropped: dict[str, set[TurnKey]] = {}
    done: list[tuple[Candidate, TurnFiles]] = []
    with checked_folders(vault.root) as moved:  # each folder fsynced once, at the end
        for candidate, files in plan:
            folder = candidate.path
            stub = vault.layout.archive_stub(*files.key)
            with log_held(folder) as refused:
                if refused or folder_signature(folder, vault.root) != files.signature():
                    moved.unlink(stub)
                    dropped.setdefault(files.month, set()).add(files.key)
                    why = refused or "changed while being archived"
                    report.skipped.append({"doc_id": files.doc_id, "reason": f"{why}; stays live"})
                    continue
                target = aside(vault, TRASH_DIR, files.key, batch)
                moved.rename(folder, target)
            moved.fd(stub.parent)
            trash.append(target)
            done.append((candidate, files))
            touched.append(stub_relpath(files.key))
            touched += document_paths(files.key, (f.path for f in files.files))
    for path in trash:
        remove_tree_in_vault(vault.root, path, ignore_errors=False)
    for month, keys in dropped.items():
        store.drop_turns(written[month], keys)
    reindex(memory, touched)
    unlink_in_vault(vault.root, journal)
    for path in written.values():
        if path.exists():
            report.parquet_bytes += path.stat().st_size
            report.files.append(vault.rel(path))
    report.archived += len(done)
    for candidate, files in done:
        report.turns.append({**candidate.as_json(), "bytes": files.size, "archive_file": parts[files.month]})
        report.bytes_before += files.size
        report.stub_bytes += stubs[files.key]


def restore_turns(
    vault: Vault,
    ids: Iterable[str] | None = None,
    *,
    batch_size: int | None = None,
    progress: Progress | None = None,
    on_total: Callable[[int], None] | None = None,
) -> RestoreReport:
    """Put archived turns back as byte-identical folders (`ids=None`: every archived turn)."""
    started = time.perf_counter()
    report = RestoreReport()
    memory = learned_memory(vault)
    batch_size = batch_size or vault.config.archive.batch_size
    wanted = None if ids is None else list(dict.fromkeys(parse_turn_id(i) for i in ids))
    with archive_lock(vault):
        report.recovered = recover(vault, memory)
        entries: list[tuple[str, TurnKey]] = []
        for key in all_stubs(vault) if wanted is None else wanted:
            if not vault.layout.archive_stub(*key).exists():
                if not vault.layout.turn_dir(*key).is_dir():
                    raise BadInput(f"no turn {'/'.join(key)} in {vault.root} (live or archived)")
                report.skipped.append({"doc_id": "/".join(key), "reason": "not archived (live)"})
                continue
            try:
                entries.append((read_stub(vault, *key).archive_file, key))
            except ArchiveError as exc:
                report.failed.append({"doc_id": "/".join(key), "error": str(exc)})
        entries.sort()
        if on_total is not None:
            on_total(len(entries))
        if entries:
            mark_relink(vault, {key[0] for _, key in entries})
        try:
            for chunk in chunked(entries, batch_size):
                job = new_id()
                items = [{"user": k[0], "turn": k[1], "archive_file": f} for f, k in chunk]
                data = {"op": "restore", "job": job, "turns": items}
                journal = write_journal(vault, f"restore-{job}", data)
                touched = restore_entries(vault, items, job, report)
                reindex(memory, touched)
                unlink_in_vault(vault.root, journal)
                if progress is not None:
                    progress(len(chunk))
        finally:
            report.relinked = finish_relink(vault, memory)
    report.seconds = time.perf_counter() - started
    return report


def expand_turn(vault: Vault, doc_id: str, *, now: datetime | None = None, record: bool = True) -> Expansion:
    """Read an archived turn's full context.md from Parquet and count the expansion (the
    `expansions_to_restore`-th within the window restores it).  `FileNotFoundError` without a stub."""
    key = parse_turn_id(doc_id)
    info = read_stub(vault, *key)
    files = store_of(vault).read_turn(vault.root / info.archive_file, *key)
    raw = files.file("context.md")
    if raw is None:
        raise ArchiveError(f"{info.archive_file}: {doc_id} has no context.md")
    try:
        parsed = parse_document(raw.decode("utf-8"), f"{info.archive_file}:{doc_id}/context.md")
    except UnicodeDecodeError:
        raise ArchiveError(f"{info.archive_file}: {doc_id}/context.md is not UTF-8") from None
    count, restored = 0, False
    if record:
        cfg = vault.config.archive
        now = as_utc(now)
        record_expansion(vault, files.doc_id, now)
        since = now - timedelta(days=cfg.expansion_window_days)
        count = expansion_counts(vault, since=since, doc_id=files.doc_id)[files.doc_id]
        if count >= cfg.expansions_to_restore:
            restored = restore_turns(vault, [files.doc_id]).restored == 1
    stub, front, at = stub_relpath(key), dict(parsed.frontmatter), info.archived_at
    return Expansion(files.doc_id, stub, front, parsed.body, info.archive_file, at, count, restored)


@dataclass
class RestoreReport:
    restored: int = 0
    turns: list[str] = field(default_factory=list)
    bytes: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    relinked: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return _timed(self, self.restored)


def restore_entries(vault: Vault, items: list[dict[str, str]], job: str, report: RestoreReport) -> list[str]:
    """Make these turns live (idempotent: also finishes a restore that was killed)."""
    store = store_of(vault)
    by_part: dict[str, list[TurnKey]] = {}
    for item in items:
        by_part.setdefault(item["archive_file"], []).append((item["user"], item["turn"]))
    staged: list[tuple[TurnKey, Path, TurnFiles, str]] = []
    finished: dict[str, list[TurnKey]] = {}
    restored: list[TurnFiles] = []
    touched: list[str] = []

    def fail(key: TurnKey, error: str) -> None:
        report.failed.append({"doc_id": "/".join(key), "error": error})

    for part_rel, keys in by_part.items():
        part = vault.root / part_rel
        contents: PartContents | None = None
        try:
            if len(keys) > POINT_LOOKUPS:
                contents = store.read_part(part) if part.exists() else None
            else:
                contents = PartContents(part, {}, [], [])
                for key in keys:
                    with suppress(ArchiveError):  # missing or damaged rows: `rows` is None
                        contents.turns[key] = store.read_turn(part, *key)
        except ArchiveError as exc:
            for key in keys:
                fail(key, str(exc))
            continue
        for key in keys:
            rows = contents.intact(key) if contents is not None else None
            live = vault.layout.turn_dir(*key).is_dir()
            has_stub = vault.layout.archive_stub(*key).exists()
            if live and (not has_stub or rows is None or live_matches(vault, key, rows)):
                finished.setdefault(part_rel, []).append(key)  # already restored
                continue
            if rows is None:
                fail(key, f"{part_rel} holds no intact rows for {'/'.join(key)}; left archived")
                continue
            if live:
                fail(key, "both live and archived, and they differ: resolve by hand")
                continue
            staging = aside(vault, STAGING_DIR, key, job)
            if staging.exists():
                remove_tree_in_vault(vault.root, staging, ignore_errors=False)
            write_turn_folder(rows, staging, root=vault.root)
            staged.append((key, staging, rows, part_rel))
    if staged:
        sync_all()
    with checked_folders(vault.root) as moved:
        for key, staging, rows, part_rel in staged:
            moved.rename(staging, vault.layout.turn_dir(*key))
            finished.setdefault(part_rel, []).append(key)
            restored.append(rows)
    with checked_folders(vault.root) as stub_dirs:  # once every restored folder is durable
        for keys in finished.values():
            for key in keys:
                stub = vault.layout.archive_stub(*key)
                if stub.exists():
                    stub_dirs.unlink(stub)
                touched.append(stub_relpath(key))
                folder = vault.layout.turn_dir(*key)
                names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
                touched += document_paths(key, names)
    for part_rel, keys in finished.items():
        store.drop_turns(vault.root / part_rel, keys)
    report.restored += len(restored)
    report.turns += [r.doc_id for r in restored]
    report.bytes += sum(r.size for r in restored)
    return touched


def recover(vault: Vault, memory: Memory | None = None) -> list[str]:
    """Finish interrupted batches and clear leftovers; returns what was done.  Call with the
    archive lock held; a recovery that is itself killed is finished by the next."""
    memory = memory or learned_memory(vault)
    notes: list[str] = []
    for journal in pending_journals(vault):
        try:  # a link is not our journal: never followed, so never acted on
            data = orjson.loads(read_vault_file(vault.root, vault.rel(journal))[0])
        except (orjson.JSONDecodeError, NotInVault) as exc:
            why = exc.reason if isinstance(exc, NotInVault) else exc
            raise ArchiveError(f"{vault.rel(journal)}: unreadable journal ({why})") from None
        if data.get("op") == "archive":
            touched = _recover_archive(vault, data, notes)
        else:
            before = RestoreReport()
            touched = restore_entries(vault, data.get("turns", []), data["job"], before)
            notes += [f"{d}: finished restoring" for d in before.turns]
            notes += [f"{f['doc_id']}: {f['error']}" for f in before.failed]
        reindex(memory, touched)
        unlink_in_vault(vault.root, journal)
    store_of(vault).clean_temp()
    notes += _sweep_leftovers(vault)
    notes += [f"{rel}: links brought in step" for rel in finish_relink(vault, memory)]
    return notes


def _recover_archive(vault: Vault, data: dict[str, Any], notes: list[str]) -> list[str]:
    store = store_of(vault)
    batch = str(data["batch"])
    archived_at = parse_time(data.get("archived_at")) or utcnow()
    parts: dict[str, str] = data["parts"]
    contents: dict[str, PartContents] = {}
    for month, rel in parts.items():
        if (vault.root / rel).exists():
            contents[month] = store.read_part(vault.root / rel)
    keep: dict[str, set[TurnKey]] = {m: set() for m in parts}
    touched: list[str] = []
    moved: list[Path] = []
    with checked_folders(vault.root) as renames:  # each folder fsynced once, at the end
        for entry in data["turns"]:
            key: TurnKey = (entry["user"], entry["turn"])
            month = entry["month"]
            doc_id = "/".join(key)
            folder, stub = vault.layout.turn_dir(*key), vault.layout.archive_stub(*key)
            trash = aside(vault, TRASH_DIR, key, batch)
            rows = contents[month].intact(key) if month in contents else None
            info = stub_or_none(vault, key)
            stub_here = info is not None and info.archive_file == parts[month]
            live = folder.is_dir()
            if rows is None:
                if stub_here and not live:
                    # verified once (the stub exists), damaged since: touch no copy of it
                    keep[month].add(key)
                    notes.append(f"{doc_id}: archived copy damaged; left for `pandafs verify`")
                    continue
                if stub_here:
                    renames.unlink(stub)
                    touched.append(stub_relpath(key))
                notes.append(f"{doc_id}: stays live (batch {batch} had not copied it)")
                continue
            if live:
                if not live_matches(vault, key, rows) or (info is not None and not stub_here):
                    if stub_here:
                        renames.unlink(stub)
                        touched.append(stub_relpath(key))
                    notes.append(f"{doc_id}: stays live (changed after batch {batch} copied it)")
                    continue
                if not stub_here:
                    text = render_stub(rows, archived_at=archived_at, batch=batch, archive_file=parts[month])
                    atomic_write(stub, text, root=vault.root)
                if trash.exists():
                    renames.remove_tree(trash, ignore_errors=False)
                renames.rename(folder, trash)
            elif not stub_here:
                if info is not None or stub.exists():
                    notes.append(f"{doc_id}: has another stub; rows of batch {batch} dropped")
                    continue
                text = render_stub(rows, archived_at=archived_at, batch=batch, archive_file=parts[month])
                atomic_write(stub, text, root=vault.root)
            if trash.exists():
                moved.append(trash)
            keep[month].add(key)
            touched.append(stub_relpath(key))
            touched += document_paths(key, (f.path for f in rows.files))
            notes.append(f"{doc_id}: finished archiving (batch {batch})")
    for path in moved:
        remove_tree_in_vault(vault.root, path, ignore_errors=False)
    for month, rel in parts.items():
        if month in contents:
            store.drop_turns(vault.root / rel, set(contents[month].turns) - keep[month])
    return touched


def leftovers(vault: Vault) -> list[tuple[str, TurnKey, Path]]:
    """(trash | staging, turn, path) of folders a killed batch left behind."""
    found: list[tuple[str, TurnKey, Path]] = []
    for user in vault.layout.users():
        for kind, name in (("trash", TRASH_DIR), ("staging", STAGING_DIR)):
            directory = vault.layout.turns_dir(user) / name
            if not (is_real_dir(vault.layout.turns_dir(user)) and is_real_dir(directory)):
                continue  # a linked folder is not ours to empty or move from
            for path in sorted(directory.iterdir()):
                turn = path.name.split(".", 1)[0]
                if is_real_dir(path) and TURN_DIR_RE.fullmatch(turn):
                    found.append((kind, (user, turn), path))
    return found


def _archived_intact(vault: Vault, key: TurnKey) -> bool:
    info = stub_or_none(vault, key)
    if info is None:
        return False
    try:
        store_of(vault).read_turn(vault.root / info.archive_file, *key)
    except (ArchiveError, FileNotFoundError):
        return False
    return True


def _sweep_leftovers(vault: Vault) -> list[str]:
    """Trash whose turn is safely archived is deleted; trash of a turn that is neither
    live nor archived goes back; staging of a restore that never got renamed is deleted."""
    notes: list[str] = []
    for kind, key, path in leftovers(vault):
        doc_id = "/".join(key)
        folder = vault.layout.turn_dir(*key)
        if kind == "trash":
            if _archived_intact(vault, key):
                remove_tree_in_vault(vault.root, path, ignore_errors=False)
                notes.append(f"{doc_id}: removed the trash of its archived folder")
            elif not folder.exists() and not vault.layout.archive_stub(*key).exists():
                rename_in_vault(vault.root, path, folder)
                notes.append(f"{doc_id}: put back from the trash (it was not archived)")
        elif folder.exists() or _archived_intact(vault, key):
            remove_tree_in_vault(vault.root, path, ignore_errors=False)
            notes.append(f"{doc_id}: removed an unfinished restore copy")
    return notes


def check_archive(vault: Vault, repair: bool) -> list[Problem]:
    """Archive integrity for `pandafs verify` (kinds are stable for scripts):

    archive_interrupted   a batch journal is pending (`--repair` finishes it)
    archive_links_pending a link pass was cut short (`--repair` finishes it)
    archive_leftover      trash, staging or temp files of a killed batch (`--repair` clears)
    archive_stub          a stub that cannot be read or names no valid archive_file
    archive_unreadable    a Parquet part file that cannot be read
    archive_missing_rows  a stub whose part file or rows are missing
    archive_checksum      an archived file whose bytes do not match its sha256
    archive_duplicate     the same file of a turn stored twice in one part
    archive_both          a turn both live and archived (`--repair` keeps the live one
                          when it matches the archived copy)
    archive_orphan_rows   rows no stub points at (`--repair` drops them when the live
                          folder or another stub holds the same turn, or writes the
                          missing stub when the rows are the only copy)
    """
    if not vault.layout.archive.is_dir():
        return []
    memory = learned_memory(vault)
    store = store_of(vault)
    problems: list[Problem] = []
    with archive_lock(vault) if repair else nullcontext():
        if repair:
            recover(vault, memory)
        finishes = "`pandafs verify --repair` or the next `pandafs archive` finishes it"
        for journal in pending_journals(vault):
            why = f"an archive or restore batch was interrupted; {finishes}"
            problems.append(Problem(vault.rel(journal), "archive_interrupted", why))
        if users := ", ".join(pending_relink(vault)):
            why = f"links to moved turns of {users} were not all rewritten; {finishes}"
            problems.append(Problem(f"archive/.journal/{RELINK_FILE}", "archive_links_pending", why))
        for kind, key, path in leftovers(vault):
            problems.append(Problem(vault.rel(path), "archive_leftover", f"{kind} copy of {'/'.join(key)}"))
        for path in store.temp_files():
            problems.append(Problem(vault.rel(path), "archive_leftover", "temporary part file"))
        infos: dict[TurnKey, StubInfo] = {}
        for key in all_stubs(vault):
            try:
                infos[key] = read_stub(vault, *key)
            except ArchiveError as exc:
                problems.append(Problem(vault.rel(vault.layout.archive_stub(*key)), "archive_stub", str(exc)))
        parts: dict[str, PartContents] = {}
        unreadable: dict[str, str] = {}
        for path in store.parts():
            rel = vault.rel(path)
            try:
                parts[rel] = found = store.read_part(path)
            except ArchiveError as exc:
                unreadable[rel] = str(exc).removeprefix(f"{rel}: ")
                continue
            for row in found.bad_rows:
                problems.append(Problem(rel, "archive_checksum", f"{row}: bytes do not match their sha256"))
            for row in found.duplicate_rows:
                problems.append(Problem(rel, "archive_duplicate", f"{row}: stored twice"))
        for rel, why in unreadable.items():  # nothing rebuilds a part: its turns are only there
            held = sorted("/".join(key) for key, info in infos.items() if info.archive_file == rel)
            named = f"{len(held)} archived turn(s) ({', '.join(held[:3])}{', …' if len(held) > 3 else ''})"
            why += f"; {named} cannot be expanded or restored until the file is put back from a backup"
            problems.append(Problem(rel, "archive_unreadable", why + " (their stubs stay searchable)"))
        touched: list[str] = []
        for key, info in infos.items():
            stub_rel = stub_relpath(key)
            part = parts.get(info.archive_file)
            if part is None or key not in part.turns:
                if part is not None or not (vault.root / info.archive_file).exists():
                    where = "does not exist" if part is None else "holds no rows for this turn"
                    problems.append(Problem(stub_rel, "archive_missing_rows", f"{info.archive_file} {where}"))
                continue
            folder = vault.layout.turn_dir(*key)
            if not folder.is_dir():
                continue
            rows = part.intact(key)
            if repair and rows is not None:
                if live_matches(vault, key, rows):
                    with checked_folders(vault.root) as stubs:  # by name, never through a link
                        stubs.unlink(info.path)
                    store.drop_turns(vault.root / info.archive_file, [key])
                    part.turns.pop(key)
                    touched.append(stub_rel)
                    touched += document_paths(key, (f.path for f in rows.files))
                    continue
            why = f"{'/'.join(key)} is both live and archived ({stub_rel})"
            problems.append(Problem(vault.rel(folder), "archive_both", why))
        for rel, found in parts.items():
            drop: list[TurnKey] = []
            for key in sorted(found.turns):
                pointed = infos.get(key)
                if pointed is not None and pointed.archive_file == rel:
                    continue
                action = _orphan_action(vault, key, found, infos, parts) if repair else None
                if action == "drop":
                    drop.append(key)
                    continue
                if action == "adopt":
                    stub = vault.layout.archive_stub(*key)
                    rows = found.intact(key)
                    assert rows is not None
                    batch = Path(rel).stem.removeprefix("part-")
                    text = render_stub(rows, archived_at=utcnow(), batch=batch, archive_file=rel)
                    atomic_write(stub, text, root=vault.root)
                    infos[key] = StubInfo(stub, rel, None)
                    touched.append(stub_relpath(key))
                    continue
                why = f"{'/'.join(key)}: rows no stub points at"
                problems.append(Problem(rel, "archive_orphan_rows", why))
            if drop:
                store.drop_turns(vault.root / rel, drop)
        reindex(memory, touched)
    return problems


def _orphan_action(
    vault: Vault,
    key: TurnKey,
    found: PartContents,
    infos: dict[TurnKey, StubInfo],
    parts: dict[str, PartContents],
) -> str | None:
    """What `--repair` may do with orphan rows: "drop" when the turn is intact elsewhere,
    "adopt" (write the stub) when they are its only copy, else None."""
    rows = found.intact(key)
    if rows is None:
        return None
    folder, stub = vault.layout.turn_dir(*key), vault.layout.archive_stub(*key)
    if folder.is_dir():
        return "drop" if live_matches(vault, key, rows) else None
    info = infos.get(key)
    if info is not None:
        other = parts.get(info.archive_file)
        return "drop" if other is not None and other.intact(key) is not None else None
    if stub.exists():
        return None  # a stub that cannot be read: leave both for a person to look at
    return "adopt"


CHECKS = (check_archive,)
"""What verify runs for the archive (`pandafs.checks`)."""
