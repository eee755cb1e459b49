"""Knowledge writes: importing packs (JSON or Markdown) into a domain, embedding what changed,
loading the shipped packs on first start, and saving an entry from a review.

Imports are validated whole before anything is written (every error listed with where it is),
and written in one transaction: a bad file leaves the knowledge base as it was.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from apps.core.errors import ValidationFailed
from apps.core.logging import get_logger
from apps.embeddings.services import embed_texts
from apps.knowledge.models import (
    DOMAIN_NAME_PATTERN,
    ENTRY_ID_PATTERN,
    KnowledgeBase,
    KnowledgeDomain,
    KnowledgeEntry,
    KnowledgeSource,
    SourceType,
)

logger = get_logger(__name__)

DEFAULT_BASE = "default"
ENTRY_FIELDS = {
    "id",
    "topic",
    "content",
    "source",
    "url",
    "tags",
    "related",
    "confidence",
    "last_verified",
    "embedding",
}
REQUIRED_FIELDS = ("id", "topic", "content", "source")
MAX_CONTENT_CHARS = 10_000
EMBED_BATCH = 64
_ENTRY_ID_RE = re.compile(ENTRY_ID_PATTERN)
_DOMAIN_RE = re.compile(DOMAIN_NAME_PATTERN)
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# A heading that starts an entry: ``SEC-001: Topic`` (or ``[SEC-001] Topic``, ``SEC-001 — Topic``).
_MARKDOWN_ID_RE = re.compile(r"^\[?([A-Z]+-\d{3})\]?(?:[:\s—-]+(.+))?$")
# What a writer may have meant as one: letters, a hyphen and digits in any case or count (``sec-7``),
# told what is wrong with it instead of "id is required".
_MARKDOWN_LOOSE_ID_RE = re.compile(r"^\[?([A-Za-z]+)-(\d+)\]?(?:[:\s—-]+(.+))?$")
# ``key: value`` lines under a heading, also as a list item or in bold (``- id: SEC-001``,
# ``**id:** SEC-001``, ``id : SEC-001``), as Markdown editors write them.
_MARKDOWN_META_RE = re.compile(
    r"^(?:[-*+]\s+)?(?:\*\*|__)?(id|source|url|tags|related|confidence|last_verified)\s*(?:\*\*|__)?\s*:"
    r"\s*(?:\*\*|__)?\s*(.*)$",
    re.I,
)


# --- Parsing and validating a pack ----------------------------------------------------------


@dataclass
class ParsedEntry:
    entry_id: str
    topic: str
    content: str
    source: str
    url: str = ""
    tags: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    confidence: float = 1.0
    last_verified: date | None = None

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(f"{self.topic}\n{self.content}".encode()).hexdigest()


@dataclass
class ParsedPack:
    entries: list[ParsedEntry]
    source: dict[str, Any] = field(default_factory=dict)


def _string_list(value: Any, where: str, errors: list[dict[str, str]]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        errors.append({"path": where, "message": "must be a list of strings"})
        return []
    return [item.strip() for item in value if item.strip()]


def _optional_fields(
    raw: dict[str, Any], where: str, errors: list[dict[str, str]]
) -> tuple[str, float, date | None]:
    url = raw.get("url") or ""
    if url and (not isinstance(url, str) or not url.startswith(("https://", "http://"))):
        errors.append({"path": f"{where}.url", "message": "must be an http(s) URL"})
    confidence = raw.get("confidence", 1.0)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        errors.append({"path": f"{where}.confidence", "message": "must be a number from 0 to 1"})
        confidence = 1.0
    last_verified = None
    if raw.get("last_verified") not in (None, ""):
        try:
            last_verified = date.fromisoformat(str(raw["last_verified"]))
        except ValueError:
            errors.append({"path": f"{where}.last_verified", "message": "must be a date YYYY-MM-DD"})
    return url, float(confidence), last_verified


def _entry(
    raw: Any, where: str, errors: list[dict[str, str]], missing: dict[str, str] | None = None
) -> ParsedEntry | None:
    """``raw`` checked field by field (errors appended, ``None`` when any); ``missing`` words the
    error for a required field that is absent where the file's format says more (a Markdown heading)."""
    if not isinstance(raw, dict):
        errors.append({"path": where, "message": "must be an object with id, topic, content and source"})
        return None
    before = len(errors)
    for name in REQUIRED_FIELDS:
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            message = (missing or {}).get(name, "is required and must be a non-empty string")
            errors.append({"path": f"{where}.{name}", "message": message})
    unknown = sorted(set(raw) - ENTRY_FIELDS)
    if unknown:
        errors.append({"path": where, "message": f"unknown field(s) {', '.join(unknown)}"})
    entry_id = str(raw.get("id") or "").strip()
    if entry_id and not _ENTRY_ID_RE.match(entry_id):
        errors.append(
            {"path": f"{where}.id", "message": f"{entry_id!r} is not an id like SEC-001 (^[A-Z]+-\\d{{3}}$)"}
        )
    content = str(raw.get("content") or "")
    if len(content) > MAX_CONTENT_CHARS:
        errors.append(
            {"path": f"{where}.content", "message": f"is longer than {MAX_CONTENT_CHARS} characters"}
        )
    url, confidence, last_verified = _optional_fields(raw, where, errors)
    tags = _string_list(raw.get("tags"), f"{where}.tags", errors)
    related = _string_list(raw.get("related"), f"{where}.related", errors)
    for index, other in enumerate(related):
        if not _ENTRY_ID_RE.match(other):
            errors.append({"path": f"{where}.related[{index}]", "message": f"{other!r} is not an entry id"})
    if len(errors) > before:
        return None
    return ParsedEntry(
        entry_id=entry_id,
        topic=raw["topic"].strip(),
        content=" ".join(content.split()),
        source=raw["source"].strip(),
        url=url,
        tags=tags,
        related=related,
        confidence=float(confidence),
        last_verified=last_verified,
    )


def pack_parse_json(text: str) -> ParsedPack:
    """A JSON array of entries, or an object with an ``entries`` array (and optionally ``source``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationFailed(
            f"The file is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}.",
            details={"errors": [{"path": "$", "message": error.msg}]},
        ) from error
    source: dict[str, Any] = {}
    if isinstance(data, dict):
        declared = data.get("source")
        source = declared if isinstance(declared, dict) else {}
        data = data.get("entries")
    if not isinstance(data, list):
        raise ValidationFailed(
            "The file must be a JSON array of entries or an object with an 'entries' array.",
            details={"errors": [{"path": "$", "message": "no entries array"}]},
        )
    return _validated([(raw, f"$[{index}]", {}) for index, raw in enumerate(data)], source)


def pack_parse_markdown(text: str, *, default_source: str) -> ParsedPack:
    """Markdown split by headings: each heading ``SEC-001: Topic`` (or ``## Topic`` with an ``id:``
    line) starts an entry, its paragraphs are the content (a heading with neither id nor text, such
    as the document's title, is skipped); ``source:``, ``url:``, ``tags:`` (comma
    separated), ``related:``, ``confidence:``, ``last_verified:`` lines set those fields (also as
    ``- key: value`` or ``**key:** value``). An entry without an id is told what its heading holds
    and how to write one (``## sec-7`` is not an id: ``SEC-007``)."""
    sections: list[tuple[dict[str, Any], int, str]] = []
    current: dict[str, Any] | None = None
    body: list[str] = []

    def close() -> None:
        if current is None:
            return
        current["content"] = " ".join(" ".join(body).split())
        current.setdefault("source", default_source)
        if (
            "id" not in current
            and not current["content"]
            and not _MARKDOWN_LOOSE_ID_RE.match(sections[-1][2])
        ):
            sections.pop()  # a title or grouping heading, not an entry (``## sec-7`` meant one)

    for number, line in enumerate(text.splitlines(), start=1):
        heading = _HEADING_RE.match(line)
        if heading:
            close()
            title = heading.group(2)
            named = _MARKDOWN_ID_RE.match(title)
            if named:
                current = {"id": named.group(1)}
                if named.group(2):
                    current["topic"] = named.group(2).strip()
            else:
                current = {"topic": title}
            body = []
            sections.append((current, number, title))
            continue
        if current is None:
            continue
        meta = _MARKDOWN_META_RE.match(line.strip())
        if meta:
            _markdown_field_set(current, meta.group(1).lower(), meta.group(2).strip())
        else:
            body.append(line.strip())
    close()
    if not sections:
        raise ValidationFailed(
            "The Markdown file has no headings; start each entry with a heading like '## SEC-001: Topic'.",
            details={"errors": [{"path": "line 1", "message": "no headings"}]},
        )
    return _validated(
        [(raw, f"line {number}", _markdown_missing(raw, title)) for raw, number, title in sections], {}
    )


def _markdown_field_set(entry: dict[str, Any], key: str, value: str) -> None:
    """A ``key: value`` line's value on ``entry`` as the JSON format has it (lists, a number)."""
    if key in ("tags", "related"):
        entry[key] = [item.strip() for item in value.split(",") if item.strip()]
    elif key == "confidence":
        try:
            entry[key] = float(value)
        except ValueError:
            entry[key] = value  # left for the validation to name
    else:
        entry[key] = value


def _markdown_missing(raw: dict[str, Any], title: str) -> dict[str, str]:
    """What to say of a Markdown entry's missing id or topic, from its heading ``title``."""
    loose = _MARKDOWN_LOOSE_ID_RE.match(title)
    if loose and "id" not in raw:
        letters, digits = loose.group(1), loose.group(2)
        suggested = f"{letters.upper()}-{int(digits):03d}" if int(digits) < 1000 else ""
        example = suggested or "SEC-001"
        meant = f" ({suggested}?)" if suggested else ""
        return {
            "id": f"'{letters}-{digits}' in the heading is not an id: an id is capital letters, a hyphen and "
            f"three digits{meant}; write the heading as '## {example}: Topic', or add a line 'id: {example}' "
            "under it"
        }
    if "id" in raw and "topic" not in raw:
        return {"topic": f"is missing: the heading names only the id; write it as '## {raw['id']}: Topic'"}
    return {
        "id": f"is missing: the heading {title!r} names no id; start it with one ('## SEC-001: {title}') "
        "or add a line 'id: SEC-001' under it"
    }


def _validated(items: Sequence[tuple[Any, str, dict[str, str]]], source: dict[str, Any]) -> ParsedPack:
    errors: list[dict[str, str]] = []
    entries: list[ParsedEntry] = []
    seen: dict[str, str] = {}
    for raw, where, missing in items:
        entry = _entry(raw, where, errors, missing)
        if entry is None:
            continue
        if entry.entry_id in seen:
            errors.append(
                {"path": f"{where}.id", "message": f"{entry.entry_id} repeats {seen[entry.entry_id]}"}
            )
            continue
        seen[entry.entry_id] = where
        entries.append(entry)
    if not items:
        errors.append({"path": "$", "message": "no entries"})
    if errors:
        listed = "; ".join(f"{error['path']}: {error['message']}" for error in errors[:20])
        more = f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""
        raise ValidationFailed(
            f"The knowledge file has {len(errors)} error(s), nothing was imported: {listed}{more}.",
            details={"errors": errors},
        )
    return ParsedPack(entries=entries, source=source)


def pack_parse_file(path: Path) -> ParsedPack:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValidationFailed(f"Cannot read {path}: {error}", details={"path": str(path)}) from error
    if path.suffix.lower() in (".md", ".markdown"):
        return pack_parse_markdown(text, default_source=path.stem)
    return pack_parse_json(text)


# --- Importing ----------------------------------------------------------------------------


@dataclass
class ImportSummary:
    domain: str
    source: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    embedded: int = 0

    def summary(self) -> str:
        return (
            f"{self.domain}/{self.source}: {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.embedded} embedded"
        )


def domain_get_or_create(*, name: str, description: str = "") -> KnowledgeDomain:
    """The domain named ``name``, created (in the default base) when unknown."""
    if not _DOMAIN_RE.match(name or ""):
        raise ValidationFailed(
            f"{name!r} is not a domain name: use lowercase letters, digits, '-' and '_' (e.g. security).",
            details={"field": "domain"},
        )
    base, _ = KnowledgeBase.objects.get_or_create(name=DEFAULT_BASE)
    domain, _ = KnowledgeDomain.objects.get_or_create(
        name=name, defaults={"base": base, "description": description}
    )
    return domain


def entries_import(
    *,
    domain_name: str,
    pack: ParsedPack,
    source_name: str,
    location: str,
    source_type: str = SourceType.JSON_FILE,
    priority: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportSummary:
    """Create or update the pack's entries in the domain, and embed those whose text changed.

    An id that already belongs to another domain is refused (ids are global, like the seed's).
    """
    pack_priority = pack.source.get("priority") if isinstance(pack.source.get("priority"), int) else None
    with transaction.atomic():
        domain = domain_get_or_create(name=domain_name)
        source, _ = KnowledgeSource.objects.update_or_create(
            domain=domain,
            name=str(pack.source.get("name") or source_name),
            defaults={
                "type": source_type,
                "location": location,
                "priority": priority
                if priority is not None
                else (pack_priority if pack_priority is not None else 100),
            },
        )
        existing = {
            e.entry_id: e
            for e in KnowledgeEntry.objects.select_for_update().filter(
                entry_id__in=[p.entry_id for p in pack.entries]
            )
        }
        clashes = sorted(i for i, e in existing.items() if e.domain_id != domain.pk)
        if clashes:
            raise ValidationFailed(
                f"Entry id(s) {', '.join(clashes)} already belong to another domain; nothing was imported.",
                details={"errors": [{"path": i, "message": "id used by another domain"} for i in clashes]},
            )
        summary = ImportSummary(domain=domain.name, source=source.name)
        for parsed in pack.entries:
            values = {
                "domain": domain,
                "knowledge_source": source,
                "topic": parsed.topic,
                "content": parsed.content,
                "source": parsed.source,
                "url": parsed.url,
                "tags": parsed.tags,
                "related": parsed.related,
                "confidence": parsed.confidence,
                "last_verified": parsed.last_verified,
                "content_hash": parsed.content_hash,
            }
            entry = existing.get(parsed.entry_id)
            if entry is None:
                KnowledgeEntry.objects.create(entry_id=parsed.entry_id, **values)
                summary.created += 1
            elif any(getattr(entry, k) != v for k, v in values.items()):
                for name, value in values.items():
                    setattr(entry, name, value)
                entry.save()
                summary.updated += 1
            else:
                summary.unchanged += 1
        summary.embedded = entries_embed(domain_name=domain.name, progress=progress)
    return summary


def entries_embed(
    *, domain_name: str | None = None, progress: Callable[[int, int], None] | None = None
) -> int:
    """Embed the entries whose text changed since they were last embedded (all, or one domain's)."""
    pending = list(KnowledgeEntry.objects.needing_embedding().in_domain(domain_name).order_by("entry_id"))
    done = 0
    for start in range(0, len(pending), EMBED_BATCH):
        batch = pending[start : start + EMBED_BATCH]
        vectors = embed_texts(texts=[entry_embedding_text(entry) for entry in batch])
        for entry, vector in zip(batch, vectors, strict=True):
            entry.embedding, entry.embedded_hash = vector, entry.content_hash
        KnowledgeEntry.objects.bulk_update(batch, ["embedding", "embedded_hash"])
        done += len(batch)
        if progress:
            progress(done, len(pending))
    return done


def entry_embedding_text(entry: KnowledgeEntry) -> str:
    return f"{entry.topic}. {entry.content}"


def pack_file_import(
    *, domain_name: str, path: Path, progress: Callable[[int, int], None] | None = None
) -> ImportSummary:
    pack = pack_parse_file(path)
    markdown = path.suffix.lower() in (".md", ".markdown")
    return entries_import(
        domain_name=domain_name,
        pack=pack,
        source_name=path.stem,
        location=str(path),
        source_type=SourceType.MARKDOWN if markdown else SourceType.JSON_FILE,
        progress=progress,
    )


def pack_folder(domain_dir: Path) -> Iterable[Path]:
    return sorted(p for p in domain_dir.iterdir() if p.suffix.lower() in (".json", ".md", ".markdown"))


# --- Shipped packs (`make run`) ------------------------------------------------------------


@dataclass
class DefaultsLoaded:
    imports: list[ImportSummary]

    def summary(self) -> str:
        entries = sum(item.created for item in self.imports)
        return f"knowledge packs: {entries} entries in {len({i.domain for i in self.imports})} domains"


def knowledge_load_default_if_empty() -> DefaultsLoaded | None:
    """First start: load ``CORTEX_KNOWLEDGE_DIR``'s packs (one folder per domain) when there is no
    knowledge yet."""
    if KnowledgeEntry.objects.exists():
        return None
    root = Path(settings.CORTEX_KNOWLEDGE_DIR)
    imports = [
        pack_file_import(domain_name=domain_dir.name, path=path)
        for domain_dir in sorted(p for p in root.iterdir() if p.is_dir())
        for path in pack_folder(domain_dir)
    ]
    return DefaultsLoaded(imports=imports)


# --- Reviews -------------------------------------------------------------------------------


def entry_correct(
    *, entry_id: str, content: str, domain_name: str, topic: str = "", source: str = ""
) -> KnowledgeEntry:
    """Write a reviewer's correction: update the entry, or create it, bumping ``last_verified`` and
    re-embedding it at once so the next verification sees it."""
    content = " ".join((content or "").split())
    if not content:
        raise ValidationFailed(
            "The correction is empty: write the fact as it should read.", details={"field": "content"}
        )
    if not _ENTRY_ID_RE.match(entry_id or ""):
        raise ValidationFailed(
            f"{entry_id!r} is not an entry id like SEC-001.", details={"field": "entry_id"}
        )
    domain = domain_get_or_create(name=domain_name)
    entry = KnowledgeEntry.objects.filter(entry_id=entry_id).first()
    if entry is not None and entry.domain_id != domain.pk:
        raise ValidationFailed(
            f"{entry_id} belongs to the domain {entry.domain.name}, not {domain.name}.",
            details={"field": "entry_id"},
        )
    parsed = ParsedEntry(
        entry_id=entry_id,
        topic=topic or (entry.topic if entry else content[:80]),
        content=content,
        source=source or (entry.source if entry else "Operator review"),
    )
    if entry is None:
        entry = KnowledgeEntry(entry_id=entry_id, domain=domain)
    entry.topic, entry.content, entry.source = parsed.topic, parsed.content, parsed.source
    entry.last_verified = date.today()
    entry.content_hash = parsed.content_hash
    entry.save()
    entries_embed(domain_name=domain.name)
    entry.refresh_from_db()
    return entry
