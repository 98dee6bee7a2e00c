"""The retrieval benchmark: generator invariants, metric arithmetic, one tiny real run.

The generator and metric tests need nothing but the standard library.  The end-to-end
test runs `benchmarks/eval_retrieval.py` against the real CLI and is skipped while
`pandafs search` does not exist yet.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import re
import subprocess
import sys
from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "benchmarks" / "retrieval" / "make_dataset.py"
RUNNER = ROOT / "benchmarks" / "eval_retrieval.py"
USER_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
STOPWORDS = set(
    "what which when where does did with from that this have their about these those "
    "into there than them they your who whom".split()
)


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return _load("bench_make_dataset", GENERATOR)


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    return _load("bench_eval_retrieval", RUNNER)


@pytest.fixture(scope="module")
def switches() -> ModuleType:
    return _load("bench_eval_switches", ROOT / "benchmarks" / "eval_switches.py")


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def default_set(generator: ModuleType, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("retrieval-default")
    manifest = generator.generate(out)
    return manifest, _read(out / "conversations.jsonl"), _read(out / "questions.jsonl")


# --------------------------------------------------------------------------- generator


def test_same_seed_gives_identical_files(generator: ModuleType, tmp_path: Path) -> None:
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        generator.generate(tmp_path / name, seed=seed, users=2, sessions=6, turns=8)
    for file in ("conversations.jsonl", "questions.jsonl"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    assert (tmp_path / "a" / "questions.jsonl").read_bytes() != (
        tmp_path / "c" / "questions.jsonl"
    ).read_bytes()


def test_conversations_are_valid_import_lines(default_set) -> None:
    manifest, turns, _ = default_set
    assert len(turns) == manifest["turns"] == 8 * 25 * 12
    assert len({t["external_id"] for t in turns}) == len(turns)
    sessions: dict[str, set[str]] = defaultdict(set)
    for t in turns:
        assert set(t) == {"user", "external_id", "timestamp", "query", "response", "meta"}
        assert USER_ID.match(t["user"])
        assert t["external_id"].startswith(t["meta"]["session"] + "-t")
        assert t["meta"]["session"].startswith(t["user"] + "-s")
        assert t["query"].strip() and t["response"].strip()
        assert "{" not in t["query"] + t["response"], "unfilled template slot"
        stamp = datetime.strptime(t["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
        assert stamp.date().isoformat() == t["meta"]["day"]
        assert len(t["meta"]["speakers"]) == 2
        sessions[t["user"]].add(t["meta"]["day"])
    for days in sessions.values():
        spread = (date.fromisoformat(max(days)) - date.fromisoformat(min(days))).days
        assert len(days) == 25 and 150 <= spread <= 366


def test_questions_cover_every_kind_with_valid_evidence(default_set, generator) -> None:
    manifest, turns, questions = default_set
    by_id = {t["external_id"]: t for t in turns}
    counts = {kind: sum(q["kind"] == kind for q in questions) for kind in generator.KINDS}
    assert len(questions) >= 300
    assert min(counts.values()) >= 40, counts
    assert len({q["qid"] for q in questions}) == len(questions)
    for q in questions:
        assert list(q)[:7] == [
            "qid", "user", "question", "kind", "evidence", "evidence_days", "answer"
        ]  # fmt: skip
        if q["kind"] == "abstention":
            assert q["evidence"] == q["evidence_days"] == [] and q["answer"] is None
            continue
        evidence = [by_id[e] for e in q["evidence"]]
        assert all(t["user"] == q["user"] for t in evidence)
        assert q["evidence_days"] == sorted({t["meta"]["day"] for t in evidence})
        assert q["answer"]
        for support in q["support"]:  # the neighbour sits right next to an evidence turn
            assert by_id[support]["meta"]["session"] in {t["meta"]["session"] for t in evidence}
            numbers = {int(e.rsplit("-t", 1)[1]) for e in q["evidence"]}
            assert {int(support.rsplit("-t", 1)[1]) + d for d in (-1, 1)} & numbers
        assert bool(q["support"]) == q["needs_neighbour"]
        if q["kind"] == "multi_hop":
            assert len({t["meta"]["session"] for t in evidence}) == len(evidence) >= 2
        if q["kind"] == "temporal":
            gap = date.fromisoformat(q["evidence_days"][0]) - date.fromisoformat(q["answer"])
            assert 0 <= gap.days <= 8
        else:
            said = f"{evidence[-1]['query']} {evidence[-1]['response']}".lower()
            assert q["answer"].lower() in said, (q["question"], q["answer"])


def test_a_good_share_needs_a_neighbour(default_set) -> None:
    _, _, questions = default_set
    answerable = [q for q in questions if q["kind"] != "abstention"]
    share = sum(q["needs_neighbour"] for q in answerable) / len(answerable)
    assert 0.2 <= share <= 0.4


def test_questions_paraphrase_rather_than_quote(default_set) -> None:
    """No copied phrases (runs of 4+ words), and few questions made only of evidence words."""
    _, turns, questions = default_set
    by_id = {t["external_id"]: t for t in turns}

    def tokens(text: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", text.lower())

    def longest_shared_run(a: list[str], b: list[str]) -> int:
        grams = {tuple(b[i : i + n]) for n in range(1, 5) for i in range(len(b) - n + 1)}
        return max((n for n in range(1, 5) for i in range(len(a) - n + 1)
                    if tuple(a[i : i + n]) in grams), default=0)  # fmt: skip

    answerable = [q for q in questions if q["kind"] != "abstention"]
    covered = 0
    for q in answerable:
        said = [tokens(by_id[e]["query"]) for e in q["evidence"]]
        asked = tokens(q["question"])
        assert max(longest_shared_run(asked, s) for s in said) <= 3, q["question"]
        person = set(tokens(by_id[q["evidence"][0]]["meta"]["speakers"][0]))
        content = {w for w in asked if len(w) > 3} - STOPWORDS - person
        covered += content <= {w for s in said for w in s}
    assert covered / len(answerable) < 0.15


def test_tiny_dataset_still_has_questions(generator: ModuleType, tmp_path: Path) -> None:
    manifest = generator.generate(tmp_path, users=2, sessions=4, turns=6)
    assert manifest["turns"] == 48
    assert manifest["questions"] >= 6
    assert manifest["by_kind"].get("abstention", 0) < manifest["questions"] / 2


# --------------------------------------------------------------------------- metrics


def test_hit_session_and_turn_fall_back_sensibly(runner: ModuleType) -> None:
    assert runner.hit_session({"meta": {"session": "s1"}, "episode": "s1"}) == "s1"
    assert runner.hit_session({"meta": None, "episode": "gap:2025-01-01T10:00:00Z"}).startswith("gap:")
    assert runner.hit_session({}) is None
    assert runner.hit_turn({"external_id": "u01-s01-t01"}) == "u01-s01-t01"
    assert runner.hit_turn({"external_id": None}) is None


def test_rank_metrics_arithmetic(runner: ModuleType) -> None:
    m = runner.rank_metrics(["x", "a", "y", "b"], frozenset({"a", "b"}), 3)
    assert m["all@3"] == 0.0 and m["any@3"] == 1.0 and m["all@10"] == 1.0
    assert m["mrr"] == 0.5
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg@3"] == pytest.approx((1 / math.log2(3)) / ideal)
    assert runner.rank_metrics([], frozenset({"a"}), 5) == {
        "all@5": 0.0, "any@5": 0.0, "all@10": 0.0, "ndcg@5": 0.0, "mrr": 0.0,
    }  # fmt: skip


def test_summarise_per_kind_with_abstention_apart(runner: ModuleType) -> None:
    Q = runner.Question

    def q(qid: str, kind: str, sessions: set[str], turns: set[str], abstention: bool = False):
        return Q(
            qid, "u", kind, "?", "2025-01-01T00:00:00Z", frozenset(sessions), frozenset(turns), abstention
        )

    questions = [
        q("1", "multi", {"a", "b"}, {"a-t1", "b-t2"}),
        q("2", "multi", {"c"}, set()),
        q("3", "single", {"d"}, {"d-t1"}),
        q("4", "single", set(), set(), abstention=True),
    ]
    rankings = [
        (["a", "x", "b"], ["a-t1", "x-t1", "b-t1"]),
        (["x", "y"], ["x-t1"]),
        (["d"], ["d-t1"]),
        (["z"], ["z-t1"]),
    ]
    report = runner.summarise(questions, rankings, 2, ("single", "multi"))
    assert list(report) == ["single", "multi", "overall"]
    assert report["overall"]["n"] == 3  # the abstention question is left out
    assert report["multi"]["all@2"] == 0.0 and report["multi"]["any@2"] == 0.5
    assert report["multi"]["all@10"] == 0.5 and report["overall"]["all@2"] == round(1 / 3, 4)
    assert report["multi"]["turn_any@2"] == 1.0 and report["multi"]["turn_all@2"] == 0.0  # q2 unlabelled
    assert report["single"]["mrr"] == 1.0 and report["single"]["turn_mrr"] == 1.0


def test_batch_output_parsing(runner: ModuleType) -> None:
    out = '[{"external_id": "a", "score": 1}]\n{"error": "query: Field required"}\n[]\n'
    assert runner._parse_batch(out, 3) == [[{"external_id": "a", "score": 1}], None, []]
    with pytest.raises(runner.StepFailed):
        runner._parse_batch(out, 4)


def _tiny_longmemeval(folder: Path) -> None:
    """Two questions in LongMemEval's own shape (one session listed twice, one starting
    with the assistant, an evidence message)."""
    folder.mkdir(parents=True)
    chat = [
        {"role": "user", "content": "I adopted a hamster called Biscuit.", "has_answer": True},
        {"role": "assistant", "content": "Lovely name!"},
        {"role": "user", "content": "What bedding is best?"},
        {"role": "assistant", "content": "Paper bedding."},
    ]
    other = [
        {"role": "assistant", "content": "Welcome back."},
        {"role": "user", "content": "Help me plan a trip to Lisbon."},
        {"role": "assistant", "content": "Sure: trams, pastries, views."},
    ]
    rows = [
        {
            "question_id": "q1", "question_type": "single-session-user",
            "question": "What is my hamster called?", "answer": "Biscuit",
            "question_date": "2023/05/30 (Tue) 20:42",
            "haystack_dates": ["2023/05/20 (Sat) 06:13", "2023/05/21 (Sun) 09:00", "2023/05/20 (Sat) 06:13"],
            "haystack_session_ids": ["answer_1", "s2", "answer_1"],
            "haystack_sessions": [chat, other, chat], "answer_session_ids": ["answer_1"],
        },
        {
            "question_id": "q2_abs", "question_type": "single-session-user",
            "question": "What is my cat called?", "answer": "none",
            "question_date": "2023/05/30 (Tue) 20:42",
            "haystack_dates": ["2023/05/21 (Sun) 09:00"], "haystack_session_ids": ["s2"],
            "haystack_sessions": [other], "answer_session_ids": [],
        },
    ]  # fmt: skip
    with gzip.open(folder / "questions.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows) + "\n")


def test_longmemeval_loader(runner: ModuleType, tmp_path: Path) -> None:
    _tiny_longmemeval(tmp_path / "lme")
    data = runner.load_longmemeval(tmp_path / "lme")
    q1 = [line for line in data.lines if line["user"] == "q-q1"]
    assert [line["external_id"] for line in q1] == ["answer_1-t000", "answer_1-t001", "s2-t000", "s2-t001"]
    assert q1[0]["timestamp"] == "2023-05-20T06:13:00Z" and q1[1]["timestamp"] == "2023-05-20T06:14:00Z"
    assert q1[0]["meta"] == {"session": "answer_1"} and q1[1]["response"] == "Paper bedding."
    assert q1[2]["query"] == "(assistant)" and q1[2]["response"] == "Welcome back."
    first, second = data.questions
    assert first.now == "2023-05-30T20:42:00Z" and first.sessions == {"answer_1"}
    assert first.turns == {"answer_1-t000"} and not first.abstention and second.abstention
    assert len(runner.load_longmemeval(tmp_path / "lme", limit=1).questions) == 1


def _tiny_locomo(path: Path) -> None:
    """One conversation in the shape of `benchmarks/data/locomo/make_slice.py`'s output:
    two sessions, a photo caption, evidence ids spelled three ways (one, two in one
    string, none)."""
    sessions = [
        {
            "session": 1,
            "date_time": "1:56 pm on 8 May, 2023",
            "turns": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a hamster called Biscuit."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a photo of a cage"},
            ],
        },
        {
            "session": 2,
            "date_time": "10:00 am on 20 June, 2023",
            "turns": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "I am planning a trip to Lisbon."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Trams and pastries!"},
            ],
        },
    ]
    qa = [
        {"question": "What is Ann's hamster called?", "answer": "Bisc", "evidence": ["D1:1"], "category": 4},
        {"question": "Where is Bob going?", "answer": "Lisbon", "evidence": ["D2:1; D1:2"], "category": 1},
        {"question": "What colour is the cage?", "answer": "?", "evidence": [], "category": 3},
    ]  # fmt: skip
    line = {"sample_id": "conv-1", "speakers": ["Ann", "Bob"], "sessions": sessions, "qa": qa}
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def test_locomo_loader(runner: ModuleType, tmp_path: Path) -> None:
    _tiny_locomo(tmp_path / "locomo.jsonl.gz")
    data = runner.load_locomo(tmp_path / "locomo.jsonl.gz")
    assert [line["external_id"] for line in data.lines] == [
        "conv-1-D1-1", "conv-1-D1-2", "conv-1-D2-1", "conv-1-D2-2"
    ]  # fmt: skip
    first, second = data.lines[:2]
    assert first["user"] == "locomo-conv-1" and first["meta"] == {"session": "conv-1-s1"}
    assert first["query"] == "Ann: I adopted a hamster called Biscuit." and first["response"] == ""
    assert second["query"] == "Bob: Lovely! (shares a photo of a cage)"
    assert (first["timestamp"], second["timestamp"]) == ("2023-05-08T13:56:00Z", "2023-05-08T13:57:00Z")
    assert [q.kind for q in data.questions] == ["single-hop", "multi-hop"]  # no evidence: left out
    one, two = data.questions
    assert one.sessions == {"conv-1-s1"} and one.turns == {"conv-1-D1-1"} and not one.abstention
    assert two.sessions == {"conv-1-s1", "conv-1-s2"} and two.turns == {"conv-1-D2-1", "conv-1-D1-2"}
    assert one.now == "2023-06-21T10:00:00Z"  # a day after the last session
    pairs = runner.load_locomo(tmp_path / "locomo.jsonl.gz", pairs=True)
    assert pairs.name == "locomo-pairs" and [line["external_id"] for line in pairs.lines] == [
        "conv-1-D1-1", "conv-1-D2-1"
    ]  # fmt: skip
    assert pairs.lines[0]["response"] == "Bob: Lovely! (shares a photo of a cage)"
    assert pairs.questions[1].turns == {"conv-1-D2-1", "conv-1-D1-1"}  # D1:2 is in the first pair


def test_locomo_slice_in_the_repository_loads(runner: ModuleType) -> None:
    data = runner.load_locomo(runner.DEFAULT_LOCOMO)
    assert len(data.lines) == 5882 and len({line["user"] for line in data.lines}) == 10
    assert len(data.questions) == 1982 and all(q.sessions for q in data.questions)


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def search_cli(runner: ModuleType) -> list[str]:
    command = runner._pandafs_command()
    done = subprocess.run([*command, "search", "--help"], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip("`pandafs search` is not available yet")
    return command


def test_runner_end_to_end_on_tiny_sets(search_cli: list[str], tmp_path: Path) -> None:
    data, keep = tmp_path / "data", tmp_path / "keep"
    subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(data)]
        + ["--users", "2", "--sessions", "4", "--turns", "6"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    _tiny_longmemeval(tmp_path / "lme")
    _tiny_locomo(tmp_path / "locomo.jsonl.gz")
    questions = _read(data / "questions.jsonl")
    args = [
        "--data",
        str(data),
        "--lme",
        str(tmp_path / "lme"),
        "--locomo",
        str(tmp_path / "locomo.jsonl.gz"),
    ]
    args += ["--keep", str(keep), "--k", "3"]
    done = subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    *table, last = done.stdout.strip().splitlines()
    assert any(line.startswith("overall") and "bm25_sessions" in line for line in table)
    report = json.loads(last)
    assert report["benchmark"] == "retrieval" and set(report["sets"]) == {
        "ours",
        "longmemeval",
        "locomo",
        "locomo-pairs",
    }
    ours, lme = report["sets"]["ours"], report["sets"]["longmemeval"]
    assert report["sets"]["locomo"]["imported"] == 4 and report["sets"]["locomo"]["questions"] == 2
    assert report["sets"]["locomo-pairs"]["imported"] == 2  # two utterances a turn
    assert ours["questions"] == len(questions) and ours["imported"] == 48 and ours["failed"] == 0
    assert ours["errors"] == 0 and ours["foreign_hits"] == 0
    assert set(ours["systems"]) == {"pandafs", "bm25_sessions", "bm25_turns", "bm25_windows", "rrf_sessions"}
    overall = ours["systems"]["pandafs"]["overall"]
    assert overall["n"] == sum(q["kind"] != "abstention" for q in questions)
    for name in ("all@3", "any@3", "all@10", "ndcg@3", "mrr", "turn_any@3"):
        assert 0.0 <= overall[name] <= 1.0
    assert lme["imported"] == 6 and lme["abstention"] == 1  # the repeated session once
    assert lme["systems"]["pandafs"]["overall"]["all@3"] == 1.0  # "hamster" is in one session
    assert set(lme["margins"]) == {"bm25_sessions", "bm25_turns", "bm25_windows", "rrf_sessions"}
    assert all(m["lo"] <= m["diff"] <= m["hi"] for m in lme["margins"].values())

    again = subprocess.run(
        [sys.executable, str(RUNNER), "--set", "ours", *args, "--json", "--search", "synonym_weight=0"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert again.returncode == 0, again.stderr
    rerun = json.loads(again.stdout)  # --json: exactly one JSON document on stdout
    assert rerun["sets"]["ours"]["skipped"] == 48 and rerun["sets"]["ours"]["imported"] == 0
    assert (
        rerun["search"] == {"synonym_weight": "0"}
        and "synonym_weight = 0" in (keep / "vault-ours" / "pandafs.toml").read_text()
    )

    switches = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eval_switches.py"), "--set", "all", *args[:8]]
        + ["--only", "stop words", "--only", "RM3 feedback", "--resamples", "200"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert switches.returncode == 0, switches.stderr
    *table, last = switches.stdout.strip().splitlines()
    report = json.loads(last)
    assert report["benchmark"] == "retrieval_switches" and report["resamples"] == 200
    assert set(report["sets"]) == {"ours", "longmemeval", "locomo", "locomo-pairs"}
    assert report["sets"]["longmemeval"] == {"n": 1, "all@5": 1.0}
    assert set(report["components"]) == {"stop words", "RM3 feedback"}
    for row in report["components"].values():
        assert set(row["sets"]) == {"ours", "longmemeval", "locomo", "locomo-pairs"}
        assert row["verdict"] in ("keep on", "keep off", "turn on", "turn off")
        for effect in row["sets"].values():
            assert -1.0 <= effect["lo"] <= effect["effect"] <= effect["hi"] <= 1.0
    assert any(line.startswith("stop words") for line in table)

    one, other = tmp_path / "one.out", tmp_path / "other.out"
    one.write_text(json.dumps({**report, "sets": {"longmemeval": report["sets"]["longmemeval"]}}))
    other.write_text(last)
    merged = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eval_switches.py"), "--merge", str(one), str(other)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout.strip().splitlines()[-1]) == report


def test_bootstrap_and_verdict(runner: ModuleType, switches: ModuleType) -> None:
    mean, lo, hi = runner.bootstrap([1] * 30 + [0] * 70, 500, 7)
    assert mean == 0.3 and 0.2 < lo < 0.3 < hi < 0.4
    assert runner.bootstrap([0] * 50, 500, 7) == (0.0, 0.0, 0.0)
    gain = {"effect": 0.05, "lo": 0.01, "hi": 0.09}
    noise = {"effect": 0.0, "lo": -0.02, "hi": 0.02}
    loss = {"effect": -0.05, "lo": -0.08, "hi": -0.01}
    small = {"effect": 0.01, "lo": -0.02, "hi": 0.04}
    assert switches.verdict(True, {"longmemeval": gain, "locomo": noise}) == "keep on"
    assert switches.verdict(True, {"longmemeval": noise, "locomo": noise}) == "keep on"  # no proof to change
    assert switches.verdict(True, {"longmemeval": gain, "locomo": loss}) == "turn off"
    assert switches.verdict(False, {"longmemeval": gain, "locomo": noise}) == "turn on"
    assert switches.verdict(False, {"longmemeval": small, "locomo": noise}) == "keep off"
    assert switches.verdict(False, {"longmemeval": gain, "locomo": loss}) == "keep off"
    assert switches.verdict(False, {"locomo": noise, "ours": gain}) == "keep off"  # only real sets count
    assert switches.verdict(True, {"locomo": noise, "ours": loss}) == "keep on"
