"""`forget`, crash-safe at every step (files are replaced atomically; the intent says how to finish):

  1. plan: the targets, the forgotten text as a `Matcher` (hashes), the files to change;
  2. write the intent `users/{u}/.forget-intent.json` (hashes and counts, no text);
  3. record the forgetting in the owner's maintenance log (once per forget id);
  4. restore the archived turns that hold it, so they are redacted live;
  5. rewrite every file of the area that holds it (a turn's log redacted, chained again and
     anchored by a `forgotten` event, its projections written again);
  6. rebuild the derived stores; 7. remove the intent, then prove it (`proof.scan_user`).

`resume_pending` (first in every forget, and `verify --repair`) finishes a killed one."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from events.clock import utcnow
from events.errors import EventLogError, EventsError, FrontmatterError, LogBusyError, NotInVault
from events.fsio import atomic_write, open_no_link, read_vault_file, unlink_in_vault
from events.layout import TURN_DIR_RE, classify, is_user_id
from events.ledger import Anchor, record_turns
from events.log import GENESIS, encode_events, event_hash, parse_log, repair_torn_tail
from events.schema import Forgotten, parse_event
from indexers.words import stems_of

from ..checks import Problem
from ..errors import BadInput, Busy
from ..vault import Vault, file_lock
from ._area import (
    PROJECTED,
    REDACTED,
    Matcher,
    archived_rows,
    content_stems,
    file_tainted,
    redact_file,
    segments,
    segments_of_file,
    sentences_of,
    user_files,
)

__all__ = ["CHECKS", "forget", "intent_path", "resume_pending"]

INTENT = ".forget-intent.json"
KEEP_KEYS = frozenset(
    "doc_id doc_path doc_ids candidate_id tool gate kind tier query_type decision outcome "
    "source backend external_id inbox_file status phase error_type old_scope new_scope "
    "citations".split()
)
"""Strings of a forgotten turn's events that are structure, not what was said: kept so the
turn still replays (an `external_id` keeps a re-import from bringing it back)."""

REBUILT = ("indexes/fulltext", "indexes/learning", "observability/catalog")
_ENTRY_ID = re.compile(r"^(?P<user>[a-z0-9][a-z0-9_-]{0,63})/(?P<doc>preferences|facts)#(?P<entry>.+)$")


@dataclass
class Target:
    kind: str  # statement | memory | turn | words
    label: str
    own: list[str] = field(default_factory=list)  # files that go whole (or, a turn: its folder)


@dataclass
class ForgetReport:
    user: str
    forget_id: str
    dry_run: bool
    targets: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    words: int = 0  # distinctive words
    resumed: list[str] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.survivors

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["distinctive_words"] = data.pop("words")
        return {**data, "changed": len(self.files), "ok": self.ok}


def intent_path(vault: Vault, user: str) -> Path:
    return vault.layout.user_dir(user) / INTENT


def _forget_lock(vault: Vault, user: str) -> AbstractContextManager[None]:
    return file_lock(vault.layout.user_dir(user) / ".forget.lock", wait_s=120, what=f"forgetting of {user}")


def _target(vault: Vault, user: str, query_or_id: str) -> tuple[Target, Matcher, set[str]]:
    """What `query_or_id` names, its text's matcher and the candidate words."""
    from events.documents import parse_document

    from ..memory.editing import pick_entry
    from ..memory.store import parse_entries

    text = query_or_id.strip()
    matcher = Matcher()
    entry = _ENTRY_ID.match(text)
    if entry:
        if entry["user"] != user:
            raise BadInput(f"no document {text!r} of {user}")
        rel = f"users/{user}/{entry['doc']}.md"
        try:
            body = parse_document(read_vault_file(vault.root, rel)[0].decode("utf-8"), rel).body
        except (FileNotFoundError, NotInVault, UnicodeDecodeError) as exc:
            raise BadInput(f"no entry {text!r}: {rel} cannot be read ({exc.__class__.__name__})") from None
        picked = pick_entry(parse_entries(body), entry["entry"], rel)
        stems = content_stems(picked.value)
        if not stems:
            raise BadInput(f"{text} has no words to forget")
        matcher.add_all_of(stems)
        matcher.add_sentences([picked.value, picked.text])
        return Target("statement", text), matcher, stems
    parts = text.split("/")
    if (
        len(parts) >= 2
        and is_user_id(parts[0])
        and (TURN_DIR_RE.fullmatch(parts[1]) or parts[1] in ("memories", "preferences", "facts"))
    ):
        if parts[0] != user:
            raise BadInput(f"no document {text!r} of {user}")
        if len(parts) == 2 and TURN_DIR_RE.fullmatch(parts[1]):
            return _turn_target(vault, user, parts[1], matcher)
        if parts[1] in ("preferences", "facts"):
            raise BadInput(f"say which entry: {text}#N (its number in the list) or {text}#KEY")
        if parts[1] != "memories" or len(parts) < 3:
            raise BadInput(f"no memory document {text!r} of {user}")
        rel = f"users/{text}.md"
        expired = f"archive/expired/{rel}"
        found = [r for r in (rel, expired) if os.path.isfile(vault.root / r)]
        if classify(rel) is None or not found:
            raise BadInput(f"no memory {text!r} of {user}")
        try:
            data = read_vault_file(vault.root, found[0])[0].decode("utf-8", errors="replace")
        except (OSError, NotInVault, EventsError) as exc:
            raise BadInput(f"{found[0]} cannot be read ({exc})") from None
        try:
            parsed = parse_document(data, found[0])
            body, title = parsed.body, str(parsed.frontmatter.get("title") or "")
        except FrontmatterError:  # a broken header: its text is what was said
            body, title = data, ""
        said = "\n".join(line for line in body.split("\n") if not line.startswith("Source: [["))
        said += "\n" + title
        matcher.add_sentences(sentences_of(said))
        return Target("memory", text, found), matcher, content_stems(said)
    stems = content_stems(text)
    if not stems:
        raise BadInput(f"{text!r} has no words to forget (give content words, or a document id)")
    matcher.add_all_of(stems)
    return Target("words", "words"), matcher, stems


def _turn_target(vault: Vault, user: str, turn: str, matcher: Matcher) -> tuple[Target, Matcher, set[str]]:
    folder = f"users/{user}/turns/{turn}"
    stub = f"archive/stubs/{user}/{turn}.md"
    said: list[str] = []
    if os.path.isfile(vault.root / folder / "events.jsonl"):
        try:
            raw = read_vault_file(vault.root, f"{folder}/events.jsonl")[0]
        except (OSError, NotInVault, EventsError) as exc:
            raise BadInput(f"{folder}/events.jsonl cannot be read ({exc})") from None
    elif os.path.isfile(vault.root / stub):
        raw = b""
        for _part, row_turn, path, content in archived_rows(vault, user):
            if row_turn == turn and path == "events.jsonl":
                raw = content
    else:
        raise BadInput(f"no turn {user}/{turn} (live or archived)")
    log = parse_log(folder, raw)
    inbox: str | None = None
    for record in log.records:
        data = record.get("data") or {}
        if record.get("type") == "turn_started":
            said.append(str(data.get("query", "")))
            inbox = data.get("inbox_file")
        elif record.get("type") == "response_synthesized":
            said.append(str(data.get("answer", "")))
    own = [folder]
    if isinstance(inbox, str) and inbox.startswith("inbox/processed/"):
        own.append(inbox)
    outbox = vault.root / "outbox" / user
    if outbox.is_dir():
        link = f"turns/{turn}/".encode()
        for name in sorted(os.listdir(outbox)):
            with contextlib.suppress(OSError, NotInVault, EventsError):
                if link in read_vault_file(vault.root, f"outbox/{user}/{name}")[0]:
                    own.append(f"outbox/{user}/{name}")
    text = "\n".join(said)
    matcher.add_sentences(sentences_of(text))
    return Target("turn", f"{user}/{turn}", own), matcher, content_stems(text)


def _is_own(rel: str, own: list[str]) -> bool:
    return any(rel == o or rel.startswith(o + "/") for o in own)


def _choose_words(vault: Vault, user: str, matcher: Matcher, candidates: set[str], own: list[str]) -> None:
    """The distinctive words: candidates said nowhere in the area but in what goes."""
    if not candidates:
        return
    elsewhere: set[str] = set()

    def look(rel: str, data: bytes) -> None:
        for text in segments_of_file(rel, data):
            for segment in segments(text):
                if not matcher.tainted(segment):
                    elsewhere.update(candidates.intersection(stems_of(segment)))

    for rel in user_files(vault, user):
        if _is_own(rel, own):
            continue
        with contextlib.suppress(OSError, NotInVault, EventsError):
            look(rel, read_vault_file(vault.root, rel)[0])
    for _part, turn, path, data in archived_rows(vault, user):
        if not _is_own(f"users/{user}/turns/{turn}", own):
            look(f"users/{user}/turns/{turn}/{path}", data)
    matcher.add_words(candidates - elsewhere)


def _redact_record_data(record: dict[str, Any], matcher: Matcher, full: bool) -> dict[str, Any] | None:
    """The record's data redacted (None: unchanged), valid for its event type."""
    data = record.get("data")
    if record.get("type") == "forgotten" or not isinstance(data, dict):
        return None
    new = _wipe(data) if full else matcher.redact_value(data)
    if new == data:
        return None
    with contextlib.suppress(ValidationError):
        parse_event({**record, "data": new})
        return new
    kept = dict(data)  # key by key: a field that must keep its form (an enum) keeps it
    for key, value in new.items():
        trial = {**kept, key: value}
        try:
            parse_event({**record, "data": trial})
        except ValidationError:
            continue
        kept = trial
    return kept if kept != data else None


def _wipe(value: Any, key: str | None = None) -> Any:
    """Every string of a forgotten turn's event data replaced, but its structure."""
    if key in KEEP_KEYS:
        return value
    if isinstance(value, str):
        return REDACTED if value.strip() else value
    if isinstance(value, list):
        return [_wipe(v) for v in value]
    if isinstance(value, dict):
        return {k: _wipe(v, k) for k, v in value.items()}
    return value


def _rewritten_log(
    raw: bytes,
    matcher: Matcher,
    *,
    full: bool,
    forget_id: str,
    by: str,
    kind: str,
    now: datetime,
    anchor: bool,
) -> bytes | None:
    """The log's bytes redacted, chained again and anchored (None: nothing to change)."""
    log = parse_log("events.jsonl", raw)
    records, changed = [], 0
    for record in log.records:
        new = _redact_record_data(record, matcher, full)
        if new is not None:
            changed += 1
            record = {**record, "data": new}
        records.append(record)
    if not changed:
        return None
    prev, out = GENESIS, []
    for seq, record in enumerate(records):
        record = {**record, "seq": seq, "prev": prev}
        record["hash"] = event_hash(record)
        out.append(orjson.dumps(record))
        prev = record["hash"]
    tail = b""
    if anchor and records:
        last = records[-1]
        payload = Forgotten(
            forget_id=forget_id,
            by=by,
            kind=kind,  # type: ignore[arg-type]
            redacted=changed,
            replaces=log.last_hash,
        )
        user, turn = last["user"], last["turn"]
        tail, _ = encode_events(user, turn, [payload], ts=now, seq=len(records), prev=prev)
    return b"".join(line + b"\n" for line in out) + tail


def _anchor(vault: Vault, rel: str, records: list[dict[str, Any]]) -> None:
    """Record a rewritten turn log's new end in the user's ledger (under the log's lock), so
    `verify` holds the turn to its redacted log; run on every log, rewritten now or by a
    forget killed before it recorded the end."""
    parts = rel.split("/")
    if len(parts) != 5 or parts[0] != "users" or parts[2] != "turns" or parts[4] != "events.jsonl":
        return
    if records and records[-1].get("type") == "forgotten":
        turns = vault.layout.turns_dir(parts[1])
        record_turns(turns, [Anchor(parts[3], len(records), records[-1]["hash"])], root=vault.root)


def _replace_log(vault: Vault, rel: str, build: Any) -> dict[str, Any] | None:
    """Rewrite a log under its writers' lock (`Busy` if a writer has it: resumed later); its last
    record then (None: empty, or not a log of the area)."""
    path = vault.root / rel
    try:
        fd = open_no_link(path, os.O_RDWR)
    except NotInVault:  # a link or not a regular file: not a log of the area
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        raw = read_vault_file(vault.root, rel)[0]
        log = parse_log(rel, raw)
        if log.torn_tail is not None:
            os.close(fd)
            fd = -1
            repair_torn_tail(path, root=vault.root)  # the torn bytes go to .torn, redacted there
            return _replace_log(vault, rel, build)
        new = build(raw)
        if new is not None:
            atomic_write(path, new, root=vault.root)
            log = parse_log(rel, new)
        _anchor(vault, rel, log.records)
        return log.records[-1] if log.records else None
    except (BlockingIOError, LogBusyError):  # its writer holds it
        raise Busy(f"{rel} is being written; run `pandafs forget` again to finish") from None
    finally:
        if fd >= 0:
            os.close(fd)


def _changes(
    vault: Vault, user: str, matcher: Matcher, own: list[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """(files that change, archived turns (part, turn) that hold it)."""
    files: list[str] = []
    for rel in user_files(vault, user):
        if _is_own(rel, own):
            files.append(rel)
            continue
        if rel.rsplit("/", 1)[-1] in PROJECTED and "/turns/" in rel:
            continue  # follows its log
        try:
            data = read_vault_file(vault.root, rel)[0]
        except (OSError, NotInVault, EventsError):
            continue
        if rel.endswith("events.jsonl"):
            if any(_redact_record_data(r, matcher, False) for r in parse_log(rel, data).records):
                files.append(rel)
                folder = rel.rsplit("/", 1)[0]
                files += [
                    f"{folder}/{n}" for n in sorted(PROJECTED) if os.path.isfile(vault.root / folder / n)
                ]
        elif redact_file(rel, data, matcher) != data:
            files.append(rel)
    archived = _tainted_archived(vault, user, matcher, lambda folder: _is_own(folder, own))
    return sorted(dict.fromkeys(files)), sorted(archived)


def forget(
    vault: Vault,
    query_or_id: str,
    user: str,
    *,
    by: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> ForgetReport:
    """Forget a statement, memory, turn or words of `user` everywhere (module docstring)."""
    vault.require_user(user)
    now = now or utcnow()
    with _forget_lock(vault, user):
        user_files(vault, user)  # a file it could not name refuses the forget before it starts
        finished = None if dry_run else _resume_user(vault, user, now)
        resumed = [str(finished["forget_id"])] if finished else []
        if finished and _asks_again(finished, query_or_id):
            report = ForgetReport(user, resumed[0], dry_run, resumed=resumed)
        else:
            target, matcher, candidates = _target(vault, user, query_or_id)
            own = target.own
            _choose_words(vault, user, matcher, candidates, own)
            files, archived = _changes(vault, user, matcher, own)
            if not files and not archived:
                raise BadInput(f"nothing of {user} holds {query_or_id!r}: nothing to forget")
            files += [item for part, turn in archived for item in (part, f"archive/stubs/{user}/{turn}.md")]
            files = [*dict.fromkeys(files), *(f"{store} (rebuilt)" for store in REBUILT)]
            forget_id = secrets.token_hex(8)
            report = ForgetReport(
                user, forget_id, dry_run, [target.label], files, len(matcher.words), resumed
            )
            if dry_run:
                return report
            intent = {  # the plan in hashes: no word of what goes
                "user": user,
                "by": by or user,
                "kind": target.kind,
                "forget_id": forget_id,
                "matcher": matcher.as_json(),
                "own": [matcher.hash(o) for o in own],
                "targets": 1,
                "asked": matcher.hash(query_or_id.strip()),
            }
            atomic_write(intent_path(vault, user), orjson.dumps(intent), root=vault.root)
            _run(vault, intent, now)
    from .proof import scan_user

    report.survivors = [s.describe() for s in scan_user(vault, user)]
    return report


def resume_pending(vault: Vault) -> list[str]:
    """Finish every forget a killed process left (`verify --repair`); their intents' paths."""
    done = []
    for user in vault.layout.users():
        if os.path.isfile(intent_path(vault, user)):
            with _forget_lock(vault, user):
                if _resume_user(vault, user, utcnow()):
                    done.append(vault.rel(intent_path(vault, user)))
    return done


def _asks_again(intent: dict[str, Any], query_or_id: str) -> bool:
    """Is this the forget `intent` describes, run again as `Busy` said? (Then finishing it is
    the whole run: an entry named by its number must not go on to the entry now numbered so.)"""
    return intent.get("asked") == Matcher.from_json(intent["matcher"]).hash(query_or_id.strip())


def _resume_user(vault: Vault, user: str, now: datetime) -> dict[str, Any] | None:
    """Finish the forget `user`'s intent describes; its intent (None: there was none)."""
    rel = vault.rel(intent_path(vault, user))
    try:
        intent: dict[str, Any] = orjson.loads(read_vault_file(vault.root, rel)[0])
    except FileNotFoundError:
        return None
    except (orjson.JSONDecodeError, OSError, NotInVault) as exc:
        raise BadInput(f"{rel} cannot be read ({exc.__class__.__name__}); a forget cannot finish") from None
    _run(vault, intent, now)
    return intent


def _run(vault: Vault, intent: dict[str, Any], now: datetime) -> None:
    """Steps 3–7 of the module docstring, from an intent (a new or a resumed forget)."""
    from ..learning.maintenance import LOG_NAME

    user, by, kind, forget_id = intent["user"], intent["by"], intent["kind"], intent["forget_id"]
    matcher = Matcher.from_json(intent["matcher"])
    own_hashes = set(intent["own"])
    rewrite = partial(_rewritten_log, matcher=matcher, forget_id=forget_id, by=by, kind=kind, now=now)
    _record(vault, user, intent, matcher, now)
    archived = _tainted_archived(vault, user, matcher, lambda folder: matcher.hash(folder) in own_hashes)
    if archived:
        from ..archive import restore_turns

        restore_turns(vault, sorted({f"{user}/{turn}" for _, turn in archived}))
    own_turns = {
        f"users/{user}/turns/{name}"
        for name in vault.layout.turn_names(user)
        if matcher.hash(f"users/{user}/turns/{name}") in own_hashes
    }
    logs: list[str] = []
    for rel in user_files(vault, user):
        folder, _, name = rel.rpartition("/")
        in_own_turn = folder in own_turns
        if name == "events.jsonl" and folder.startswith(f"users/{user}/turns/"):
            logs.append(rel)
            continue
        if rel == f"users/{user}/{LOG_NAME}":
            _replace_log(vault, rel, partial(rewrite, full=False, anchor=False))
            continue
        if name in PROJECTED and folder.startswith(f"users/{user}/turns/"):
            continue
        if in_own_turn or matcher.hash(rel) in own_hashes:
            unlink_in_vault(vault.root, vault.root / rel)
            continue
        try:
            data = read_vault_file(vault.root, rel)[0]
        except (OSError, NotInVault, EventsError):
            continue
        new = redact_file(rel, data, matcher)
        if new is None:
            unlink_in_vault(vault.root, vault.root / rel)
        elif new != data:
            with (
                vault.memory_lock(user)
                if rel.startswith(f"users/{user}/") and "/turns/" not in rel
                else contextlib.nullcontext()
            ):
                atomic_write(vault.root / rel, new, root=vault.root)
    for rel in logs:
        folder = rel.rsplit("/", 1)[0]
        full = folder in own_turns
        last = _replace_log(vault, rel, partial(rewrite, full=full, anchor=True)) or {}
        # ended by this forget's anchor: rewritten now, or by a killed run that left its projections
        if full or (
            last.get("type") == "forgotten" and (last.get("data") or {}).get("forget_id") == forget_id
        ):
            _project(vault, folder)
    from ..rebuild import rebuild_all

    rebuild_all(vault, beside=False)  # a fresh index: no segment keeps a deleted document
    with contextlib.suppress(FileNotFoundError):
        os.unlink(intent_path(vault, user))


def _tainted_archived(
    vault: Vault, user: str, matcher: Matcher, own: Callable[[str], bool]
) -> set[tuple[str, str]]:
    """(part, turn) of the archived turns of `user` that hold it (or whose folder is `own`)."""
    found: set[tuple[str, str]] = set()
    for part, turn, path, data in archived_rows(vault, user):
        folder = f"users/{user}/turns/{turn}"
        key = (vault.rel(part), turn)
        if key not in found and (own(folder) or file_tainted(matcher, f"{folder}/{path}", data)):
            found.add(key)
    return found


def _record(vault: Vault, user: str, intent: dict[str, Any], matcher: Matcher, now: datetime) -> None:
    """The forgetting in the owner's maintenance log, once (a resumed forget finds it)."""
    from events.log import EventWriter

    from ..learning.maintenance import LOG_TURN, log_path

    path = log_path(vault, user)
    with EventWriter(path, user=user, turn=LOG_TURN, root=vault.root) as writer:
        for event in writer.history():
            if event.type == "forgotten" and event.data.forget_id == intent["forget_id"]:
                return
        writer.append(
            Forgotten(
                forget_id=intent["forget_id"],
                by=intent["by"],
                kind=intent["kind"],
                targets=int(intent.get("targets", 0)),
                salt=matcher.salt,
                word_hashes=sorted(matcher.words),
                sentence_hashes=sorted(matcher.sentences),
                all_of_hashes=sorted(matcher.all_of),
            ),
            ts=now,
        )


def _project(vault: Vault, folder: str) -> None:
    from ..turns import TurnRef, project

    parts = folder.split("/")
    with contextlib.suppress(EventLogError, EventsError):
        project(TurnRef(parts[1], parts[3], vault.layout.turns_dir(parts[1])))


def check_pending(vault: Vault, repair: bool) -> list[Problem]:
    """A forget a killed process left half done (`forget_pending`); `verify --repair` finishes
    it before it checks the turns (`resume_pending`), whose files it rewrites."""
    return [
        Problem(vault.rel(intent_path(vault, u)), "forget_pending", "a forget did not finish")
        for u in vault.layout.users()
        if os.path.isfile(intent_path(vault, u))
    ]


CHECKS = (check_pending,)
"""What verify runs for forgetting (`pandafs.checks`)."""
