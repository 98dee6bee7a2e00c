"""Readable text and a few product fields from an HTML page, with the standard library.

Structured data is believed first (schema.org microdata and JSON-LD, then Open Graph /
product meta tags); text patterns (`$12.34`, `12.34 USD`, "In stock") fill the gaps.
`confidence` says how much was found and how: a price from markup counts more than one
read out of the text, so reliability rewards sites that are easy to read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .markup import PageParser, clean, join_lines, walk_jsonld
from .prices import (
    AVAILABILITY_TEXT,
    PRICE,
    Price,
    availability_of,
    format_price,
    structured_price,
    text_price,
)

__all__ = ["Extraction", "extract_page"]

PRICE_WINDOW_LINES = 25
MAX_PRODUCTS = 50


@dataclass(frozen=True)
class Extraction:
    title: str
    text: str
    fields: dict[str, Any]
    items: int
    fields_present: list[str]
    confidence: float
    page_type: str = "page"


def extract_page(html: str) -> Extraction:
    """Title, readable text and product fields of one page; never raises on bad HTML."""
    parser = PageParser()
    try:
        parser.feed(html)
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on a few broken inputs
        parser._flush()
    lines = parser.lines
    text = join_lines(lines)

    jsonld_products: list[dict[str, Any]] = []
    for block in parser.jsonld:
        try:
            walk_jsonld(json.loads(block), jsonld_products)
        except (ValueError, RecursionError):
            continue
    products = [p for p in parser.products + jsonld_products if p]
    first = products[0] if products else {}

    meta = parser.meta
    props = parser.props
    title = clean(
        (first.get("name") if len(products) == 1 else None)
        or meta.get("og:title")
        or parser.h1
        or "".join(parser.title_parts)
        or meta.get("twitter:title", "")
    )

    prices: list[Price] = []
    for product in products:
        found = structured_price(
            product.get("price"), product.get("pricecurrency") or product.get("currency")
        )
        if found:
            prices.append(found)
    currency_hint = next(iter(props.get("pricecurrency") or ()), None)
    for raw in props.get("price", []):
        found = structured_price(raw, currency_hint)
        if found:
            prices.append(found)
    meta_price = meta.get("og:price:amount") or meta.get("product:price:amount")
    meta_currency = meta.get("og:price:currency") or meta.get("product:price:currency")
    found = structured_price(meta_price, meta_currency)
    if found:
        prices.append(found)

    text_prices = [p for m in PRICE.finditer(text) if (p := text_price(m))]
    main_price = prices[0] if prices else _price_near_title(lines)

    availability_raw = (
        first.get("availability")
        or next(iter(props.get("availability") or ()), None)
        or meta.get("og:availability")
        or meta.get("product:availability")
    )
    availability = availability_of(availability_raw)
    availability_structured = availability is not None
    if availability is None:
        availability = _availability_near_title(lines)

    fields: dict[str, Any] = {}
    if title:
        fields["title"] = title
    if main_price:
        fields["price"] = format_price(main_price.value, main_price.currency)
        fields["price_value"] = main_price.value
        if main_price.currency:
            fields["currency"] = main_price.currency
    if availability:
        fields["availability"] = availability
    description = clean(meta.get("og:description") or meta.get("description") or "")
    if description:
        fields["description"] = description[:300]
    listed = _listed_products(products)
    if len(listed) >= 2:
        fields["products"] = listed

    distinct = {(round(p.value, 2), p.currency) for p in prices + text_prices}
    items = len(products) or len(distinct)
    page_type = _page_type(meta, products, distinct, main_price, text)
    fields_present: list[str] = [
        name
        for name in ("title", "price", "currency", "availability", "description", "products")
        if name in fields
    ]

    confidence = 0.0
    if title:
        confidence += 0.2
    if main_price:
        confidence += 0.45 if main_price.structured else 0.3
    if availability:
        confidence += 0.2 if availability_structured else 0.15
    confidence += 0.15 * min(1.0, len(text) / 400)
    return Extraction(
        title=title,
        text=text,
        fields=fields,
        items=items,
        fields_present=fields_present,
        confidence=round(min(1.0, confidence), 3),
        page_type=page_type,
    )


def _near_title(lines: list[str]) -> tuple[str, str]:
    """The text of the lines from the page's main heading on, then of the whole page."""
    start = next((i for i, line in enumerate(lines) if line.startswith("# ")), 0)
    return "\n".join(lines[start : start + PRICE_WINDOW_LINES]), "\n".join(lines)


def _price_near_title(lines: list[str]) -> Price | None:
    found = (text_price(m) for text in _near_title(lines) for m in PRICE.finditer(text))
    return next((p for p in found if p is not None), None)


def _availability_near_title(lines: list[str]) -> str | None:
    for text in _near_title(lines):
        match = AVAILABILITY_TEXT.search(text)
        if match:
            return availability_of(match.group(1).lower())
    return None


def _listed_products(products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    for product in products[:MAX_PRODUCTS]:
        entry: dict[str, Any] = {}
        if product.get("name"):
            entry["title"] = clean(str(product["name"]))
        price = structured_price(
            product.get("price"), product.get("pricecurrency") or product.get("currency")
        )
        if price:
            entry["price"] = format_price(price.value, price.currency)
        availability = availability_of(product.get("availability"))
        if availability:
            entry["availability"] = availability
        if entry:
            listed.append(entry)
    return listed


def _page_type(
    meta: dict[str, str],
    products: list[dict[str, Any]],
    distinct: set[tuple[float, str | None]],
    main_price: Price | None,
    text: str,
) -> str:
    if len(products) >= 2:
        return "listing"
    if len(products) == 1 or meta.get("og:type", "").lower().startswith("product"):
        return "product"
    if len(distinct) >= 3:
        return "listing"
    if main_price:
        return "product"
    return "article" if len(text) >= 200 else "page"
