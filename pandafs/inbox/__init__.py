"""The inbox: every query file dropped into `inbox/` becomes exactly one answered turn.

A `.md` or `.txt` file in `inbox/` (user `[inbox] default_user`) or `inbox/{user}/`
(or with frontmatter `user:`) is claimed, run through the pipeline, answered in
`outbox/{user}/{name}.md`, and moved to `inbox/processed/`.  A file that cannot be a
query (wrong extension, empty, binary, too large, unknown user, broken frontmatter) is
moved to `inbox/rejected/` next to a `NAME.error.md` saying why and what to do.
Nothing is deleted, nothing is overwritten.

Exactly once, whatever moment the process dies at.  Every step either is atomic or
leaves a state the next run recognises and finishes (`recover`), and the only
bookkeeping is one folder per claim, `inbox/.processing/{claim}/`, hidden from
Obsidian and from the watcher:

    inbox/alice/q.md                           dropped; waits until it has settled
      │ 1 claim: rename into .processing/C/query/alice/q.md      (atomic; a rival loses)
      ▼
    claimed                                    recover: plan it again (step 2)
      │ 2 plan.json: user, names it will get (inbox/processed/q.md, outbox/alice/q.md),
      │   or the rejection and its reason                          (atomic write)
      ▼
    planned                                    recover: find the turn whose turn_started
      │ 3 allocate users/alice/turns/T              has inbox_file == the plan's turn_key;
      │ 4 turn_started{inbox_file} (fsync)          else adopt the empty folder step 3
      ▼                                             left (numbered after the plan); else 3
    started                                    recover: Pipeline.resume(alice, T)
      │ 5 Pipeline.resume runs the phases (each appends its events)
      ▼
    answered (turn_completed)
      │ 6 answer written in the claim folder, then hard-linked to outbox/alice/q.md
      │   (a link never overwrites: a name taken meanwhile gets a suffix, plan updated)
      │ 7 query hard-linked to inbox/processed/q.md, then unlinked from the claim
      ▼
    done                                       recover: remove plan.json, the folder
      8 cleanup

So the turn itself (its `turn_started.inbox_file`) records which file it came from,
and a restart finds it rather than allocating another; the one window without such
a record — a turn folder allocated but still empty — is closed by adopting that
folder once no process holds it (its allocator holds its lock until the first event,
and the kernel releases it when that process dies; `Vault.new_turn`).
Only one process works on the inbox at a time (`inbox/.processing/.lock`,
held per file), so any claim folder found while holding the lock is an orphan.

Waiting files: a file is claimed only once it has not been written for `settle_s`
(an editor or a copy may still be writing it); an empty file gets `empty_grace_s`
(an editor creates the note before you type) unless the caller says this is the
final look (`watch --once`).

One job a module: `_inbox` (what waits, and driving each claim through the steps with
its two parts), `_claims` (the claim folders: claim, plan, publish, clean up), `_plan`
(the plan of a claim), `_parse` (what a dropped file is), `_turns` (starting a claim's
turn once),
`_outbox` (the answer and the rejection's explanation), `_moves` (names that never
overwrite), `_results` (what became of each file).
"""

from ._inbox import Inbox
from ._parse import QUERY_SUFFIXES, RESERVED_FOLDERS, is_query_candidate
from ._plan import ClaimPlan
from ._results import InboxReport, InboxResult

__all__ = [
    "ClaimPlan",
    "Inbox",
    "InboxReport",
    "InboxResult",
    "QUERY_SUFFIXES",
    "RESERVED_FOLDERS",
    "is_query_candidate",
]
