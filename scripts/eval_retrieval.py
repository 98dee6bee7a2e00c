"""Score `pandafs search` on our own retrieval set (benchmarks/retrieval/).

    python scripts/eval_retrieval.py [--data DIR] [--k 5] [--json] [--keep VAULT] [--pandafs CMD]

Steps: generate the dataset if `--data` is not given (default settings, temp dir);
`pandafs --root V init`; `pandafs --root V import-turns conversations.jsonl --json`;
one `pandafs --root V search --batch FILE --json` over every question (one JSON line
per question, in order); then score.

Why a separate process per step: the benchmark measures the CLI contract other
tools rely on (DESIGN §8), not a library shortcut, and the times it reports are
what a user of the CLI sees.

Metrics (abstention questions excluded): turn level — recall@1, recall@k (a
question is a hit if ANY evidence turn is in the top k), all-evidence recall@k
(every evidence turn in the top k; differs from recall@k only for multi_hop) and
MRR (rank of the first evidence turn among the returned hits); day level — the
same over the hits' days, deduplicated in rank order, against `evidence_days`.
For abstention questions the mean top-1 score is reported next to that of
answerable ones, with the threshold that best separates the two.

Output: a table, then, last, one JSON line `{"benchmark": "retrieval", ...}`.
With `--json` only that line is printed on stdout.  Exit 0 on success, 1 when a
pandafs step fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "QuestionScore",
    "aggregate",
    "hit_day",
    "hit_turn",
    "main",
    "score_question",
    "summarise",
]

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "benchmarks" / "retrieval" / "make_dataset.py"
KINDS = ("single_fact", "preference", "temporal", "multi_hop", "knowledge_update")
SEARCH_LIMIT = 10


class StepFailed(Exception):
    """A pandafs command failed or printed something that breaks the contract."""


# --------------------------------------------------------------------------- scoring


def hit_turn(hit: dict[str, Any]) -> str | None:
    """The turn a hit stands for: its `external_id`, or None (not an imported turn)."""
    value = hit.get("external_id")
    return value if isinstance(value, str) and value else None


def hit_day(hit: dict[str, Any]) -> str | None:
    """The day a hit belongs to: `meta["day"]`, else the date part of `created_at`."""
    meta = hit.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("day"), str) and meta["day"]:
        return meta["day"][:10]
    created = hit.get("created_at")
    return created[:10] if isinstance(created, str) and len(created) >= 10 else None


def _first_rank(ranked: Sequence[str | None], wanted: set[str]) -> int | None:
    return next((i for i, item in enumerate(ranked, 1) if item in wanted), None)


@dataclass(frozen=True)
class QuestionScore:
    qid: str
    kind: str
    needs_neighbour: bool
    rank: int | None  # 1-based rank of the first evidence turn among the hits
    all_rank: int | None  # rank by which every evidence turn has appeared
    day_rank: int | None  # 1-based rank of the first evidence day among distinct days
    top_score: float | None
    foreign: int  # hits whose external_id belongs to another user
    error: bool


def score_question(question: dict[str, Any], hits: list[dict[str, Any]] | None) -> QuestionScore:
    """Where the evidence of one question turned up in its hit list (None = error line)."""
    error = hits is None
    hits = hits or []
    turns = [hit_turn(h) for h in hits]
    evidence = set(question.get("evidence") or [])
    all_rank = None
    if evidence:
        positions = [_first_rank(turns, {e}) for e in evidence]
        all_rank = None if None in positions else max(p for p in positions if p is not None)
    days: list[str | None] = []
    for day in (hit_day(h) for h in hits):
        if day not in days:
            days.append(day)
    score = hits[0].get("score") if hits else None
    prefix = f"{question['user']}-"
    return QuestionScore(
        qid=question["qid"],
        kind=question["kind"],
        needs_neighbour=bool(question.get("needs_neighbour")),
        rank=_first_rank(turns, evidence),
        all_rank=all_rank,
        day_rank=_first_rank(days, set(question.get("evidence_days") or [])),
        top_score=float(score) if isinstance(score, int | float) else None,
        foreign=sum(1 for t in turns if t is not None and not t.startswith(prefix)),
        error=error,
    )


def aggregate(scores: Iterable[QuestionScore], k: int) -> dict[str, float | int]:
    """Recall@1, recall@k, all-evidence recall@k and MRR, at turn and day level."""
    rows = list(scores)
    n = len(rows)

    def share(test) -> float:
        return round(sum(1 for r in rows if test(r)) / n, 4) if n else 0.0

    def mrr(attr: str) -> float:
        ranks = [getattr(r, attr) for r in rows]
        return round(sum(1 / x for x in ranks if x) / n, 4) if n else 0.0

    return {
        "n": n,
        "recall@1": share(lambda r: r.rank == 1),
        f"recall@{k}": share(lambda r: r.rank is not None and r.rank <= k),
        f"all_recall@{k}": share(lambda r: r.all_rank is not None and r.all_rank <= k),
        "mrr": mrr("rank"),
        "day_recall@1": share(lambda r: r.day_rank == 1),
        f"day_recall@{k}": share(lambda r: r.day_rank is not None and r.day_rank <= k),
        "day_mrr": mrr("day_rank"),
    }


def _threshold(answerable: list[float | None], abstain: list[float | None]) -> dict[str, Any]:
    """The top-1 score cut that best tells answerable from abstention questions."""
    if not answerable or not abstain:
        return {"threshold": None, "balanced_accuracy": None}
    low = float("-inf")
    pos = [low if s is None else s for s in answerable]
    neg = [low if s is None else s for s in abstain]
    best = (0.0, None)
    for cut in sorted({s for s in pos + neg if s != low}):
        tpr = sum(s >= cut for s in pos) / len(pos)
        tnr = sum(s < cut for s in neg) / len(neg)
        best = max(best, ((tpr + tnr) / 2, cut), key=lambda b: b[0])
    return {"threshold": best[1], "balanced_accuracy": round(best[0], 4)}


def summarise(
    questions: list[dict[str, Any]], hit_lists: list[list[dict[str, Any]] | None], k: int
) -> dict[str, Any]:
    """All metrics for one run: overall, per kind, by needs_neighbour, and abstention."""
    scores = [score_question(q, h) for q, h in zip(questions, hit_lists, strict=True)]
    answerable = [s for s in scores if s.kind != "abstention"]
    abstain = [s for s in scores if s.kind == "abstention"]
    kinds = [k_ for k_ in KINDS if any(s.kind == k_ for s in answerable)]
    kinds += sorted({s.kind for s in answerable} - set(KINDS))

    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(statistics.fmean(present), 4) if present else None

    def median(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(statistics.median(present), 4) if present else None

    pos = [s.top_score for s in answerable]
    neg = [s.top_score for s in abstain]
    return {
        "overall": aggregate(answerable, k),
        "by_kind": {kind: aggregate([s for s in answerable if s.kind == kind], k) for kind in kinds},
        "needs_neighbour": aggregate([s for s in answerable if s.needs_neighbour], k),
        "direct": aggregate([s for s in answerable if not s.needs_neighbour], k),
        "abstention": {
            "n": len(abstain),
            "mean_top1_score": mean(neg),
            "median_top1_score": median(neg),
            "no_hits": sum(1 for s in neg if s is None),
            "answerable_mean_top1_score": mean(pos),
            "answerable_median_top1_score": median(pos),
            "answerable_no_hits": sum(1 for s in pos if s is None),
            **_threshold(pos, neg),
        },
        "errors": sum(1 for s in scores if s.error),
        "foreign_hits": sum(s.foreign for s in scores),
    }


# --------------------------------------------------------------------------- running


def _pandafs_command() -> list[str]:
    """The `pandafs` installed next to this Python, else `python -m pandafs`."""
    script = Path(sys.executable).with_name("pandafs")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pandafs"]


def _run(command: list[str], what: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        message = (done.stderr or done.stdout).strip().splitlines()
        raise StepFailed(f"{what} failed (exit {done.returncode}): {' | '.join(message[-3:])}")
    return done


def _generate(out: Path) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("make_dataset", GENERATOR)
    if spec is None or spec.loader is None:
        raise StepFailed(f"cannot load {GENERATOR}")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_dataset", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.generate(out)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _parse_batch(stdout: str, expected: int) -> list[list[dict[str, Any]] | None]:
    """One hit list per question; None for an `{"error": ...}` line."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        docs = [json.loads(line) for line in lines]
    except json.JSONDecodeError as exc:
        raise StepFailed(f"search --batch printed something that is not JSON: {exc}") from exc
    if len(docs) == 1 and expected != 1 and isinstance(docs[0], list):
        docs = docs[0]  # tolerate one JSON array of hit lists
    if len(docs) != expected:
        raise StepFailed(f"search --batch printed {len(docs)} results for {expected} queries")
    out: list[list[dict[str, Any]] | None] = []
    for doc in docs:
        if isinstance(doc, dict) and "hits" in doc:
            doc = doc["hits"]
        if isinstance(doc, list):
            out.append([h for h in doc if isinstance(h, dict)])
        else:
            out.append(None)
    return out


def _progress(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


def evaluate(
    data: Path,
    vault: Path,
    scratch: Path,
    k: int,
    verbose: bool = False,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """Import the conversations into `vault`, run the batch search, return the report."""
    pandafs = [*(command or _pandafs_command()), "--root", str(vault)]
    conversations = data / "conversations.jsonl"
    questions = _read_jsonl(data / "questions.jsonl")
    with open(conversations, encoding="utf-8") as handle:
        n_turns = sum(1 for line in handle if line.strip())

    if not (vault / "pandafs.toml").exists():
        _run([*pandafs, "init"], "init")
    _progress(verbose, f"importing {n_turns} turns ...")
    started = time.perf_counter()
    done = _run([*pandafs, "import-turns", str(conversations), "--json"], "import-turns")
    import_seconds = time.perf_counter() - started
    try:
        imported = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise StepFailed(f"import-turns --json printed no JSON: {done.stdout[:200]!r}") from exc
    failed = imported.get("failed") or []
    if failed:
        _progress(True, f"warning: {len(failed)} lines failed to import, first: {failed[0]}")

    batch = scratch / "search-batch.jsonl"
    with open(batch, "w", encoding="utf-8") as handle:
        for q in questions:
            line = {"query": q["question"], "user": q["user"], "limit": max(SEARCH_LIMIT, k)}
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    _progress(verbose, f"searching {len(questions)} questions in one batch ...")
    started = time.perf_counter()
    done = _run([*pandafs, "search", "--batch", str(batch), "--json"], "search --batch")
    search_seconds = time.perf_counter() - started
    if done.returncode != 0 and not done.stdout.strip():
        raise StepFailed(f"search --batch failed: {done.stderr.strip()[:300]}")
    hit_lists = _parse_batch(done.stdout, len(questions))

    report: dict[str, Any] = {
        "benchmark": "retrieval",
        "k": k,
        "users": len({q["user"] for q in questions}),
        "turns": n_turns,
        "questions": len(questions),
        "answerable": sum(1 for q in questions if q["kind"] != "abstention"),
        "import": {
            "imported": imported.get("imported"),
            "skipped": imported.get("skipped"),
            "failed": len(failed),
            "reported_seconds": imported.get("seconds"),
        },
        "import_seconds": round(import_seconds, 3),
        "search_seconds": round(search_seconds, 3),
        "search_ms_per_query": round(1000 * search_seconds / max(1, len(questions)), 3),
    }
    report.update(summarise(questions, hit_lists, k))
    return report


def render(report: dict[str, Any]) -> str:
    """The human-readable table."""
    k = report["k"]
    cols = ["recall@1", f"recall@{k}", f"all_recall@{k}", "mrr"]
    cols += ["day_recall@1", f"day_recall@{k}", "day_mrr"]
    heads = ["R@1", f"R@{k}", f"allR@{k}", "MRR", "dR@1", f"dR@{k}", "dMRR"]
    imp = report["import"]
    rate = report["turns"] / report["import_seconds"] if report["import_seconds"] else 0.0
    lines = [
        f"PandaFS retrieval benchmark: {report['turns']} turns, {report['questions']} questions "
        f"({report['answerable']} answerable) from {report['users']} users, k={k}",
        f"import: {imp['imported']} imported, {imp['skipped']} skipped, {imp['failed']} failed "
        f"in {report['import_seconds']:.2f} s ({rate:.0f} turns/s incl. process start)",
        f"search: {report['questions']} queries in one batch in {report['search_seconds']:.2f} s "
        f"({report['search_ms_per_query']:.1f} ms/query incl. process start)",
        "",
        f"{'':18}{'n':>5}" + "".join(f"{h:>8}" for h in heads),
    ]

    def row(label: str, metrics: dict[str, Any]) -> str:
        return f"{label:18}{metrics['n']:>5}" + "".join(f"{metrics[c]:>8.3f}" for c in cols)

    for kind, metrics in report["by_kind"].items():
        lines.append(row(kind, metrics))
    lines.append(row("answerable", report["overall"]))
    lines.append(row("  needs_neighbour", report["needs_neighbour"]))
    lines.append(row("  direct", report["direct"]))
    ab = report["abstention"]

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    lines += [
        "",
        "R = any evidence turn in the top k; allR = every evidence turn in the top k; "
        "d = by day (distinct days in rank order).",
        f"abstention ({ab['n']} questions): mean top-1 score {num(ab['mean_top1_score'])} "
        f"(median {num(ab['median_top1_score'])}, {ab['no_hits']} with no hits) vs answerable "
        f"{num(ab['answerable_mean_top1_score'])} (median "
        f"{num(ab['answerable_median_top1_score'])})",
        f"best top-1 threshold {num(ab['threshold'])} -> balanced accuracy {num(ab['balanced_accuracy'])}",
    ]
    if report["errors"] or report["foreign_hits"]:
        lines.append(
            f"problems: {report['errors']} error lines, {report['foreign_hits']} hits from other users"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="dataset folder (default: generate one into a temp dir)")
    parser.add_argument("--k", type=int, default=5, help="cut-off for recall@k (default 5)")
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument("--keep", type=Path, metavar="VAULT", help="build the vault here and keep it")
    parser.add_argument(
        "--pandafs",
        metavar="CMD",
        help="command that runs pandafs (default: the one installed next to this Python)",
    )
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be at least 1")
    if args.data is not None and not (
        (args.data / "conversations.jsonl").is_file() and (args.data / "questions.jsonl").is_file()
    ):
        parser.error(f"{args.data} has no conversations.jsonl and questions.jsonl")

    verbose = not args.json
    work = Path(tempfile.mkdtemp(prefix="pandafs-eval-"))
    try:
        data = args.data
        if data is None:
            data = work / "data"
            _progress(verbose, f"generating the dataset into {data} ...")
            _generate(data)
        vault = args.keep.resolve() if args.keep else work / "vault"
        vault.parent.mkdir(parents=True, exist_ok=True)
        command = shlex.split(args.pandafs) if args.pandafs else None
        report = evaluate(data, vault, work, args.k, verbose, command)
    except (StepFailed, OSError, ValueError, KeyError) as exc:
        print(f"eval_retrieval: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not args.json:
        print(render(report))
        if args.keep:
            print(f"vault kept at {args.keep}")
    print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
