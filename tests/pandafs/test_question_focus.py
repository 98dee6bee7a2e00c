"""What a question asks about (its focus) and what it asks of it (its predicate)."""

from __future__ import annotations

import pytest

from pandafs.pipeline.synthesis import _tool_facts
from pandafs.pipeline.tools import finding_line
from pandafs.tasks.grounding import (
    Fact,
    about_focus,
    answer_checks,
    asked_predicate,
    focus_of,
    is_about,
    requested_kind,
    settle,
)
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


HAMSTER = "Biscuit the Syrian hamster loves sunflower seeds and hides them in his cheeks."
NAMED = "My hamster is called Biscuit"


def _checks(answer: str, query: str) -> dict[str, bool]:
    facts = settle(
        [Fact(HAMSTER, "memory", 2, "alice/memories/m1"), Fact(NAMED, "memory", 1, "alice/facts")], query
    )
    return {c.gate: c.passed for c in answer_checks(answer, query, requested_kind(query), facts, query)}


@pytest.mark.parametrize(
    ("query", "predicate"),
    [
        ("What does my hamster Biscuit like to eat?", ("like", "eat")),
        ("Where does Biscuit the hamster hide his seeds?", ("hide", "seed")),
        ("What do Syrian hamsters like, sunflower seeds?", ("like", "sunflow", "seed")),
        ("What is my favourite tea?", ()),
        ("Which cafe did you recommend to me?", ()),  # what the assistant said answers it
        ("What do I do for a living?", ()),  # the job is asked: a statement of it answers
        ("Where did I live before moving to Oslo?", ("live", "move", "oslo")),
        ("Do I live in Oslo?", ("live", "oslo")),  # a yes or no: the whole of it
        ("What do I do on weekends?", ("weekend",)),  # not the job
        ("What do I like to eat?", ("eat",)),  # the taste asked, and of it: what is eaten
        ("What do I enjoy reading?", ("read",)),
        ("Do I like to eat sushi?", ("like", "eat", "sushi")),
        ("What did I say about Oslo?", ("oslo",)),  # saying is how it came up, not what is asked
        ("What did I watch last night?", ("watch", "last", "night")),
        ("Is my sister a doctor?", ("doctor",)),  # "to be" asks its complement of the subject
        ("Am I allergic to anything?", ("allerg",)),  # "anything" is what is asked, not a word to find
    ],
)
def test_the_predicate_is_what_is_asked_of_the_subject(query: str, predicate: tuple[str, ...]) -> None:
    assert asked_predicate(query) == predicate


def test_an_answer_that_only_names_the_thing_does_not_answer_what_it_likes() -> None:
    query = "What does my hamster Biscuit like to eat?"
    assert not _checks("Your hamster is called Biscuit [1].", query)["about_what_was_asked"]
    assert _checks(HAMSTER.rstrip(".") + " [2].", query)["about_what_was_asked"]


def test_a_place_said_after_the_asked_verb_is_a_place() -> None:
    query = "Where does Biscuit the hamster hide his seeds?"
    assert all(_checks(HAMSTER.rstrip(".") + " [2].", query).values())
    assert not _checks("Biscuit loves seeds in general [2].", query)["requested_data"]


def test_yes_or_no_is_read_off_a_fact_that_states_the_whole_predicate() -> None:
    query = "Does my hamster Biscuit like sunflower seeds?"
    assert all(_checks("Yes — " + HAMSTER.rstrip(".") + " [2].", query).values())
    assert not _checks("Yes — your hamster is called Biscuit [1].", query)["about_what_was_asked"]


# LongMemEval dev 86f00804: "What book am I currently reading?" over a history where the
# user also said, in another session, that they plan to book a session with their coach.
BOOKING = "I'm also planning to book a private session with Rachel soon."
READING = "I'm reading a book called The Seven Husbands of Evelyn Hugo"


def _gates(answer: str, query: str, facts: list[Fact]) -> dict[str, bool]:
    settled = settle(facts, query)
    return {c.gate: c.passed for c in answer_checks(answer, query, requested_kind(query), settled, query)}


def _about(answer: str, query: str, facts: list[Fact]) -> bool:
    return _gates(answer, query, facts)["about_what_was_asked"]


def test_the_thing_asked_about_is_named_as_a_noun_not_as_a_verb() -> None:
    query = "What book am I currently reading?"
    facts = [Fact(BOOKING, "stated", 1, "alice/turn_000001"), Fact(READING, "stated", 2, "alice/turn_000002")]
    assert not _about("You are also planning to book a private session with Rachel soon [1].", query, facts)
    assert _about("You are reading a book called The Seven Husbands of Evelyn Hugo [2].", query, facts)
    assert not is_about(("book",), BOOKING) and is_about(("book",), READING)
    assert is_about(("book",), "The book I am reading is great")
    assert not is_about(("park",), "I can't park here")
    # a word of the thesaurus names the thing in any use (LongMemEval dev, the NovaTech job)
    assert is_about(("job",), "I've been working at NovaTech for about 4 years and 3 months")
    # a noun made from a verb is stated by the verb (docs/cli.md's example: the seat preference)
    assert is_about(("seat", "preference"), "I prefer aisle seats")
    assert is_about(("meeting",), "I meet Anna every Tuesday")
    assert not is_about(("book",), "We booked a table for two")


# The same history: in a session about a memorial, the user wrote of a memory book.
MEMORY_BOOK = (
    "I think including recipes in the memory book is a wonderful way to celebrate Rachel's love "
    "for cooking and the memories you shared around food."
)


def test_a_progressive_question_asks_its_verb_of_the_thing() -> None:
    query = "What book am I currently reading?"
    assert asked_predicate(query) == ("read",)
    facts = [
        Fact(MEMORY_BOOK, "stated", 1, "alice/turn_000001"),
        Fact(READING, "stated", 2, "alice/turn_000002"),
    ]
    assert not _about(MEMORY_BOOK.rstrip(".") + " [1].", query, facts)
    assert _about("You are reading a book called The Seven Husbands of Evelyn Hugo [2].", query, facts)


def test_a_date_is_a_month_by_its_name_not_a_word_that_starts_like_one() -> None:
    # LongMemEval dev 06878be2 and gpt4_78cf46a3: what users wrote, asked as "when did I …"
    garden = "I decided to clear out the backyard and create a small vegetable garden."
    yoga = "I signed up for a yoga class on March 15th."
    facts = [Fact(garden, "stated", 1, "alice/turn_000001"), Fact(yoga, "stated", 2, "alice/turn_000002")]
    undated = "You decided to clear out the backyard and create a small vegetable garden [1]."
    assert not _gates(undated, "When did I create my vegetable garden?", facts)["requested_data"]
    dated = "You signed up for a yoga class on March 15th [2]."
    assert all(_gates(dated, "When did I sign up for a yoga class?", facts).values())


def test_what_was_the_date_asks_for_a_date() -> None:
    # LongMemEval dev gpt4_4edbafa2, its BBQ sessions left out: what the user wrote elsewhere
    query = "What was the date on which I attended the first BBQ event in June?"
    joke = (
        "I'd like to work on the first joke I shared earlier: \"I've been on so many dates, I've "
        "started to think my OkCupid profile should just say 'I'm not a serial killer, but I do "
        "have a lot of free time.'\""
    )
    assert requested_kind(query) == "date"
    assert not all(_gates(joke + " [1].", query, [Fact(joke, "stated", 1, "alice/turn_000001")]).values())


def test_what_is_asked_of_a_thing_is_not_the_thing_itself() -> None:
    # LongMemEval dev 07741c45 asked over another user's history (which has navy blue
    # sneakers), and its own evidence sentence
    query = "Where do I currently keep my old sneakers?"
    belt = (
        "I actually have a nice brown leather belt from H&M that I picked up recently, and I think "
        "it could complement the navy blue sneakers nicely."
    )
    rack = (
        "By the way, I need to organize my closet this weekend, and I'm looking forward to storing "
        "my old sneakers in a shoe rack, they're currently taking up space."
    )
    assert not _about(belt.rstrip(".") + " [1].", query, [Fact(belt, "stated", 1, "alice/turn_000001")])
    assert _about(rack.rstrip(".") + " [1].", query, [Fact(rack, "stated", 1, "alice/turn_000001")])


def test_a_relative_clause_asks_its_verb_not_its_time() -> None:
    # LongMemEval dev gpt4_fa19884d asked over another user's history, and its own evidence
    # sentence with the artist named (it says "a bluegrass band")
    query = "What is the artist that I started to listen to last Friday?"
    assert asked_predicate(query) == ("start", "listen", "last", "friday")
    painting = (
        "By the way, I recently moved into a new apartment and finally had the chance to unpack my art "
        'collection, including the painting "Sunset" by an up-and-coming artist I met at an art fair '
        "in Brooklyn last October."
    )
    band = "I recently discovered an artist, a bluegrass band, and started enjoying their music today."
    facts = [Fact(painting, "stated", 1, "alice/turn_000001"), Fact(band, "stated", 2, "alice/turn_000002")]
    assert not _about(painting.rstrip(".") + " [1].", query, facts)
    assert _about(band.rstrip(".") + " [2].", query, facts)


@pytest.mark.parametrize(
    ("query", "kind"),
    [("Where do I work?", "place"), ("Where do I live?", "place"), ("Where do I prefer to sit?", "")],
)
def test_where_asks_a_place_but_of_a_taste_its_object(query: str, kind: str) -> None:
    assert requested_kind(query) == kind


@pytest.mark.parametrize(
    "query",
    [
        "what is my sister’s name?",
        "what does my dog’s vet recommend?",
        "how many of my kids’ toys did I sell?",
        "what is my mother-in-law’s favourite dish?",
    ],
)
def test_a_curly_apostrophe_reads_as_a_straight_one(query: str) -> None:
    straight = query.replace("’", "'")
    assert focus_of(query) == focus_of(straight) != ()
    assert asked_predicate(query) == asked_predicate(straight)


# A reply says the modifier once and the head noun later (LongMemEval dev 65240037's shape).
NOT_NEAT = "no, it is not recommended to put the oil on your skin neat."
DILUTE = "it's best to dilute the oil with a carrier oil in a 1:5 ratio."
ASK_RATIO = "I remember you told me to dilute the oil. Can you remind me what the recommended ratio is?"


def test_a_statement_naming_the_head_is_about_the_focus_when_its_text_names_the_modifier() -> None:
    focus = focus_of(ASK_RATIO)
    assert focus == ("recommended", "ratio")
    said = f"{NOT_NEAT} {DILUTE}"
    assert about_focus(focus, DILUTE, "", ASK_RATIO, said)
    assert not about_focus(focus, DILUTE, "", ASK_RATIO)  # without its text
    assert not about_focus(focus, DILUTE, "", ASK_RATIO, "Mix it well. " + DILUTE)  # nothing recommended
    assert not about_focus(focus, NOT_NEAT, "", ASK_RATIO, said)  # the modifier without the head
    # a number is no head: "the other four options" is not any four things
    other_four = "Can you remind me what the other four options were?"
    assert focus_of(other_four) == ("other", "four")
    assert not about_focus(
        ("other", "four"), "Players retrieve four treasures.", "", other_four, "Some other games."
    )
    # nor a unit before the head: "days ago" measures, it names nothing
    days_ago = "How many days ago did I launch my website?"
    assert focus_of(days_ago) == ("days", "ago")
    assert not about_focus(("days", "ago"), "I was baptised there 25 years ago.", "", days_ago, "Two days.")
    # the check of the answer reads each fact's own document
    one_reply = [
        Fact(NOT_NEAT, "assistant", 1, "ann/turn_000001"),
        Fact(DILUTE, "assistant", 1, "ann/turn_000001"),
    ]
    assert _about(DILUTE.rstrip(".") + " [1].", "What was the recommended ratio you gave me?", one_reply)
    apart = [
        Fact(NOT_NEAT, "assistant", 1, "ann/turn_000001"),
        Fact(DILUTE, "assistant", 2, "ann/turn_000002"),
    ]
    assert not _about(DILUTE.rstrip(".") + " [2].", "What was the recommended ratio you gave me?", apart)


def test_a_statement_naming_the_whole_focus_is_preferred_to_one_naming_its_head() -> None:
    from pandafs.llm.offline import answer
    from pandafs.tasks.schemas import AnswerIn, FactView

    whole = "The recommended ratio for the face is 1:20."
    facts = [
        FactView(n=1, doc_id="ann/turn_000001", text=NOT_NEAT, origin="assistant"),
        FactView(n=1, doc_id="ann/turn_000001", text=DILUTE, origin="assistant"),
        FactView(n=2, doc_id="ann/turn_000002", text=whole, origin="assistant"),
    ]
    asked = AnswerIn(query=ASK_RATIO, resolved_query=ASK_RATIO, query_type="question", facts=facts)
    assert answer(asked).answer == "The recommended ratio for the face is 1:20 [2]."
    alone = AnswerIn(query=ASK_RATIO, resolved_query=ASK_RATIO, query_type="question", facts=facts[:2])
    assert answer(alone).answer == "it's best to dilute the oil with a carrier oil in a 1:5 ratio [1]."


# LoCoMo: a two-person log imported one utterance a turn, each "Name: text".
def _locomo(*lines: str) -> list[Fact]:
    return [Fact(line, "stated", n, f"locomo-conv-26/turn_{n:06d}") for n, line in enumerate(lines, 1)]


def test_the_person_asked_of_is_not_what_is_asked() -> None:
    """A speaker's line names the speaker: that says whose it is, not what was asked of them."""
    query = "What motivated Melanie to pursue counseling?"
    said = "Melanie: My own journey motivated me to pursue counseling"
    assert not _about("Melanie: Yeah, Caroline [1].", query, _locomo("Melanie: Yeah, Caroline"))
    assert _about(said + " [1].", query, _locomo(said))
    # nor is an adverb of the question ("really") a thing asked about
    query = "What is something that Andrew really misses while working in the city?"
    assert not _about("Andrew: Yeah, it really does [1].", query, _locomo("Andrew: Yeah, it really does"))


def test_a_word_of_what_was_asked_is_not_saying_it() -> None:
    """ "Thanks for your support" says nothing of whom one supports in cricket matches."""
    query = "Who does James support in cricket matches?"
    facts = _locomo(
        "John: Thanks for your support, James", "James: I support the Mumbai Indians in cricket matches"
    )
    assert not _about("John: Thanks for your support, James [1].", query, facts)
    assert _about("James: I support the Mumbai Indians in cricket matches [2].", query, facts)


def test_what_was_done_is_said_by_its_verb_not_only_its_nouns() -> None:
    """ "That charity race sounds great" names the race; it does not say what was realised."""
    query = "What did Caroline realize after her charity race?"
    facts = _locomo(
        "Caroline: That charity race sounds great, Mel",
        "Caroline: After the charity race I realized that self-care is important",
    )
    assert not _about("Caroline: That charity race sounds great, Mel [1].", query, facts)
    assert _about(
        "Caroline: After the charity race I realized that self-care is important [2].", query, facts
    )


def test_an_interjection_is_no_name() -> None:
    """ "Yeah" starting a line names no book (a "which" question is answered by a name)."""
    query = "What book is Jon currently reading?"
    facts = _locomo("Jon: Yeah, the book got me thinking about building a focused business")
    assert not _gates(
        "Jon: Yeah, the book got me thinking about building a focused business [1].", query, facts
    )["requested_data"]


def test_the_speaker_of_a_line_is_no_name_it_gives() -> None:
    """ "John: Thanks, Maria" gives no name for Maria's child: John is who says it."""
    query = "What is the name of Maria's one-year-old child?"
    facts = _locomo("John: Thanks, Maria", "Maria: His name is Kyle")
    assert not _gates("John: Thanks, Maria [1].", query, facts)["requested_data"]
    assert _gates("Maria: His name is Kyle [2].", query, facts)["requested_data"]


def test_the_verb_asked_is_not_an_adverb() -> None:
    # LongMemEval dev: "currently" comes before the verb it asks of ("use")
    query = "What brand of shampoo do I currently use?"
    said = "I've been using a lavender scented shampoo that I picked up on a whim at Trader Joe's"
    assert _about(said + " [1].", query, [Fact(said, "stated", 1, "alice/turn_000001")])
