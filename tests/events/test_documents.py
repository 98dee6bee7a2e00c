"""Frontmatter round trips, Obsidian-valid properties, broken YAML, sections."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from events.documents import DocumentMetadata, parse_document, render_document, shorten, split_sections
from events.errors import FrontmatterError


def test_round_trip_keeps_unknown_keys() -> None:
    text = (
        "---\nid: alice/memories/x\nprimary_topic: pet.hamster\nkeywords:\n- hamster\n"
        "created_at: 2026-11-21T22:00:00Z\nmy_rating: 5\ncolour: brown\n---\n# Body\n"
    )
    parsed = parse_document(text)
    meta = DocumentMetadata.model_validate(parsed.frontmatter)
    assert meta.model_extra == {"my_rating": 5, "colour": "brown"}
    again = render_document(meta, parsed.body)
    reparsed = parse_document(again)
    assert reparsed.frontmatter["my_rating"] == 5
    assert reparsed.frontmatter["colour"] == "brown"
    assert reparsed.body == "# Body\n"
    assert render_document(DocumentMetadata.model_validate(reparsed.frontmatter), reparsed.body) == again


def test_obsidian_properties_are_block_lists_and_iso_dates() -> None:
    meta = DocumentMetadata(
        id="a/x",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        keywords=["one", "two"],
        tags=["pandafs/memory"],
        aliases=["X"],
    )
    text = render_document(meta, "body\n")
    assert "keywords:\n- one\n- two\n" in text
    assert "tags:\n- pandafs/memory\n" in text
    assert "aliases:\n- X\n" in text
    assert "created_at: 2026-01-02T03:04:05.000000Z\n" in text
    assert "[" not in text.split("---")[1]


def test_broken_frontmatter_names_file_and_line() -> None:
    text = "---\nid: a\nkeywords: [one, two\nscope: user\n---\nbody\n"
    with pytest.raises(FrontmatterError) as info:
        parse_document(text, "users/a/memories/x.md")
    assert "users/a/memories/x.md:" in str(info.value)
    assert info.value.line >= 3


def test_unclosed_frontmatter() -> None:
    with pytest.raises(FrontmatterError, match="no closing"):
        parse_document("---\nid: a\n", "f.md")


def test_no_frontmatter_is_fine() -> None:
    parsed = parse_document("# Just a note\n")
    assert parsed.frontmatter == {} and not parsed.has_frontmatter


def test_sections() -> None:
    body = "# T\n\n## 0. User Query\n\nq?\n\n## 2. Gathered Context\n\nctx\n\n## 5. Synthesis\n\nans\n"
    assert split_sections(body) == {0: "q?", 2: "ctx", 5: "ans"}
    assert split_sections(body, numbers=(5,)).get(5) == "ans"
    assert split_sections(body, numbers=(3,)).get(3) is None


TRICKY = [
    "plain",
    "two words",
    "yes",
    "No",
    "no.",
    "on",
    "null",
    "~",
    "",
    " lead",
    "trail ",
    "a: b",
    "a:b",
    "#tag",
    "x # y",
    "123",
    "-7",
    "0.5",
    "1e3",
    ".inf",
    "0x1F",
    "1_000",
    "2026-01-01",
    "12:30",
    "it's",
    "'quoted'",
    '"double"',
    "café ☕",
    "tab\there",
    "line\nbreak",
    "- dash",
    "[flow]",
    "{map}",
    "@at",
    "`tick`",
    "!bang",
    "%pct",
    "&amp",
    "*star",
    "|pipe",
    ">gt",
    "a, b",
    "Lenovo LOQ 15",
    "users/alice/turns/turn_000001",
    "2026-11-21T22:00:00.000000Z",
    "True",
    "e5",
    "NaN",
    "3.",
    "07",
    # shapes of a real chat export (LongMemEval's session ids and titles)
    "8a70ec05_2-t000",
    "426e7403_3",
    "0bcf2555_1",
    "15 ways to go",
    "1. as angels",
    "1.5e-3",
    "1.5e-3x",
    "1e-5",
    "12e5_x",
    "2026-01-01x",
    "0b101",
    "0o17",
    "(assistant)",
    "text:…",
    "7:15 am",
    "at 7:15",
    "¿Qué es?",
    "“quoted”",
    "C#",
    "http://example.com/a",
]


def _typed(value: object) -> object:
    """Values with their types, so 1 == True or 1 == 1.0 cannot pass for equal."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("seed", range(40))
def test_fast_frontmatter_agrees_with_pyyaml(seed: int) -> None:
    import random

    import yaml

    from events.documents import dump_frontmatter
    from events.yaml_subset import fast_frontmatter

    rng = random.Random(seed)

    def value(depth: int = 0) -> object:
        kind = rng.randrange(8 if depth == 0 else 6)
        if kind == 0:
            return rng.randrange(-1000, 1000)
        if kind == 1:
            return round(rng.uniform(0, 1), rng.randrange(1, 4))
        if kind == 2:
            return datetime(2026, rng.randrange(1, 13), rng.randrange(1, 28), tzinfo=UTC)
        if kind in (3, 4):
            return rng.choice(TRICKY)
        if kind == 5:
            return rng.choice([True, False, None])
        if kind == 6:
            return [rng.choice(TRICKY + [1, 2.5]) for _ in range(rng.randrange(0, 4))]
        return {rng.choice(["a", "b", "yes", "c_d"]): value(1) for _ in range(rng.randrange(1, 3))}

    for _ in range(50):
        data = {rng.choice(["id", "title", "x", "on", "meta", "k2"]) + str(i): value() for i in range(6)}
        raw = dump_frontmatter(data)
        fast = fast_frontmatter(raw)
        if fast is not None:
            assert _typed(fast) == _typed(yaml.load(raw, Loader=yaml.SafeLoader)), raw
    # and what we actually write is on the fast path
    meta = DocumentMetadata(id="a/x", created_at=datetime(2026, 1, 2, tzinfo=UTC), keywords=["k"], tags=["t"])
    assert fast_frontmatter(dump_frontmatter(meta.to_frontmatter())) is not None


@pytest.mark.parametrize(
    "value",
    [
        "8a70ec05_2-t000",
        "426e7403_3",
        "07942c06",
        "15 ways to Develop conflict strategies",
        "23. they have a limited concept",
        "(assistant)",
        "Answer them from the following text:…",
        "the 7:15 am train",
        "¿Qué es el sistema endocrino?",
        "“One One was a race horse”",
    ],
)
def test_real_exports_plain_strings_are_read_on_the_fast_path(value: str) -> None:
    """Session ids that start with a digit, titles with a colon or beginning with "(" or
    "¿": a third of a real chat export's frontmatters (LongMemEval) went to PyYAML
    (~190 µs each) for lines like these; they are read as PyYAML reads them."""
    import yaml

    from events.yaml_subset import fast_frontmatter

    raw = f"title: {value}\nmeta:\n  session: {value}\n"
    expected = yaml.load(raw, Loader=yaml.SafeLoader)
    assert expected == {"title": value, "meta": {"session": value}}  # plain, as written
    assert fast_frontmatter(raw) == expected


@pytest.mark.parametrize("seed", range(40))
def test_fast_dump_writes_what_pyyaml_writes(seed: int) -> None:
    import random

    from events.documents import _quoted, _slow_dump
    from events.yaml_subset import fast_dump

    rng = random.Random(seed)
    pool = TRICKY + [
        0,
        7,
        -3,
        0.5,
        1.25,
        1e-7,
        3.0,
        True,
        False,
        None,
        "  two  spaces",
        "x" * 6000,
        datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    ]
    for _ in range(60):
        data: dict = {}
        for i in range(rng.randrange(1, 7)):
            kind = rng.randrange(4)
            value = rng.choice(pool)
            if kind == 1:
                value = [rng.choice(pool) for _ in range(rng.randrange(0, 4))]
            elif kind == 2:
                value = {
                    rng.choice(["a", "b", "on", "k_1"]): rng.choice(pool) for _ in range(rng.randrange(0, 3))
                }
                if rng.randrange(2):  # lists and mappings inside (a context block's `_meta` has them)
                    value["l"] = [rng.choice(pool) for _ in range(rng.randrange(0, 3))]
                    value["m"] = {"hot": [rng.choice(pool)], "n": {"x": rng.choice(pool)}}
            data[rng.choice(["id", "title", "yes", "k"]) + str(i)] = value
        fast = fast_dump(data, _quoted)
        slow = _slow_dump(data, sort_keys=False, default_flow_style=False)
        if fast is not None:
            assert fast == slow, data


def test_a_context_blocks_meta_is_written_without_pyyaml() -> None:
    """A turn's context blocks carry nested `_meta` (lists, a mapping of lists, an empty
    list): written directly, byte for byte what PyYAML writes."""
    from events.documents import _quoted, _slow_dump
    from events.yaml_subset import fast_dump

    data = {
        "_meta": {
            "type": "turn_context",
            "relevant_turns": [23, 22],
            "tiers": {"hot": [23], "warm": [19, 18], "cold": []},
            "gaps_identified": [],
            "context_quality": 0.5,
        }
    }
    fast = fast_dump(data, _quoted)
    assert fast is not None
    assert fast == _slow_dump(data, sort_keys=False, default_flow_style=False)


def test_a_key_holding_colon_space_is_written_so_it_reads_back() -> None:
    """A key is written plain only if it is an identifier: a key an import's `meta` may hold
    ("note: one") is PyYAML's to write, quoted, or the frontmatter would not read back."""
    front = {"id": "x", "meta": {"note: one": "kept"}, "a: b": "c"}
    parsed = parse_document(render_document(front, "body\n")).frontmatter
    assert parsed == front


@pytest.mark.parametrize("seed", range(20))
def test_single_quoted_is_what_pyyaml_writes(seed: int) -> None:
    import random

    from events.documents import _slow_dump
    from events.yaml_subset import single_quoted

    rng = random.Random(seed)
    pieces = [*TRICKY, ": ", " #", "#", ":", "'", " ", "-", "a", "é", "“x”", "[", "{", "&", "%", "`", "7"]
    sure = 0
    for _ in range(300):
        value = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6)))
        quoted = single_quoted(value)
        if quoted is not None:
            sure += 1
            assert quoted + "\n" == _slow_dump(value), value
    assert sure > 50


@pytest.mark.parametrize("closing", ["---", "--- ", "---\t", "---\r", "...", "...  "])
def test_the_closing_line_may_end_in_blanks_or_be_three_dots(closing: str) -> None:
    from events.documents import parse_document

    text = f"---\nid: a/x\ntags:\n- t\n{closing}\n# Body\n--- not a fence\n"
    assert parse_document(text) == ({"id": "a/x", "tags": ["t"]}, "# Body\n--- not a fence\n", True)


@pytest.mark.parametrize("line", ["----", "---x", "... x", " ---"])
def test_a_line_that_only_starts_like_the_fence_does_not_close_it(line: str) -> None:
    from events.documents import parse_document

    with pytest.raises(FrontmatterError, match="no closing"):
        parse_document(f"---\nid: a/x\n{line}\nbody\n")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("---\n---\n# Body\n", ({}, "# Body\n", True)),  # closed on the line after the fence
        ("---\r\n---\r\nbody", ({}, "body", True)),
        ("---\nid: a/x\n---", ({"id": "a/x"}, "", True)),  # the text's last line closes it
        ("---\ntitle: Turn — “café”…\n...\n# T\n", ({"title": "Turn — “café”…"}, "# T\n", True)),
    ],
)
def test_the_closing_line_is_found_wherever_it_starts(text: str, parsed: tuple[object, ...]) -> None:
    assert parse_document(text) == parsed


@pytest.mark.parametrize(
    "raw",
    [
        "title: \nid: a/x\n",  # a property left empty by hand, its space kept
        "tags:\n- \n",
        "meta:\n  session: \n",
        "created_at: \u0662\u0660\u0662\u0666-01-02T03:04:05.000000Z\n",  # digits, not ASCII ones
        "created_at: 2026-01-02T03:04:05.000000Z\nquality: 0.5\n",
    ],
)
def test_frontmatter_lines_read_as_pyyaml_reads_them(raw: str) -> None:
    import yaml

    text = f"---\n{raw}---\nbody\n"
    assert parse_document(text, "a.md").frontmatter == yaml.load(raw, Loader=yaml.SafeLoader)


def test_shorten_puts_text_on_one_line_and_cuts_it_with_an_ellipsis() -> None:
    assert shorten("  a\n\tb  c ", 10) == "a b c"
    assert shorten("one two three", 5) == "one…"  # cut at 4, the space before "…" dropped
    assert shorten("abcdef", 6) == "abcdef"
