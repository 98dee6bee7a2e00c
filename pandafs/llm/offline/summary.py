"""The turn summary by rule: what was asked, the answer's first sentence, and the subject
that "it" will mean in the next turn."""

from __future__ import annotations

from ...tasks import grounding as g
from ...tasks import schemas as t
from .text import entities_in, sentences, stems_overlap


def summarize_turn(data: t.SummarizeIn) -> t.SummarizeOut:
    first = sentences(data.answer)[:1]
    summary = f"Asked: {data.resolved_query[:140]}"
    if first:
        summary += f" — answered: {first[0][:160]}"
    answer_entities = entities_in(data.answer)
    subject = None
    for name in answer_entities:  # the most specific name the answer gives for what was asked
        if any(e.lower() in name.lower() for e in data.entities) or stems_overlap(data.keywords, name):
            if subject is None or len(name) > len(subject):
                subject = name
    if subject is None and data.entities:
        subject = max(data.entities, key=len)
    if subject is None and answer_entities and g.is_question(data.query):
        subject = answer_entities[0]  # the thing the answer named is what "it" will mean next
    return t.SummarizeOut(summary=summary, topics=data.keywords[:5], subject=subject)
