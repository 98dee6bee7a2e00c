"""The per-phase prompts a 7–30B model gets: the job, the output fields, one valid example."""

from __future__ import annotations

import json

import pytest

from pandafs.llm.openai_compat import inline_schema
from pandafs.tasks.prompts import TASKS


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_task_prompt_has_one_example_that_validates(name: str) -> None:
    task = TASKS[name]
    task.output.model_validate(task.example)  # the example is a reply the backend would accept
    prompt = task.prompt()
    assert prompt.startswith(f"TASK: {name}\n")
    assert json.dumps(task.example, ensure_ascii=False) in prompt
    assert prompt.count("Example of a valid reply") == 1


@pytest.mark.parametrize("name", sorted(TASKS))
def test_output_schemas_have_no_refs_for_grammar_converters(name: str) -> None:
    schema = json.dumps(inline_schema(TASKS[name].output))
    assert "$ref" not in schema and "$defs" not in schema


def test_the_offline_rules_stem_words_as_the_index_does() -> None:
    """A word and its -s / -es form meet, as they do in search ("likes" ~ "like", "prices" ~
    "price"): the light stemmer used before cut "likes" to "lik" and "like" to "like"."""
    from indexers.words import stem as index_stem
    from pandafs.llm.offline import stems_overlap
    from pandafs.tasks.grounding import stem

    assert stems_overlap(["like", "tea"], "alice likes tea") == 2
    assert stems_overlap(["price", "place"], "the prices of both places") == 2
    assert all(stem(w) == index_stem(w) for w in ("running", "visited", "laptops", "Lenovo"))


def test_a_statement_saved_under_ones_own_name_answers_a_question_about_oneself(vault, cli) -> None:
    """alice saved "alice likes tea": "do I like tea?" is answered from it; the same words in
    erin's memories are about somebody else and answer nothing of erin's."""
    for user in ("alice", "erin"):
        assert cli("--root", vault.root, "save", "alice likes tea", "--user", user).code == 0
    own = cli("--root", vault.root, "ask", "Do I like tea?", "--user", "alice", "--json")
    other = cli("--root", vault.root, "ask", "Do I like tea?", "--user", "erin", "--json")
    assert own.json["outcome"] == "APPROVE" and "likes tea" in own.json["answer"], own.json
    assert other.json["outcome"] != "APPROVE" and "likes tea" not in other.json["answer"], other.json


def test_facts_in_any_script_reach_the_answer() -> None:
    """Statements are keyed by their words for settling repeats and disagreements; until
    2026-11-24 only a-z and 0-9 made words, so a fact in Russian or Greek had no key and
    was dropped before the answer was written."""
    from pandafs.tasks.grounding import Fact, settle

    facts = [
        Fact("Я люблю зелёный чай", "memory", 1, "alice/preferences"),
        Fact("Μου αρέσει η θάλασσα", "memory", 2, "alice/preferences"),
        Fact("я люблю зелёный чай", "answer", 3, "alice/turn_000001"),  # a repeat of the first
    ]
    kept = settle(facts, "Что я люблю?")
    assert sorted((f.text, f.origin) for f in kept) == [
        ("Μου αρέσει η θάλασσα", "memory"),
        ("Я люблю зелёный чай", "memory"),
    ]


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("please remember my locker is 42", False),
        ("please forget grumbleweed for good", False),  # keeping or dropping memory, not a question
        ("please tell me where the spare key is", True),
        ("forget the rest, which pot is the key under?", True),
    ],
)
def test_asking_to_keep_or_drop_a_memory_is_not_a_question(text: str, asks: bool) -> None:
    from pandafs.tasks.grounding import is_question

    assert is_question(text) is asks


def test_a_table_row_cut_into_a_search_snippet_is_never_flattened_into_a_sentence() -> None:
    from pandafs.llm.offline import sentences

    snippet = (
        "…Key Facts | | [[users/demo/memories/memory-lenovo-loq-15-gaming-laptop-102e5c\\|demo/memories/"
        "memory-lenovo-loq-15-gaming-laptop-102e5c]] | high | Lenovo LOQ 15 gaming laptop with an RTX 4050 "
        "GPU: | Lenovo LOQ 15 gaming l…"
    )
    assert sentences(snippet) == ("Lenovo LOQ 15 gaming laptop with an RTX 4050 GPU:",)
    row = "| Lenovo LOQ 15 | $749.99 | Out of stock |"
    assert sentences(row) == ("Lenovo LOQ 15, $749.99, Out of stock",)


def test_a_sentence_that_starts_in_lower_case_is_a_sentence_of_its_own() -> None:
    from pandafs.llm.offline import sentences

    # a chat reply written in lower case (the shape of LongMemEval dev 65240037's evidence)
    reply = "no, it is not recommended to use it neat. it's best to dilute it in a 1:5 ratio."
    assert sentences(reply) == (
        "no, it is not recommended to use it neat.",
        "it's best to dilute it in a 1:5 ratio.",
    )
    # a shortened word and an ellipsis run on in lower case
    for run_on in (
        "Come at 9 a.m. sharp.",
        "Use approx. two cups.",
        "Bring fruit, nuts, etc. and water.",
        "She has a Ph.D. in physics.",
        "So... maybe later.",
    ):
        assert sentences(run_on) == (run_on,)


@pytest.mark.parametrize(
    ("text", "non_answer"),
    [
        ("Well, I don't know which one you mean.", True),
        ("i dont KNOW", True),
        ("I couldn't find it", True),
        ("The search couldn't give a reliable price.", True),
        ("There is nothing in memory about that.", True),
        ("I'll remember that you like tea.", True),
        ("Noted: you live in Oslo.", True),
        ("sorry, no idea", True),
        ("Which one do you mean?", True),
        ("Resolved query: where do I live", True),  # the pipeline's own label
        ("HI don't know", False),  # no phrase starts inside a word
        ("_I couldn't", False),
        ("I don't knowledge", False),  # nor ends inside one
        ("It was Noted in the log", False),  # the greetings and apologies only open a text
        ("I am not sorry about the laptop", False),
        ("You live in Oslo.", False),
    ],
)
def test_the_pipelines_own_non_answers_are_never_facts(text: str, non_answer: bool) -> None:
    from pandafs.tasks.grounding import is_non_answer

    assert is_non_answer(text) is non_answer


def test_a_statement_with_an_example_in_it_is_staged_whole() -> None:
    """A sentence ends at a full stop, but not at the one of "e.g.", "i.e." or "vs.": the
    offline rules split a message into statements the way the answer checks split clauses."""
    from pandafs.llm.offline import RULES
    from pandafs.tasks import schemas as t

    query = "I love spicy food, e.g. Thai curries. I live in Oslo."
    plan = RULES["plan"](t.PlanIn(query=query, resolved_query=query, query_type="preference_statement"))
    assert [d.content for d in plan.memory_candidates] == [
        "Likes spicy food, e.g. Thai curries",
        "Lives in Oslo",
    ]


def test_a_price_in_the_gathered_context_is_any_price_the_checks_accept() -> None:
    """ "4500 kr" answers "how much" for the answer checks (`grounding.PRICE`), so the planner
    answers from §2 instead of calling internet research for a price it already holds."""
    from pandafs.llm.offline import RULES
    from pandafs.tasks import schemas as t
    from pandafs.tasks.grounding import has_requested

    query = "how much was the sofa?"
    context = "The sofa cost 4500 kr at IKEA."
    tools = [t.ToolSpec(name=name, description="") for name in ("internet_research", "search_memory")]
    data = t.PlanIn(
        query=query,
        resolved_query=query,
        query_type="commerce",
        data_requirements=["price"],
        context_meta=[{"count": 1}],
        context_text=context,
        tools=tools,
    )
    assert has_requested("price", context, query)
    assert RULES["plan"](data).tool_requests == []
