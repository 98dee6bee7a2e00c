"""Score `pandafs search` on real and generated conversations, beside plain BM25 baselines.

    python benchmarks/eval_retrieval.py [--set all|real|longmemeval|locomo|locomo-pairs|ours] [--data DIR]
        [--lme DIR] [--locomo FILE] [--limit N] [--k 5] [--json] [--keep DIR] [--pandafs CMD] [--gap-episodes]
        [--search KEY=VALUE]...

Four sets, one procedure (`all` is every set, `real` all but ours):

- **longmemeval**: the shared LongMemEval-S development split (`--lme`, default
  `../shared/data/longmemeval-dev` beside the repository; read its README).  Each
  question is its own user; its haystack becomes import lines, one turn per
  user/assistant pair (an assistant message before any user message is a turn of its
  own), timestamped from the session's date (one minute apart, in order), with the
  session id in `meta.session` and `external_id` `{session}-t{n}`.  A session listed
  twice is imported once (same external id).  Evidence: `answer_session_ids`, and at
  turn level the turns holding a `has_answer` message.
- **locomo**: LoCoMo (`--locomo`, default `benchmarks/data/locomo/locomo10.jsonl.gz`;
  read its README): ten long conversations between two people, 19-32 sessions each.
  Each conversation is its own user; each utterance is one turn (`query` is
  `Speaker: text`, with a shared photo's caption; `response` empty), timestamped from
  its session's date one minute apart, `meta.session` `{conversation}-s{n}`.
  Evidence: the sessions and turns of the question's `evidence` dialogue ids.  Asked a
  day after the conversation's last session.  Types are the release's categories, named
  as in its evaluation code: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
  5 adversarial (a question about the other speaker; its evidence is labelled, so it
  is scored).  Questions without a parsable evidence id are left out.
- **locomo-pairs**: the same conversations with two consecutive utterances per turn
  (the first as `query`, the second as `response`), as a chat import of a two-person
  log would make them: the same evidence sessions, turns half as many and twice as long.
- **ours**: the generated set of `benchmarks/retrieval` (`--data`, else generated into a
  temp dir); evidence sessions are the sessions of the evidence turns.

For each set: `pandafs --root V init`; `pandafs --root V import-turns FILE --json`; one
`pandafs --root V search --batch FILE --json` over every question, each searched as
of its own date (`now`: LongMemEval's `question_date`; ours: a day after the user's
last turn); `--search KEY=VALUE` sets `[search]` values in the vault's pandafs.toml
first (the on/off switches of the lexical resources, for instance).  In the same run
three plain baselines see the same turns, per question's user, through tantivy's
`en_stem` BM25 and nothing else (the question's words OR-ed): whole sessions as
documents; turns as documents, collapsed to sessions in rank order; ±2-turn windows
of a session as documents, collapsed likewise.  One more row, `rrf_sessions`, fuses
PandaFS's session ranking with `bm25_sessions` by reciprocal rank fusion (k = 60): what
whole-session BM25 would add as a second candidate source.  Under each table, PandaFS's
recall_all@k minus each other row's, overall, with a paired bootstrap interval over the
questions (2,000 resamples, seed 7).

Metrics, per question type and overall, abstention questions apart (as LongMemEval's
own evaluation does): at session level recall_all@k (every evidence session in the top
k sessions), recall_any@k, recall_all@10, NDCG@k (binary relevance) and MRR; at turn
level (questions with labelled evidence turns) turn_any@k, turn_all@k and turn_mrr.
A hit list is turned into a session ranking by its hits' `meta.session`, distinct, in
rank order.

`--gap-episodes` imports the turns without their session id (it is kept in
`meta.source_session`, which no search reads): episodes then come from the time-gap
rule, as for the pipeline's own turns, which carry no session.  LongMemEval's sessions
of one day start at the same minute, so a day becomes one run of overlapping turns:
the worst case of that rule on real text.

Output: a table per set, then, last, one JSON line `{"benchmark": "retrieval", ...}`.
With `--json` only that line is printed.  Exit 0 on success, 1 when a pandafs step
fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import math
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "Dataset",
    "Question",
    "hit_session",
    "hit_turn",
    "load_locomo",
    "load_longmemeval",
    "load_ours",
    "main",
    "rank_metrics",
    "summarise",
]

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "benchmarks" / "retrieval" / "make_dataset.py"
DEFAULT_LME = ROOT.parent / "shared" / "data" / "longmemeval-dev"
DEFAULT_LOCOMO = ROOT / "benchmarks" / "data" / "locomo" / "locomo10.jsonl.gz"
LOCOMO_KINDS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SEARCH_LIMIT = 50
"""Turns asked for per question: enough to fill 10 distinct sessions."""
WINDOW = 2
SETS = ("longmemeval", "locomo", "locomo-pairs", "ours")
BASELINES = ("bm25_sessions", "bm25_turns", "bm25_windows")
OUR_KINDS = ("single_fact", "preference", "temporal", "multi_hop", "knowledge_update")


class StepFailed(Exception):
    """A pandafs command failed or printed something that breaks the contract."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Question:
    qid: str
    user: str
    kind: str
    text: str
    now: str  # ISO-8601 UTC: the question is asked as of this moment
    sessions: frozenset[str]
    turns: frozenset[str]
    abstention: bool


@dataclass(frozen=True)
class Dataset:
    name: str
    lines: list[dict[str, Any]]  # import-turns lines, each with meta.session
    questions: list[Question]


def _iso(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _lme_date(text: str) -> datetime:
    """`2023/05/30 (Tue) 20:42` → an aware datetime (the set's dates carry no zone: UTC)."""
    day, _, clock = text.partition(")")
    return datetime.strptime(f"{day.split(' (')[0]} {clock.strip()}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def _lme_user(qid: str) -> str:
    return "q-" + re.sub(r"[^a-z0-9_-]", "-", qid.lower())[:60]


def load_longmemeval(folder: Path, limit: int | None = None) -> Dataset:
    """LongMemEval questions → import lines and questions (see the module docstring)."""
    lines: list[dict[str, Any]] = []
    questions: list[Question] = []
    with gzip.open(folder / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(raw) for raw in handle if raw.strip()]
    for q in _spread(rows, limit):
        user = _lme_user(q["question_id"])
        evidence_turns: set[str] = set()
        seen: set[str] = set()
        for sid, date, session in zip(
            q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
        ):
            if sid in seen:
                continue  # the same session listed twice: one copy
            seen.add(sid)
            start = _lme_date(date)
            for n, (query, response, labelled) in enumerate(_pairs(session)):
                external = f"{sid}-t{n:03d}"
                if labelled:
                    evidence_turns.add(external)
                lines.append(
                    {
                        "user": user,
                        "external_id": external,
                        "timestamp": _iso(start + timedelta(minutes=n)),
                        "query": query,
                        "response": response,
                        "meta": {"session": sid},
                    }
                )
        questions.append(
            Question(
                qid=q["question_id"],
                user=user,
                kind=q["question_type"],
                text=q["question"],
                now=_iso(_lme_date(q["question_date"])),
                sessions=frozenset(q["answer_session_ids"]),
                turns=frozenset(evidence_turns),
                abstention=q["question_id"].endswith("_abs"),
            )
        )
    return Dataset("longmemeval", lines, questions)


def _locomo_date(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` → an aware datetime (no zone given: UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_locomo(path: Path, limit: int | None = None, pairs: bool = False) -> Dataset:
    """LoCoMo conversations → import lines and questions (see the module docstring);
    with `pairs`, two consecutive utterances make one turn (`locomo-pairs`)."""
    lines: list[dict[str, Any]] = []
    rows: list[Question] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        samples = [json.loads(raw) for raw in handle if raw.strip()]
    for sample in samples:
        user = "locomo-" + re.sub(r"[^a-z0-9_-]", "-", sample["sample_id"].lower())
        turn_of: dict[str, str] = {}  # utterance id → the turn that holds it
        last = datetime.min.replace(tzinfo=UTC)
        for session in sample["sessions"]:
            sid = f"{sample['sample_id']}-s{session['session']}"
            start = _locomo_date(session["date_time"])
            last = max(last, start)
            step = 2 if pairs else 1
            utterances = session["turns"]
            for n in range(0, len(utterances), step):
                said = []
                for turn in utterances[n : n + step]:
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" (shares {turn['blip_caption']})"
                    said.append(text)
                    turn_of[turn["dia_id"]] = (
                        f"{sample['sample_id']}-{utterances[n]['dia_id'].replace(':', '-')}"
                    )
                lines.append(
                    {
                        "user": user,
                        "external_id": turn_of[utterances[n]["dia_id"]],
                        "timestamp": _iso(start + timedelta(minutes=n // step)),
                        "query": said[0],
                        "response": said[1] if len(said) > 1 else "",
                        "meta": {"session": sid},
                    }
                )
        now = _iso(last + timedelta(days=1))
        for i, q in enumerate(sample["qa"]):
            ids = re.findall(r"D(\d+):(\d+)", " ".join(q["evidence"]))
            if not ids:
                continue
            turns = {turn_of[f"D{s}:{t}"] for s, t in ids if f"D{s}:{t}" in turn_of}
            rows.append(
                Question(
                    qid=f"{sample['sample_id']}-q{i:03d}",
                    user=user,
                    kind=LOCOMO_KINDS.get(q["category"], str(q["category"])),
                    text=q["question"],
                    now=now,
                    sessions=frozenset(f"{sample['sample_id']}-s{s}" for s, _ in ids),
                    turns=frozenset(turns),
                    abstention=False,
                )
            )
    questions = _spread(rows, limit)
    users = {q.user for q in questions}
    return Dataset(
        "locomo-pairs" if pairs else "locomo", [line for line in lines if line["user"] in users], questions
    )


def _spread(rows: list[Any], limit: int | None) -> list[Any]:
    """`limit` rows evenly spaced over `rows` (a set sorted by type keeps every type)."""
    if limit is None or limit >= len(rows):
        return rows
    return [rows[i * len(rows) // limit] for i in range(limit)]


def _pairs(session: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """(user message, assistant reply, holds evidence) per turn of one session."""
    out: list[list[Any]] = []
    for message in session:
        content = str(message.get("content") or "").strip()
        if not content:
            continue
        labelled = bool(message.get("has_answer"))
        if message.get("role") == "user" or not out:
            query, response = (content, "") if message.get("role") == "user" else ("(assistant)", content)
            out.append([query, response, labelled])
        else:
            out[-1][1] = f"{out[-1][1]}\n\n{content}".strip()
            out[-1][2] = out[-1][2] or labelled
    return [(q, r, bool(h)) for q, r, h in out]


def _generate(out: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_dataset", GENERATOR)
    if spec is None or spec.loader is None:
        raise StepFailed(f"cannot load {GENERATOR}")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_dataset", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    module.generate(out)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_ours(folder: Path, limit: int | None = None) -> Dataset:
    """Our generated set: the import lines as they are; evidence sessions from evidence turns."""
    lines = _read_jsonl(folder / "conversations.jsonl")
    session_of = {line["external_id"]: line_session(line) for line in lines}
    last: dict[str, str] = {}
    for line in lines:
        last[line["user"]] = max(last.get(line["user"], ""), line["timestamp"])
    questions = []
    for q in _spread(_read_jsonl(folder / "questions.jsonl"), limit):
        now = datetime.fromisoformat(last[q["user"]].replace("Z", "+00:00")) + timedelta(days=1)
        questions.append(
            Question(
                qid=q["qid"],
                user=q["user"],
                kind=q["kind"],
                text=q["question"],
                now=_iso(now),
                sessions=frozenset(session_of[e] for e in q["evidence"]),
                turns=frozenset(q["evidence"]),
                abstention=q["kind"] == "abstention",
            )
        )
    users = {q.user for q in questions}
    return Dataset("ours", [line for line in lines if line["user"] in users], questions)


# --------------------------------------------------------------------------- scoring


def hit_turn(hit: dict[str, Any]) -> str | None:
    """The turn a hit stands for: its `external_id`, or None (not an imported turn)."""
    value = hit.get("external_id")
    return value if isinstance(value, str) and value else None


SOURCE_SESSION = "source_session"
"""Where `--gap-episodes` keeps a line's session id: not a session key (`events.doctypes`)."""


def line_session(line: dict[str, Any]) -> str:
    """The session of an import line, with or without `--gap-episodes`."""
    meta = line["meta"]
    return meta["session"] if "session" in meta else meta[SOURCE_SESSION]


def without_sessions(dataset: Dataset) -> Dataset:
    """The same set with each line's session id moved out of the keys a search reads."""
    lines = [{**line, "meta": {SOURCE_SESSION: line_session(line)}} for line in dataset.lines]
    return Dataset(dataset.name, lines, dataset.questions)


def hit_session(hit: dict[str, Any]) -> str | None:
    """The session a hit belongs to: `meta.session` (or `meta.source_session`), else its
    episode, else None."""
    meta = hit.get("meta")
    if isinstance(meta, dict):
        for key in ("session", SOURCE_SESSION):
            if isinstance(meta.get(key), str):
                return meta[key]
    episode = hit.get("episode")
    return episode if isinstance(episode, str) else None


def _distinct(items: Iterable[str | None]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item is not None and item not in out:
            out.append(item)
    return out


def rank_metrics(ranked: Sequence[str], wanted: frozenset[str], k: int) -> dict[str, float]:
    """recall_all@k, recall_any@k, recall_all@10, NDCG@k, MRR of one ranking."""
    top = set(ranked[:k])
    first = next((i for i, item in enumerate(ranked, 1) if item in wanted), None)
    dcg = sum(1 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(wanted))))
    return {
        f"all@{k}": float(wanted <= top),
        f"any@{k}": float(bool(wanted & top)),
        "all@10": float(wanted <= set(ranked[:10])),
        f"ndcg@{k}": dcg / ideal if ideal else 0.0,
        "mrr": 1 / first if first else 0.0,
    }


RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack, Clarke & Büttcher, SIGIR 2009)."""


def fuse(rankings: Sequence[Sequence[str]]) -> list[str]:
    """Reciprocal rank fusion: Σ 1/(RRF_K + rank) per item; ties keep the first ranking's order."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            score[item] = score.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(score, key=lambda item: -score[item])


def bootstrap(diffs: list[int], resamples: int, seed: int) -> tuple[float, float, float]:
    """Mean of paired per-question differences and its 95 % percentile interval over
    `resamples` resamples of the questions with replacement (a paired bootstrap)."""
    n = len(diffs)
    if n == 0:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    return sum(diffs) / n, means[int(0.025 * (resamples - 1))], means[int(0.975 * (resamples - 1))]


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}


def _question_metrics(q: Question, sessions: list[str], turns: list[str] | None, k: int) -> dict[str, float]:
    row = rank_metrics(sessions, q.sessions, k)
    if turns is not None and q.turns:
        t = rank_metrics(turns, q.turns, k)
        row |= {f"turn_any@{k}": t[f"any@{k}"], f"turn_all@{k}": t[f"all@{k}"], "turn_mrr": t["mrr"]}
    return row


def summarise(
    questions: list[Question],
    rankings: list[tuple[list[str], list[str] | None]],
    k: int,
    kinds: Sequence[str],
) -> dict[str, Any]:
    """Per-kind and overall means over answerable questions; turn metrics where labelled."""
    per: dict[str, list[dict[str, float]]] = {}
    turn_per: dict[str, list[dict[str, float]]] = {}
    for q, (sessions, turns) in zip(questions, rankings, strict=True):
        if q.abstention:
            continue
        row = _question_metrics(q, sessions, turns, k)
        session_part = {key: v for key, v in row.items() if not key.startswith("turn_")}
        turn_part = {key: v for key, v in row.items() if key.startswith("turn_")}
        for key in (q.kind, "overall"):
            per.setdefault(key, []).append(session_part)
            if turn_part:
                turn_per.setdefault(key, []).append(turn_part)
    order = [kd for kd in kinds if kd in per] + sorted(set(per) - set(kinds) - {"overall"}) + ["overall"]
    return {
        key: {"n": len(per.get(key, [])), **_mean(per.get(key, [])), **_mean(turn_per.get(key, []))}
        for key in order
        if key in per
    }


# --------------------------------------------------------------------------- baselines


class PlainBM25:
    """Plain tantivy `en_stem` BM25 over (key, body) documents, in memory: the baselines' engine."""

    def __init__(self, docs: Iterable[tuple[str, str]]) -> None:
        import tantivy

        self._tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("key", stored=True, tokenizer_name="raw")
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self._schema = builder.build()
        self._analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer("english"))
            .build()
        )
        self._index = tantivy.Index(self._schema)
        writer = self._index.writer(heap_size=15_000_000, num_threads=1)
        for key, body in docs:
            writer.add_document(tantivy.Document(key=key, body=body))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    def search(self, text: str, n: int) -> list[str]:
        """The keys of the `n` best documents for any of `text`'s words."""
        tantivy = self._tantivy
        terms = list(dict.fromkeys(self._analyzer.analyze(text)))
        if not terms:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "body", t)) for t in terms]
        )
        searcher = self._index.searcher()
        return [searcher.doc(a)["key"][0] for _, a in searcher.search(query, n).hits]


def _baseline_rankings(dataset: Dataset) -> dict[str, list[tuple[list[str], list[str] | None]]]:
    """Plain tantivy `en_stem` BM25 per question's user, three ways (see the docstring)."""
    by_user: dict[str, list[dict[str, Any]]] = {}
    for line in dataset.lines:
        by_user.setdefault(line["user"], []).append(line)
    out: dict[str, list[tuple[list[str], list[str] | None]]] = {name: [] for name in BASELINES}
    cache: dict[str, tuple[PlainBM25, PlainBM25, PlainBM25, dict[str, str]]] = {}
    for q in dataset.questions:
        if q.user not in cache:
            sessions: dict[str, list[dict[str, Any]]] = {}
            for line in by_user.get(q.user, []):
                sessions.setdefault(line_session(line), []).append(line)
            text = {ln["external_id"]: f"{ln['query']}\n{ln['response']}" for ln in by_user.get(q.user, [])}
            session_of = {ln["external_id"]: line_session(ln) for ln in by_user.get(q.user, [])}
            windows = []
            for turns in sessions.values():
                for i, ln in enumerate(turns):
                    around = turns[max(0, i - WINDOW) : i + WINDOW + 1]
                    windows.append((ln["external_id"], "\n".join(text[t["external_id"]] for t in around)))
            cache.clear()  # one user at a time: questions of a user are consecutive
            cache[q.user] = (
                PlainBM25((s, "\n".join(text[t["external_id"]] for t in ts)) for s, ts in sessions.items()),
                PlainBM25(text.items()),
                PlainBM25(windows),
                session_of,
            )
        whole, turns_index, window_index, session_of = cache[q.user]
        out["bm25_sessions"].append((whole.search(q.text, 50), None))
        for name, index in (("bm25_turns", turns_index), ("bm25_windows", window_index)):
            turns = index.search(q.text, 400)
            out[name].append((_distinct(session_of[t] for t in turns), turns))
    return out


# --------------------------------------------------------------------------- running pandafs


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


def _parse_batch(stdout: str, expected: int) -> list[list[dict[str, Any]] | None]:
    """One hit list per question; None for an `{"error": ...}` line."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        docs = [json.loads(line) for line in lines]
    except json.JSONDecodeError as exc:
        raise StepFailed(f"search --batch printed something that is not JSON: {exc}") from exc
    if len(docs) != expected:
        raise StepFailed(f"search --batch printed {len(docs)} results for {expected} queries")
    return [[h for h in doc if isinstance(h, dict)] if isinstance(doc, list) else None for doc in docs]


def _set_search_options(vault: Path, options: dict[str, str]) -> None:
    """Write `[search]` KEY = VALUE into the vault's pandafs.toml (replacing the line)."""
    config = vault / "pandafs.toml"
    text = config.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n[search]\n")
    if not sep:
        raise StepFailed(f"{config} has no [search] section")
    section, nxt, tail = rest.partition("\n[")
    for key, value in options.items():
        line = f"{key} = {value}"
        section, found = re.subn(rf"(?m)^#?\s*{re.escape(key)}\s*=.*$", line, section)
        if not found:
            section = f"{line}\n{section}"
    config.write_text(head + sep + section + nxt + tail, encoding="utf-8")


def _progress(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


def run_pandafs(
    dataset: Dataset,
    vault: Path,
    scratch: Path,
    options: dict[str, str],
    verbose: bool,
    command: list[str] | None = None,
) -> tuple[list[list[dict[str, Any]] | None], dict[str, Any]]:
    """Import the set's turns into `vault`, search every question in one batch."""
    pandafs = [*(command or _pandafs_command()), "--root", str(vault)]
    if not (vault / "pandafs.toml").exists():
        _run([*pandafs, "init"], "init")
    if options:
        _set_search_options(vault, options)
    source = scratch / f"{dataset.name}-turns.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        for line in dataset.lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    _progress(verbose, f"{dataset.name}: importing {len(dataset.lines)} turns ...")
    started = time.perf_counter()
    done = _run([*pandafs, "import-turns", str(source), "--json"], "import-turns")
    import_seconds = time.perf_counter() - started
    try:
        imported = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise StepFailed(f"import-turns --json printed no JSON: {done.stdout[:200]!r}") from exc
    failed = imported.get("failed") or []
    if failed:
        _progress(True, f"warning: {len(failed)} lines failed to import, first: {failed[0]}")
    batch = scratch / f"{dataset.name}-batch.jsonl"
    with open(batch, "w", encoding="utf-8") as handle:
        for q in dataset.questions:
            line = {"query": q.text, "user": q.user, "limit": SEARCH_LIMIT, "now": q.now}
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    _progress(verbose, f"{dataset.name}: searching {len(dataset.questions)} questions ...")
    started = time.perf_counter()
    done = _run([*pandafs, "search", "--batch", str(batch), "--json"], "search --batch")
    search_seconds = time.perf_counter() - started
    if done.returncode != 0 and not done.stdout.strip():
        raise StepFailed(f"search --batch failed: {done.stderr.strip()[:300]}")
    hit_lists = _parse_batch(done.stdout, len(dataset.questions))
    info = {
        "turns": len(dataset.lines),
        "imported": imported.get("imported"),
        "skipped": imported.get("skipped"),
        "failed": len(failed),
        "import_seconds": round(import_seconds, 3),
        "search_ms_per_query": round(1000 * search_seconds / max(1, len(dataset.questions)), 3),
        "errors": sum(1 for h in hit_lists if h is None),
    }
    return hit_lists, info


def evaluate(
    dataset: Dataset,
    vault: Path,
    scratch: Path,
    k: int,
    options: dict[str, str],
    verbose: bool = False,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """PandaFS and the baselines on one set: the report of that set."""
    hit_lists, info = run_pandafs(dataset, vault, scratch, options, verbose, command)
    foreign = 0
    ours: list[tuple[list[str], list[str] | None]] = []
    for q, hits in zip(dataset.questions, hit_lists, strict=True):
        hits = hits or []
        foreign += sum(1 for h in hits if h.get("user") not in (q.user, None))
        turns = [t for t in (hit_turn(h) for h in hits) if t is not None]
        ours.append((_distinct(hit_session(h) for h in hits), turns))
    kinds = OUR_KINDS if dataset.name == "ours" else tuple(LOCOMO_KINDS.values())
    systems = {"pandafs": summarise(dataset.questions, ours, k, kinds)}
    baselines = _baseline_rankings(dataset)
    for name, rankings in baselines.items():
        systems[name] = summarise(dataset.questions, rankings, k, kinds)
    fused = [
        (fuse([mine, theirs]), None)
        for (mine, _), (theirs, _) in zip(ours, baselines["bm25_sessions"], strict=True)
    ]
    systems["rrf_sessions"] = summarise(dataset.questions, fused, k, kinds)
    answerable = [i for i, q in enumerate(dataset.questions) if not q.abstention]

    def hits(rankings: list[tuple[list[str], list[str] | None]]) -> list[int]:
        return [int(dataset.questions[i].sessions <= set(rankings[i][0][:k])) for i in answerable]

    mine = hits(ours)
    against = {name: hits(rankings) for name, rankings in {**baselines, "rrf_sessions": fused}.items()}
    margins = {}
    for name, theirs in against.items():
        mean, lo, hi = bootstrap([a - b for a, b in zip(mine, theirs, strict=True)], 2000, 7)
        margins[name] = {"diff": round(mean, 4), "lo": round(lo, 4), "hi": round(hi, 4)}
    return {
        "questions": len(dataset.questions),
        "abstention": sum(q.abstention for q in dataset.questions),
        **info,
        "foreign_hits": foreign,
        "systems": systems,
        "margins": margins,
    }


def render(name: str, report: dict[str, Any], k: int) -> str:
    """One table: per question type, one row per system."""
    cols = [
        f"all@{k}",
        f"any@{k}",
        "all@10",
        f"ndcg@{k}",
        "mrr",
        f"turn_any@{k}",
        f"turn_all@{k}",
        "turn_mrr",
    ]
    heads = [f"all@{k}", f"any@{k}", "all@10", f"ndcg@{k}", "MRR", f"t_any@{k}", f"t_all@{k}", "t_MRR"]
    lines = [
        f"{name}: {report['questions']} questions ({report['abstention']} abstention, left out), "
        f"{report['turns']} turns; import {report['import_seconds']:.1f} s, "
        f"search {report['search_ms_per_query']:.1f} ms/query incl. process start",
        f"{'type':27}{'system':15}{'n':>4}" + "".join(f"{h:>9}" for h in heads),
    ]
    systems = report["systems"]
    for kind in systems["pandafs"]:
        for system, by_kind in systems.items():
            m = by_kind.get(kind, {})
            cells = "".join(f"{m[c]:>9.3f}" if c in m else f"{'-':>9}" for c in cols)
            lines.append(f"{kind:27}{system:15}{m.get('n', 0):>4}{cells}")
    margins = report.get("margins") or {}
    if margins:
        lines.append(
            f"PandaFS minus each, all@{k}, 95 % paired bootstrap (2000 resamples): "
            + "; ".join(f"{n} {m['diff']:+.3f} [{m['lo']:+.3f}, {m['hi']:+.3f}]" for n, m in margins.items())
        )
    if report["errors"] or report["foreign_hits"]:
        lines.append(f"problems: {report['errors']} error lines, {report['foreign_hits']} foreign hits")
    return "\n".join(lines)


def _options(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not re.fullmatch(r"[a-z_]+", key.strip()):
            raise ValueError(f"--search wants KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("all", "real", *SETS), default="all")
    parser.add_argument("--data", type=Path, help="our set's folder (default: generate one)")
    parser.add_argument("--lme", type=Path, default=DEFAULT_LME, help="LongMemEval dev folder")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo slice (.jsonl.gz)")
    parser.add_argument("--limit", type=int, help="use N evenly spaced questions of each set")
    parser.add_argument("--k", type=int, default=5, help="cut-off k (default 5)")
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build the vaults here and keep them")
    parser.add_argument("--pandafs", metavar="CMD", help="command that runs pandafs")
    parser.add_argument(
        "--gap-episodes",
        action="store_true",
        help="import without session ids: episodes by the time-gap rule",
    )
    parser.add_argument(
        "--search", action="append", default=[], metavar="KEY=VALUE", help="a [search] setting"
    )
    args = parser.parse_args(argv)
    if args.k < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--k and --limit must be at least 1")
    try:
        options = _options(args.search)
    except ValueError as exc:
        parser.error(str(exc))
    names = {"all": list(SETS), "real": [n for n in SETS if n != "ours"]}.get(args.set, [args.set])
    if "longmemeval" in names and not (args.lme / "questions.jsonl.gz").is_file():
        parser.error(f"{args.lme} has no questions.jsonl.gz")
    if any(n.startswith("locomo") for n in names) and not args.locomo.is_file():
        parser.error(f"{args.locomo} is not a file")
    if args.data is not None and not (args.data / "conversations.jsonl").is_file():
        parser.error(f"{args.data} has no conversations.jsonl and questions.jsonl")

    verbose = not args.json
    work = Path(tempfile.mkdtemp(prefix="pandafs-eval-"))
    report: dict[str, Any] = {"benchmark": "retrieval", "k": args.k, "search": options, "sets": {}}
    report["gap_episodes"] = args.gap_episodes
    try:
        for name in names:
            if name == "longmemeval":
                dataset = load_longmemeval(args.lme, args.limit)
            elif name.startswith("locomo"):
                dataset = load_locomo(args.locomo, args.limit, pairs=name == "locomo-pairs")
            else:
                data = args.data
                if data is None:
                    data = work / "data"
                    _progress(verbose, f"generating our set into {data} ...")
                    _generate(data)
                dataset = load_ours(data, args.limit)
            if args.gap_episodes:
                dataset = without_sessions(dataset)
            base = args.keep.resolve() if args.keep else work
            vault = base / f"vault-{name}"
            vault.parent.mkdir(parents=True, exist_ok=True)
            command = shlex.split(args.pandafs) if args.pandafs else None
            report["sets"][name] = evaluate(dataset, vault, work, args.k, options, verbose, command)
    except (StepFailed, OSError, ValueError, KeyError) as exc:
        print(f"eval_retrieval: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not args.json:
        for name, result in report["sets"].items():
            print(render(name, result, args.k))
            print()
    print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
