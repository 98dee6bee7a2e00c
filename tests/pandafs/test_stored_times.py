"""One reader of the times stored in the vault's files (frontmatter, metadata.json, logs)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from pandafs.archive._policy import turn_created_at
from pandafs.memory.turn_records import parse_time
from pandafs.pipeline.sources import age_days
from pandafs.vault import Vault

NOON = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "stored",
    [
        "2026-01-31T12:00:00.000000Z",
        "2026-01-31T13:00:00+01:00",
        "'2026-01-31T12:00:00Z'",
        " 2026-01-31T12:00:00 ",  # naive is UTC
        datetime(2026, 1, 31, 12, 0),
        datetime(2026, 1, 31, 7, 0, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_every_stored_form_of_a_time_reads_as_the_same_utc_moment(stored: object) -> None:
    found = parse_time(stored)
    assert found == NOON and found is not None and found.tzinfo is UTC


@pytest.mark.parametrize(
    "stored",
    [None, "", "yesterday", 17, ["2026-01-31"], "9999-12-31T23:00:00-05:00"],  # (past year 9999 in UTC)
)
def test_what_is_not_a_time_reads_as_none(stored: object) -> None:
    assert parse_time(stored) is None


def test_a_date_reads_as_its_midnight_in_utc() -> None:
    assert parse_time(date(2026, 1, 31)) == datetime(2026, 1, 31, tzinfo=UTC)


def test_a_naive_stamp_has_an_age_instead_of_failing_the_turn() -> None:
    assert age_days("2026-01-30T12:00:00", NOON) == 1.0


def test_a_turn_dated_by_a_plain_date_in_its_frontmatter_has_an_age_for_archiving(vault: Vault) -> None:
    folder = vault.layout.turns_dir("alice") / "turn_000001"
    folder.mkdir(parents=True)
    (folder / "context.md").write_text("---\ncreated_at: 2020-01-31\n---\n# A turn\n")
    assert turn_created_at(vault, folder) == datetime(2020, 1, 31, tzinfo=UTC)
