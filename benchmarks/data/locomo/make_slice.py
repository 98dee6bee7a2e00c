"""Rebuild `locomo10.jsonl.gz` from LoCoMo's own `data/locomo10.json`.

    python benchmarks/data/locomo/make_slice.py PATH/TO/locomo10.json

Keeps, per conversation, what retrieval scoring reads: `sample_id`; the two speakers;
each session's date and turns (`speaker`, `dia_id`, `text`, and a shared photo's
`blip_caption`); each question's `question`, `answer` (or `adversarial_answer`),
`evidence` and `category`.  Drops the event summaries, observations, session summaries
and image URLs.  One conversation per line, gzip with a fixed mtime: the same input
gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().with_name("locomo10.jsonl.gz")


def slim(sample: dict[str, Any]) -> dict[str, Any]:
    conv = sample["conversation"]
    numbers = sorted(int(m[1]) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    sessions = []
    for n in numbers:
        turns = []
        for turn in conv[f"session_{n}"]:
            kept = {"speaker": turn["speaker"], "dia_id": turn["dia_id"], "text": turn.get("text", "")}
            if turn.get("blip_caption"):
                kept["blip_caption"] = turn["blip_caption"]
            turns.append(kept)
        sessions.append({"session": n, "date_time": conv[f"session_{n}_date_time"], "turns": turns})
    qa = []
    for q in sample["qa"]:
        answer = q.get("answer", q.get("adversarial_answer"))
        qa.append(
            {
                "question": q["question"],
                "answer": answer,
                "evidence": q.get("evidence") or [],
                "category": q["category"],
            }
        )
    speakers = [conv["speaker_a"], conv["speaker_b"]]
    return {"sample_id": sample["sample_id"], "speakers": speakers, "sessions": sessions, "qa": qa}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: make_slice.py PATH/TO/locomo10.json", file=sys.stderr)
        return 2
    samples = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    with open(OUT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as handle:
        for sample in samples:
            handle.write((json.dumps(slim(sample), ensure_ascii=False) + "\n").encode())
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(samples)} conversations)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
