"""Evidence handed over: does the Context Gatherer's §2 hold what each question needs?

    python benchmarks/eval_context.py [--lme DIR] [--limit N] [--baseline REV|none]
        [--json] [--keep DIR]

On the shared LongMemEval-S development split (`--lme`, read its README) each question
is its own user: its haystack is imported as turns (`eval_retrieval.load_longmemeval`:
one turn per user/assistant pair, dated from its session, the session id in
`meta.session`), then the question is asked once with the offline backend at its
`question_date` (`Pipeline.ask`'s `now`; a Pipeline whose clock is that date for a
tree that predates it), and §2 is read from the turn's `context_synthesized` event.

Systems, all in the same run on the same turns:

- **pandafs**: this checkout's pipeline.
- **gatherer@REV** (`--baseline`, default `BASELINE_REV`, the gatherer before §2 was
  filled by relevance up to its budget): the same, with the events, indexers and
  pandafs packages of commit REV (`git archive`, put first on PYTHONPATH).
- **bm25_turns**: plain tantivy `en_stem` BM25 over the user's turns (question's words
  OR-ed), the best turns whole (`User: …` / `Assistant: …`) until §2's budget
  (`[pipeline] context_tokens`) is spent; a turn that does not fit is skipped.
- **whole_sessions** (reference): every evidence session pasted in whole.

Measures, per question type and overall.  An *evidence line* is a message labelled
`has_answer`; it reaches §2 at ≥ 80 % when one row of §2 (a table row, or a line of a
block's text) holds ≥ 80 % of its distinct words (lower-cased `\\w+`), whole at 100 %.
`ev_any80`: some evidence line at ≥ 80 %; `ev_all80`: every one; `ev_whole`: every one
whole (questions with labelled lines).  `gold`: the gold answer string occurs in §2
(case and spacing ignored; abstention questions left out).  `tokens`: §2's tokens
(`pandafs.tokens.count_tokens` of the rendered blocks).  `gold/ref`: `gold` over the
whole-session reference's.

Output: the table, then one JSON line `{"benchmark": "context", ...}` (only that line
with `--json`).  Exit 0 on success, 1 when a step fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_retrieval import (
    DEFAULT_LME,
    Dataset,
    PlainBM25,
    Question,
    line_session,
    load_longmemeval,
)

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REV = "19525a6"
"""The last commit whose Context Gatherer kept a fixed count of sources (`max_sources`)."""
BUDGET = 2000
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
_WORD = re.compile(r"\w+")


class StepFailed(Exception):
    pass


# --------------------------------------------------------------------------- worker


def _worker(vault: Path, lines_file: Path, questions_file: Path, out_file: Path) -> None:
    """Import the turns into `vault` and ask every question; write each §2 (run with the
    PYTHONPATH of the tree under test)."""
    from events.log import read_events
    from events.projection import project_turn
    from events.render import render_block
    from events.stamps import format_ts
    from pandafs.config import render_default_config
    from pandafs.llm.offline import OfflineBackend
    from pandafs.pipeline import Pipeline
    from pandafs.vault import Vault

    imported = vault.with_name(vault.name + ".imported")  # kept with --keep: the next run copies it
    if not (imported / ".complete").exists():
        shutil.rmtree(imported, ignore_errors=True)
        command = [sys.executable, "-m", "pandafs", "--root", str(imported)]
        subprocess.run([*command, "init"], check=True, capture_output=True)
        done = subprocess.run(
            [*command, "import-turns", str(lines_file), "--json"], capture_output=True, text=True
        )
        if done.returncode not in (0, 1):
            raise StepFailed(f"import-turns: {done.stderr.strip()[-300:]}")
        (imported / ".complete").touch()
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(imported, vault, symlinks=True)
    (vault / "pandafs.toml").write_text(render_default_config())  # the defaults of the tree under test
    vault_obj = Vault(vault)
    questions = [json.loads(line) for line in questions_file.read_text().splitlines() if line.strip()]
    out = []
    with Pipeline(vault_obj, backend=OfflineBackend()) as pipeline:
        accepts_now = "now" in Pipeline.ask.__code__.co_varnames
        for q in questions:
            when = datetime.fromisoformat(q["now"].replace("Z", "+00:00"))
            pipeline.clock = lambda when=when: when
            started = time.perf_counter()
            if accepts_now:
                result = pipeline.ask(q["text"], user=q["user"], now=when)
            else:
                result = pipeline.ask(q["text"], user=q["user"])
            seconds = time.perf_counter() - started
            folder = vault_obj.layout.turn_dir(q["user"], result.turn)
            view = project_turn(read_events(folder / "events.jsonl"))
            blocks = list(view.context.blocks) if view.context is not None else []
            rows: list[str] = []
            for block in blocks:
                rows += [" | ".join(r) for r in block.rows]
                rows += [line for line in (block.text or "").splitlines() if line.strip()]
            out.append(
                {
                    "qid": q["qid"],
                    "text": "\n\n".join(render_block(b) for b in blocks),
                    "rows": rows,
                    "tokens": view.context.tokens if view.context is not None else 0,
                    "seconds": round(seconds, 4),
                    "asked_at": format_ts(view.occurred_at),
                }
            )
    out_file.write_text(json.dumps(out))


# --------------------------------------------------------------------------- systems


def _tree(rev: str, into: Path) -> Path:
    """The events, indexers and pandafs packages of commit `rev`, unpacked into `into`."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "events", "indexers", "pandafs"], capture_output=True
    )
    if archive.returncode != 0:
        raise StepFailed(f"git archive {rev}: {archive.stderr.decode().strip()[:200]}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _run_pipeline(
    dataset: Dataset, work: Path, name: str, tree: Path | None, verbose: bool
) -> dict[str, dict[str, Any]]:
    lines_file, questions_file = work / "turns.jsonl", work / "questions.jsonl"
    if not lines_file.exists():
        lines_file.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in dataset.lines))
        questions_file.write_text(
            "".join(
                json.dumps({"qid": q.qid, "user": q.user, "text": q.text, "now": q.now}) + "\n"
                for q in dataset.questions
            )
        )
    out = work / f"{name}.json"
    env = dict(os.environ)
    env.pop("PANDAFS_ROOT", None)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if verbose:
        print(
            f"{name}: importing {len(dataset.lines)} turns, asking {len(dataset.questions)} ...",
            file=sys.stderr,
        )
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            str(work / f"vault-{name}"),
            str(lines_file),
            str(questions_file),
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise StepFailed(f"{name}: {done.stderr.strip()[-600:]}")
    return {row["qid"]: row for row in json.loads(out.read_text())}


def _bm25_turns(dataset: Dataset, budget: int) -> dict[str, dict[str, Any]]:
    from pandafs.tokens import count_tokens

    by_user: dict[str, list[dict[str, Any]]] = {}
    for line in dataset.lines:
        by_user.setdefault(line["user"], []).append(line)
    out: dict[str, dict[str, Any]] = {}
    for q in dataset.questions:
        turns = {
            ln["external_id"]: f"User: {ln['query']}\nAssistant: {ln['response']}" for ln in by_user[q.user]
        }
        ranked = PlainBM25(turns.items()).search(q.text, 100)
        rows, used = [], 0
        for key in ranked:
            tokens = count_tokens(turns[key])
            if used + tokens <= budget:
                rows.append(turns[key])
                used += tokens
        out[q.qid] = {"qid": q.qid, "text": "\n\n".join(rows), "rows": rows, "tokens": used}
    return out


def _whole_sessions(
    dataset: Dataset, evidence_sessions: dict[str, frozenset[str]]
) -> dict[str, dict[str, Any]]:
    from pandafs.tokens import count_tokens

    by_user: dict[str, list[dict[str, Any]]] = {}
    for line in dataset.lines:
        by_user.setdefault(line["user"], []).append(line)
    out: dict[str, dict[str, Any]] = {}
    for q in dataset.questions:
        wanted = evidence_sessions[q.qid]
        rows = [
            f"User: {ln['query']}\nAssistant: {ln['response']}"
            for ln in by_user[q.user]
            if line_session(ln) in wanted
        ]
        text = "\n\n".join(rows)
        out[q.qid] = {"qid": q.qid, "text": text, "rows": rows, "tokens": count_tokens(text)}
    return out


# --------------------------------------------------------------------------- scoring


def _evidence_lines(folder: Path, limit: int | None) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Per question: the text of each message labelled `has_answer`, and the gold answer."""
    with gzip.open(folder / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(raw) for raw in handle if raw.strip()]
    lines: dict[str, list[str]] = {}
    gold: dict[str, str] = {}
    for q in rows:
        seen: set[str] = set()
        found: list[str] = []
        for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            if sid in seen:
                continue
            seen.add(sid)
            found += [str(m.get("content") or "") for m in session if m.get("has_answer")]
        lines[q["question_id"]] = [t for t in found if _WORD.search(t)]
        gold[q["question_id"]] = str(q["answer"])
    return lines, gold


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _cover(line: str, rows: Sequence[set[str]]) -> float:
    """The largest share of `line`'s distinct words held by one row."""
    wanted = _words(line)
    if not wanted:
        return 1.0
    return max((len(wanted & row) / len(wanted) for row in rows), default=0.0)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def score(q: Question, system: dict[str, Any], lines: list[str], gold: str) -> dict[str, float]:
    rows = [_words(r) for r in system["rows"]]
    out: dict[str, float] = {"tokens": float(system["tokens"])}
    if lines:
        covers = [_cover(line, rows) for line in lines]
        out["ev_any80"] = float(max(covers) >= 0.8)
        out["ev_all80"] = float(min(covers) >= 0.8)
        out["ev_whole"] = float(min(covers) >= 1.0)
    if not q.abstention:
        out["gold"] = float(_norm(gold) in _norm(system["text"]))
    return out


def summarise(
    questions: list[Question],
    systems: dict[str, dict[str, dict[str, Any]]],
    lines: dict[str, list[str]],
    gold: dict[str, str],
) -> dict[str, dict[str, dict[str, float]]]:
    report: dict[str, dict[str, dict[str, float]]] = {}
    for name, answers in systems.items():
        sums: dict[str, dict[str, list[float]]] = {}
        for q in questions:
            row = score(q, answers[q.qid], lines.get(q.qid, []), gold[q.qid])
            for kind in (q.kind, "overall"):
                for key, value in row.items():
                    sums.setdefault(kind, {}).setdefault(key, []).append(value)
        report[name] = {
            kind: {
                "n": float(len(values["tokens"])),
                **{k: round(sum(v) / len(v), 4) for k, v in values.items()},
            }
            for kind, values in sums.items()
        }
        for kind, values in sums.items():
            report[name][kind]["n_evidence"] = float(len(values.get("ev_any80", [])))
            report[name][kind]["n_gold"] = float(len(values.get("gold", [])))
    reference = report.get("whole_sessions", {})
    for by_kind in report.values():
        for kind, m in by_kind.items():
            ref = reference.get(kind, {}).get("gold")
            if ref and "gold" in m:
                m["gold_vs_ref"] = round(m["gold"] / ref, 3)
    return report


def render(report: dict[str, dict[str, dict[str, float]]]) -> str:
    cols = ("ev_any80", "ev_all80", "ev_whole", "gold", "gold_vs_ref", "tokens")
    lines = [f"{'type':27}{'system':20}{'n':>4}" + "".join(f"{c:>12}" for c in cols)]
    kinds = [k for k in (*TYPES, "overall") if any(k in s for s in report.values())]
    for kind in kinds:
        for name, by_kind in report.items():
            m = by_kind.get(kind)
            if m is None:
                continue
            cells = "".join(
                f"{m[c]:>12.0f}" if c == "tokens" else f"{m[c]:>12.3f}" if c in m else f"{'-':>12}"
                for c in cols
            )
            lines.append(f"{kind:27}{name:20}{int(m['n']):>4}{cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _worker(*(Path(a) for a in argv[1:5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lme", type=Path, default=DEFAULT_LME, help="LongMemEval dev folder")
    parser.add_argument("--limit", type=int, help="N evenly spaced questions")
    parser.add_argument(
        "--baseline", default=BASELINE_REV, help="commit of the gatherer to compare ('none': skip)"
    )
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build the vaults here and keep them")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if not (args.lme / "questions.jsonl.gz").is_file():
        parser.error(f"{args.lme} has no questions.jsonl.gz")
    verbose = not args.json
    work = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="pandafs-context-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        dataset = load_longmemeval(args.lme, args.limit)
        lines, gold = _evidence_lines(args.lme, args.limit)
        with gzip.open(args.lme / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
            sessions = {
                q["question_id"]: frozenset(q["answer_session_ids"])
                for q in (json.loads(raw) for raw in handle if raw.strip())
            }
        systems: dict[str, dict[str, dict[str, Any]]] = {}
        systems["pandafs"] = _run_pipeline(dataset, work, "pandafs", None, verbose)
        if args.baseline != "none":
            tree = _tree(args.baseline, work / f"tree-{args.baseline}")
            systems[f"gatherer@{args.baseline}"] = _run_pipeline(
                dataset, work, f"gatherer-{args.baseline}", tree, verbose
            )
        systems["bm25_turns"] = _bm25_turns(dataset, BUDGET)
        systems["whole_sessions"] = _whole_sessions(dataset, sessions)
    except (StepFailed, OSError, ValueError, KeyError, subprocess.CalledProcessError) as exc:
        print(f"eval_context: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report = summarise(dataset.questions, systems, lines, gold)
    if verbose:
        asked = systems["pandafs"].values()
        per_ask = 1000 * sum(a["seconds"] for a in asked) / max(1, len(asked))
        print(
            f"LongMemEval dev: {len(dataset.questions)} questions, {len(dataset.lines)} turns; "
            f"§2 budget {BUDGET} tokens; pandafs ask {per_ask:.0f} ms "
            f"a question in process; run {time.perf_counter() - started:.0f} s"
        )
        print(render(report))
    print(
        json.dumps(
            {
                "benchmark": "context",
                "budget": BUDGET,
                "questions": len(dataset.questions),
                "systems": report,
            },
            separators=(",", ":"),
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
