"""A file a person edits while PandaFS rewrites it keeps their edit (`events.fsio.rewrite_file`).

A person's editor takes no lock of ours: the edit lands whenever they save.  Here it
lands where it used to be lost — after our read, before our replace — by editing the
real file from inside `change`, as an editor appending in place (`>>`) would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from events.errors import ChangedMeanwhile
from events.fsio import REWRITE_ATTEMPTS, rewrite_file


def _append_in_place(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


def test_an_edit_between_read_and_replace_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "prefs.md"
    path.write_text("- likes tea\n")
    calls: list[bytes | None] = []

    def change(data: bytes | None, _st: object) -> tuple[bytes | None, str]:
        calls.append(data)
        if len(calls) == 1:
            _append_in_place(path, "- hand line\n")  # the person saves meanwhile
        assert data is not None
        return data + b"- likes coffee\n", "done"

    assert rewrite_file(tmp_path, "prefs.md", change) == "done"
    assert path.read_text() == "- likes tea\n- hand line\n- likes coffee\n"
    assert calls == [b"- likes tea\n", b"- likes tea\n- hand line\n"]


def test_a_file_made_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "facts.md"

    def change(data: bytes | None, _st: object) -> tuple[bytes | None, None]:
        if data is None:
            path.write_text("- written by hand\n")
            return b"- ours\n", None
        return data + b"- ours\n", None

    rewrite_file(tmp_path, "facts.md", change)
    assert path.read_text() == "- written by hand\n- ours\n"


def test_a_file_that_never_stops_changing_is_left_as_the_person_left_it(tmp_path: Path) -> None:
    path = tmp_path / "prefs.md"
    path.write_text("start\n")
    edits = 0

    def change(data: bytes | None, _st: object) -> tuple[bytes | None, None]:
        nonlocal edits
        edits += 1
        _append_in_place(path, f"edit {edits}\n")
        return b"ours\n", None

    with pytest.raises(ChangedMeanwhile, match="changed 20 times"):
        rewrite_file(tmp_path, "prefs.md", change)
    assert edits == REWRITE_ATTEMPTS
    assert path.read_text() == "start\n" + "".join(f"edit {i}\n" for i in range(1, edits + 1))
    assert [p.name for p in tmp_path.iterdir()] == ["prefs.md"]  # no temporary file left


def test_nothing_to_write_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "prefs.md"
    path.write_text("same\n")
    before = path.stat()
    assert rewrite_file(tmp_path, "prefs.md", lambda data, st: (None, "kept")) == "kept"
    assert path.stat().st_ino == before.st_ino and path.read_text() == "same\n"
