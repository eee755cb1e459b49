"""Wikibase entity JSON → typed Python structures. Pure functions: no I/O, no Django.

Accepts what the Wikidata Action API (``wbgetentities``, ``wbgetclaims``, both
``formatversion=1`` and ``2``) and ``Special:EntityData/<id>.json`` return,
old and new: statements whose GUID starts with a lowercase entity id
(``q42$...``), snaks without ``hash``, entity values without ``id`` (only
``entity-type`` + ``numeric-id``, 2015 shape), empty maps serialised by PHP as
``[]``, labels from server-side language fallback (``for-language``).

* :class:`Statement` — entity id, property id, the GUID exactly as given, rank,
  the main :class:`Snak`, qualifiers (ordered by ``qualifiers-order``) and
  :class:`Reference` s (snaks ordered by ``snaks-order``). Deprecated statements are
  kept and marked (:attr:`Statement.deprecated`); :func:`best_statements` and
  :func:`usable_statements` leave them out.
* :class:`Snak` — ``value`` / ``somevalue`` / ``novalue``; only ``value`` snaks
  carry a typed value (:class:`EntityIdValue`, :class:`StringValue`,
  :class:`MonolingualTextValue`, :class:`QuantityValue`, :class:`TimeValue`,
  :class:`GlobeCoordinateValue`, and :class:`UnknownValue` for a datavalue type
  this module does not know, kept raw rather than dropped).
* :class:`EntityTerms` — labels, descriptions and aliases with language fallback
  (:func:`language_fallback_chain`).

Everything has ``as_dict()`` returning plain JSON-serialisable data. A shape that
cannot be a statement raises :class:`WikibaseFormatError` (a ``ValueError``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

Rank = Literal["preferred", "normal", "deprecated"]
SnakType = Literal["value", "somevalue", "novalue"]

RANKS: tuple[str, ...] = ("preferred", "normal", "deprecated")
SNAK_TYPES: tuple[str, ...] = ("value", "somevalue", "novalue")
MUL = "mul"
ENGLISH = "en"

# The one entity-id pattern every module checks ids with: item Q42, property P31, lexeme L7,
# mediainfo M5, entity schema E1, and lexeme sub-entities (forms L7-F1, senses L7-S1). No leading
# zeros: Wikibase never issues Q0 or Q042, so they are refused here rather than sent upstream.
ENTITY_KINDS = "QPLME"
_SUB_ENTITY = r"(?:-[FS][1-9][0-9]*)"


@functools.cache
def entity_id_pattern(kinds: str = ENTITY_KINDS, *, sub_entities: bool = True) -> re.Pattern[str]:
    """The entity-id pattern narrowed to ``kinds`` (e.g. ``"QP"`` for what the vector database
    returns), with or without lexeme sub-entities."""
    # \Z, not $: "$" also matches before a trailing newline.
    return re.compile(rf"^[{kinds}][1-9][0-9]*{_SUB_ENTITY + '?' if sub_entities else ''}\Z")


ENTITY_ID_RE = entity_id_pattern()
ITEM_ID_RE = entity_id_pattern("Q", sub_entities=False)
PROPERTY_ID_RE = entity_id_pattern("P", sub_entities=False)
# The last path segment of a concept URI (http://www.wikidata.org/entity/Q11573 → Q11573).
_CONCEPT_URI_RE = re.compile(rf"/entity/([{ENTITY_KINDS}][1-9][0-9]*{_SUB_ENTITY}?)$")
_ENTITY_TYPE_PREFIX = {"item": "Q", "property": "P", "lexeme": "L", "mediainfo": "M", "entity-schema": "E"}


class WikibaseFormatError(ValueError):
    """The JSON cannot be read as Wikibase entity/statement data."""


# ---------------------------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class EntityIdValue:
    """``wikibase-entityid``: a reference to another entity (item, property, lexeme …)."""

    id: str
    entity_type: str
    type: str = field(default="wikibase-entityid", init=False)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "id": self.id, "entityType": self.entity_type}

    def as_text(self) -> str:
        return self.id


@dataclass(frozen=True, slots=True)
class StringValue:
    """``string`` datavalue; also the value of the ``external-id``, ``url`` and ``commonsMedia`` datatypes
    (the datatype is on the snak)."""

    value: str
    type: str = field(default="string", init=False)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "value": self.value}

    def as_text(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class MonolingualTextValue:
    text: str
    language: str
    type: str = field(default="monolingualtext", init=False)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text, "language": self.language}

    def as_text(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class QuantityValue:
    """Amounts and bounds as plain decimal strings (``"+1.96"`` → ``"1.96"``, exact, no float);
    ``unit`` is ``"1"`` (dimensionless) or the unit's entity id (``"Q11573"``), or the unit URI
    as given when it is not an entity concept URI."""

    amount: str
    unit: str
    upper_bound: str | None = None
    lower_bound: str | None = None
    type: str = field(default="quantity", init=False)

    @property
    def unit_id(self) -> str | None:
        return self.unit if ENTITY_ID_RE.match(self.unit) else None

    def decimal(self) -> Decimal:
        return Decimal(self.amount)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "amount": self.amount,
            "unit": self.unit,
            "upperBound": self.upper_bound,
            "lowerBound": self.lower_bound,
        }

    def as_text(self) -> str:
        return self.amount if self.unit == "1" else f"{self.amount} {self.unit}"


@dataclass(frozen=True, slots=True)
class TimeValue:
    """``time`` exactly as given (``+1952-03-11T00:00:00Z``); ``precision`` 9 year, 10 month, 11 day …;
    ``calendarmodel`` is the URI as given (Q1985727 = proleptic Gregorian)."""

    time: str
    precision: int
    calendarmodel: str
    timezone: int = 0
    before: int = 0
    after: int = 0
    type: str = field(default="time", init=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "time": self.time,
            "precision": self.precision,
            "calendarmodel": self.calendarmodel,
            "timezone": self.timezone,
            "before": self.before,
            "after": self.after,
        }

    def as_text(self) -> str:
        return self.time


@dataclass(frozen=True, slots=True)
class GlobeCoordinateValue:
    latitude: float
    longitude: float
    altitude: float | None
    precision: float | None
    globe: str
    type: str = field(default="globecoordinate", init=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "latitude": self.latitude,
            "longitude": self.longitude,
            "altitude": self.altitude,
            "precision": self.precision,
            "globe": self.globe,
        }

    def as_text(self) -> str:
        return f"{self.latitude}, {self.longitude}"


@dataclass(frozen=True, slots=True)
class UnknownValue:
    """A datavalue type this module does not model; kept verbatim so nothing is lost."""

    type: str
    raw: Any

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "raw": self.raw}

    def as_text(self) -> str:
        return str(self.raw)


Value = (
    EntityIdValue
    | StringValue
    | MonolingualTextValue
    | QuantityValue
    | TimeValue
    | GlobeCoordinateValue
    | UnknownValue
)


# ----------------------------------------------------------------------------------- snaks, statements


@dataclass(frozen=True, slots=True)
class Snak:
    property_id: str
    snaktype: SnakType
    datatype: str | None = None
    value: Value | None = None  # only for snaktype "value"
    hash: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "property": self.property_id,
            "snaktype": self.snaktype,
            "datatype": self.datatype,
            "value": self.value.as_dict() if self.value is not None else None,
            "hash": self.hash,
        }

    def as_text(self) -> str:
        """A short plain-text form: the value, or ``unknown value`` / ``no value``."""
        if self.snaktype == "somevalue":
            return "unknown value"
        if self.snaktype == "novalue":
            return "no value"
        return self.value.as_text() if self.value is not None else ""


@dataclass(frozen=True, slots=True)
class Reference:
    hash: str | None
    snaks: tuple[Snak, ...]  # ordered by snaks-order
    snaks_order: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "snaks": [snak.as_dict() for snak in self.snaks],
            "snaksOrder": list(self.snaks_order),
        }


@dataclass(frozen=True, slots=True)
class Statement:
    entity_id: str
    property_id: str
    guid: str  # exactly as given, e.g. "Q42$F078E5B3-…" or "q42$…"
    rank: Rank
    mainsnak: Snak
    qualifiers: tuple[Snak, ...] = ()  # ordered by qualifiers-order
    qualifiers_order: tuple[str, ...] = ()
    references: tuple[Reference, ...] = ()

    @property
    def deprecated(self) -> bool:
        return self.rank == "deprecated"

    @property
    def value(self) -> Value | None:
        return self.mainsnak.value

    @property
    def snaktype(self) -> SnakType:
        return self.mainsnak.snaktype

    def qualifiers_for(self, property_id: str) -> list[Snak]:
        return [snak for snak in self.qualifiers if snak.property_id == property_id]

    def as_dict(self) -> dict[str, Any]:
        return {
            "entityId": self.entity_id,
            "propertyId": self.property_id,
            "guid": self.guid,
            "rank": self.rank,
            "deprecated": self.deprecated,
            "mainsnak": self.mainsnak.as_dict(),
            "qualifiers": [snak.as_dict() for snak in self.qualifiers],
            "qualifiersOrder": list(self.qualifiers_order),
            "references": [reference.as_dict() for reference in self.references],
        }


# ------------------------------------------------------------------------------------------------ terms


def language_fallback_chain(language: str) -> list[str]:
    """The languages tried, in order, for a term requested in ``language``.

    1. the requested language (``de-ch``);
    2. its base language when it has a subtag (``de-ch`` → ``de``);
    3. ``mul`` ("multiple languages": many items now carry their name only there — the 2025 Q42
       has no ``en`` label, only ``mul``);
    4. ``en``.

    Languages are compared lowercased; duplicates are dropped (``en`` → ``[en, mul]``).
    """
    requested = (language or "").strip().lower()
    chain: list[str] = []
    for candidate in (requested, requested.split("-")[0] if "-" in requested else "", MUL, ENGLISH):
        if candidate and candidate not in chain:
            chain.append(candidate)
    return chain


@dataclass(frozen=True, slots=True)
class Term:
    """A label, description or alias. ``language`` is the language of ``value`` (with server-side
    fallback it differs from the key it was filed under; ``for_language`` then names that key)."""

    value: str
    language: str
    for_language: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"value": self.value, "language": self.language}
        if self.for_language:
            data["forLanguage"] = self.for_language
        return data


@dataclass(frozen=True, slots=True)
class EntityTerms:
    labels: Mapping[str, Term] = field(default_factory=dict)
    descriptions: Mapping[str, Term] = field(default_factory=dict)
    aliases: Mapping[str, tuple[Term, ...]] = field(default_factory=dict)

    def label(self, language: str) -> Term | None:
        """The label in ``language`` or the first language of :func:`language_fallback_chain` that has one."""
        return _first_in_chain(self.labels, language)

    def description(self, language: str) -> Term | None:
        return _first_in_chain(self.descriptions, language)

    def aliases_for(self, language: str) -> tuple[Term, ...]:
        for candidate in language_fallback_chain(language):
            if self.aliases.get(candidate):
                return self.aliases[candidate]
        return ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "labels": {lang: term.as_dict() for lang, term in self.labels.items()},
            "descriptions": {lang: term.as_dict() for lang, term in self.descriptions.items()},
            "aliases": {lang: [term.as_dict() for term in terms] for lang, terms in self.aliases.items()},
        }


def _first_in_chain(terms: Mapping[str, Term], language: str) -> Term | None:
    for candidate in language_fallback_chain(language):
        term = terms.get(candidate)
        if term is not None and term.value:
            return term
    return None


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity from ``wbgetentities`` / ``Special:EntityData``. Absent props are empty."""

    id: str
    type: str | None
    terms: EntityTerms
    statements: tuple[Statement, ...] = ()
    datatype: str | None = None  # properties only
    sitelinks: Mapping[str, str] = field(default_factory=dict)  # site → title
    lastrevid: int | None = None
    modified: str | None = None

    def label(self, language: str) -> str | None:
        term = self.terms.label(language)
        return term.value if term else None

    def description(self, language: str) -> str | None:
        term = self.terms.description(language)
        return term.value if term else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "datatype": self.datatype,
            **self.terms.as_dict(),
            "statements": [statement.as_dict() for statement in self.statements],
            "sitelinks": dict(self.sitelinks),
            "lastrevid": self.lastrevid,
            "modified": self.modified,
        }


# ---------------------------------------------------------------------------------------------- parsing


def _mapping(raw: Any, what: str) -> Mapping[str, Any]:
    """A JSON object; PHP serialises an empty map as ``[]``, which counts as empty."""
    if raw is None or raw == []:
        return {}
    if not isinstance(raw, Mapping):
        raise WikibaseFormatError(f"{what} is not an object: {type(raw).__name__}")
    return raw


def _str(raw: Any, what: str) -> str:
    if not isinstance(raw, str):
        raise WikibaseFormatError(f"{what} is not a string: {raw!r:.80}")
    return raw


def _decimal_string(raw: Any, what: str) -> str:
    try:
        number = Decimal(str(raw).strip())
    except (InvalidOperation, ValueError) as exc:
        raise WikibaseFormatError(f"{what} is not a decimal number: {raw!r:.80}") from exc
    if not number.is_finite():
        raise WikibaseFormatError(f"{what} is not a finite number: {raw!r:.80}")
    text = format(number, "f")
    return "0" if text in {"-0", "+0"} else text


def concept_id(uri: str) -> str:
    """``http://www.wikidata.org/entity/Q11573`` → ``Q11573``; anything else unchanged."""
    match = _CONCEPT_URI_RE.search(uri)
    return match.group(1).upper() if match else uri


def normalize_entity_id(raw: str) -> str:
    """An entity id as Wikibase spells it now, uppercase (``q42`` → ``Q42``, ``l7-f1`` → ``L7-F1``)."""
    return raw.strip().upper()


def _entity_value(raw: Any) -> EntityIdValue:
    value = _mapping(raw, "wikibase-entityid value")
    entity_type = str(value.get("entity-type") or "item")
    entity_id = value.get("id")
    if not entity_id:
        # 2015-era JSON: only entity-type + numeric-id.
        prefix = _ENTITY_TYPE_PREFIX.get(entity_type)
        numeric = value.get("numeric-id")
        if prefix is None or not isinstance(numeric, int):
            raise WikibaseFormatError(f"entity value without an id: {raw!r:.120}")
        entity_id = f"{prefix}{numeric}"
    return EntityIdValue(id=normalize_entity_id(_str(entity_id, "entity id")), entity_type=entity_type)


def _string_value(raw: Any) -> StringValue:
    return StringValue(value=_str(raw, "string value"))


def _monolingual_value(raw: Any) -> MonolingualTextValue:
    value = _mapping(raw, "monolingualtext value")
    return MonolingualTextValue(
        text=_str(value.get("text"), "monolingualtext text"),
        language=_str(value.get("language"), "monolingualtext language"),
    )


def _quantity_value(raw: Any) -> QuantityValue:
    value = _mapping(raw, "quantity value")
    unit = str(value.get("unit") or "1")
    upper, lower = value.get("upperBound"), value.get("lowerBound")
    return QuantityValue(
        amount=_decimal_string(value.get("amount"), "quantity amount"),
        unit="1" if unit == "1" else concept_id(unit),
        upper_bound=_decimal_string(upper, "quantity upperBound") if upper is not None else None,
        lower_bound=_decimal_string(lower, "quantity lowerBound") if lower is not None else None,
    )


def _time_value(raw: Any) -> TimeValue:
    value = _mapping(raw, "time value")
    precision = value.get("precision")
    if not isinstance(precision, int):
        raise WikibaseFormatError(f"time value without an integer precision: {raw!r:.120}")
    return TimeValue(
        time=_str(value.get("time"), "time"),
        precision=precision,
        calendarmodel=str(value.get("calendarmodel") or ""),
        timezone=int(value.get("timezone") or 0),
        before=int(value.get("before") or 0),
        after=int(value.get("after") or 0),
    )


def _globe_value(raw: Any) -> GlobeCoordinateValue:
    value = _mapping(raw, "globecoordinate value")
    try:
        latitude, longitude = float(value["latitude"]), float(value["longitude"])
    except (KeyError, TypeError, ValueError) as exc:
        raise WikibaseFormatError(f"globecoordinate without latitude/longitude: {raw!r:.120}") from exc
    altitude, precision = value.get("altitude"), value.get("precision")
    return GlobeCoordinateValue(
        latitude=latitude,
        longitude=longitude,
        altitude=float(altitude) if altitude is not None else None,
        precision=float(precision) if precision is not None else None,
        globe=str(value.get("globe") or ""),
    )


_VALUE_PARSERS: dict[str, Callable[[Any], Value]] = {
    "wikibase-entityid": _entity_value,
    "string": _string_value,
    "monolingualtext": _monolingual_value,
    "quantity": _quantity_value,
    "time": _time_value,
    "globecoordinate": _globe_value,
}


def parse_value(datavalue: Mapping[str, Any]) -> Value:
    """A snak's ``datavalue`` (``{"value": ..., "type": ...}``) as a typed value."""
    kind = datavalue.get("type")
    if not isinstance(kind, str):
        raise WikibaseFormatError(f"datavalue without a type: {datavalue!r:.120}")
    parser = _VALUE_PARSERS.get(kind)
    if parser is None:
        return UnknownValue(type=kind, raw=datavalue.get("value"))
    return parser(datavalue.get("value"))


def parse_snak(raw: Any) -> Snak:
    snak = _mapping(raw, "snak")
    snaktype = snak.get("snaktype")
    if snaktype not in SNAK_TYPES:
        raise WikibaseFormatError(f"unknown snaktype {snaktype!r}")
    property_id = normalize_entity_id(_str(snak.get("property"), "snak property"))
    value = None
    if snaktype == "value":
        datavalue = snak.get("datavalue")
        if not isinstance(datavalue, Mapping):
            raise WikibaseFormatError(f"value snak of {property_id} without a datavalue")
        value = parse_value(datavalue)
    return Snak(
        property_id=property_id,
        snaktype=snaktype,
        datatype=snak.get("datatype"),
        value=value,
        hash=snak.get("hash"),
    )


def _ordered_snaks(raw: Any, order: Any, what: str) -> tuple[tuple[Snak, ...], tuple[str, ...]]:
    """Snaks grouped by property, flattened in ``order`` (then any property the order omits)."""
    groups = _mapping(raw, what)
    listed = [p for p in order if p in groups] if isinstance(order, list) else []
    properties = listed + [p for p in groups if p not in listed]
    snaks: list[Snak] = []
    for property_id in properties:
        group = groups[property_id]
        if not isinstance(group, list):
            raise WikibaseFormatError(f"{what} of {property_id} is not a list")
        snaks.extend(parse_snak(item) for item in group)
    return tuple(snaks), tuple(normalize_entity_id(p) for p in properties)


def parse_reference(raw: Any) -> Reference:
    reference = _mapping(raw, "reference")
    snaks, order = _ordered_snaks(reference.get("snaks"), reference.get("snaks-order"), "reference snaks")
    return Reference(hash=reference.get("hash"), snaks=snaks, snaks_order=order)


def guid_entity_id(guid: str) -> str | None:
    """The entity id a statement GUID names (``q42$…`` → ``Q42``), case-insensitively."""
    head, sep, _ = guid.partition("$")
    return normalize_entity_id(head) if sep and head else None


def parse_statement(raw: Any, *, entity_id: str | None = None) -> Statement:
    """One statement. ``entity_id`` is the entity it belongs to; without it, the GUID's prefix."""
    statement = _mapping(raw, "statement")
    mainsnak = parse_snak(statement.get("mainsnak"))
    guid = statement.get("id")
    guid = guid if isinstance(guid, str) else ""
    rank = statement.get("rank", "normal")
    if rank not in RANKS:
        raise WikibaseFormatError(f"statement {guid or '?'} has unknown rank {rank!r}")
    owner = normalize_entity_id(entity_id) if entity_id else guid_entity_id(guid)
    if not owner:
        raise WikibaseFormatError(f"statement {guid or '?'} names no entity")
    qualifiers, qualifiers_order = _ordered_snaks(
        statement.get("qualifiers"), statement.get("qualifiers-order"), "qualifiers"
    )
    references = statement.get("references") or []
    if not isinstance(references, list):
        raise WikibaseFormatError(f"references of {guid} are not a list")
    return Statement(
        entity_id=owner,
        property_id=mainsnak.property_id,
        guid=guid,
        rank=rank,
        mainsnak=mainsnak,
        qualifiers=qualifiers,
        qualifiers_order=qualifiers_order,
        references=tuple(parse_reference(item) for item in references),
    )


def parse_claims(raw: Any, *, entity_id: str | None = None) -> list[Statement]:
    """A ``claims`` map (``{"P31": [statement, ...]}``) in its order; a bare list is accepted too."""
    if isinstance(raw, list):
        return [parse_statement(item, entity_id=entity_id) for item in raw]
    statements: list[Statement] = []
    for property_id, group in _mapping(raw, "claims").items():
        if not isinstance(group, list):
            raise WikibaseFormatError(f"claims of {property_id} are not a list")
        statements.extend(parse_statement(item, entity_id=entity_id) for item in group)
    return statements


def _term(raw: Any, key: str) -> Term | None:
    """A ``{language, value}`` entry; anything else is skipped, not fatal: terms are display data, and
    real answers carry stray entries (the recorded Q42196 has ``aliases``/``claims``/``sitelinks``
    objects inside ``descriptions``)."""
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("value"), str)
        or raw.get("removed") is not None
    ):
        return None
    for_language = raw.get("for-language")
    return Term(
        value=raw["value"],
        language=str(raw.get("language") or key),
        for_language=str(for_language) if for_language else None,
    )


def parse_terms(entity: Mapping[str, Any]) -> EntityTerms:
    """Labels, descriptions and aliases, keyed by the (lowercased) language they were filed under."""
    labels: dict[str, Term] = {}
    descriptions: dict[str, Term] = {}
    aliases: dict[str, tuple[Term, ...]] = {}
    for target, name in ((labels, "labels"), (descriptions, "descriptions")):
        for key, raw in _mapping(entity.get(name), name).items():
            term = _term(raw, key)
            if term is not None:
                target[key.lower()] = term
    raw_aliases = entity.get("aliases")
    if isinstance(raw_aliases, list):  # very old shape: a flat list of {language, value}
        grouped: dict[str, list[Any]] = {}
        for item in raw_aliases:
            if isinstance(item, Mapping):
                grouped.setdefault(str(item.get("language", "")), []).append(item)
        raw_aliases = grouped
    for key, group in _mapping(raw_aliases, "aliases").items():
        items = group if isinstance(group, list) else [group]
        terms = tuple(t for t in (_term(item, key) for item in items) if t is not None)
        if terms:
            aliases[key.lower()] = terms
    return EntityTerms(labels=labels, descriptions=descriptions, aliases=aliases)


def is_missing(entity: Mapping[str, Any]) -> bool:
    """``"missing": ""`` (formatversion 1) or ``"missing": true`` (formatversion 2)."""
    return "missing" in entity and entity["missing"] is not False


def parse_entity(raw: Any) -> Entity:
    """One present entity (check :func:`is_missing` first)."""
    entity = _mapping(raw, "entity")
    entity_id = normalize_entity_id(_str(entity.get("id"), "entity id"))
    sitelinks: dict[str, str] = {}
    for site, link in _mapping(entity.get("sitelinks"), "sitelinks").items():
        if isinstance(link, Mapping) and isinstance(link.get("title"), str):
            sitelinks[site] = link["title"]
    lastrevid = entity.get("lastrevid")
    return Entity(
        id=entity_id,
        type=entity.get("type"),
        datatype=entity.get("datatype"),
        terms=parse_terms(entity),
        statements=tuple(parse_claims(entity.get("claims"), entity_id=entity_id)),
        sitelinks=sitelinks,
        lastrevid=lastrevid if isinstance(lastrevid, int) else None,
        modified=entity.get("modified"),
    )


# ------------------------------------------------------------------------------------------- selection


def usable_statements(
    statements: Iterable[Statement], *, include_deprecated: bool = False
) -> list[Statement]:
    """The statements without the deprecated ones (unless asked), preferred before normal, stable."""
    kept = [s for s in statements if include_deprecated or not s.deprecated]
    return sorted(kept, key=lambda s: RANKS.index(s.rank))


def best_statements(statements: Iterable[Statement]) -> list[Statement]:
    """Wikibase's "best" rank per entity and property: the preferred ones if any, else the normal ones."""
    groups: dict[tuple[str, str], list[Statement]] = {}
    for statement in statements:
        if not statement.deprecated:
            groups.setdefault((statement.entity_id, statement.property_id), []).append(statement)
    best: list[Statement] = []
    for group in groups.values():
        preferred = [s for s in group if s.rank == "preferred"]
        best.extend(preferred or group)
    return best


def snak_ids(snak: Snak) -> list[str]:
    """The property of a snak and the entity it names (an item value, or a quantity's unit)."""
    ids = [snak.property_id]
    if isinstance(snak.value, EntityIdValue):
        ids.append(snak.value.id)
    elif isinstance(snak.value, QuantityValue) and snak.value.unit_id:
        ids.append(snak.value.unit_id)
    return ids


def ids_referenced(statements: Sequence[Statement] | Iterable[Statement]) -> list[str]:
    """Every entity and property id these statements show and so need a label for, first-seen order.

    Covers the subject, the main snak's property and entity value (and a quantity's unit), each
    qualifier's and each reference snak's property and entity value. Calendar models and globes are
    left out (they are rendered from their URIs).
    """
    seen: dict[str, None] = {}
    for statement in statements:
        found = [statement.entity_id, *snak_ids(statement.mainsnak)]
        for snak in statement.qualifiers:
            found.extend(snak_ids(snak))
        for reference in statement.references:
            for snak in reference.snaks:
                found.extend(snak_ids(snak))
        for entity_id in found:
            seen.setdefault(entity_id, None)
    return list(seen)
