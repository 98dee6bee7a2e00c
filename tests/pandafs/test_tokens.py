"""count_tokens counts what its pattern matches, whatever the text holds."""

from __future__ import annotations

import random
import re

from pandafs.tokens import count_tokens, truncate_tokens

PATTERN = re.compile(r"\w+|[^\w\s]")


def test_count_is_the_pattern_s_matches() -> None:
    texts = [
        "",
        "   ",
        "User: How much was that one?\nAssistant: $697 at Best Buy — on sale (20 % off).",
        "Noted — I'll remember: ‘café’ “naïve” …",
        "我们讨论了笔记本电脑的价格，大约是七百美元。",
        "snake_case and x² and ½ and \u00a0nbsp\u2009thin\x1cfs\x00nul",
        '{"doc_id":"bench/turn_000012","snippet":"an answer — number 12"}',
        "\ud800 lone surrogate",
    ]
    rng = random.Random(11)
    pools = [(0, 128), (0, 128), (0x80, 0x3000), (0, 0x110000)]
    for _ in range(3000):
        texts.append("".join(chr(rng.randrange(*rng.choice(pools))) for _ in range(rng.randrange(50))))
    for text in texts:
        assert count_tokens(text) == len(PATTERN.findall(text)), repr(text)


def test_truncate_keeps_whole_tokens() -> None:
    text = "Noted — I'll remember: a laptop for $697."
    cut = truncate_tokens(text, 4)
    assert cut == "Noted — I'"
    assert count_tokens(cut) == 4
