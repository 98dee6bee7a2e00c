"""Each ranking component's effect on each real set, with a paired bootstrap interval.

    python benchmarks/eval_switches.py [--set real|all|longmemeval|locomo|locomo-pairs|ours] [--keep DIR]
        [--lme DIR] [--locomo FILE] [--data DIR] [--limit N] [--resamples 2000] [--seed 7]
    python benchmarks/eval_switches.py --merge OUT... (the JSON lines of runs of one set each)

The sets, vaults and metric are `benchmarks/eval_retrieval.py`'s (recall_all@5 at session
level, abstention questions apart): each set is imported once with `import-turns`
(or reused from `--keep DIR`, the folder `eval_retrieval.py --keep DIR` fills), then
every question is searched in process with `Memory.search`, as `search --batch` does:
once with the vault's `[search]` settings (the shipped defaults unless its pandafs.toml
says otherwise), and once per component below with that component in the other state
(switched off if the defaults have it on, on at its `on` values if they have it off).

A component's *effect* on a set is recall_all@5 with it minus without it, over the
same questions.  Its interval is a paired bootstrap over questions: `--resamples`
resamples (default 2,000, fixed `--seed`) of the set's questions with replacement,
the effect's mean in each; the 2.5th and 97.5th percentiles are the 95 % interval.

The rule for a default (`verdict`): a component stays on only while it loses beyond
noise (its interval wholly below zero) on no real set; a component that is off is
turned on only if it gains beyond noise (its interval wholly above zero) on at least
one real set and loses beyond noise on none.  The burden of proof is on the
change: an effect of a question or two either way (most components' on LoCoMo's
1,982 questions) moves no default, so the verdicts do not flip from run to run.
Only the real sets count (`REAL`): a component that helps only our generated set
earns nothing.  `keep on` / `keep off` say the defaults follow the rule; `turn off` /
`turn on` that they do not.  Components interact: after a default changes, run again.

Prints a table per set (each component's effect and interval overall, then its effect
per question type of at least 20 questions), the verdicts, then one JSON line
{"benchmark": "retrieval_switches", ...}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("eval_retrieval", HERE / "eval_retrieval.py")
assert _spec is not None and _spec.loader is not None
ev = importlib.util.module_from_spec(_spec)
sys.modules["eval_retrieval"] = ev  # its dataclasses look their module up
_spec.loader.exec_module(ev)

from indexers.request import Ranking  # noqa: E402
from pandafs.memory.api import Memory  # noqa: E402
from pandafs.vault import Vault  # noqa: E402

COMPONENTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (its settings when on, when off)
    "stop words": ({"stop_words": True}, {"stop_words": False}),
    "question framing": ({"framing": True}, {"framing": False}),
    "word forms": ({"word_forms": True}, {"word_forms": False}),
    "prefix forms": ({"prefix_weight": 0.5}, {"prefix_weight": 0.0}),
    "thesaurus": ({"synonym_weight": 0.7}, {"synonym_weight": 0.0}),
    "time words": ({"time_words": True}, {"time_words": False}),
    "RM3 feedback": ({"feedback_docs": 10}, {"feedback_docs": 0}),
    "RM3 on every question": ({"feedback_docs": 10, "feedback_always": True}, {"feedback_always": False}),
    "spread factor": ({"spread_weight": 0.5}, {"spread_weight": 0.0}),
    "episodes (stage 2)": ({"expand_episodes": 8}, {"expand_episodes": 0}),
    "neighbour turns": ({"neighbour_weight": 0.4}, {"neighbour_weight": 0.0}),
    "episode coverage": ({"episode_weight": 0.2}, {"episode_weight": 0.0}),
    "coverage saturation": ({"coverage_k1": 1.2}, {"coverage_k1": 0.0}),
    "episode cap": ({"episode_cap": 3}, {"episode_cap": 0}),
    "latest/first": ({"latest_weight": 1.0}, {"latest_weight": 0.0}),
    "freshness": ({"freshness_weight": 0.25}, {"freshness_weight": 0.0}),
}
K = 5
MIN_KIND = 20
"""Question types with fewer questions are left out of the per-type columns."""
REAL = ("longmemeval", "locomo", "locomo-pairs")


def is_on(ranking: Ranking, name: str) -> bool:
    """Whether `ranking` has component `name` on (any setting differing from its off state)."""
    _, off = COMPONENTS[name]
    return any(getattr(ranking, key) != value for key, value in off.items())


def recall(memory: Memory, dataset: Any) -> list[tuple[str, int]]:
    """(question type, recall_all@5 as 0/1) per answerable question, in the set's order."""
    out = []
    for q in dataset.questions:
        if q.abstention:
            continue
        now = datetime.fromisoformat(q.now.replace("Z", "+00:00"))
        hits = memory.search(q.text, user=q.user, now=now, limit=ev.SEARCH_LIMIT, snippets=False)
        sessions = ev._distinct(ev.hit_session(h) for h in hits)
        out.append((q.kind, int(q.sessions <= set(sessions[:K]))))
    return out


def effects(
    base: list[tuple[str, int]], other: list[tuple[str, int]], on: bool, resamples: int, seed: int
) -> dict[str, Any]:
    """The component's effect (with it − without it): overall with its interval, per type."""
    sign = 1 if on else -1  # base has the component on: base − other
    diffs = [sign * (b - o) for (_, b), (_, o) in zip(base, other, strict=True)]
    mean, lo, hi = ev.bootstrap(diffs, resamples, seed)
    kinds: dict[str, list[int]] = {}
    for (kind, _), d in zip(base, diffs, strict=True):
        kinds.setdefault(kind, []).append(d)
    per = {k: round(sum(v) / len(v), 4) for k, v in kinds.items() if len(v) >= MIN_KIND}
    return {"effect": round(mean, 4), "lo": round(lo, 4), "hi": round(hi, 4), "kinds": per}


def verdict(on_now: bool, by_set: dict[str, dict[str, Any]]) -> str:
    """The rule of the module docstring, over the real sets measured."""
    real = [by_set[s] for s in REAL if s in by_set]
    loses = any(e["hi"] < 0 for e in real)
    gains = any(e["lo"] > 0 for e in real)
    if on_now:
        return "turn off" if loses else "keep on"
    return "turn on" if gains and not loses else "keep off"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _load(name: str, args: argparse.Namespace, work: Path) -> Any:
    if name == "longmemeval":
        return ev.load_longmemeval(args.lme, args.limit)
    if name.startswith("locomo"):
        return ev.load_locomo(args.locomo, args.limit, pairs=name == "locomo-pairs")
    data = args.data
    if data is None:
        data = work / "data"
        ev._generate(data)
    return ev.load_ours(data, args.limit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("real", "all", *ev.SETS), default="real")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="vaults of eval_retrieval --keep DIR")
    parser.add_argument("--lme", type=Path, default=ev.DEFAULT_LME, help="LongMemEval dev folder")
    parser.add_argument("--locomo", type=Path, default=ev.DEFAULT_LOCOMO, help="LoCoMo slice (.jsonl.gz)")
    parser.add_argument("--data", type=Path, help="our set's folder (default: generate one)")
    parser.add_argument("--limit", type=int, help="use N evenly spaced questions of each set")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=7, help="bootstrap seed (default 7)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="only this component")
    parser.add_argument(
        "--merge", nargs="+", type=Path, metavar="OUT", help="join earlier runs' outputs (sets run apart)"
    )
    args = parser.parse_args(argv)
    if args.merge:
        try:
            report = merge([json.loads(path.read_text().strip().splitlines()[-1]) for path in args.merge])
        except (OSError, ValueError, IndexError, KeyError) as exc:
            parser.error(f"--merge: {exc}")
        print(render(report))
        print(json.dumps(report, separators=(",", ":")))
        return 0
    names = {"real": list(REAL), "all": list(ev.SETS)}.get(args.set, [args.set])
    if "longmemeval" in names and not (args.lme / "questions.jsonl.gz").is_file():
        parser.error(f"{args.lme} has no questions.jsonl.gz")
    if any(n.startswith("locomo") for n in names) and not args.locomo.is_file():
        parser.error(f"{args.locomo} is not a file")
    unknown = sorted(set(args.only) - set(COMPONENTS))
    if unknown or args.resamples < 100:
        parser.error(f"unknown component {unknown}" if unknown else "--resamples must be at least 100")
    chosen = [c for c in COMPONENTS if not args.only or c in args.only]
    work = Path(tempfile.mkdtemp(prefix="pandafs-switches-"))
    report: dict[str, Any] = {
        "benchmark": "retrieval_switches",
        "k": K,
        "resamples": args.resamples,
        "seed": args.seed,
        "sets": {},
        "components": {},
    }
    try:
        for name in names:
            dataset = _load(name, args, work)
            vault = (args.keep.resolve() if args.keep else work) / f"vault-{name}"
            vault.parent.mkdir(parents=True, exist_ok=True)
            if not (vault / "indexes").is_dir():
                _say(f"{name}: importing {len(dataset.lines)} turns ...")
                ev.run_pandafs(dataset, vault, work, {}, verbose=False)
            memory = Memory(Vault(vault))
            shipped = memory.ranking
            base = recall(memory, dataset)
            overall = sum(r for _, r in base) / max(1, len(base))
            report["sets"][name] = {"n": len(base), "all@5": round(overall, 4)}
            _say(f"{name}: defaults {overall:.3f} over {len(base)} questions")
            for component in chosen:
                on, off = COMPONENTS[component]
                on_now = is_on(shipped, component)
                memory.ranking = shipped._replace(**(off if on_now else on))
                row = effects(base, recall(memory, dataset), on_now, args.resamples, args.seed)
                report["components"].setdefault(component, {"on": on_now, "sets": {}})["sets"][name] = row
                _say(f"{name}: {component} {row['effect']:+.3f} [{row['lo']:+.3f}, {row['hi']:+.3f}]")
            memory.ranking = shipped
    except (ev.StepFailed, OSError, ValueError, KeyError) as exc:
        print(f"eval_switches: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for row in report["components"].values():
        row["verdict"] = verdict(row["on"], row["sets"])
    print(render(report))
    print(json.dumps(report, separators=(",", ":")))
    return 0


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One report of several runs (each of its own sets, same defaults), verdicts anew."""
    out: dict[str, Any] = {**reports[0], "sets": {}, "components": {}}
    for report in reports:
        if report.get("benchmark") != "retrieval_switches":
            raise ValueError("not an eval_switches output")
        out["sets"].update(report["sets"])
        for name, row in report["components"].items():
            out["components"].setdefault(name, {"on": row["on"], "sets": {}})["sets"].update(row["sets"])
    for row in out["components"].values():
        row["verdict"] = verdict(row["on"], row["sets"])
    return out


def render(report: dict[str, Any]) -> str:
    """Per set: each component's effect (with − without) on recall_all@5, its interval,
    and its effect per question type; then the verdicts."""
    out = []
    for name, info in report["sets"].items():
        rows = {c: r["sets"][name] for c, r in report["components"].items() if name in r["sets"]}
        kinds = sorted({k for r in rows.values() for k in r["kinds"]} - {"overall"})
        out.append(
            f"\n{name}: defaults recall_all@{K} {info['all@5']:.3f} over {info['n']} questions; "
            f"effect of each component (with − without), 95 % paired bootstrap "
            f"({report['resamples']} resamples)"
        )
        out.append(
            f"{'component':20}{'default':>8}{'effect':>8}{'interval':>18}"
            + "".join(f"{k[:13]:>14}" for k in kinds)
        )
        for component, r in rows.items():
            state = "on" if report["components"][component]["on"] else "off"
            interval = f"[{r['lo']:+.3f}, {r['hi']:+.3f}]"
            cells = "".join(f"{r['kinds'][k]:>+14.3f}" if k in r["kinds"] else f"{'-':>14}" for k in kinds)
            out.append(f"{component:20}{state:>8}{r['effect']:>+8.3f}{interval:>18}{cells}")
    out.append(
        "\nrule: stays on unless a real set loses beyond noise; comes on if one gains beyond it, none losing"
    )
    for component, r in report["components"].items():
        out.append(f"  {component:20} {r['verdict']}")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
