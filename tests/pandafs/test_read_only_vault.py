"""A vault that cannot be written (a read-only mount, a backup, a full disk) is still
searched, retrieved and verified, and says "read-only", never "damaged".

tantivy's `Index.open` starts a reader, and a reader takes the shared meta lock: it
opens `.tantivy-meta.lock` for writing, which a read-only file system refuses.  The
real cases run in a private mount namespace (`unshare -m`: a read-only bind mount, a
full tmpfs) and are skipped where the machine does not allow one; opening the index
read-only explicitly is tested everywhere (CI runs as root, whom `chmod a-w` binds not).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from indexers.fulltext import FullTextIndex
from pandafs.vault import Vault

REPO = Path(__file__).resolve().parents[2]


def _digest(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[path.relative_to(root).as_posix()] = "folder"
    return out


def _vault_with_a_fact(cli, vault: Vault) -> None:
    assert (
        cli("--root", vault.root, "save", "--type", "fact", "bob likes oolong tea", "--user", "bob").code == 0
    )
    assert cli("--root", vault.root, "ask", "what tea do I like", "--user", "bob").code == 0


def test_an_index_opened_read_only_is_searched_and_counted_without_a_write(cli, vault: Vault) -> None:
    _vault_with_a_fact(cli, vault)
    for lock in vault.root.rglob("*.lock"):
        lock.unlink()
    for lock in vault.root.rglob(".tantivy-*.lock"):
        lock.unlink()
    before = _digest(vault.root)
    index = FullTextIndex(vault.root / "indexes", read_only=True)
    assert index.reader.searcher().num_docs > 0
    documents, recorded = index.counts()
    assert documents == recorded > 0
    assert _digest(vault.root) == before  # no lock file made, nothing touched


def _in_namespace(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=240, cwd="/tmp"
    )


def _namespaces_allowed() -> bool:
    try:
        return _in_namespace("mount -t tmpfs tmpfs /mnt && true").returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_mounts = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or not _namespaces_allowed(),
    reason="needs a private mount namespace (root, unshare -m)",
)


def _pandafs(root: Path, *args: str) -> str:
    argv = [sys.executable, "-m", "pandafs", "--root", str(root), *args]
    return " ".join(shlex.quote(a) for a in argv)


@needs_mounts
def test_a_read_only_mount_is_searched_retrieved_and_verified(cli, vault: Vault) -> None:
    _vault_with_a_fact(cli, vault)
    before = _digest(vault.root)
    root = shlex.quote(str(vault.root))
    script = f"""
mount --bind {root} {root} && mount -o remount,bind,ro {root} || exit 99
{_pandafs(vault.root, "search", "oolong", "--user", "bob", "--json")} || echo "search failed $?"
{_pandafs(vault.root, "retrieve", "users/bob/facts.md", "--user", "bob")} || echo "retrieve failed $?"
{_pandafs(vault.root, "verify", "--json")} || echo "verify failed $?"
"""
    got = _in_namespace(script)
    assert got.returncode == 0 and "failed" not in got.stdout, got.stdout + got.stderr
    assert "users/bob/facts.md" in got.stdout and "oolong" in got.stdout
    assert '"ok":true' in got.stdout.replace(" ", "") and "index_damaged" not in got.stdout
    assert _digest(vault.root) == before


@needs_mounts
def test_on_a_full_disk_verify_still_reports_and_rebuild_says_one_clear_line(cli, vault: Vault) -> None:
    _vault_with_a_fact(cli, vault)
    copy = "/mnt/vault"
    script = f"""
mount -t tmpfs -o size=16m tmpfs /mnt || exit 99
cp -a {shlex.quote(str(vault.root))} {copy}
dd if=/dev/zero of=/mnt/fill bs=64k 2>/dev/null
{_pandafs(Path(copy), "verify", "--json")}; echo "verify exit $?"
{_pandafs(Path(copy), "search", "oolong", "--user", "bob")}; echo "search exit $?"
{_pandafs(Path(copy), "rebuild")}; echo "rebuild exit $?"
"""
    got = _in_namespace(script)
    out, err = got.stdout, got.stderr
    assert "verify exit 0" in out and '"ok":true' in out.replace(" ", ""), out + err
    assert "search exit 0" in out and "users/bob/facts.md" in out
    assert "rebuild exit 1" in out
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "internal error" not in err
    assert "Traceback" not in err


RO_USER = "pandafs-ro"
"""A system account the non-root case runs as (made with `useradd` when absent)."""


def _user_python() -> tuple[str, dict[str, str]] | None:
    """An interpreter of this Python version that `RO_USER` may run, and the environment
    that finds this checkout and its packages (the venv's own interpreter may live where
    only root can reach, such as under /root), or None."""
    import shutil
    import sysconfig

    if (
        sys.platform != "linux"
        or os.geteuid() != 0
        or not (shutil.which("runuser") and shutil.which("useradd"))
    ):
        return None
    if subprocess.run(["id", RO_USER], capture_output=True).returncode != 0:
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", RO_USER],
            capture_output=True,
        )
        if made.returncode != 0:
            return None
    paths = sysconfig.get_paths()
    env = {
        "PYTHONPATH": os.pathsep.join([str(REPO), paths["purelib"], paths["platlib"]]),
        "PATH": "/usr/bin:/bin",
    }
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (os.path.realpath(sys.executable), f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        probe = ["runuser", "-u", RO_USER, "--", "env", *(f"{k}={v}" for k, v in env.items()), candidate]
        try:
            ran = subprocess.run(
                [*probe, "-c", "import pandafs.cli, tantivy"], capture_output=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ran.returncode == 0:
            return candidate, env
    return None


def test_a_read_only_copy_is_searched_and_verified_by_a_user_who_cannot_write_it(cli, vault: Vault) -> None:
    """`chmod -R a-w` on a copy its owner, not root, reads: root writes through any mode,
    so this runs as `RO_USER` (`runuser`), with this checkout and its packages."""
    import shutil
    import tempfile

    found = _user_python()
    if found is None:
        pytest.skip(f"needs root, runuser and useradd, and a {sys.version_info[:2]} python {RO_USER} can run")
    python, env = found
    _vault_with_a_fact(cli, vault)
    outer = Path(tempfile.mkdtemp(prefix="pandafs-ro-"))  # pytest's own tmp is root's alone
    try:
        outer.chmod(0o755)
        copy = outer / "vault"
        shutil.copytree(vault.root, copy, symlinks=True)
        subprocess.run(["chown", "-R", RO_USER, str(copy)], check=True)
        subprocess.run(["chmod", "-R", "a-w", str(copy)], check=True)
        before = _digest(copy)

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            argv = [python, "-m", "pandafs", "--root", str(copy), *args]
            env_args = [f"{k}={v}" for k, v in env.items()]
            return subprocess.run(
                ["runuser", "-u", RO_USER, "--", "env", *env_args, *argv],
                capture_output=True,
                text=True,
                timeout=240,
                cwd="/",
            )

        searched = run("search", "oolong", "--user", "bob", "--json")
        assert searched.returncode == 0, searched.stderr
        assert "users/bob/facts.md" in searched.stdout and "oolong" in searched.stdout
        verified = run("verify", "--json")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert '"ok":true' in verified.stdout.replace(" ", "") and "index_damaged" not in verified.stdout
        assert _digest(copy) == before
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(outer)], check=False)
        shutil.rmtree(outer, ignore_errors=True)
