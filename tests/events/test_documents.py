"""Frontmatter round trips, Obsidian-valid properties, broken YAML, sections."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from events import (
    DocumentMetadata,
    FrontmatterError,
    get_section,
    parse_document,
    render_document,
    split_sections,
)


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
    assert get_section(body, 5) == "ans"
    assert get_section(body, 3) is None
