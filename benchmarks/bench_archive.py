"""Benchmark cold storage (target, benchmarks/README.md: archive ≤ 30 % of the turn folders it replaces).

    .venv/bin/python benchmarks/bench_archive.py [--turns 5000] [--batch-size 500] [--expansions 300]

Imports N turns dated 2025 (so all are old), indexes them, archives them, expands a
sample of archived turns with `Memory.retrieve` (one expansion each, so none is
restored), then restores every turn and checks the folders are byte-identical.  The
text is drawn from a Zipf-distributed vocabulary, which compresses about like prose
(repeated sentences would flatter zstd).  Sizes are file bytes (not disk blocks).
Prints a table and, last, one JSON line {"benchmark": "archive", ...}.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson

from indexers.archive import ArchiveStore
from pandafs.archive import archive_turns, read_stub, restore_turns
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _vocabulary(rng: random.Random, size: int = 6000) -> tuple[list[str], list[float]]:
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    words = {
        "".join(rng.choices(letters, weights=range(26, 0, -1), k=rng.randint(2, 10))) for _ in range(size * 2)
    }
    vocab = sorted(words)[:size]
    rng.shuffle(vocab)
    return vocab, [1.0 / (rank + 1) for rank in range(len(vocab))]


def _text(rng: random.Random, vocab: list[str], weights: list[float], words: int) -> str:
    out = rng.choices(vocab, weights=weights, k=words)
    return " ".join(out).capitalize() + "."


def build(folder: Path, turns: int, seed: int) -> tuple[Vault, Memory, float]:
    vault, _ = Vault.init(folder / "vault")
    rng = random.Random(seed)
    vocab, weights = _vocabulary(rng)
    source = folder / "turns.jsonl"
    with open(source, "wb") as out:
        for i in range(turns):
            out.write(
                orjson.dumps(
                    {
                        "user": f"user{i % 8}",
                        "external_id": f"bench-{i}",
                        "timestamp": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                        "query": _text(rng, vocab, weights, rng.randint(6, 25)) + "?",
                        "response": " ".join(
                            _text(rng, vocab, weights, rng.randint(8, 30)) for _ in range(rng.randint(3, 12))
                        ),
                        "meta": {"session": i // 20, "channel": "bench"},
                    }
                )
                + b"\n"
            )
    memory = Memory(vault)
    started = time.perf_counter()
    report = import_turns(vault, source, after_batch=memory.index_docs)
    assert report.imported == turns, report.failed[:3]
    return vault, memory, time.perf_counter() - started


def checksums(vault: Vault) -> dict[str, str]:
    out: dict[str, str] = {}
    for user in vault.layout.users():
        for turn in vault.layout.turn_dirs(user):
            for path in sorted(turn.rglob("*")):
                if path.is_file():
                    out[str(path.relative_to(vault.root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--expansions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pandafs-bench-archive-") as tmp:
        vault, memory, import_s = build(Path(tmp), args.turns, args.seed)
        originals = checksums(vault)
        users_disk_before = disk_bytes(vault.layout.users_dir)

        archived = archive_turns(vault, now=NOW, batch_size=args.batch_size)
        assert archived.archived == args.turns, archived.skipped[:3]
        users_disk_after = disk_bytes(vault.layout.users_dir)
        archive_disk = disk_bytes(vault.layout.archive)
        parts = ArchiveStore(vault.layout.archive / "turns").parts()

        rng = random.Random(args.seed)
        sample = rng.sample([t["doc_id"] for t in archived.turns], min(args.expansions, args.turns))
        store = ArchiveStore(vault.layout.archive / "turns")
        raw_ms: list[float] = []
        for doc_id in sample[:100]:
            user, turn = doc_id.split("/")
            info = read_stub(vault, user, turn)
            started = time.perf_counter()
            store.read_turn(vault.root / info.archive_file, user, turn)
            raw_ms.append((time.perf_counter() - started) * 1000)
        expand_ms: list[float] = []
        for doc_id in sample:
            started = time.perf_counter()
            doc = memory.retrieve(doc_id)
            expand_ms.append((time.perf_counter() - started) * 1000)
            assert doc.archived and doc.content
        search_hit = memory.search(doc.metadata["title"], limit=3)

        restored = restore_turns(vault, batch_size=args.batch_size)
        identical = checksums(vault) == originals
        assert restored.restored == args.turns and identical

    share = archived.parquet_bytes / archived.bytes_before
    share_with_stubs = archived.bytes_after / archived.bytes_before
    result = {
        "benchmark": "archive",
        "turns": args.turns,
        "batch_size": args.batch_size,
        "import_turns_per_s": round(args.turns / import_s),
        "archive_turns_per_s": round(archived.archived / archived.seconds),
        "folder_bytes": archived.bytes_before,
        "parquet_bytes": archived.parquet_bytes,
        "stub_bytes": archived.stub_bytes,
        "parquet_files": len(parts),
        "parquet_share": round(share, 4),
        "parquet_plus_stubs_share": round(share_with_stubs, 4),
        "share_target": 0.30,
        "disk_users_before_bytes": users_disk_before,
        "disk_users_after_bytes": users_disk_after,
        "disk_archive_bytes": archive_disk,
        "expansion_p50_ms": round(statistics.median(expand_ms), 2),
        "expansion_p99_ms": round(percentile(expand_ms, 0.99), 2),
        "raw_lookup_p50_ms": round(statistics.median(raw_ms), 2),
        "raw_lookup_p99_ms": round(percentile(raw_ms, 0.99), 2),
        "restore_turns_per_s": round(restored.restored / restored.seconds),
        "byte_identical": identical,
        "stub_found_by_search": bool(search_hit and search_hit[0]["archived"]),
    }
    rows = [
        (f"import {args.turns} turns (setup)", f"{result['import_turns_per_s']:,} turns/s"),
        (f"archive (batches of {args.batch_size})", f"{result['archive_turns_per_s']:,} turns/s"),
        ("turn folders (file bytes)", f"{archived.bytes_before:,} B"),
        (
            f"Parquet ({len(parts)} files) / folders (target ≤ 30 %)",
            f"{archived.parquet_bytes:,} B = {share:.1%}",
        ),
        ("Parquet + stubs / folders", f"{archived.bytes_after:,} B = {share_with_stubs:.1%}"),
        (
            "disk blocks: users/ before → after, archive/",
            f"{users_disk_before:,} → {users_disk_after:,} B, {archive_disk:,} B",
        ),
        (
            f"expansion (retrieve of an archived turn, n={len(expand_ms)}) p50 / p99",
            f"{result['expansion_p50_ms']} / {result['expansion_p99_ms']} ms",
        ),
        (
            "raw Parquet point lookup (same files) p50 / p99",
            f"{result['raw_lookup_p50_ms']} / {result['raw_lookup_p99_ms']} ms",
        ),
        ("restore --all", f"{result['restore_turns_per_s']:,} turns/s"),
        ("restored folders byte-identical", str(identical)),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
