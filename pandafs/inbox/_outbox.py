"""Writing what the user reads: the answer in `outbox/{user}/`, and the explanation
published beside a rejected file (found again after a crash by the claim it names)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from events.clock import utcnow
from events.documents import parse_document, render_document
from events.errors import FrontmatterError
from events.fsio import read_vault_bytes

from ..pipeline import TurnResult
from ._claims import ClaimPlan
from ._moves import link_no_replace

_HEAD_CHARS = 4096  # frontmatter is looked for in the first characters only


def _front(root: Path, path: Path) -> dict[str, Any]:
    """The frontmatter in the head of `path` ({} if it has none, is missing, or is a link:
    a link is never ours, whatever its target says)."""
    try:
        data = read_vault_bytes(root, path, limit=4 * _HEAD_CHARS)
        head = (data or b"").decode("utf-8", errors="replace")[:_HEAD_CHARS]
        return parse_document(head if "\n---" in head[3:] else "", path).frontmatter
    except (OSError, FrontmatterError):
        return {}


def answer_turn(root: Path, path: Path) -> str | None:
    """The `doc_id` an answer file in the outbox names, if it is one of ours."""
    value = _front(root, path).get("doc_id")
    return value if isinstance(value, str) else None


def _names_claim(root: Path, path: Path, claim: str) -> bool:
    return _front(root, path).get("claim") == claim


def _explanations(base: Path) -> Iterator[Path]:
    """`NAME.error.md`, then `NAME.error-2.md`, ... (the second only if a stranger took
    the first in the instant between our two moves)."""
    yield Path(f"{base}.error.md")
    n = 2
    while True:
        yield Path(f"{base}.error-{n}.md")
        n += 1


def explained(root: Path, base: Path, claim: str) -> Path | None:
    """The explanation of this claim, if it is already published."""
    for path in _explanations(base):
        if not path.exists():
            return None
        if _names_claim(root, path, claim):
            return path
    raise AssertionError("unreachable: the names go on for ever")


def publish_explanation(root: Path, src: Path, base: Path, claim: str) -> Path:
    for path in _explanations(base):
        if link_no_replace(root, src, path) or _names_claim(root, path, claim):
            return path
    raise AssertionError("unreachable")


def _quote(text: str, limit: int = 2000) -> str:
    text = text if len(text) <= limit else text[:limit].rstrip() + " …"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def render_answer(plan: ClaimPlan, result: TurnResult, query: str) -> str:
    context = result.context_path.removesuffix(".md")
    link = f"[[{context}|{result.doc_id}]]"
    query_link = f"[[{plan.query_file}|{Path(plan.query_file or '').name}]]"
    front = {
        "doc_id": result.doc_id,
        "turn_id": result.turn,
        "user": result.user,
        "outcome": result.outcome,
        "context": link,
        "context_path": result.context_path,
        "query_file": plan.query_file,
        "source": plan.source,
        "claim": plan.claim,
        "answered_at": utcnow(),
    }
    body = (
        f"# Answer to {Path(plan.source).name}\n\n"
        f"{_quote(query)}\n\n"
        f"{result.answer.strip()}\n\n"
        f"---\n"
        f"Outcome **{result.outcome}** · turn {link} · query {query_link}\n"
    )
    return render_document(front, body)


def render_error(plan: ClaimPlan) -> str:
    name = Path(plan.source).name
    front = {
        "rejected_file": plan.rejected,
        "source": plan.source,
        "reason": plan.reason,
        "claim": plan.claim,
        "rejected_at": utcnow(),
    }
    if not plan.keep:
        del front["rejected_file"]
    body = f"# `{name}` was not processed\n\n**Why:** {plan.message}.\n\n**What to do:** {plan.hint}\n\n" + (
        f"The file itself is kept, unchanged, as `{plan.rejected}`.\n"
        if plan.keep
        else "Nothing of it was read or kept: the inbox only removed its own name for it.\n"
    )
    return render_document(front, body)
