"""What a question asks about (its focus) and what it asks of it (its predicate)."""

from __future__ import annotations

import pytest

from pandafs.pipeline.synthesis import _tool_facts
from pandafs.pipeline.tools import finding_line
from pandafs.tasks.grounding import focus_of, is_about
from pandafs.tasks.schemas import ToolResultView


@pytest.mark.parametrize(
    ("query", "focus"),
    [
        ("What is the price of a Lenovo LOQ 15 gaming laptop?", ("lenovo", "loq")),
        ("What is the name of my hamster?", ("hamster",)),
        ("what kind of music do I like?", ("music",)),
        ("what is my favourite football team?", ("football", "team")),
    ],
)
def test_an_attribute_of_a_thing_is_asked_of_the_thing(query: str, focus: tuple[str, ...]) -> None:
    assert focus_of(query) == focus


def test_a_research_finding_keeps_its_title_as_what_it_is_about() -> None:
    line = finding_line(
        {"title": "Lenovo LOQ 15 Gaming Laptop", "price": "$697.00", "domain": "shop.example"}
    )
    [fact] = _tool_facts([ToolResultView(tool="internet_research", ok=True, summary="", text=line)])
    assert "$697.00" in fact.text and is_about(("lenovo", "loq"), fact.text)
