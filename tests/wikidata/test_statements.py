"""Statement and entity parsing against the recorded Wikidata JSON (and a few constructed shapes)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from apps.wikidata.statements import (
    ENTITY_ID_RE,
    EntityIdValue,
    GlobeCoordinateValue,
    MonolingualTextValue,
    QuantityValue,
    StringValue,
    TimeValue,
    UnknownValue,
    WikibaseFormatError,
    best_statements,
    entity_id_pattern,
    guid_entity_id,
    ids_referenced,
    is_missing,
    language_fallback_chain,
    normalize_entity_id,
    parse_claims,
    parse_entity,
    parse_statement,
    parse_value,
    usable_statements,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "wikidata"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def q42():
    return parse_entity(
        load("wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json")["entities"]["Q42"]
    )


@pytest.fixture(scope="module")
def blue_whale():
    return parse_claims(
        load("wbgetclaims_Q42196_blue_whale_deprecated_rank.json")["claims"], entity_id="Q42196"
    )


def by_guid(statements, guid):
    return next(s for s in statements if s.guid == guid)


# ------------------------------------------------------------------------------------- recorded: Q42


def test_q42_p31_statement_with_qualifier_and_references_in_order():
    (statement,) = parse_claims(
        load("wbgetclaims_Q42_P31_qualifier_references_2025.json")["claims"], entity_id="Q42"
    )
    assert statement.guid == "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
    assert (statement.entity_id, statement.property_id, statement.rank) == ("Q42", "P31", "normal")
    assert statement.value == EntityIdValue(id="Q5", entity_type="item")
    assert statement.mainsnak.hash == "ad7d38a03cdd40cdc373de0dc4e7b7fcbccb31d9"
    assert statement.qualifiers_order == ("P805",)
    assert [(q.property_id, q.value.id) for q in statement.qualifiers] == [("P805", "Q42395533")]
    assert len(statement.references) == 3
    first = statement.references[0]
    assert first.hash == "a4d108601216cffd2ff1819ccf12b483486b62e7"
    assert first.snaks_order == ("P248", "P268", "P407", "P813")
    assert [s.property_id for s in first.snaks] == ["P248", "P268", "P407", "P813"]
    assert first.snaks[0].value == EntityIdValue(id="Q19938912", entity_type="item")
    assert first.snaks[1].value == StringValue(value="11888092r")
    assert first.snaks[1].datatype == "external-id"
    assert first.snaks[3].value == TimeValue(
        time="+2022-10-09T00:00:00Z", precision=11, calendarmodel="http://www.wikidata.org/entity/Q1985727"
    )
    assert statement.references[1].hash == "f38b0c50096908694fe215d33497be11eb3f9d3b"
    assert ids_referenced([statement])[:4] == ["Q42", "P31", "Q5", "P805"]
    assert {"P248", "Q19938912", "P268", "P407", "Q150", "P813", "Q36578", "P227"} <= set(
        ids_referenced([statement])
    )


def test_q42_terms_fall_back_to_mul_when_there_is_no_english_label(q42):
    assert "en" not in q42.terms.labels
    term = q42.terms.label("en")
    assert (term.value, term.language) == ("Douglas Adams", "mul")
    assert q42.label("de") == "Douglas Adams"  # de → mul
    assert q42.description("en") == "British science fiction writer and humorist (1952–2001)"
    assert [a.value for a in q42.terms.aliases_for("en")] == [
        "Douglas Noël Adams",
        "Douglas Noel Adams",
        "Douglas N. Adams",
    ]
    assert q42.type == "item"


def test_q42_ranks_lowercase_guids_and_a_somevalue_qualifier(q42):
    assert len(q42.statements) == 332
    preferred = by_guid(q42.statements, "Q42$BE724F6B-6981-4DE9-B90C-338768A4BFC4")
    assert (preferred.property_id, preferred.rank, preferred.value) == (
        "P998",
        "preferred",
        StringValue("Arts/Literature/Authors/A/Adams,_Douglas/"),
    )
    deprecated = by_guid(q42.statements, "Q42$f51945ed-4554-b916-d01a-9d8f4048925a")
    assert (deprecated.property_id, deprecated.rank, deprecated.deprecated) == ("P18", "deprecated", True)
    assert deprecated.value == StringValue("Douglas adams portrait cropped.jpg")
    assert deprecated.mainsnak.datatype == "commonsMedia"
    # A GUID with a lowercase entity prefix is kept exactly as given, attributed to Q42.
    born = next(s for s in q42.statements if s.property_id == "P569")
    assert born.guid == "q42$D8404CDA-25E4-4334-AF13-A3290BCD9C0F"
    assert born.entity_id == "Q42"
    assert guid_entity_id(born.guid) == "Q42"
    assert born.value == TimeValue(
        time="+1952-03-11T00:00:00Z", precision=11, calendarmodel="http://www.wikidata.org/entity/Q1985727"
    )
    image = by_guid(q42.statements, "Q42$44889d0f-474c-4fb9-1961-9a3366cbbb9e")
    somevalue = [q for q in image.qualifiers if q.snaktype == "somevalue"]
    assert [(q.property_id, q.value, q.as_text()) for q in somevalue] == [("P585", None, "unknown value")]
    assert image.qualifiers_for("P2096")[0].value == MonolingualTextValue(
        text="Porträtt av Douglas Adams.", language="sv"
    )
    assert by_guid(q42.statements, "Q42$e525b79e-4a34-b70f-862e-41837655f565").value == MonolingualTextValue(
        text="Douglas Adams", language="en"
    )


def test_q42_quantities_are_exact_decimal_strings_with_unit_ids(q42):
    height = by_guid(q42.statements, "Q42$b0bf3caf-481c-356b-03a2-e61174b8e6da")
    assert height.value == QuantityValue(amount="1.96", unit="Q11573")
    assert height.value.decimal() == Decimal("1.96")
    count = by_guid(q42.statements, "Q42$bf7e1294-4f0f-3511-ab5f-81f47f5c98cb")
    assert count.value == QuantityValue(amount="10", unit="1")
    assert count.value.unit_id is None
    assert "Q11573" in ids_referenced([height])


def test_q42_globecoordinate_and_whole_entity_serialises(q42):
    coordinates = [
        snak.value
        for s in q42.statements
        for snak in (s.mainsnak, *s.qualifiers, *(r for ref in s.references for r in ref.snaks))
        if isinstance(snak.value, GlobeCoordinateValue)
    ]
    assert len(coordinates) == 1
    assert coordinates[0].globe.endswith("/Q2")
    data = json.loads(json.dumps(q42.as_dict()))
    assert data["id"] == "Q42"
    assert len(data["statements"]) == 332
    assert data["labels"]["mul"] == {"value": "Douglas Adams", "language": "mul"}


def test_deprecated_kept_but_excluded_from_usable_and_best(q42):
    usable = usable_statements(q42.statements)
    assert len(usable) == 331
    assert usable[0].rank == "preferred"
    assert all(not s.deprecated for s in usable)
    assert len(usable_statements(q42.statements, include_deprecated=True)) == 332
    best_p18 = [s for s in best_statements(q42.statements) if s.property_id == "P18"]
    assert best_p18
    assert "Q42$f51945ed-4554-b916-d01a-9d8f4048925a" not in {s.guid for s in best_p18}
    best_p998 = [s for s in best_statements(q42.statements) if s.property_id == "P998"]
    assert [s.rank for s in best_p998] == ["preferred"]


# ------------------------------------------------------------------------------ recorded: blue whale


def test_blue_whale_deprecated_rank_and_quantity_bounds(blue_whale):
    assert len(blue_whale) == 122
    deprecated = [s for s in blue_whale if s.deprecated]
    assert [(s.guid, s.property_id, s.value) for s in deprecated] == [
        ("Q42196$c63f6d65-4cf6-3a7e-ace4-a2eaa537cd9f", "P2924", StringValue("2368079"))
    ]
    length = by_guid(blue_whale, "Q42196$f34ff33b-45ec-3db5-d5c4-5181d213bed4")
    assert length.value == QuantityValue(amount="11.5", unit="Q5151", upper_bound="12", lower_bound="11")
    assert len(length.references) == 1
    lowercase = by_guid(blue_whale, "q42196$B9CF4287-5028-42B9-B481-4B887B8F4AC9")
    assert lowercase.entity_id == "Q42196"
    assert all(s.entity_id == "Q42196" for s in blue_whale)


def test_property_entity_from_entitydata():
    entity = parse_entity(load("entitydata_P434_property_external_id.json")["entities"]["P434"])
    assert (entity.id, entity.type, entity.datatype) == ("P434", "property", "external-id")
    assert entity.label("en") == "MusicBrainz artist ID"
    assert [s.guid for s in entity.statements if s.rank == "preferred"] == [
        "P434$2CBB5F81-31E7-45E7-9A87-5DAE8193207F"
    ]


def test_2015_entity_values_without_id_and_snaks_without_hash():
    raw = load("wbgetentities_sites_enwiki_titles_Oliver_Kahn_Q131261.json")["entities"]["Q131261"]
    entity = parse_entity(raw)
    sex = by_guid(entity.statements, "q131261$DDA595E5-41CD-4594-AD9E-0EFCF5106686")
    assert sex.value == EntityIdValue(id="Q6581097", entity_type="item")
    assert sex.mainsnak.hash is None
    assert entity.sitelinks["enwiki"] == "Oliver Kahn"
    assert entity.description("en") == "German footballer"


def test_many_scripts_and_info_props():
    entity = parse_entity(load("wbgetentities_Q42196_info_labels_descriptions.json")["entities"]["Q42196"])
    assert (entity.lastrevid, entity.modified) == (2335091037, "2025-04-06T11:06:14Z")
    assert entity.label("en") == "Balaenoptera musculus"
    assert entity.statements == ()
    # The recording nests stray objects inside "descriptions"; they are skipped, not terms.
    assert not {"aliases", "claims", "sitelinks"} & set(entity.terms.descriptions)
    assert entity.description("en") == "species of marine mammal, largest living animal in the world"


# ----------------------------------------------------------------------------------------- constructed


def test_constructed_novalue_somevalue_mul_fallback_and_php_empty_maps():
    """Constructed (tests/fixtures/wikidata/README.md): the recordings have no such main snaks."""
    raw = load("constructed_wbgetentities_fv2_redirect_missing_mul_snaktypes.json")["entities"]["Q100"]
    entity = parse_entity(raw)
    assert entity.id == "Q200"
    assert entity.terms.aliases == {}
    de = entity.terms.label("de")
    assert (de.value, de.language, de.for_language) == ("Constructed Example", "mul", "de")
    assert entity.terms.label("fr").language == "mul"
    novalue = by_guid(entity.statements, "Q200$1B1C7D44-0000-4000-8000-000000000002")
    assert (novalue.snaktype, novalue.value, novalue.mainsnak.as_text()) == ("novalue", None, "no value")
    somevalue = by_guid(entity.statements, "Q200$1B1C7D44-0000-4000-8000-000000000003")
    assert (somevalue.snaktype, somevalue.value, somevalue.mainsnak.hash) == ("somevalue", None, None)
    assert somevalue.qualifiers_order == ("P580", "P1480")
    assert [(q.property_id, q.snaktype) for q in somevalue.qualifiers] == [
        ("P580", "novalue"),
        ("P1480", "value"),
    ]
    assert somevalue.references == ()
    assert ids_referenced(entity.statements) == [
        "Q200",
        "P31",
        "Q5",
        "P40",
        "P22",
        "P580",
        "P1480",
        "Q18122778",
    ]
    assert json.loads(json.dumps(somevalue.as_dict()))["mainsnak"] == {
        "property": "P22",
        "snaktype": "somevalue",
        "datatype": "wikibase-item",
        "value": None,
        "hash": None,
    }


def test_language_fallback_chain_is_documented_order():
    assert language_fallback_chain("de") == ["de", "mul", "en"]
    assert language_fallback_chain("pt-BR") == ["pt-br", "pt", "mul", "en"]
    assert language_fallback_chain("en") == ["en", "mul"]
    assert language_fallback_chain("mul") == ["mul", "en"]


def test_missing_markers_of_both_format_versions():
    assert is_missing({"id": "Q1", "missing": ""})
    assert is_missing({"id": "Q1", "missing": True})
    assert not is_missing({"id": "Q1"})


def test_constructed_values_and_unknown_types():
    assert parse_value(
        {
            "type": "globecoordinate",
            "value": {
                "latitude": 52.5,
                "longitude": 13.4,
                "altitude": None,
                "precision": 0.1,
                "globe": "http://www.wikidata.org/entity/Q2",
            },
        }
    ) == GlobeCoordinateValue(52.5, 13.4, None, 0.1, "http://www.wikidata.org/entity/Q2")
    assert (
        parse_value({"type": "quantity", "value": {"amount": "-0.000001", "unit": "1"}}).amount == "-0.000001"
    )
    lexeme = parse_value({"type": "wikibase-entityid", "value": {"entity-type": "form", "id": "L7-F1"}})
    assert lexeme == EntityIdValue(id="L7-F1", entity_type="form")
    assert parse_value({"type": "musical-notation-x", "value": {"a": 1}}) == UnknownValue(
        type="musical-notation-x", raw={"a": 1}
    )


@pytest.mark.parametrize(
    "raw",
    [
        {"id": "Q1$X", "rank": "normal", "mainsnak": {"snaktype": "bogus", "property": "P1"}},
        {"id": "Q1$X", "rank": "normal", "mainsnak": {"snaktype": "value", "property": "P1"}},
        {"id": "Q1$X", "rank": "best", "mainsnak": {"snaktype": "novalue", "property": "P1"}},
        {"id": "Q1$X", "rank": "normal"},
        {
            "id": "Q1$X",
            "rank": "normal",
            "mainsnak": {
                "snaktype": "value",
                "property": "P1",
                "datavalue": {"type": "quantity", "value": {"amount": "many"}},
            },
        },
        "not a statement",
    ],
)
def test_malformed_statements_raise_format_error(raw):
    with pytest.raises(WikibaseFormatError):
        parse_statement(raw, entity_id="Q1")


def test_one_entity_id_pattern_narrowed_per_use() -> None:
    accepted = ["Q42", "P31", "L7", "M5", "E1", "L7-F1", "L7-S2"]
    refused = ["Q0", "Q042", "X1", "q42", "Q42-F1x", "L7-F0", "Q", "42", "Q42 ", "Q42\n", "Q4\u0662"]
    assert [bool(ENTITY_ID_RE.match(value)) for value in accepted] == [True] * len(accepted)
    assert [bool(ENTITY_ID_RE.match(value)) for value in refused] == [False] * len(refused)
    items_and_properties = entity_id_pattern("QP", sub_entities=False)
    assert [bool(items_and_properties.match(v)) for v in ("Q42", "P31", "L7", "L7-F1")] == [
        True,
        True,
        False,
        False,
    ]
    assert entity_id_pattern("QP", sub_entities=False) is items_and_properties  # compiled once
    assert normalize_entity_id(" l7-f1 ") == "L7-F1"
