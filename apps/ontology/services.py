"""Ontology writes: loading notes (the starter ontology under ``config/ontology/``), and the
version every change bumps so each process rebuilds its graph (``graph.py``).

A version change is committed with the rows it covers and then announced over Redis (as the
connector registry does), so a process that heard of it rebuilds from exactly those rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.errors import ValidationFailed
from apps.core.logging import get_logger
from apps.core.redis import get_redis
from apps.embeddings.services import embed_texts
from apps.ontology.models import OntologyClass, OntologyState
from apps.ontology.notes import Note, NoteError, note_parse, note_render

logger = get_logger(__name__)

VERSION_CHANNEL = "cortex:ontology:version"


def notes_folder() -> Path:
    return Path(settings.BASE_DIR) / "config" / "ontology"


def notes_read(folder: Path) -> list[tuple[Note, str]]:
    """Every note under ``folder`` (``<domain>/<LocalName>.md``) with its text; ``ValidationFailed``
    naming the file and the property of the first one that breaks the format."""
    found: list[tuple[Note, str]] = []
    for path in sorted(folder.glob("*/*.md")):
        text = path.read_text(encoding="utf-8")
        try:
            note = note_parse(text, local_name=path.stem)
        except NoteError as error:
            raise ValidationFailed(
                f"{path.relative_to(folder)}: {error}", details={"file": str(path), "field": error.field}
            ) from None
        if note.domain != path.parent.name:
            raise ValidationFailed(f"{path.relative_to(folder)}: domain {note.domain} is not its folder.")
        found.append((note, text))
    return found


def embedding_text(note: Note | OntologyClass) -> str:
    """What a class's embedding is computed from: its terms and its definition."""
    return " ; ".join([note.preferred_term, *note.alt_terms, note.definition])


def ontology_load(*, notes: Iterable[tuple[Note, str]]) -> int:
    """Create or update the classes of ``notes`` (by IRI) in one transaction, embedded, and move the
    ontology to a new version. Returns how many classes were written."""
    notes = list(notes)
    term_ids = [note.term_id for note, _ in notes]
    duplicated = sorted({term for term in term_ids if term_ids.count(term) > 1})
    if duplicated:
        raise ValidationFailed(f"Term ids used twice: {', '.join(duplicated)}.")
    vectors = list(embed_texts(texts=[embedding_text(note) for note, _ in notes])) if notes else []
    with transaction.atomic():
        # Two writes for the whole ontology, not two queries a class: the starter ontology's 211
        # classes took 0.75 s one by one, at every fresh start and in every test that loads them.
        existing = OntologyClass.objects.select_for_update().in_bulk(
            [note.iri for note, _ in notes], field_name="iri"
        )
        created, changed = [], []
        for (note, text), vector in zip(notes, vectors, strict=True):
            fields = {**note.as_fields(), "markdown": text, "embedding": vector}
            row = existing.get(note.iri)
            if row is None:
                created.append(OntologyClass(**fields))
                continue
            for name, value in fields.items():
                setattr(row, name, value)
            row.updated_at = timezone.now()  # auto_now is not applied by bulk_update
            changed.append(row)
        OntologyClass.objects.bulk_create(created)
        if changed:
            OntologyClass.objects.bulk_update(changed, fields=[*fields, "updated_at"], batch_size=100)
        version = ontology_version_bump()
    logger.info("ontology.loaded", classes=len(notes), version=version)
    return len(notes)


@dataclass(frozen=True)
class OntologyLoaded:
    classes: int
    version: int

    def summary(self) -> str:
        return f"{self.classes} ontology classes (version {self.version})"


def ontology_load_default_if_empty() -> OntologyLoaded | None:
    """``make run``'s default data: the starter ontology, when there is no class yet."""
    if OntologyClass.objects.exists():
        return None
    count = ontology_load(notes=notes_read(notes_folder()))
    return OntologyLoaded(classes=count, version=OntologyState.objects.get(pk=1).version)


def ontology_version_bump() -> int:
    """A new ontology version, in the caller's transaction; announced to every process after commit."""
    state, _ = OntologyState.objects.select_for_update().get_or_create(pk=1)
    state.version += 1
    state.save(update_fields=["version", "changed_at"])
    version = state.version
    transaction.on_commit(lambda: _announce(version))
    return version


def _announce(version: int) -> None:
    try:
        get_redis().publish(VERSION_CHANNEL, version)
    except Exception as error:  # noqa: BLE001 - processes still read the version from Postgres
        logger.warning("ontology.announce_failed", error=str(error))


def ontology_export_markdown() -> dict[str, str]:
    """Every class as its note: ``{"<domain>/<LocalName>.md": markdown}`` (rendered from the rows, so
    merged proposals are included)."""
    return {
        f"{cls.domain}/{cls.local_name}.md": note_render(note_from_class(cls))
        for cls in OntologyClass.objects.order_by("domain", "local_name")
    }


def note_from_class(cls: OntologyClass) -> Note:
    fields: dict[str, Any] = {
        name: getattr(cls, name)
        for name in (
            "local_name", "term_id", "preferred_term", "definition", "physicality", "role", "domain",
            "quality_score", "authority_score", "maturity", "status", "source", "alt_terms", "parent_iris",
            "disjoint_iris", "relationships", "knowledge_entries", "about",
        )
    }  # fmt: skip
    return Note(**fields)
