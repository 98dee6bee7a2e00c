"""Daily rollups of the turn catalog: `observability/daily/YYYY-MM-DD.json`.

One file per UTC day with activity, written only when its bytes change and without a
wall-clock stamp, so a rebuild gives byte-identical files:

    {"date": "2026-01-05",
     "turns": 12, "users": {"alice": 10, "bob": 2},
     "sources": {"ask": 12}, "outcomes": {"APPROVE": 11, "FAIL": 1},
     "query_types": {"question": 9, ...}, "validation": {"APPROVE": 11, "FAIL": 1},
     "quality_mean": 0.85, "revisions": 2, "failures": 0,
     "latency_ms": {"total": {"p50", "p95", "max", "mean"},
                    "phases": {"planner": {"p50", "p95", "max", "mean"}, ...}},
     "tokens": {"in": 0, "out": 0, "total": 0, "llm_calls": 36},
     "tool_calls": {"total": 3, "errors": 0, "by_tool": {"memory.search": 3}},
     "sources_used": 30, "memory_committed": 1,
     "feedback": {"accepted": 1, "rejected": 1},
     "scope_changes": {"promoted": 1, "demoted": 0, "expired": 0}}

Percentiles interpolate linearly (DuckDB's `quantile_cont`); a phase's statistics cover
the turns in which it ran."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import orjson

from events.fsio import atomic_write, read_vault_bytes

from .rows import PHASES

__all__ = [
    "ROW_FIELDS",
    "daily_path",
    "days_between",
    "percentile",
    "rollup",
    "summarize",
    "write_rollups",
]

SCOPE_KINDS = ("promoted", "demoted", "expired")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 1]) of a non-empty sequence."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    value = ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
    return round(value, 3)


def _stats(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
        "max": round(max(values), 3),
        "mean": round(sum(values) / len(values), 3),
    }


def _count(rows: Iterable[dict[str, Any]], key: str) -> dict[str, int]:
    return dict(sorted(Counter(str(r[key]) for r in rows if r[key] is not None).items()))


ROW_FIELDS = (
    "user", "source", "outcome", "query_type", "validation", "quality", "revisions", "failures",
    "ms_total", *(f"ms_{p}" for p in PHASES), "tokens_in", "tokens_out", "llm_calls",
    "tool_calls", "tool_errors", "tools", "sources_used", "memory_committed", "feedback_status",
)  # fmt: skip
"""The catalog fields `summarize` reads (a rollup converts only these of each row)."""


def summarize(rows: Sequence[dict[str, Any]], scope_changes: dict[str, int]) -> dict[str, Any]:
    """The statistics of some catalog rows (one day, or a whole window)."""
    tools: Counter[str] = Counter(t for r in rows for t in r["tools"])
    return {
        "turns": len(rows),
        "users": _count(rows, "user"),
        "sources": _count(rows, "source"),
        "outcomes": _count(rows, "outcome"),
        "query_types": _count(rows, "query_type"),
        "validation": _count(rows, "validation"),
        "quality_mean": round(sum(r["quality"] for r in rows) / len(rows), 4) if rows else None,
        "revisions": sum(r["revisions"] for r in rows),
        "failures": sum(r["failures"] for r in rows),
        "latency_ms": {
            "total": _stats([r["ms_total"] for r in rows]),
            "phases": {
                p: _stats([r[f"ms_{p}"] for r in rows if r[f"ms_{p}"] is not None])
                for p in PHASES
                if any(r[f"ms_{p}"] is not None for r in rows)
            },
        },
        "tokens": {
            "in": sum(r["tokens_in"] for r in rows),
            "out": sum(r["tokens_out"] for r in rows),
            "total": sum(r["tokens_in"] + r["tokens_out"] for r in rows),
            "llm_calls": sum(r["llm_calls"] for r in rows),
        },
        "tool_calls": {
            "total": sum(r["tool_calls"] for r in rows),
            "errors": sum(r["tool_errors"] for r in rows),
            "by_tool": dict(sorted(tools.items())),
        },
        "sources_used": sum(r["sources_used"] for r in rows),
        "memory_committed": sum(r["memory_committed"] for r in rows),
        "feedback": _count(rows, "feedback_status"),
        "scope_changes": {k: scope_changes.get(k, 0) for k in SCOPE_KINDS},
    }


def rollup(day: date, rows: Sequence[dict[str, Any]], scope_changes: dict[str, int]) -> dict[str, Any]:
    """The rollup of one day from that day's catalog rows and scope-change counts."""
    return {"date": day.isoformat(), **summarize(rows, scope_changes)}


def daily_path(directory: Path, day: date | str) -> Path:
    """A day's rollup file (`day` a date or its ISO text)."""
    return directory / f"{day}.json"


def write_rollups(directory: Path, rollups: Iterable[dict[str, Any]], root: Path | None = None) -> list[Path]:
    """Write each rollup whose bytes differ from its file; the files written.  A file
    that is a link is not read (nothing below `root` is): it is replaced, never its target."""
    written: list[Path] = []
    for data in rollups:
        path = daily_path(directory, data["date"])
        payload = orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
        if read_vault_bytes(root or directory, path) == payload:
            continue
        atomic_write(path, payload, durable=False, root=root)
        written.append(path)
    return written


def days_between(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]
