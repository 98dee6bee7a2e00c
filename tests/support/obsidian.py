"""Obsidian's wikilink resolution, for tests that check every link in a vault resolves.

Obsidian (`metadataCache.getFirstLinkpathDest`) resolves `[[target#heading|label]]` from a
note at `source` by, in order: the vault-relative path (`target`, or `target.md` when the
target has no extension); the path relative to the note's folder; and "shortest path"
matching — any file whose name is the target's last part and whose path ends with the
target (case-insensitive), preferring the note's own folder, then the shortest path.
Files in folders starting with "." are not part of the vault, and only file types
Obsidian opens (notes, canvases, images, audio, video, PDF) can be linked.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Link", "broken_links", "vault_files", "wikilinks"]

OPENS = {
    "md", "canvas", "png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif",
    "mp3", "wav", "m4a", "ogg", "flac", "mp4", "webm", "ogv", "mov", "mkv", "pdf",
}  # fmt: skip
_LINK = re.compile(r"!?\[\[([^\]\n]+)\]\]")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


@dataclass(frozen=True)
class Link:
    source: str
    target: str


def vault_files(root: Path) -> set[str]:
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if "." in name and name.rsplit(".", 1)[1].lower() in OPENS:
                found.add(Path(dirpath, name).relative_to(root).as_posix())
    return found


def wikilinks(text: str) -> list[str]:
    """Link targets of a note (frontmatter properties included; code spans are not links)."""
    targets = []
    for match in _LINK.finditer(_CODE.sub("", text)):
        target = match.group(1).split("|", 1)[0].removesuffix("\\")  # `\|` is a table's alias bar
        targets.append(target.split("#", 1)[0].strip())
    return targets


def resolve(files: set[str], target: str, source: str) -> str | None:
    if not target:
        return source  # [[#heading]]: the note itself
    names = [target] if "." in target.rsplit("/", 1)[-1] else [target + ".md", target]
    for name in names:
        if name in files:
            return name
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(source), name))
        if relative in files:
            return relative
    folder = posixpath.dirname(source)
    for name in names:
        wanted = name.lower()
        base = wanted.rsplit("/", 1)[-1]
        candidates = [
            f
            for f in files
            if f.lower().rsplit("/", 1)[-1] == base and ("/" + f.lower()).endswith("/" + wanted)
        ]
        if candidates:
            return min(candidates, key=lambda f: (posixpath.dirname(f) != folder, len(f), f))
    return None


def broken_links(root: Path) -> list[Link]:
    """Every wikilink in the vault's notes that Obsidian would show as unresolved."""
    files = vault_files(root)
    broken: list[Link] = []
    for source in sorted(f for f in files if f.endswith(".md")):
        text = (root / source).read_text(encoding="utf-8")
        broken += [Link(source, t) for t in wikilinks(text) if resolve(files, t, source) is None]
    return broken
