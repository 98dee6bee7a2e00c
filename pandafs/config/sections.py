"""The sections of `pandafs.toml`: one frozen settings class each, defaults and their reasons."""

from typing import Any, Literal

from events.doctypes import TOPIC_RE
from events.errors import InvalidUserId
from events.layout import validate_user_id

from .checked import ConfigError, _Section, setting


def _check_users(where: str, users: list[str]) -> None:
    """Every name in a list of users is a user id: a typo would match nobody, silently."""
    for user in users:
        try:
            validate_user_id(user)
        except InvalidUserId as exc:
            raise ConfigError(where, str(exc)) from None


# No `from __future__ import annotations` here: the checks read the annotations as types.


class RoleConfig(_Section):
    model: str = setting("", description="model name for this role ('' = llm.model)")
    temperature: float = setting(0.5, ge=0, le=2, description="sampling temperature")


def _roles() -> dict[str, RoleConfig]:
    return {
        "reflex": RoleConfig(temperature=0.3),
        "mind": RoleConfig(temperature=0.5),
        "voice": RoleConfig(temperature=0.7),
    }


class LLMConfig(_Section):
    backend: Literal["offline", "openai"] = setting(
        "offline",
        description="'offline' (deterministic, no model) or 'openai' (any compatible server)",
    )
    base_url: str = setting("http://127.0.0.1:8000/v1", description="OpenAI-compatible API base URL")
    api_key_env: str = setting("OPENAI_API_KEY", description="environment variable holding the API key")
    model: str = setting("qwen3", description="default model name")
    timeout_s: float = setting(60.0, gt=0, description="per-request timeout in seconds")
    max_retries: int = setting(3, ge=0, description="retries on 429 / 5xx / connection errors")
    backoff_s: float = setting(0.5, ge=0, description="first retry delay; doubles each retry")
    max_tokens: int = setting(
        1024,
        ge=1,
        description="most tokens a reply may use (a small model in JSON mode can loop on whitespace)",
    )
    structured_output: Literal["json_schema", "json_object", "none"] = setting(
        "json_schema",
        description="response_format sent for JSON replies: 'json_schema' (vLLM, Ollama >= 0.5, "
        "llama.cpp server), 'json_object' (older servers), 'none' (prompt only)",
    )
    roles: dict[str, RoleConfig] = setting(factory=_roles, description="REFLEX / MIND / VOICE")

    def _after_init(self) -> None:
        object.__setattr__(self, "roles", {**_roles(), **self.roles})  # setting one role keeps the others

    @classmethod
    def model_validate(cls, data: Any, where: str = "") -> Any:
        """A role's table keeps that role's defaults for what it leaves out: `[llm.roles.reflex]
        model = "small"` stays at REFLEX's temperature, not a role's generic one."""
        roles = data.get("roles") if isinstance(data, dict) else None
        if isinstance(roles, dict):
            defaults = {name: vars(role) for name, role in _roles().items()}
            roles = {
                name: {**defaults[name], **given} if name in defaults and isinstance(given, dict) else given
                for name, given in roles.items()
            }
            data = {**data, "roles": roles}
        return super().model_validate(data, where)


class PipelineConfig(_Section):
    max_revisions: int = setting(2, ge=0, description="RETRY / REVISE loops before the turn fails")
    context_tokens: int = setting(2000, ge=0, description="cap of §2 Gathered Context, in tokens")
    executor_max_steps: int = setting(6, ge=0, description="tool calls the executor may make per attempt")
    tool_tokens: int = setting(
        1500, ge=0, description="cap of the tool results (§4) Synthesis reads, in tokens"
    )
    relevance_threshold: float = setting(
        0.15, ge=0, le=1, description="min normalised search score for a document to enter §2"
    )
    max_sources: int = setting(
        0, ge=0, description="documents the context gatherer cites at most (0: what context_tokens holds)"
    )


class SearchConfig(_Section):
    """The weights and switches of the ranking formula (docs/search.md), each default once."""

    quality_weight: float = setting(0.5, ge=0, description="score × (1 + w·(quality − 0.5))")
    freshness_weight: float = setting(0.0, ge=0, description="score × (1 + w·2^(−age/half_life)) (0 = off)")
    freshness_half_life_days: float = setting(30.0, gt=0, description="age at which freshness is 1/2")
    trust_weight: float = setting(0.2, ge=0, description="score × (1 + w·(trust − 0.5)) when trust is known")
    topic_boost: float = setting(0.5, ge=0, description="bonus factor for an exact topic match")
    title_boost: float = setting(0.25, ge=0, description="BM25 weight of the title (body = 1)")
    keywords_boost: float = setting(1.5, ge=0, description="BM25 weight of the keywords (body = 1)")
    synonym_weight: float = setting(
        0.7, ge=0, description="weight of a thesaurus synonym of a query word (0 = none)"
    )
    prefix_weight: float = setting(
        0.0, ge=0, description="weight of another word form sharing a long prefix (0 = none)"
    )
    spread_weight: float = setting(
        0.5, ge=0, description="down-weights query words found on many days: (idf_days ratio)^w"
    )
    neighbour_weight: float = setting(
        0.4, ge=0, description="share of an adjacent turn's match a turn inherits, per query word"
    )
    episode_weight: float = setting(
        0.2,
        ge=0,
        aliases=("episode_weight", "day_weight"),
        description="share of its episode's coverage score a turn gets",
    )
    coverage_k1: float = setting(
        1.2,
        ge=0,
        description="a word of an episode counts more the more of its turns hold it, saturating as "
        "BM25's k1 does (0 = its best turn only)",
    )
    expand_episodes: int = setting(
        8,
        ge=0,
        aliases=("expand_episodes", "expand_days"),
        description="best episodes (conversations) whose turns are all scored (stage 2)",
    )
    episode_gap_minutes: float = setting(
        30.0, ge=0, description="a longer silence starts a new episode (turns without a session id)"
    )
    episode_reach: int = setting(
        32,
        ge=0,
        description="a longer run of turns is scored within this many turns of a stage-1 hit (0 = all)",
    )
    latest_weight: float = setting(
        0.0,
        ge=0,
        description='"now", "recently", "the first time": bonus for the latest (earliest) near-equal episode',
    )
    latest_band: float = setting(
        0.4, ge=0, le=1, description="episodes within this share of the best episode compete on time"
    )
    episode_cap: int = setting(
        0,
        ge=0,
        aliases=("episode_cap", "day_cap"),
        description="turns of one episode before every other hit (0 = no cap)",
    )
    candidate_pool: int = setting(60, ge=1, description="BM25 candidates of stage 1")
    feedback_docs: int = setting(
        10, ge=0, description="RM3 pseudo-relevance feedback: best first-round turns read (0 = off)"
    )
    feedback_always: bool = setting(
        False, description="RM3 on every query, not only those asking how many or how much (a total)"
    )
    feedback_terms: int = setting(10, ge=1, description="RM3: words added from those turns")
    feedback_weight: float = setting(
        0.5, gt=0.0, le=0.99, description="RM3: share of the added words against the question's"
    )
    time_words: bool = setting(True, description='resolve "last week", "in May", "two months ago" in queries')
    time_weight: float = setting(
        1.0, ge=0, description="score × (1 + w) inside the window a query's time words name"
    )
    stop_words: bool = setting(True, description="drop stop words from queries")
    framing: bool = setting(True, description="weigh question framing words (name, usually, like...) low")
    word_forms: bool = setting(True, description="irregular verb forms and long-prefix word forms")


class IndexConfig(_Section):
    max_file_bytes: int = setting(5_000_000, ge=0, description="larger files are skipped with a reason")
    writer_wait_s: float = setting(30.0, ge=0, description="how long a writer waits for the index lock")
    writer_heap_mb: int = setting(
        64, ge=1, description="tantivy writer heap (a rebuild's peak memory; 128 indexed no faster)"
    )
    batch_size: int = setting(1000, ge=1, description="documents per commit in rebuild / import")
    import_max_bytes: int = setting(
        1_000_000_000, ge=0, description="largest export file `pandafs import` reads (larger: refused)"
    )


IDENTITY_KEYS = tuple(
    "name full_name preferred_name nickname pronouns job occupation profession role work "
    "works_at employer company location lives_in home hometown city country timezone".split()
)


class TiersConfig(_Section):
    hot_turns: int = setting(4, ge=3, le=5, description="the last N turns always in context (3-5)")
    hot_tokens: int = setting(1500, ge=0, description="hot tier budget")
    warm_tokens: int = setting(2000, ge=0, description="warm tier budget")
    cold_tokens: int = setting(900, ge=0, description="cold tier budget (identity anchors first)")
    warm_turns: int = setting(50, ge=0, description="turns considered for the warm tier")
    recency_lambda: float = setting(0.1, ge=0, description="cold recency = e^(−λ·days)")
    sample_every: int = setting(10, ge=1, description="long histories: first turn, every Nth, last 5")
    cold_candidates: int = setting(20, ge=0, description="search hits ranked for the cold tier")
    max_sampled: int = setting(
        60, ge=1, description="long histories: at most ~this many sampled turns (N grows)"
    )
    identity_keys: list[str] = setting(
        factory=lambda: list(IDENTITY_KEYS),
        description="facts.md keys that are identity anchors (always in context); "
        "a line tagged #identity is one too",
    )


class ArchiveConfig(_Section):
    age_days: int = setting(30, ge=0, description="turns older than this may be archived")
    force_age_days: int = setting(365, ge=0, description="archived whatever their use")
    max_recent_uses: int = setting(2, ge=0, description="used/expanded more often than this stays live")
    recent_window_days: int = setting(30, ge=0, description="window for counting recent uses")
    batch_size: int = setting(500, ge=1, description="turns per Parquet file")
    zstd_level: int = setting(3, ge=1, le=22, description="Parquet zstd compression level")
    expansions_to_restore: int = setting(3, ge=0, description="expansions within the window that restore")
    expansion_window_days: int = setting(30, ge=0, description="window for counting expansions")


class MemoryConfig(_Section):
    new_ttl_hours: float = setting(
        24.0, gt=0, le=1_000_000, description="'new' documents expire after this unless promoted"
    )
    user_trust: float = setting(0.5, ge=0, le=1, description="new → user: trust at least")
    user_usage: int = setting(3, ge=0, description="new → user: usage at least")
    user_age_hours: float = setting(1.0, ge=0, description="new → user: age at least")
    global_trust: float = setting(0.8, ge=0, le=1, description="user → global: trust at least")
    global_usage: int = setting(10, ge=0, description="user → global: usage at least")
    global_age_hours: float = setting(24.0, ge=0, description="user → global: age at least")
    demotion_min_verdicts: int = setting(
        3, ge=0, description="a document is demoted only after at least this many verdicts"
    )
    publishers: list[str] = setting(
        factory=list,
        description="users who may publish a document to every user (save --scope global); "
        "empty: nobody. Memories are never shared automatically; research may be promoted",
    )
    trust_prior_weight: float = setting(
        2.0,
        gt=0,
        description="trust = (successes + w·quality) / (validations + w): how many "
        "validations the document's own quality is worth",
    )

    def _after_init(self) -> None:
        _check_users("publishers", self.publishers)


class InboxConfig(_Section):
    default_user: str = setting("me", description="user for files dropped straight into inbox/")
    allowed_users: list[str] = setting(factory=list, description="if set, only these users")
    max_bytes: int = setting(1_000_000, ge=0, description="larger query files are rejected")

    def _after_init(self) -> None:
        _check_users("default_user", [self.default_user])
        _check_users("allowed_users", self.allowed_users)


class WatchConfig(_Section):
    debounce_ms: int = setting(250, ge=0, description="quiet time before a batch of changes is processed")
    max_delay_ms: int = setting(2000, ge=0, description="a busy path is processed at least this often")
    reconcile_interval_s: float = setting(300.0, ge=0, description="periodic checksum reconcile scan")
    upkeep_interval_hours: float = setting(24.0, ge=0, description="archive policy + scope promotion")


class ResearchConfig(_Section):
    search_url: str = setting("", description="SearxNG-compatible /search endpoint ('' = unavailable)")
    user_agent: str = setting(
        "PandaFS-research/0.1 (+https://github.com/pandafs; local assistant)",
        description="honest User-Agent sent with every request",
    )
    timeout_s: float = setting(10.0, gt=0, description="per-request timeout")
    max_page_bytes: int = setting(2_000_000, ge=0, description="pages larger than this are cut off")
    max_results: int = setting(5, ge=0, description="pages fetched per research call")
    per_domain_concurrency: int = setting(1, ge=1, description="parallel requests per domain")
    per_domain_interval_s: float = setting(1.0, ge=0, description="minimum gap between requests to a domain")
    max_redirects: int = setting(5, ge=0, description="redirects followed per page")
    min_reliability: float = setting(0.2, ge=0, le=1, description="domains below this are skipped")


def _topics() -> dict[str, list[str]]:
    return {
        "electronics.laptop": ["laptop", "laptops", "notebook", "thinkpad", "macbook", "lenovo"],
        "electronics.phone": ["phone", "smartphone", "iphone", "android", "pixel"],
        "electronics.gpu": ["gpu", "nvidia", "rtx", "graphics"],
        "pet.hamster": ["hamster", "hamsters"],
        "pet.hamster.syrian": ["syrian"],
        "pet.dog": ["dog", "dogs", "puppy"],
        "pet.cat": ["cat", "cats", "kitten"],
        "food.recipe": ["recipe", "cook", "cooking", "bake", "dinner"],
        "travel": ["travel", "trip", "flight", "hotel", "vacation"],
        "health.fitness": ["run", "running", "gym", "workout", "marathon"],
        "finance": ["budget", "money", "price", "cost", "invest"],
        "work": ["job", "work", "career", "office", "project"],
    }


class Config(_Section):
    llm: LLMConfig = setting(factory=LLMConfig, description="language model backend")
    pipeline: PipelineConfig = setting(factory=PipelineConfig, description="turn pipeline")
    search: SearchConfig = setting(factory=SearchConfig, description="unified search ranking")
    index: IndexConfig = setting(factory=IndexConfig, description="full-text index")
    tiers: TiersConfig = setting(factory=TiersConfig, description="hot / warm / cold context")
    archive: ArchiveConfig = setting(factory=ArchiveConfig, description="cold storage")
    memory: MemoryConfig = setting(factory=MemoryConfig, description="TTL and scope promotion")
    inbox: InboxConfig = setting(factory=InboxConfig, description="query files")
    watch: WatchConfig = setting(factory=WatchConfig, description="file watcher")
    research: ResearchConfig = setting(factory=ResearchConfig, description="internet.research")
    topics: dict[str, list[str]] = setting(
        factory=_topics, description="topic → keywords the offline analyzer maps to it"
    )

    def _after_init(self) -> None:
        for topic in self.topics:  # a topic no document can carry would never match
            if not TOPIC_RE.fullmatch(topic):
                raise ConfigError(f"topics.{topic}", "use dot-separated lowercase words, e.g. pet.hamster")
