"""pandafs.toml is checked without pydantic: the same defaults, the same refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from pandafs.config import (
    Config,
    ConfigError,
    LLMConfig,
    SearchConfig,
    TiersConfig,
    load_config,
    render_default_config,
)
from pandafs.errors import BadInput


def _load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "pandafs.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[search]\nbogus = 1\n", "search.bogus: Extra inputs are not permitted"),
        ("[bogus]\nx = 1\n", "bogus: Extra inputs are not permitted"),
        ("[index]\nbatch_size = 'many'\n", "index.batch_size: Input should be a valid integer"),
        ("[index]\nbatch_size = 10.5\n", "index.batch_size: Input should be a valid integer"),
        ("[llm]\nbackend = 'magic'\n", "llm.backend: Input should be 'offline' or 'openai'"),
        ("[tiers]\nhot_turns = 2\n", "tiers.hot_turns: Input should be greater than or equal to 3"),
        ("[memory]\ntrust_prior_weight = 0\n", "memory.trust_prior_weight: Input should be greater than 0"),
        ("[memory]\npublishers = 'alice'\n", "memory.publishers: Input should be a valid list"),
        ("[llm.roles.mind]\nbogus = 1\n", "llm.roles.mind.bogus: Extra inputs are not permitted"),
        ("[topics]\n'a.b' = [1]\n", "topics.a.b.0: Input should be a valid string"),
        ("search = 3\n", "search: Input should be a table"),
        ("[memory]\nnew_ttl_hours = nan\n", "memory.new_ttl_hours: Input should be a finite number"),
        ("[search]\nquality_weight = inf\n", "search.quality_weight: Input should be a finite number"),
        ("[memory]\nnew_ttl_hours = -5.0\n", "memory.new_ttl_hours: Input should be greater than 0"),
        ("[search\n", "not valid TOML"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(BadInput, match="pandafs.toml: ") as caught:
        _load(tmp_path, text)
    assert message in str(caught.value)


def test_values_are_converted_to_their_type_and_old_names_still_work(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        "[search]\nquality_weight = 1\nday_weight = 0.9\nday_cap = 2.0\nstop_words = 0\n"
        "[llm.roles.critic]\nmodel = 'big'\n",
    )
    assert config.search.quality_weight == 1.0 and isinstance(config.search.quality_weight, float)
    assert (config.search.episode_weight, config.search.episode_cap) == (0.9, 2)
    assert isinstance(config.search.episode_cap, int) and config.search.stop_words is False
    assert sorted(config.llm.roles) == ["critic", "mind", "reflex", "voice"]  # one role keeps the others
    assert config.llm.roles["critic"].model == "big"
    assert config.tiers == TiersConfig() and config != Config()


def test_a_missing_file_is_the_defaults_and_sections_are_frozen(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml")
    assert config == Config()
    assert config.search == SearchConfig()
    assert vars(config.llm.roles["voice"]) == {"model": "", "temperature": 0.7}
    with pytest.raises(AttributeError):
        config.search.topic_boost = 2.0  # type: ignore[misc]


def test_constructing_a_section_checks_it_too() -> None:
    with pytest.raises(ConfigError, match="hot_turns: Input should be less than or equal to 5"):
        TiersConfig(hot_turns=9)
    assert LLMConfig(timeout_s=1).timeout_s == 1.0
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        LLMConfig(bogus=1)


def test_a_config_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "pandafs.toml"
    path.write_bytes(b"\xff\xfe[memory]\n")
    with pytest.raises(BadInput, match="pandafs.toml: not valid UTF-8"):
        load_config(path)


def test_the_ranking_takes_every_search_setting_and_nothing_else() -> None:
    """`[search]` (SearchConfig) is the one home of the ranking's defaults: `Ranking` has
    the same fields and no defaults of its own."""
    from indexers.request import Ranking
    from pandafs.config.sections import SearchConfig

    assert list(Ranking._fields) == list(SearchConfig.settings)
    assert Ranking._field_defaults == {}
    assert Ranking(**vars(SearchConfig())).candidate_pool == SearchConfig().candidate_pool


def test_the_file_init_writes_leaves_every_setting_to_the_defaults_and_one_line_changes_one(
    tmp_path: Path,
) -> None:
    """Every setting is written commented out, so a vault keeps following the defaults a
    later version brings; uncommenting one line changes that setting and nothing else."""
    path = tmp_path / "pandafs.toml"
    path.write_text(render_default_config(), encoding="utf-8")
    assert load_config(path) == Config()
    path.write_text(path.read_text().replace("# feedback_docs = ", "feedback_docs = 3 #"), encoding="utf-8")
    changed, default = load_config(path), Config()
    assert [name for name in Config.settings if getattr(changed, name) != getattr(default, name)] == [
        "search"
    ]
    assert [
        name
        for name in SearchConfig.settings
        if getattr(changed.search, name) != getattr(default.search, name)
    ] == ["feedback_docs"]


def test_a_role_table_keeps_that_roles_defaults_for_what_it_leaves_out(tmp_path: Path) -> None:
    config = _load(tmp_path, '[llm.roles.reflex]\nmodel = "small"\n')
    assert config.llm.roles["reflex"].model == "small"
    assert config.llm.roles["reflex"].temperature == Config().llm.roles["reflex"].temperature == 0.3
    assert config.llm.roles["voice"] == Config().llm.roles["voice"]
