"""Archive old turns to Parquet (the seed's cron script; the same job as `pandafs archive`).

    scripts/archive_old_turns.py --age-days 30 --dry-run   # preview: what and why
    scripts/archive_old_turns.py --age-days 30             # execute

Options mirror `pandafs archive`; the vault comes from --root, else $PANDAFS_ROOT, else
./panda-system-docs.  Exit 0 on success, 2 on bad input, 1 on a problem.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime

from events.errors import EventsError
from indexers.errors import IndexingError
from pandafs.archive import archive_turns
from pandafs.errors import PandaError, exit_code_for
from pandafs.vault import Vault


def _when(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("PANDAFS_ROOT", "./panda-system-docs"))
    parser.add_argument("--age-days", type=int, default=None, help="default: [archive] age_days")
    parser.add_argument("--dry-run", action="store_true", help="say what and why; change nothing")
    parser.add_argument("--user", default=None, help="only this user's turns")
    parser.add_argument("--now", type=_when, default=None, help="judge ages as of this ISO time")
    parser.add_argument("--batch-size", type=int, default=None, help="turns per Parquet batch")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    try:
        report = archive_turns(
            Vault.open(args.root),
            age_days=args.age_days,
            user=args.user,
            now=args.now,
            dry_run=args.dry_run,
            batch_size=args.batch_size,
        )
    except (PandaError, EventsError, IndexingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    if args.json:
        import orjson

        print(orjson.dumps(report.as_json()).decode())
        return 0
    verb = "would archive" if args.dry_run else "archived"
    for item in report.turns:
        print(f"{item['doc_id']}: {item['reason']} ({item['bytes']:,} bytes)")
    count = len(report.turns) if args.dry_run else report.archived
    print(
        f"{verb} {count} turns: {report.bytes_before:,} bytes → {report.parquet_bytes:,} bytes "
        f"of Parquet + {report.stub_bytes:,} bytes of stubs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
