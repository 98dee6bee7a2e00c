"""The idempotent steps that finish a batch: restoring entries and recovering journals."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from events.clock import utcnow
from events.errors import NotInVault
from events.fsio import (
    atomic_write,
    checked_folders,
    is_real_dir,
    read_vault_file,
    remove_tree_in_vault,
    rename_in_vault,
    sync_all,
)
from events.layout import turn_number
from indexers.archive import PartContents, TurnFiles, collect_turn_files, write_turn_folder
from indexers.errors import ArchiveError

from ..learning.state import learned_memory
from ..memory.api import Memory
from ..vault import Vault
from ._common import (
    POINT_LOOKUPS,
    STAGING_DIR,
    TRASH_DIR,
    TurnKey,
    document_paths,
    drop_journal,
    parse_ts,
    pending_journals,
    reindex,
    staging_folder,
    store_of,
    stub_file,
    stub_relpath,
    trash_folder,
    turn_folder,
)
from ._links import finish_relink
from ._stubs import render_stub, stub_or_none


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
        rate = self.restored / self.seconds if self.seconds else 0.0
        return {**asdict(self), "seconds": round(self.seconds, 3), "turns_per_s": round(rate, 1)}


def restore_entries(
    vault: Vault, items: list[dict[str, str]], job: str, report: RestoreReport | None
) -> list[str]:
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
        if report is not None:
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
            live = turn_folder(vault, key).is_dir()
            has_stub = stub_file(vault, key).exists()
            if live and (not has_stub or rows is None):
                finished.setdefault(part_rel, []).append(key)  # already restored
                continue
            if rows is None:
                fail(key, f"{part_rel} holds no intact rows for {'/'.join(key)}; left archived")
                continue
            if live:
                try:
                    current = collect_turn_files(
                        turn_folder(vault, key), *key, rows.created_at, root=vault.root
                    )
                except ArchiveError:
                    current = None
                if current is None or current.checksums() != rows.checksums():
                    fail(key, "both live and archived, and they differ: resolve by hand")
                    continue
                finished.setdefault(part_rel, []).append(key)
                continue
            staging = staging_folder(vault, key, job)
            if staging.exists():
                remove_tree_in_vault(vault.root, staging, ignore_errors=False)
            write_turn_folder(rows, staging, root=vault.root)
            staged.append((key, staging, rows, part_rel))
    if staged:
        sync_all()
    with checked_folders(vault.root) as moved:
        for key, staging, rows, part_rel in staged:
            moved.rename(staging, turn_folder(vault, key))
            finished.setdefault(part_rel, []).append(key)
            restored.append(rows)
    with checked_folders(vault.root) as stub_dirs:  # once every restored folder is durable
        for keys in finished.values():
            for key in keys:
                stub = stub_file(vault, key)
                if stub.exists():
                    stub_dirs.unlink(stub)
                touched.append(stub_relpath(key))
                folder = turn_folder(vault, key)
                names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
                touched += document_paths(key, names)
    for part_rel, keys in finished.items():
        store.drop_turns(vault.root / part_rel, keys)
    if report is not None:
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
        except orjson.JSONDecodeError as exc:
            raise ArchiveError(f"{vault.rel(journal)}: unreadable journal ({exc})") from None
        except NotInVault as exc:
            raise ArchiveError(f"{vault.rel(journal)}: unreadable journal ({exc.reason})") from None
        if data.get("op") == "archive":
            touched = _recover_archive(vault, data, notes)
        else:
            before = RestoreReport()
            touched = restore_entries(vault, data.get("turns", []), data["job"], before)
            notes += [f"{d}: finished restoring" for d in before.turns]
            notes += [f"{f['doc_id']}: {f['error']}" for f in before.failed]
        reindex(vault, memory, touched)
        drop_journal(vault, journal)
    store_of(vault).clean_temp()
    notes += _sweep_leftovers(vault)
    notes += [f"{rel}: links brought in step" for rel in finish_relink(vault, memory)]
    return notes


def _recover_archive(vault: Vault, data: dict[str, Any], notes: list[str]) -> list[str]:
    store = store_of(vault)
    batch = str(data["batch"])
    archived_at = parse_ts(data.get("archived_at")) or utcnow()
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
            folder, stub = turn_folder(vault, key), stub_file(vault, key)
            trash = trash_folder(vault, key, batch)
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
                try:
                    current = collect_turn_files(folder, *key, rows.created_at, root=vault.root).checksums()
                except ArchiveError:
                    current = None
                if current != rows.checksums() or (info is not None and not stub_here):
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
                atomic_write(
                    stub,
                    render_stub(rows, archived_at=archived_at, batch=batch, archive_file=parts[month]),
                    root=vault.root,
                )
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
                if not is_real_dir(path):
                    continue
                turn = path.name.split(".", 1)[0]
                try:
                    turn_number(turn)
                except ValueError:
                    continue
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
        folder = turn_folder(vault, key)
        if kind == "trash":
            if _archived_intact(vault, key):
                remove_tree_in_vault(vault.root, path, ignore_errors=False)
                notes.append(f"{doc_id}: removed the trash of its archived folder")
            elif not folder.exists() and not stub_file(vault, key).exists():
                rename_in_vault(vault.root, path, folder)
                notes.append(f"{doc_id}: put back from the trash (it was not archived)")
        elif folder.exists() or _archived_intact(vault, key):
            remove_tree_in_vault(vault.root, path, ignore_errors=False)
            notes.append(f"{doc_id}: removed an unfinished restore copy")
    return notes
