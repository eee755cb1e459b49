"""``ontology_propose`` and the operators' review: an agent's note (``create``) or amendment
(``amend``) is checked against the reasoner's view of the ontology, scored, rendered and staged; an
operator approves (the note is applied and the ontology version bumped) or rejects it.

Consistency. The hierarchy is the OWL 2 RL closure's (``graph.ancestors``: every superclass the
reasoner derived for each existing class). The candidate's own axioms are added to it
incrementally — its ancestors are its parents plus their closure ancestors — instead of rebuilding
the closure (seconds for the starter ontology, against milliseconds): subsumption is transitive and
the candidate is the only class whose axioms change, except when an amendment gives a class new
parents, which changes its descendants' ancestors too; those are recomputed the same way. Problems:

- ``unknown_parent`` / ``unknown_relationship_target``: an IRI that is no class of the ontology (a
  class is a note, or an external class a note already uses, such as ``prov:Entity``);
- ``subclass_cycle``: the new parents reach the class itself (the cycle is named);
- ``disjointness_violation``: the class (or a descendant) would be under two classes declared
  disjoint (either direction), or under a class it is itself declared disjoint with;
- ``unsatisfiable``: it would be under ``owl:Nothing`` or under a class the closure already makes
  unsatisfiable.

An inconsistent proposal is still staged (the operator sees why); approving one is refused.

Score (0–1, each part shown in ``score_breakdown``): completeness of the optional fields 0.25
(alternative terms, parents, relationships, source), definition length 0.20 (25 words or more is
full marks), parents known 0.20 (share of the named parents that exist; none named is 0),
authority of the source 0.15 (a link to a standards body or authority 1.0, another https link 0.6,
plain text 0.3, none 0), consistency 0.20 (all or nothing).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse
from uuid import UUID

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from rdflib import URIRef
from rdflib.namespace import OWL, RDF

from apps.core.errors import Conflict, NotFound, RateLimited, ValidationFailed
from apps.core.logging import get_logger
from apps.core.models import ApiToken
from apps.core.ratelimit import WindowLimiter
from apps.embeddings.services import embed_texts
from apps.ontology.graph import OntologyGraph, ontology_graph, subclass_cycles
from apps.ontology.models import (
    NAMESPACE,
    OntologyClass,
    OntologyProposal,
    ProposalAction,
    ProposalStatus,
)
from apps.ontology.notes import (
    LOCAL_NAME_RE,
    Note,
    NoteError,
    iri_compact,
    iri_expand,
    note_render,
    source_link,
)
from apps.ontology.selectors import iri_resolve
from apps.ontology.services import embedding_text, note_from_class, ontology_version_bump

logger = get_logger(__name__)

PROPOSALS_PER_MINUTE = 20
NOTHING = str(OWL.Nothing)
# Keys of add_relationships / remove_relationships that are axioms rather than relationships.
PARENT_KEY, DISJOINT_KEY = "is-subclass-of", "disjoint-with"
DOMAIN_CODES = {
    "cortexweb": "COR",
    "security": "SEC",
    "compliance": "CMP",
    "performance": "PRF",
    "technology": "TEC",
}
# Hosts whose pages are the authority for what the starter ontology covers.
AUTHORITY_HOSTS = (
    "w3.org",
    "owasp.org",
    "cwe.mitre.org",
    "nist.gov",
    "ietf.org",
    "rfc-editor.org",
    "eur-lex.europa.eu",
    "gdpr-info.eu",
    "hhs.gov",
    "aicpa-cima.com",
    "aicpa.org",
    "iso.org",
    "python.org",
    "djangoproject.com",
)
SCORE_WEIGHTS = {
    "completeness": 0.25,
    "definition_length": 0.20,
    "parents_known": 0.20,
    "source_authority": 0.15,
    "consistency": 0.20,
}
FULL_DEFINITION_WORDS = 25


# ------------------------------------------------------------------------------------------- limit


def propose_limiter(*, token: ApiToken) -> WindowLimiter:
    """20 proposals a minute per token, shared by every process (Redis): never a 21st within any
    60 s, as the seed's per-minute limit says (a token bucket would admit more as the minute goes on)."""
    return WindowLimiter(f"ontology-propose:token:{token.pk}", limit=PROPOSALS_PER_MINUTE, window=60.0)


def propose_rate_check(*, token: ApiToken) -> None:
    try:
        propose_limiter(token=token).check()
    except RateLimited as refusal:
        raise RateLimited(
            f"ontology_propose accepts {PROPOSALS_PER_MINUTE} proposals a minute per token; "
            f"retry after {refusal.retry_after:.1f} s.",
            retry_after=refusal.retry_after,
            details={"limiter": "ontology-propose"},
        ) from refusal


# ------------------------------------------------------------------------------------ consistency


@dataclass
class Consistency:
    problems: list[dict[str, str]] = field(default_factory=list)
    new_subsumptions: list[str] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.problems

    def add(self, kind: str, message: str) -> None:
        self.problems.append({"kind": kind, "message": message})

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "consistent": self.consistent,
            "new_subsumptions": self.new_subsumptions,
            "problems": self.problems,
        }
        if self.problems:
            result["explanation"] = " ".join(problem["message"] for problem in self.problems)
        return result


def known_classes(graph: OntologyGraph) -> set[str]:
    """Every class the ontology has: the notes, and the external classes they use (``prov:Entity``)."""
    return {
        str(subject)
        for subject in graph.asserted.subjects(RDF.type, OWL.Class)
        if isinstance(subject, URIRef)
    }


def disjoint_pairs(graph: OntologyGraph) -> set[frozenset[str]]:
    return {
        frozenset((str(a), str(b)))
        for a, b in graph.closure.subject_objects(OWL.disjointWith)
        if isinstance(a, URIRef) and isinstance(b, URIRef) and a != b
    }


def _name(iri: str) -> str:
    return iri_compact(iri)


def _reference_problems(note: Note, known: set[str], result: Consistency) -> None:
    """Parents, disjoint classes and relationship targets that are no class of the ontology."""
    for parent in note.parent_iris:
        if parent not in known:
            result.add(
                "unknown_parent", f"{_name(parent)} is not a class of the ontology, so it cannot be a parent."
            )
    for relationship in note.relationships:
        if relationship["target"] not in known:
            result.add(
                "unknown_relationship_target",
                f"{relationship['type']} {_name(relationship['target'])}: no such class in the ontology.",
            )
    for other in note.disjoint_iris:
        if other not in known:
            result.add(
                "unknown_relationship_target", f"disjoint-with {_name(other)}: no such class in the ontology."
            )


def consistency_check(note: Note, graph: OntologyGraph) -> Consistency:
    """The problems ``note`` (new, or replacing the class of its IRI) would bring into ``graph``."""
    result = Consistency()
    iri = note.iri
    _reference_problems(note, known_classes(graph) | {iri}, result)
    parents = {key: set(value) for key, value in graph.parents.items()}
    parents[iri] = set(note.parent_iris)
    for cycle in subclass_cycles(parents):
        if iri in cycle:
            start = cycle.index(iri)
            path = [*cycle[start:], *cycle[:start], iri]
            result.add(
                "subclass_cycle",
                "Subclass cycle: "
                + " ⊑ ".join(_name(item) for item in path)
                + " (each class would be its own "
                "strict superclass).",
            )
            return result  # ancestors are meaningless around a cycle
    pairs = disjoint_pairs(graph) | {frozenset((iri, other)) for other in note.disjoint_iris if other != iri}
    # The candidate and, when its parents change, every class under it.
    affected = [iri, *sorted(_descendants(graph, iri))]
    ancestors: dict[str, set[str]] = {}
    for cls in affected:
        ancestors[cls] = _ancestors(cls, parents, graph, ancestors)
    for cls in affected:
        above = ancestors[cls] | {cls}
        if NOTHING in above or above & graph.unsatisfiable:
            result.add("unsatisfiable", f"{_name(cls)} would be under owl:Nothing (it can have no members).")
        for pair in sorted(pairs, key=sorted):
            if pair <= above:
                first, second = sorted(pair)
                result.add(
                    "disjointness_violation",
                    f"{_name(cls)} would be under both {_name(first)} and {_name(second)}, which are "
                    "declared disjoint (nothing can be both), so it could have no members.",
                )
    direct = set(note.parent_iris)
    result.new_subsumptions = sorted(ancestors[iri] - direct - {str(OWL.Thing)})
    return result


def _descendants(graph: OntologyGraph, iri: str) -> set[str]:
    found: set[str] = set()
    pending = [iri]
    while pending:
        for child in graph.children.get(pending.pop(), ()):
            if child not in found and child != iri:
                found.add(child)
                pending.append(child)
    return found


def _ancestors(
    cls: str, parents: dict[str, set[str]], graph: OntologyGraph, computed: dict[str, set[str]]
) -> set[str]:
    """Superclasses of ``cls``: its (possibly new) parents and theirs — the closure's for untouched
    classes, those just computed for the affected ones."""
    found: set[str] = set()
    for parent in parents.get(cls, set()):
        found.add(parent)
        found |= computed.get(parent) or graph.ancestors.get(parent, set())
    return found - {cls}


# ------------------------------------------------------------------------------------------- score


def source_authority(source: str) -> float:
    if not source.strip():
        return 0.0
    _, url = source_link(source)
    if not url:
        return 0.3
    host = (urlparse(url).hostname or "").lower()
    if urlparse(url).scheme == "https" and any(host == h or host.endswith("." + h) for h in AUTHORITY_HOSTS):
        return 1.0
    return 0.6 if urlparse(url).scheme == "https" else 0.3


def quality_score(note: Note, *, source_given: str, consistent: bool, known: set[str]) -> tuple[float, dict]:
    """``(score, breakdown)`` by the formula of the module docstring."""
    optional = [
        bool(note.alt_terms),
        bool(note.parent_iris),
        bool(note.relationships),
        bool(source_given.strip()),
    ]
    values = {
        "completeness": sum(optional) / len(optional),
        "definition_length": min(len(note.definition.split()), FULL_DEFINITION_WORDS) / FULL_DEFINITION_WORDS,
        "parents_known": (
            sum(parent in known for parent in note.parent_iris) / len(note.parent_iris)
            if note.parent_iris
            else 0.0
        ),
        "source_authority": source_authority(source_given),
        "consistency": 1.0 if consistent else 0.0,
    }
    breakdown = {
        name: {"weight": weight, "value": round(values[name], 3), "points": round(weight * values[name], 3)}
        for name, weight in SCORE_WEIGHTS.items()
    }
    return round(sum(part["points"] for part in breakdown.values()), 3), breakdown


# ---------------------------------------------------------------------------------------- the note


def _iri(name: str, *, field_name: str) -> str:
    try:
        return iri_expand(name)
    except NoteError as error:
        raise ValidationFailed(f"{field_name}: {error}", details={"field": field_name}) from None


def _iris(names: list[str], *, field_name: str) -> list[str]:
    return list(dict.fromkeys(_iri(name, field_name=field_name) for name in names))


def next_term_id(domain: str) -> str:
    code = DOMAIN_CODES[domain]
    pattern = re.compile(rf"^CW-{code}-(\d{{4}})$")
    taken = set(
        OntologyClass.objects.filter(term_id__startswith=f"CW-{code}-").values_list("term_id", flat=True)
    )
    numbers = [int(match.group(1)) for term in taken if (match := pattern.match(term))]
    return f"CW-{code}-{max(numbers, default=0) + 1:04d}"


def note_from_create(proposal: dict[str, Any]) -> Note:
    owl_class = proposal["owl_class"].strip()
    local_name = owl_class[3:] if owl_class.startswith("cw:") else owl_class
    if owl_class.startswith(NAMESPACE):
        local_name = owl_class[len(NAMESPACE) :]
    if not LOCAL_NAME_RE.match(local_name):
        raise ValidationFailed(
            "owl_class must be cw:<UpperCamelCase name> (letters and digits).", details={"field": "owl_class"}
        )
    if OntologyClass.objects.filter(local_name=local_name).exists():
        raise Conflict(
            f"cw:{local_name} already exists; propose an amend with target_iri {NAMESPACE + local_name}.",
            details={"field": "owl_class", "iri": NAMESPACE + local_name},
        )
    relationships = [
        {"type": kind, "target": target}
        for kind, targets in (proposal.get("relationships") or {}).items()
        for target in _iris(targets, field_name=f"relationships.{kind}")
    ]
    return Note(
        local_name=local_name,
        term_id=next_term_id(proposal["domain"]),
        preferred_term=proposal["preferred_term"].strip(),
        definition=" ".join(proposal["definition"].split()),
        physicality=proposal["physicality"],
        role=proposal["role"],
        domain=proposal["domain"],
        quality_score=0.0,
        authority_score=0.0,
        maturity="draft",
        status="draft",
        source=(proposal.get("source") or "").strip() or "Proposed through ontology_propose.",
        alt_terms=list(
            dict.fromkeys(term.strip() for term in proposal.get("alt_terms") or [] if term.strip())
        ),
        parent_iris=_iris(proposal.get("is_subclass_of") or [], field_name="is_subclass_of"),
        disjoint_iris=_iris(proposal.get("disjoint_with") or [], field_name="disjoint_with"),
        relationships=relationships,
    )


def note_amended(current: Note, amendment: dict[str, Any]) -> Note:
    """``current`` with ``amendment`` applied (``custom_fields`` are kept with the proposal for the
    reviewer; the note format has no free-form properties)."""
    note = Note(**current.__dict__)
    note.parent_iris = list(note.parent_iris)
    note.disjoint_iris = list(note.disjoint_iris)
    note.relationships = [dict(item) for item in note.relationships]
    note.alt_terms = list(note.alt_terms)
    for kind, targets in (amendment.get("remove_relationships") or {}).items():
        iris = set(_iris(targets, field_name=f"remove_relationships.{kind}"))
        if kind == PARENT_KEY:
            note.parent_iris = [iri for iri in note.parent_iris if iri not in iris]
        elif kind == DISJOINT_KEY:
            note.disjoint_iris = [iri for iri in note.disjoint_iris if iri not in iris]
        else:
            note.relationships = [
                r for r in note.relationships if not (r["type"] == kind and r["target"] in iris)
            ]
    for kind, targets in (amendment.get("add_relationships") or {}).items():
        added = _iris(targets, field_name=f"add_relationships.{kind}")
        if kind == PARENT_KEY:
            note.parent_iris = list(dict.fromkeys([*note.parent_iris, *added]))
        elif kind == DISJOINT_KEY:
            note.disjoint_iris = list(dict.fromkeys([*note.disjoint_iris, *added]))
        else:
            existing = {(r["type"], r["target"]) for r in note.relationships}
            note.relationships += [
                {"type": kind, "target": iri} for iri in added if (kind, iri) not in existing
            ]
    if amendment.get("update_definition"):
        note.definition = " ".join(amendment["update_definition"].split())
    if amendment.get("update_quality_score") is not None:
        note.quality_score = float(amendment["update_quality_score"])
    note.alt_terms = list(
        dict.fromkeys([*note.alt_terms, *(t.strip() for t in amendment.get("add_alt_terms") or [])])
    )
    return note


@dataclass
class Checked:
    """A proposal's note, checked and scored against one version of the graph."""

    action: str
    note: Note
    consistency: Consistency
    quality_score: float
    score_breakdown: dict[str, Any]
    markdown_preview: str
    diff: str


def proposal_check(proposal: dict[str, Any], graph: OntologyGraph) -> Checked:
    """Build the note ``proposal`` describes and check, score and render it against ``graph``."""
    if proposal["action"] == ProposalAction.CREATE:
        note = note_from_create(proposal)
        source_given, before = proposal.get("source") or "", ""
    else:
        # The helper read and traverse use: a short name (cw:CWE89SqlInjection) names the class too.
        target_iri = iri_resolve(proposal["target_iri"])
        target = OntologyClass.objects.defer("embedding").filter(iri=target_iri).first()
        if target is None:
            raise NotFound(
                f"No class {proposal['target_iri']!r} to amend; propose a create for a new class.",
                details={"field": "target_iri"},
            )
        current = note_from_class(target)
        note = note_amended(current, proposal.get("amendment") or {})
        source_given, before = note.source, note_render(current)
    consistency = consistency_check(note, graph)
    score, breakdown = quality_score(
        note, source_given=source_given, consistent=consistency.consistent, known=known_classes(graph)
    )
    if proposal["action"] == ProposalAction.CREATE:
        note.quality_score, note.authority_score = score, breakdown["source_authority"]["value"]
    preview = note_render(note)
    diff = ""
    if before:
        name = f"{note.domain}/{note.local_name}.md"
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True), preview.splitlines(keepends=True), f"a/{name}", f"b/{name}"
            )
        )
    return Checked(proposal["action"], note, consistency, score, breakdown, preview, diff)


# ----------------------------------------------------------------------------------------- propose


def agent_context_verified(*, claimed: dict[str, Any], token: ApiToken) -> dict[str, Any]:
    """The agent context with ``agent_id``/``user_id`` from the credential; what the body claimed is
    kept under ``claimed_agent_id``/``claimed_user_id`` for the reviewer, never used as identity."""
    context = {key: value for key, value in claimed.items() if value is not None}
    for key in ("agent_id", "user_id"):
        if key in context:
            context[f"claimed_{key}"] = context.pop(key)
    context["agent_id"] = f"token:{token.prefix}"
    context["user_id"] = str(token.created_by_id) if token.created_by_id else f"token:{token.pk}"
    return context


def ontology_propose(
    *, token: ApiToken, proposal: dict[str, Any], agent_context: dict[str, Any]
) -> dict[str, Any]:
    """Check, score, render and stage ``proposal`` (the limit is counted first, even for a refusal
    of its content, so a caller cannot probe for free). Returns the seed's ProposalResult."""
    propose_rate_check(token=token)
    graph = ontology_graph()
    context = agent_context_verified(claimed=agent_context, token=token)
    if proposal.get("action") == "create":
        # The owner is the caller, as agent_id and user_id are; a different claim is kept for the reviewer.
        claimed_owner = proposal.get("owner_user_id")
        if claimed_owner is not None and claimed_owner != context["user_id"]:
            context["claimed_owner_user_id"] = claimed_owner
        proposal = {**proposal, "owner_user_id": context["user_id"]}
    checked = proposal_check(proposal, graph)
    staged = OntologyProposal.objects.create(
        action=checked.action,
        target_iri=checked.note.iri,
        proposal=proposal,
        token=token,
        agent_context=context,
        consistent=checked.consistency.consistent,
        consistency=checked.consistency.as_dict(),
        quality_score=checked.quality_score,
        score_breakdown=checked.score_breakdown,
        markdown_preview=checked.markdown_preview,
        diff=checked.diff,
        base_version=graph.version,
    )
    logger.info(
        "ontology.proposal_staged",
        proposal_id=str(staged.id),
        action=staged.action,
        iri=staged.target_iri,
        consistent=staged.consistent,
    )
    return proposal_result(staged)


def proposal_result(proposal: OntologyProposal) -> dict[str, Any]:
    """The seed's ProposalResult (``pr_url`` is absent: nothing is opened elsewhere)."""
    return {
        "proposal_id": str(proposal.id),
        "action": proposal.action,
        "target_iri": proposal.target_iri,
        "consistency": proposal.consistency,
        "quality_score": proposal.quality_score,
        "score_breakdown": proposal.score_breakdown,
        "markdown_preview": proposal.markdown_preview,
        "diff": proposal.diff,
        "status": ProposalStatus(proposal.status).label,  # the seed's spelling (Staged, Merged, …)
    }


# ------------------------------------------------------------------------------------------ review


def proposal_approve(*, proposal_id: UUID | str, reviewer: AbstractBaseUser) -> OntologyProposal:
    """Apply a staged proposal: the class created or updated (embedded afresh) and the version
    bumped, in one transaction. Checked again against the current ontology first — a proposal staged
    on an older version may have become inconsistent — and refused (``Conflict``) if inconsistent."""
    with transaction.atomic():
        proposal = OntologyProposal.objects.select_for_update().filter(pk=proposal_id).first()
        if proposal is None:
            raise NotFound(f"No proposal {proposal_id}.")
        if proposal.status != ProposalStatus.STAGED:
            raise Conflict(f"The proposal is already {proposal.status}.")
        graph = ontology_graph()
        try:
            checked = proposal_check(proposal.proposal, graph)
        except (Conflict, NotFound) as error:
            raise Conflict(f"The proposal no longer applies: {error.message}") from None
        if not checked.consistency.consistent:
            if checked.consistency.as_dict() != proposal.consistency:
                proposal.consistency = checked.consistency.as_dict()
                proposal.consistent = False
                proposal.save(update_fields=["consistency", "consistent"])
            raise Conflict(
                "The proposal is inconsistent with the ontology (version "
                f"{graph.version}): {checked.consistency.as_dict()['explanation']}",
                details={"problems": checked.consistency.problems},
            )
        note = checked.note
        [vector] = embed_texts(texts=[embedding_text(note)])
        fields = {**note.as_fields(), "markdown": checked.markdown_preview, "embedding": vector}
        if proposal.action == ProposalAction.CREATE:
            OntologyClass.objects.create(**fields)
        else:
            OntologyClass.objects.filter(iri=note.iri).update(
                **{k: v for k, v in fields.items() if k != "iri"}
            )
        proposal.merged_version = ontology_version_bump()
        proposal.status = ProposalStatus.MERGED
        proposal.reviewed_by = reviewer  # type: ignore[assignment]
        proposal.reviewed_at = timezone.now()
        proposal.markdown_preview, proposal.diff = checked.markdown_preview, checked.diff
        proposal.save()
    logger.info("ontology.proposal_merged", proposal_id=str(proposal.id), version=proposal.merged_version)
    return proposal


def proposal_reject(*, proposal_id: UUID | str, reviewer: AbstractBaseUser, note: str) -> OntologyProposal:
    """Reject a staged proposal, recording why (``note`` is required)."""
    if not note.strip():
        raise ValidationFailed("Say why the proposal is rejected.", details={"field": "note"})
    with transaction.atomic():
        proposal = OntologyProposal.objects.select_for_update().filter(pk=proposal_id).first()
        if proposal is None:
            raise NotFound(f"No proposal {proposal_id}.")
        if proposal.status != ProposalStatus.STAGED:
            raise Conflict(f"The proposal is already {proposal.status}.")
        proposal.status = ProposalStatus.REJECTED
        proposal.reviewed_by = reviewer  # type: ignore[assignment]
        proposal.reviewed_at = timezone.now()
        proposal.review_note = note.strip()
        proposal.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note"])
    logger.info("ontology.proposal_rejected", proposal_id=str(proposal.id))
    return proposal
