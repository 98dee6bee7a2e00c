"""Readable text and a few product fields from an HTML page, with `html.parser`; prices
and availability in one form for every source (`$1,299.99`, `€12.34`, "In stock").

Structured data is believed first (schema.org microdata and JSON-LD, then Open Graph /
product meta tags); text patterns fill the gaps.  `confidence` says how much was found and
how: a price from markup counts more than one read from text, so reliability rewards sites
that are easy to read."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import pairwise
from typing import Any

__all__ = ["Extraction", "extract_page"]

PRICE_WINDOW_LINES = 25
MAX_PRODUCTS = 50
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
_AVAILABILITY_WORDS = {  # a vendor's word (lower case) → the one form shown
    word: shown
    for shown, words in {
        "In stock": "instock|in stock|in_stock|available|available now|onlineonly",
        "In stock (store only)": "instoreonly",
        "Limited availability": "limitedavailability",
        "Out of stock": "outofstock|out of stock|out_of_stock|oos|soldout|sold out|temporarily out of stock|"
        "currently unavailable|not in stock",
        "Discontinued": "no longer available|discontinued",
        "Pre-order": "preorder|pre-order|presale",
        "Backorder": "backorder|backordered",
    }.items()
    for word in words.split("|")
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


SKIPPED_TAGS = frozenset("script style noscript template svg nav footer iframe canvas".split())
BLOCK_TAGS = frozenset(
    """p div section article main header aside blockquote pre ul ol li dl dt dd table tr td th br hr
    form figure figcaption h1 h2 h3 h4 h5 h6 title body""".split()
)
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
VOID_TAGS = frozenset("area base br col embed hr img input link meta source wbr".split())


def clean(text: str) -> str:
    return " ".join(text.split())


@dataclass
class _Scope:
    """An open element (`depth`: how many of its tag are open) and the product it is in."""

    tag: str
    product: dict[str, Any] | None
    depth: int = 1


@dataclass
class _Capture(_Scope):
    """Text of an element with an `itemprop` (`name`) but no `content` attribute, or of an h1."""

    name: str = ""
    parts: list[str] = field(default_factory=list)


class PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title_parts: list[str] = []
        self.meta: dict[str, str] = {}
        self.props: dict[str, list[str]] = {}
        self.products: list[dict[str, Any]] = []
        self.jsonld: list[str] = []
        self.lines: list[str] = []
        self._buffer: list[str] = []
        self._heading: int = 0
        self._in_title = False
        self._in_li = False
        self._skip: list[str] = []
        self._jsonld_parts: list[str] | None = None
        self._open: list[_Scope] = []  # elements with an itemscope, and the captures, outermost first

    # -- text blocks ------------------------------------------------------------
    def _flush(self) -> None:
        text = clean("".join(self._buffer))
        self._buffer = []
        if not text:
            return
        if self._heading:
            text = "#" * self._heading + " " + text
        elif self._in_li:
            text = "- " + text
        self.lines.append(text)

    def _product(self) -> dict[str, Any] | None:
        for scope in reversed(self._open):
            if scope.product is not None and not isinstance(scope, _Capture):
                return scope.product
        return None

    # -- parser callbacks -------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        if tag == "script" and "ld+json" in a.get("type", "").lower():
            self._jsonld_parts = []
        if tag == "meta":
            key = (a.get("property") or a.get("name") or "").strip().lower()
            if key and "content" in a:
                self.meta.setdefault(key, a["content"])
        if self._skip:
            if tag == self._skip[-1] and tag not in VOID_TAGS:
                self._skip.append(tag)
            return
        if tag in SKIPPED_TAGS:
            self._skip.append(tag)
            return
        for scope in self._open:
            if scope.tag == tag:
                scope.depth += 1
        itemprop = a.get("itemprop", "").strip().lower()
        if itemprop:
            value = a.get("content") or (a.get("href") if tag == "link" else None)
            if tag == "meta" or tag == "link" or value:
                self._prop(itemprop, value or "", self._product())
            elif tag not in VOID_TAGS:
                self._open.append(_Capture(tag, self._product(), name=itemprop))
        if "itemscope" in a and tag not in VOID_TAGS:
            is_product = a.get("itemtype", "").rstrip("/").lower().endswith("/product")
            product: dict[str, Any] | None = {} if is_product else None
            if product is not None:
                self.products.append(product)
            self._open.append(_Scope(tag, product))
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in HEADINGS:
            self._heading = HEADINGS[tag]
        if tag == "li":
            self._in_li = True
        if tag == "title":
            self._in_title = True
        if tag == "h1":  # its text is kept as the property "h1"
            self._open.append(_Capture(tag, None, name="h1"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._jsonld_parts is not None:
            self.jsonld.append("".join(self._jsonld_parts))
            self._jsonld_parts = None
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        for scope in list(self._open):
            if scope.tag == tag:
                scope.depth -= 1
                if scope.depth == 0:
                    self._open.remove(scope)
                    if isinstance(scope, _Capture):
                        self._prop(scope.name, clean("".join(scope.parts)), scope.product)
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in HEADINGS:
            self._heading = 0
        if tag == "li":
            self._in_li = False
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._jsonld_parts is not None:
            self._jsonld_parts.append(data)
            return
        if self._in_title:
            self.title_parts.append(data)
            return
        if self._skip:
            return
        self._buffer.append(data)
        for capture in self._open:
            if isinstance(capture, _Capture):
                capture.parts.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _prop(self, name: str, value: str, product: dict[str, Any] | None) -> None:
        value = clean(value)
        if not value:
            return
        self.props.setdefault(name, []).append(value)
        if product is not None:
            product.setdefault(name, value)


def walk_jsonld(node: Any, out: list[dict[str, Any]]) -> None:
    """Collect schema.org Product objects (with their first offer) from JSON-LD."""
    if isinstance(node, list):
        for item in node:
            walk_jsonld(item, out)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "Product" in kinds:
        product: dict[str, Any] = {}
        if isinstance(node.get("name"), str):
            product["name"] = node["name"]
        offers = node.get("offers")
        if isinstance(offers, list):
            offers = offers[0] if offers else None
        if isinstance(offers, dict):
            price = offers.get("price", offers.get("lowPrice"))
            if price is not None:
                product["price"] = str(price)
            for key in ("priceCurrency", "availability"):
                if isinstance(offers.get(key), str):
                    product[key.lower()] = offers[key]
        out.append(product)
    for key in ("@graph", "itemListElement", "item", "mainEntity"):
        if key in node:
            walk_jsonld(node[key], out)


def join_lines(lines: list[str]) -> str:
    """Blocks separated by a blank line; consecutive list items kept together."""
    out = lines[:1]
    for previous, line in pairwise(lines):
        out += ["\n" if previous.startswith("- ") and line.startswith("- ") else "\n\n", line]
    return "".join(out)


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
        or next(iter(props.get("h1") or ()), None)
        or "".join(parser.title_parts)
        or meta.get("twitter:title", "")
    )

    currency_hint = next(iter(props.get("pricecurrency") or ()), None)
    offered = [(p.get("price"), _currency(p)) for p in products]
    offered += [(raw, currency_hint) for raw in props.get("price", [])]
    offered.append(
        (
            meta.get("og:price:amount") or meta.get("product:price:amount"),
            meta.get("og:price:currency") or meta.get("product:price:currency"),
        )
    )
    prices = [found for raw, currency in offered if (found := structured_price(raw, currency))]

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
    availability = availability or _availability_near_title(lines)

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
    fields_present = [name for name in fields if name != "price_value"]  # the price says it

    confidence = 0.0
    if title:
        confidence += 0.2
    if main_price:
        confidence += 0.45 if main_price.structured else 0.3
    if availability:
        confidence += 0.2 if availability_structured else 0.15
    confidence += 0.15 * min(1.0, len(text) / 400)
    return Extraction(title, text, fields, items, fields_present, round(min(1.0, confidence), 3), page_type)


def _near_title(lines: list[str]) -> tuple[str, str]:
    """The text of the lines from the page's main heading on, then of the whole page."""
    start = next((i for i, line in enumerate(lines) if line.startswith("# ")), 0)
    return "\n".join(lines[start : start + PRICE_WINDOW_LINES]), "\n".join(lines)


def _price_near_title(lines: list[str]) -> Price | None:
    found = (text_price(m) for text in _near_title(lines) for m in PRICE.finditer(text))
    return next((p for p in found if p is not None), None)


def _availability_near_title(lines: list[str]) -> str | None:
    found = (AVAILABILITY_TEXT.search(text) for text in _near_title(lines))
    match = next((m for m in found if m is not None), None)
    return availability_of(match.group(1)) if match else None


def _currency(product: dict[str, Any]) -> str | None:
    return product.get("pricecurrency") or product.get("currency")


def _listed_products(products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    for product in products[:MAX_PRODUCTS]:
        entry: dict[str, Any] = {}
        if product.get("name"):
            entry["title"] = clean(str(product["name"]))
        price = structured_price(product.get("price"), _currency(product))
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
