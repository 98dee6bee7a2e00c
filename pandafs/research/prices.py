"""Prices and availability: read from a markup value or from page text, and shown in one
form for every source (`$1,299.99`, `€12.34`, "In stock")."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "AVAILABILITY_TEXT",
    "PRICE",
    "Price",
    "availability_of",
    "format_price",
    "parse_amount",
    "structured_price",
    "text_price",
]

CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP"}
SYMBOL_OF = {code: sym for sym, code in CURRENCY_SYMBOLS.items()}

_NUMBER = r"(?:\d{1,3}(?:[,.]\d{3})+|\d+)(?:[.,]\d{1,2})?(?![\d])"
PRICE = re.compile(
    rf"(?P<sym>[$€£])\s?(?P<n1>{_NUMBER})"
    rf"|(?<![\d.,])(?P<n2>{_NUMBER})\s?(?P<suf>€|£|(?:USD|EUR|GBP)\b)",
)
AVAILABILITY_TEXT = re.compile(
    r"\b(temporarily out of stock|out of stock|sold out|currently unavailable|"
    r"not in stock|no longer available|in stock|available now|pre-?order|backordered)\b",
    re.IGNORECASE,
)
_AVAILABILITY_WORDS = {
    "instock": "In stock",
    "in stock": "In stock",
    "in_stock": "In stock",
    "available": "In stock",
    "available now": "In stock",
    "onlineonly": "In stock",
    "instoreonly": "In stock (store only)",
    "limitedavailability": "Limited availability",
    "outofstock": "Out of stock",
    "out of stock": "Out of stock",
    "out_of_stock": "Out of stock",
    "oos": "Out of stock",
    "soldout": "Out of stock",
    "sold out": "Out of stock",
    "temporarily out of stock": "Out of stock",
    "currently unavailable": "Out of stock",
    "not in stock": "Out of stock",
    "no longer available": "Discontinued",
    "discontinued": "Discontinued",
    "preorder": "Pre-order",
    "pre-order": "Pre-order",
    "presale": "Pre-order",
    "backorder": "Backorder",
    "backordered": "Backorder",
}


def parse_amount(raw: str) -> float | None:
    """`1,299.99`, `1.299,99`, `12,34`, `1 299` → float; the last separator before 1–2
    digits is the decimal point, separators before 3 digits group thousands."""
    text = raw.replace("\u00a0", "").replace(" ", "").strip()
    if not text or not re.fullmatch(r"[\d.,]+", text) or not any(c.isdigit() for c in text):
        return None
    last = max(text.rfind(","), text.rfind("."))
    if last >= 0 and len(text) - last - 1 in (1, 2):
        whole, frac = text[:last], text[last + 1 :]
    else:
        whole, frac = text, ""
    whole = whole.replace(",", "").replace(".", "")
    try:
        return float(f"{whole or '0'}.{frac or '0'}")
    except ValueError:
        return None


def format_price(value: float, currency: str | None) -> str:
    """One display form for every source: `$1,299.99`, `€12.34`, `12.00 CHF`."""
    symbol = SYMBOL_OF.get((currency or "").upper())
    if symbol:
        return f"{symbol}{value:,.2f}"
    return f"{value:,.2f} {currency}".strip() if currency else f"{value:,.2f}"


def availability_of(raw: str | None) -> str | None:
    """A vendor's availability word or schema.org URL (`…/InStock`) in one form, or None."""
    if not raw:
        return None
    word = raw.strip().rsplit("/", 1)[-1].strip().lower()
    return _AVAILABILITY_WORDS.get(word) or _AVAILABILITY_WORDS.get(word.replace(" ", ""))


@dataclass(frozen=True)
class Price:
    value: float
    currency: str | None
    structured: bool


def structured_price(raw: str | None, currency: str | None) -> Price | None:
    """A price from markup: a bare amount (currency from its sibling) or a `$12` string."""
    if not raw:
        return None
    match = PRICE.search(raw)
    if match:
        found = text_price(match)
        if found and (found.currency or not currency):
            return Price(found.value, found.currency, True)
        raw = match.group("n1") or match.group("n2") or raw
    value = parse_amount(raw)
    if value is None:
        return None
    return Price(value, (currency or "").upper() or None, True)


def text_price(match: re.Match[str]) -> Price | None:
    number = match.group("n1") or match.group("n2")
    marker = match.group("sym") or match.group("suf") or ""
    value = parse_amount(number or "")
    if value is None:
        return None
    return Price(value, CURRENCY_SYMBOLS.get(marker, marker.upper() or None), False)
