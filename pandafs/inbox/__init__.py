"""The inbox: every query file dropped into `inbox/` becomes exactly one answered turn.

A `.md` or `.txt` file in `inbox/` or `inbox/{user}/` is claimed, answered in
`outbox/{user}/{name}.md`, and moved to `inbox/processed/`; one that cannot be a query
goes to `inbox/rejected/` beside a `NAME.error.md` saying why.  Nothing is deleted or
overwritten.  A file is claimed once it has not been written for `settle_s` (an empty
one after `empty_grace_s`, unless this is the final look).

Exactly once, whatever moment the process dies at.  The only bookkeeping is one folder
per claim, `inbox/.processing/{claim}/`, and each step is atomic or recognised by `recover`:

    inbox/alice/q.md                           dropped; waits until it has settled
      │ 1 claim: rename into .processing/C/query/alice/q.md      (atomic; a rival loses)
      ▼
    claimed                                    recover: plan it again (step 2)
      │ 2 plan.json: user, names it will get, or the rejection  (atomic write)
      ▼
    planned                                    recover: find the turn whose turn_started
      │ 3 allocate users/alice/turns/T              has inbox_file == the plan's turn_key;
      │ 4 turn_started{inbox_file} (fsync)          else adopt the empty folder step 3
      ▼                                             left (numbered after the plan); else 3
    started                                    recover: Pipeline.resume(alice, T)
      │ 5 Pipeline.resume runs the phases
      ▼
    answered (turn_completed)
      │ 6 answer written in the claim folder, then hard-linked to outbox/alice/q.md
      │   (a name taken meanwhile gets a suffix)
      │ 7 query hard-linked to inbox/processed/q.md, then unlinked from the claim
      ▼
    done                                       recover: remove plan.json, the folder
      8 cleanup

An allocated but empty turn folder is adopted once no process holds its allocation lock
(`Vault.new_turn`).  One process works on the inbox at a time
(`inbox/.processing/.lock`), so a claim folder found while holding it is an orphan."""

from ._inbox import Inbox, InboxReport, InboxResult
from ._parse import is_query_candidate

__all__ = ["Inbox", "InboxReport", "InboxResult", "is_query_candidate"]
