"""One clock rule for every writer: a clock outside the range import holds dates to
(1900–9000) is refused, never written down.  Real subprocesses with the clock moved back
by `PANDAFS_CLOCK_SHIFT` (to 1898)."""

from __future__ import annotations

import pytest

from pandafs.vault import Vault
from tests.conftest import run_pandafs

BEFORE_1900 = {"PANDAFS_CLOCK_SHIFT": "-47000d"}


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "hello there", "--user", "alice"),
        ("save", "--type", "fact", "alice likes tea", "--user", "alice"),
    ],
)
def test_ask_and_save_refuse_a_clock_before_1900_and_write_nothing(
    vault: Vault, args: tuple[str, ...]
) -> None:
    before = sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*"))
    got = run_pandafs("--root", vault.root, *args, env=BEFORE_1900)
    assert got.code == 1 and got.err.count("\n") == 1 and "the clock says 1898" in got.err, got.err
    assert "Traceback" not in got.err
    after = sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*"))
    assert after == before
