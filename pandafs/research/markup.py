"""Reading an HTML page with the standard library: text blocks, title and main heading,
meta tags, microdata and JSON-LD products."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

__all__ = ["PageParser", "clean", "join_lines", "walk_jsonld"]

SKIPPED_TAGS = frozenset(
    {"script", "style", "noscript", "template", "svg", "nav", "footer", "iframe", "canvas"}
)
BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "aside", "blockquote", "pre",
        "ul", "ol", "li", "dl", "dt", "dd", "table", "tr", "td", "th", "br", "hr", "form",
        "figure", "figcaption", "h1", "h2", "h3", "h4", "h5", "h6", "title", "body",
    }
)  # fmt: skip
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


def clean(text: str) -> str:
    """Whitespace runs collapsed to one space."""
    return " ".join(text.split())


@dataclass
class _Capture:
    """Text of an element with an `itemprop` but no `content` attribute."""

    name: str
    tag: str
    product: dict[str, Any] | None
    depth: int = 1
    parts: list[str] = field(default_factory=list)


@dataclass
class _Scope:
    tag: str
    product: dict[str, Any] | None
    depth: int = 1


class PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title_parts: list[str] = []
        self.h1: str = ""
        self.meta: dict[str, str] = {}
        self.props: dict[str, list[str]] = {}
        self.products: list[dict[str, Any]] = []
        self.jsonld: list[str] = []
        self.lines: list[str] = []
        self._buffer: list[str] = []
        self._heading: int = 0
        self._in_title = False
        self._in_h1 = False
        self._h1_parts: list[str] = []
        self._in_li = False
        self._skip: list[str] = []
        self._jsonld_parts: list[str] | None = None
        self._captures: list[_Capture] = []
        self._scopes: list[_Scope] = []

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
        for scope in reversed(self._scopes):
            if scope.product is not None:
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
        for capture in self._captures:
            if capture.tag == tag:
                capture.depth += 1
        for scope in self._scopes:
            if scope.tag == tag:
                scope.depth += 1
        itemprop = a.get("itemprop", "").strip().lower()
        if itemprop:
            value = a.get("content") or (a.get("href") if tag == "link" else None)
            if tag == "meta" or tag == "link" or value:
                self._prop(itemprop, value or "", self._product())
            elif tag not in VOID_TAGS:
                self._captures.append(_Capture(itemprop, tag, self._product()))
        if "itemscope" in a and tag not in VOID_TAGS:
            is_product = a.get("itemtype", "").rstrip("/").lower().endswith("/product")
            product: dict[str, Any] | None = {} if is_product else None
            if product is not None:
                self.products.append(product)
            self._scopes.append(_Scope(tag, product))
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in HEADINGS:
            self._heading = HEADINGS[tag]
        if tag == "li":
            self._in_li = True
        if tag == "title":
            self._in_title = True
        if tag == "h1" and not self.h1:
            self._in_h1 = True

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._jsonld_parts is not None:
            self.jsonld.append("".join(self._jsonld_parts))
            self._jsonld_parts = None
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        for capture in list(self._captures):
            if capture.tag == tag:
                capture.depth -= 1
                if capture.depth == 0:
                    self._captures.remove(capture)
                    self._prop(capture.name, clean("".join(capture.parts)), capture.product)
        for scope in list(self._scopes):
            if scope.tag == tag:
                scope.depth -= 1
                if scope.depth == 0:
                    self._scopes.remove(scope)
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in HEADINGS:
            self._heading = 0
        if tag == "li":
            self._in_li = False
        if tag == "title":
            self._in_title = False
        if tag == "h1" and self._in_h1:
            self._in_h1 = False
            self.h1 = clean("".join(self._h1_parts))

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
        if self._in_h1:
            self._h1_parts.append(data)
        for capture in self._captures:
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
    out: list[str] = []
    for index, line in enumerate(lines):
        if index:
            tight = line.startswith("- ") and lines[index - 1].startswith("- ")
            out.append("\n" if tight else "\n\n")
        out.append(line)
    return "".join(out)
