"""Acceptance of the chat-history importers: every message of every fixture accounted for.

    .venv/bin/python benchmarks/eval_import.py [--claude-code DIR_OR_FILE ...]

For each export fixture (tests/pandafs/fixtures/, real shapes: see shapes/README.md), in a
vault of its own, through the real CLI in a child process:

- `in file`: messages in words counted by a reader written here, independent of the
  importer (every user and assistant message or record with text; ChatGPT: text parts,
  text-dict parts and voice transcripts of `text`/`multimodal_text` messages);
- `found`: of those, how many are in the vault's turn files (a probe of each message's
  first 60 characters, whitespace collapsed, citation markers left out; a slash command
  by its name);
- `skipped`: what the importer's account says it skipped, with a reason;
- `lost` = in file − found − skipped: must be 0;
- `again`: turns added by importing the same file again (0), and for the grown ChatGPT
  export, the turns it completed and added.

Then the unsafe inputs (/dev/zero, a FIFO, a folder, a file over [index] import_max_bytes,
a symlink): exit code, stderr lines, the child's peak memory (wait4's ru_maxrss) and whether
anything was written, beside the peak of importing a small fixture.
Prints a table and, last, one JSON line {"benchmark": "eval_import", ...}.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "pandafs" / "fixtures"
SHAPES = FIXTURES / "shapes"
_MARKER = re.compile("\ue200[^\ue201]*\ue201")


def _norm(text: str) -> str:
    return " ".join(_MARKER.sub("", text).split())


def _probe(text: str) -> str:
    """What of a message must be in the vault: its first 60 characters (a slash command's
    record, `<command-name>/x</command-name>…`, is shown as `/x …`)."""
    command = re.search(r"<command-name>(.*?)</command-name>", text, re.S)
    return _norm(command.group(1)) if command else _norm(text)[:60]


# --- the independent reader ----------------------------------------------------------------


def _json_of(path: Path) -> Any:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return orjson.loads(archive.read("conversations.json"))
    return orjson.loads(path.read_bytes())


def _chatgpt_messages(path: Path) -> list[str]:
    data = _json_of(path)
    convs = data if isinstance(data, list) else [data]
    out = []
    for conv in convs:
        for node in conv["mapping"].values():
            msg = node.get("message")
            if not msg or msg["author"]["role"] not in ("user", "assistant"):
                continue
            if msg.get("recipient", "all") not in (None, "all"):
                continue
            content = msg.get("content") or {}
            if content.get("content_type") not in (None, "text", "multimodal_text"):
                continue
            if (msg.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
                continue
            words = [p if isinstance(p, str) else p.get("text", "") for p in content.get("parts") or []]
            text = "\n".join(w for w in words if isinstance(w, str) and w.strip())
            if text.strip():
                out.append(text)
    return out


def _claude_messages(path: Path) -> list[str]:
    out = []
    for conv in _json_of(path):
        for msg in conv["chat_messages"]:
            blocks = [b.get("text", "") for b in msg.get("content") or [] if b.get("type") == "text"]
            text = "\n".join(b for b in blocks if b.strip()) or msg.get("text") or ""
            attached = [
                a["extracted_content"] for a in msg.get("attachments") or [] if a.get("extracted_content")
            ]
            if text.strip():
                out.append(text)
            elif attached:
                out.append(attached[0])
    return out


def _claude_code_messages(path: Path) -> list[str]:
    files = (
        sorted(p for p in path.rglob("*.jsonl") if not p.name.startswith("agent-"))
        if path.is_dir()
        else [path]
    )
    out = []
    for file in files:
        for raw in file.read_bytes().splitlines():
            record = orjson.loads(raw)
            if record.get("type") not in ("user", "assistant"):
                continue
            content = record["message"]["content"]
            if isinstance(content, str):
                text = content
            else:
                text = "\n".join(b["text"] for b in content if b.get("type") == "text" and b["text"].strip())
            if text.strip():
                out.append(text)
    return out


READERS = {"chatgpt": _chatgpt_messages, "claude": _claude_messages, "claude-code": _claude_code_messages}


# --- running the CLI -----------------------------------------------------------------------


def _pandafs(*args: str | Path, timeout: float = 120) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, peak RSS MiB) of `pandafs ARGS` in a child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, "-m", "pandafs", *map(str, args)], stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return child.returncode, out.read().decode(), err.read().decode(), usage.ru_maxrss / 1024


def _vault_text(root: Path) -> str:
    turns = sorted((root / "users" / "eval" / "turns").glob("turn_*/context.md"))
    return _norm("\n".join(t.read_text() for t in turns))


def _turn_count(root: Path) -> int:
    return len(list((root / "users" / "eval" / "turns").glob("turn_*")))


def _import(root: Path, fmt: str, path: Path) -> dict[str, Any]:
    code, out, err, _ = _pandafs("--root", root, "import", fmt, path, "--user", "eval", "--json")
    if code not in (0, 1):
        raise SystemExit(f"import of {path} failed: {err}")
    return orjson.loads(out)


def check(fmt: str, name: str, path: Path, work: Path, grown: Path | None = None) -> dict[str, Any]:
    root = work / name.replace("/", "_")
    _pandafs("--root", root, "init")
    report = _import(root, fmt, path)
    final = grown or path
    messages = READERS[fmt](final)
    again = _import(root, fmt, path)
    row: dict[str, Any] = {"file": name, "format": fmt}
    if grown is not None:
        step = _import(root, fmt, grown)
        row["grown"] = {"completed": step["completed"], "new_turns": step["imported"]}
        report = step
        again = _import(root, fmt, grown)
    text = _vault_text(root)
    found = sum(1 for m in messages if _probe(m) in text)
    skipped = sum(report["account"]["messages"]["skipped"].values())
    row |= {
        "in_file": len(messages),
        "seen": report["account"]["messages"]["seen"],
        "found": found,
        "skipped": skipped,
        "lost": len(messages) - found - skipped,
        "turns": _turn_count(root),
        "again_adds": again["imported"] + again["completed"],
        "skip_reasons": report["account"]["messages"]["skipped"],
    }
    return row


def unsafe(work: Path) -> list[dict[str, Any]]:
    root = work / "unsafe"
    _pandafs("--root", root, "init")
    fifo = work / "conversations.fifo"
    os.mkfifo(fifo)
    folder = work / "a-folder"
    folder.mkdir()
    big = work / "big-conversations.json"
    with big.open("wb") as handle:  # sparse: over the default limit without using the disk
        handle.truncate(1_100_000_000)
    link = work / "link.json"
    link.symlink_to(SHAPES / "chatgpt_conversations.json")
    rows = []
    baseline = _pandafs(
        "--root",
        root,
        "import",
        "chatgpt",
        SHAPES / "chatgpt_one_conversation.json",
        "--user",
        "base",
        "--json",
    )
    rows.append(
        {
            "input": "a small export (baseline)",
            "exit": baseline[0],
            "stderr_lines": 0,
            "peak_mib": round(baseline[3], 1),
            "written": True,
        }
    )
    for label, path in [
        ("/dev/zero", Path("/dev/zero")),
        ("a FIFO", fifo),
        ("a folder", folder),
        ("1.1 GB file (limit 1 GB)", big),
        ("a symlink", link),
    ]:
        started = time.perf_counter()
        code, _, err, peak = _pandafs("--root", root, "import", "chatgpt", path, "--user", "eve", timeout=30)
        rows.append(
            {
                "input": label,
                "exit": code,
                "stderr_lines": err.count("\n"),
                "peak_mib": round(peak, 1),
                "seconds": round(time.perf_counter() - started, 2),
                "written": (root / "users" / "eve").exists(),
                "message": err.strip()[:90],
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--claude-code",
        type=Path,
        action="append",
        default=[],
        help="also check these Claude Code transcripts (a file or a folder; not committed)",
    )
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with tempfile.TemporaryDirectory(prefix="eval-import-") as tmp:
        work = Path(tmp)
        zipped = work / "chatgpt-export.zip"
        with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("user.json", "{}")
            archive.write(SHAPES / "chatgpt_conversations.json", "conversations.json")
        cases = [
            ("chatgpt", "chatgpt_conversations.json", FIXTURES / "chatgpt_conversations.json", None),
            ("claude", "claude_conversations.json", FIXTURES / "claude_conversations.json", None),
            ("claude-code", "claude_code/", FIXTURES / "claude_code", None),
            ("claude-code", "shapes/claude_code_session.jsonl", SHAPES / "claude_code_session.jsonl", None),
            (
                "claude-code",
                "shapes/claude_code_compacted.jsonl",
                SHAPES / "claude_code_compacted.jsonl",
                None,
            ),
            ("chatgpt", "shapes/chatgpt_conversations.json", SHAPES / "chatgpt_conversations.json", None),
            ("chatgpt", "shapes/chatgpt-export.zip", zipped, None),
            (
                "chatgpt",
                "shapes/chatgpt_one_conversation.json",
                SHAPES / "chatgpt_one_conversation.json",
                None,
            ),
            ("claude", "shapes/claude_conversations.json", SHAPES / "claude_conversations.json", None),
            (
                "chatgpt",
                "shapes/…json → …_grown.json",
                SHAPES / "chatgpt_conversations.json",
                SHAPES / "chatgpt_conversations_grown.json",
            ),
        ]
        for extra in args.claude_code:
            for file in sorted(extra.glob("*.jsonl")) if extra.is_dir() else [extra]:
                cases.append(("claude-code", f"(given) {file.name[:30]}", file, None))
        rows = [check(fmt, name, path, work, grown) for fmt, name, path, grown in cases]
        bad = unsafe(work)
    print(
        f"{'file':40} {'in file':>7} {'seen':>5} {'found':>5} {'skipped':>7} {'lost':>4} {'turns':>5} "
        f"{'again':>5}  grown"
    )
    for r in rows:
        grown = f"completed {r['grown']['completed']}, new {r['grown']['new_turns']}" if "grown" in r else ""
        print(
            f"{r['file']:40} {r['in_file']:7} {r['seen']:5} {r['found']:5} {r['skipped']:7} {r['lost']:4} "
            f"{r['turns']:5} {r['again_adds']:5}  {grown}"
        )
    print()
    print(f"{'unsafe input':28} {'exit':>4} {'stderr':>6} {'peak MiB':>8} {'written':>7}  message")
    for r in bad:
        print(
            f"{r['input']:28} {r['exit']:4} {r['stderr_lines']:6} {r['peak_mib']:8} {str(r['written']):>7}  "
            f"{r.get('message', '')}"
        )
    ok = all(r["lost"] == 0 and r["again_adds"] == 0 for r in rows) and all(
        r["exit"] == 2 and r["stderr_lines"] == 1 and not r["written"] for r in bad[1:]
    )
    print(orjson.dumps({"benchmark": "eval_import", "ok": ok, "files": rows, "unsafe": bad}).decode())


if __name__ == "__main__":
    main()
