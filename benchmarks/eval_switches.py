"""Each lexical resource of the ranking switched off alone, on both evaluation sets.

    python benchmarks/eval_switches.py [--keep DIR] [--lme DIR] [--data DIR] [--limit N]

The sets, vaults and metric are `benchmarks/eval_retrieval.py`'s (recall_all@5 at session
level, abstention questions apart): each set is imported once with `import-turns`
(or reused from `--keep DIR`, the folder `eval_retrieval.py --keep DIR` fills), then
every question is searched in process with `Memory.search`, as `search --batch` does,
once with the vault's `[search]` settings (the shipped defaults unless its
pandafs.toml says otherwise) and once per switch below.  Prints a table
(per set: overall, then per question type), then one JSON line
{"benchmark": "retrieval_switches", ...}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("eval_retrieval", HERE / "eval_retrieval.py")
assert _spec is not None and _spec.loader is not None
ev = importlib.util.module_from_spec(_spec)
sys.modules["eval_retrieval"] = ev  # its dataclasses look their module up
_spec.loader.exec_module(ev)

from pandafs.memory.api import Memory  # noqa: E402
from pandafs.vault import Vault  # noqa: E402

SWITCHES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "stop words": {"stop_words": False},
    "question framing": {"framing": False},
    "word forms": {"word_forms": False},
    "prefix forms": {"prefix_weight": 0.0},
    "thesaurus": {"synonym_weight": 0.0},
    "time words": {"time_words": False},
    "RM3 feedback": {"feedback_docs": 0},
}
SWITCHES["all off"] = {k: v for change in SWITCHES.values() for k, v in change.items()}
K = 5


def score(memory: Memory, dataset: Any) -> dict[str, dict[str, float]]:
    """recall_all@5 per question type and overall."""
    tally: dict[str, list[int]] = {}
    for q in dataset.questions:
        if q.abstention:
            continue
        now = datetime.fromisoformat(q.now.replace("Z", "+00:00"))
        hits = memory.search(q.text, user=q.user, now=now, limit=ev.SEARCH_LIMIT, snippets=False)
        sessions = ev._distinct(ev.hit_session(h) for h in hits)
        found = int(q.sessions <= set(sessions[:K]))
        for kind in (q.kind, "overall"):
            row = tally.setdefault(kind, [0, 0])
            row[0] += found
            row[1] += 1
    return {kind: {"n": n, "all@5": round(hit / n, 4)} for kind, (hit, n) in sorted(tally.items())}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, metavar="DIR", help="vaults of eval_retrieval --keep DIR")
    parser.add_argument("--lme", type=Path, default=ev.DEFAULT_LME, help="LongMemEval dev folder")
    parser.add_argument("--data", type=Path, help="our set's folder (default: generate one)")
    parser.add_argument("--limit", type=int, help="use N evenly spaced questions of each set")
    args = parser.parse_args(argv)
    if not (args.lme / "questions.jsonl.gz").is_file():
        parser.error(f"{args.lme} has no questions.jsonl.gz")
    work = Path(tempfile.mkdtemp(prefix="pandafs-switches-"))
    report: dict[str, Any] = {"benchmark": "retrieval_switches", "k": K, "sets": {}}
    try:
        data = args.data
        if data is None:
            data = work / "data"
            ev._generate(data)
        datasets = [ev.load_longmemeval(args.lme, args.limit), ev.load_ours(data, args.limit)]
        for dataset in datasets:
            vault = (args.keep.resolve() if args.keep else work) / f"vault-{dataset.name}"
            vault.parent.mkdir(parents=True, exist_ok=True)
            if not (vault / "indexes").is_dir():
                _say(f"{dataset.name}: importing {len(dataset.lines)} turns ...")
                ev.run_pandafs(dataset, vault, work, {}, verbose=False)
            memory = Memory(Vault(vault))
            shipped = memory.ranking
            rows = {}
            for name, change in SWITCHES.items():
                memory.ranking = replace(shipped, **change)
                rows[name] = score(memory, dataset)
                _say(f"{dataset.name}: {name} {rows[name]['overall']['all@5']:.3f}")
            report["sets"][dataset.name] = rows
    except (ev.StepFailed, OSError, ValueError, KeyError) as exc:
        print(f"eval_switches: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for set_name, rows in report["sets"].items():
        kinds = list(rows["defaults"])
        print(f"\n{set_name}: recall_all@{K}, each resource switched off alone")
        print(f"{'switched off':18}" + "".join(f"{k[:14]:>15}" for k in kinds))
        for name, by_kind in rows.items():
            print(f"{name:18}" + "".join(f"{by_kind[k]['all@5']:>15.3f}" for k in kinds))
    print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
