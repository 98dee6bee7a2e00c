"""`pandafs verify`'s archive checker: stubs, Parquet rows, checksums, orphans."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from events.clock import utcnow
from events.fsio import atomic_write, checked_folders
from indexers.archive import PartContents
from indexers.errors import ArchiveError

from ..checks import Problem
from ..learning.state import learned_memory
from ..vault import Vault
from ._common import (
    RELINK_FILE,
    TurnKey,
    archive_lock,
    document_paths,
    live_matches,
    pending_journals,
    pending_relink,
    reindex,
    store_of,
    stub_file,
    stub_relpath,
    turn_folder,
)
from ._jobs import leftovers, recover
from ._stubs import StubInfo, all_stubs, read_stub, render_stub


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
        for journal in pending_journals(vault):
            problems.append(
                Problem(
                    vault.rel(journal),
                    "archive_interrupted",
                    "an archive or restore batch was interrupted; "
                    "`pandafs verify --repair` or the next `pandafs archive` finishes it",
                )
            )
        if pending_relink(vault):
            users = ", ".join(pending_relink(vault))
            problems.append(
                Problem(
                    f"archive/.journal/{RELINK_FILE}",
                    "archive_links_pending",
                    f"links to moved turns of {users} were not all rewritten; "
                    "`pandafs verify --repair` or the next `pandafs archive` finishes it",
                )
            )
        for kind, key, path in leftovers(vault):
            problems.append(Problem(vault.rel(path), "archive_leftover", f"{kind} copy of {'/'.join(key)}"))
        for path in store.temp_files():
            problems.append(Problem(vault.rel(path), "archive_leftover", "temporary part file"))
        infos: dict[TurnKey, StubInfo] = {}
        for key in all_stubs(vault):
            try:
                infos[key] = read_stub(vault, *key)
            except ArchiveError as exc:
                problems.append(Problem(vault.rel(stub_file(vault, key)), "archive_stub", str(exc)))
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
            problems.append(
                Problem(
                    rel,
                    "archive_unreadable",
                    f"{why}; {named} cannot be expanded or restored until the file is put back "
                    "from a backup (their stubs stay searchable)",
                )
            )
        touched: list[str] = []
        for key, info in infos.items():
            stub_rel = stub_relpath(key)
            part = parts.get(info.archive_file)
            if part is None or key not in part.turns:
                if part is not None or not (vault.root / info.archive_file).exists():
                    where = "does not exist" if part is None else "holds no rows for this turn"
                    problems.append(Problem(stub_rel, "archive_missing_rows", f"{info.archive_file} {where}"))
                continue
            folder = turn_folder(vault, key)
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
            problems.append(
                Problem(
                    vault.rel(folder),
                    "archive_both",
                    f"{'/'.join(key)} is both live and archived ({stub_rel})",
                )
            )
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
                    stub = stub_file(vault, key)
                    rows = found.intact(key)
                    assert rows is not None
                    batch = Path(rel).stem.removeprefix("part-")
                    text = render_stub(rows, archived_at=utcnow(), batch=batch, archive_file=rel)
                    atomic_write(stub, text, root=vault.root)
                    infos[key] = StubInfo(*key, stub, rel, None, batch)
                    touched.append(stub_relpath(key))
                    continue
                problems.append(
                    Problem(rel, "archive_orphan_rows", f"{'/'.join(key)}: rows no stub points at")
                )
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
    folder, stub = turn_folder(vault, key), stub_file(vault, key)
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
