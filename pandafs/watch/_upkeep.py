"""Upkeep: the jobs, when each is due, running them, and when each last ran (`upkeep.json`)."""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import orjson

from events.clock import utcnow
from events.fsio import atomic_write, read_vault_bytes
from events.stamps import format_ts

from ..errors import Busy
from ..memory.turn_records import parse_time
from ..vault import Vault, file_lock

Log = Callable[[str], None]

UPKEEP_FILE = "upkeep.json"


@dataclass(frozen=True)
class UpkeepJob:
    """A scheduled job: `target` (`module:function`), imported when it first runs."""

    name: str
    what: str
    target: str

    def resolve(self) -> Callable[..., Any]:
        module_name, _, attr = self.target.partition(":")
        fn: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
        return fn


UPKEEP_JOBS: tuple[UpkeepJob, ...] = (
    UpkeepJob(
        "interrupted",
        "close turns whose process died mid-way",
        "pandafs.pipeline.interrupted:close_all_interrupted",
    ),
    UpkeepJob("archive", "archive policy: old turns to Parquet", "pandafs.archive:archive_turns"),
    UpkeepJob("promote", "scope promotion / demotion", "pandafs.learning.promotion:promote"),
    UpkeepJob("prune", "expired 'new' documents to the archive", "pandafs.learning.promotion:prune_expired"),
)


@dataclass(frozen=True)
class UpkeepResult:
    job: str
    status: str  # ok | error
    message: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3)}

    def describe(self) -> str:
        if self.status == "ok":
            brief = ", ".join(
                f"{k} {v}"
                for k, v in self.summary.items()
                if v and not isinstance(v, bool) and k != "seconds" and not k.endswith("_per_s")
            )
            return f"upkeep {self.job}: done in {self.seconds:.2f} s" + (f" ({brief})" if brief else "")
        return f"upkeep {self.job}: {self.status}: {self.message}"


def _summary(result: Any) -> dict[str, Any]:
    data = result.as_json() if hasattr(result, "as_json") else result
    if not isinstance(data, dict):
        return {} if data is None else {"result": str(data)[:200]}
    brief: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, bool | int | float | str) or value is None:
            brief[key] = value
        elif isinstance(value, list | dict):
            brief[key] = len(value)
    return brief


class Upkeep:
    """Runs the upkeep jobs when due and remembers when each last ran."""

    def __init__(
        self,
        vault: Vault,
        *,
        jobs: Sequence[UpkeepJob] = UPKEEP_JOBS,
        interval_s: float | None = None,
        clock: Callable[[], datetime] | None = None,
        log: Log | None = None,
    ) -> None:
        self.vault = vault
        self.jobs = tuple(jobs)
        hours = vault.config.watch.upkeep_interval_hours
        self.interval_s = hours * 3600.0 if interval_s is None else interval_s
        self.clock = clock or (lambda: utcnow())
        self.path = vault.layout.observability / UPKEEP_FILE
        self._log = log or (lambda line: None)

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0 and bool(self.jobs)

    def state(self) -> dict[str, dict[str, Any]]:
        raw = read_vault_bytes(self.vault.root, self.path)  # a link counts as none
        try:
            data = orjson.loads(raw) if raw is not None else None
        except orjson.JSONDecodeError:
            return {}
        jobs = data.get("jobs") if isinstance(data, dict) else None
        return jobs if isinstance(jobs, dict) else {}

    def _waits(self, now: datetime | None) -> list[tuple[UpkeepJob, float]]:
        """Each job and the seconds until it is due (≤ 0: due; never run: due)."""
        now = now or self.clock()
        state = self.state()
        waits = []
        for job in self.jobs:
            entry = state.get(job.name)
            last = parse_time(entry.get("last_run")) if isinstance(entry, dict) else None
            waits.append((job, 0.0 if last is None else self.interval_s - (now - last).total_seconds()))
        return waits

    def due(self, now: datetime | None = None) -> list[UpkeepJob]:
        """Jobs that never ran, or last ran `interval_s` ago or more."""
        return [job for job, wait in self._waits(now) if wait <= 0] if self.enabled else []

    def seconds_until_due(self, now: datetime | None = None) -> float | None:
        """Seconds until the next job is due (0 if one is); None if none ever will be."""
        return max(0.0, min(wait for _, wait in self._waits(now))) if self.enabled else None

    def run_due(self, now: datetime | None = None, *, force: bool = False) -> list[UpkeepResult]:
        """Run every due job (all with `force`); record when each ran.  One process at a time
        (`observability/.upkeep.lock`): a cron `watch --once` skips what a running `watch` does."""
        now = now or self.clock()
        if not force and not self.due(now):
            return []
        try:
            with file_lock(
                self.path.with_name(".upkeep.lock"), wait_s=0.0, what="upkeep", root=self.vault.root
            ):
                jobs = list(self.jobs) if force else self.due(now)
                return [self._run(job, now) for job in jobs]
        except Busy as exc:
            self._log(f"upkeep skipped: {exc}")
            return []

    def _run(self, job: UpkeepJob, now: datetime) -> UpkeepResult:
        started = time.perf_counter()
        self._log(f"upkeep {job.name}: {job.what}…")
        try:
            fn = job.resolve()
            accepted = inspect.signature(fn).parameters
            kwargs = {"now": now} if "now" in accepted else {}
            outcome = fn(self.vault, **kwargs)
            result = UpkeepResult(
                job.name, "ok", summary=_summary(outcome), seconds=time.perf_counter() - started
            )
        except Exception as exc:  # recorded and retried at the next interval
            result = UpkeepResult(
                job.name,
                "error",
                f"{type(exc).__name__}: {exc}",
                seconds=time.perf_counter() - started,
            )
        self._record(job.name, result, now)
        self._log(result.describe())
        return result

    def _record(self, name: str, result: UpkeepResult, now: datetime) -> None:
        state = self.state()
        done = {k: v for k, v in result.as_json().items() if k != "job"}
        state[name] = {"last_run": format_ts(now), **done}
        data = orjson.dumps({"jobs": state}, option=orjson.OPT_INDENT_2)
        atomic_write(self.path, data, root=self.vault.root)
