"""CortexWeb's own MCP tools: the ``/v1/`` operations under MCP names, with the same schemas.

Each tool names its REST twin's input and output schema (the ninja ``Schema`` classes, so the
two surfaces cannot drift), the token scope the twin needs, and a handler that calls the same
service the twin's endpoint calls. ``services.mcp_tool_call`` validates, authorises, records and
renders; the handlers here only translate validated input into one service call.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from ninja import Field, Schema
from pydantic import BaseModel

from apps.arxiv import services as arxiv_services
from apps.arxiv.schemas import LookupIn, RunOut, SearchIn
from apps.connectors import selectors as connector_selectors
from apps.connectors.planner import plan_create
from apps.connectors.schemas import PlanIn, PlanOut
from apps.core.errors import AuthenticationRequired
from apps.core.models import ApiToken, TokenScope
from apps.core.schemas import JsonUUID, StrictSchema
from apps.grounding import services as grounding_services
from apps.grounding.schemas import GroundIn, GroundingMessageOut, VerificationOut, VerifyIn
from apps.knowledge import selectors as knowledge_selectors
from apps.knowledge.schemas import KnowledgeSearchIn, KnowledgeSearchOut
from apps.memory import answers as memory_answers
from apps.memory import selectors as memory_selectors
from apps.memory import services as memory_services
from apps.memory.schemas import (
    AskIn,
    AskOut,
    ExportIn,
    ExportOut,
    ForgetAllIn,
    ForgetAllOut,
    ForgetIn,
    ForgetOut,
    ListIn,
    MemoryHistoryOut,
    MemoryIdIn,
    MemoryListOut,
    MemoryOut,
    MemoryUpdateOut,
    MemoryUpdateToolIn,
    PinToolIn,
    TellIn,
    TellOut,
)
from apps.ontology import cypher as ontology_cypher
from apps.ontology import proposals as ontology_proposals
from apps.ontology import selectors as ontology_selectors
from apps.ontology.schemas import (
    DiscoverIn,
    DiscoverOut,
    ReadIn,
    ReadOut,
    StatusOut,
    TraverseIn,
    TraverseOut,
    ValidateIn,
    ValidateOut,
)
from apps.ontology.schemas_propose import ProposeIn, ProposeOut
from apps.ontology.schemas_query import QueryIn, QueryOut
from apps.wikidata import selectors as wikidata_selectors
from apps.wikidata import services as wikidata_services
from apps.wikidata.schemas import FactQueryIn, FactRunOut


@dataclass(frozen=True)
class CallContext:
    """Who is calling, over what, and the base URL that makes provenance links absolute."""

    token: ApiToken | None
    transport: str
    base_url: str


@dataclass(frozen=True)
class CortexTool:
    """One of CortexWeb's own tools, as ``tools/list`` shows it and ``tools/call`` runs it."""

    name: str
    title: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    handler: Callable[[Any, CallContext], dict[str, Any]]
    summary: Callable[[dict[str, Any]], str]
    # The scope of the REST twin; None when the twin is public (the service map).
    scope: str | None = TokenScope.READ
    read_only: bool = True
    open_world: bool = False
    idempotent: bool = True
    # A connector whose feature flag switches this tool off (absent from tools/list, calls refused).
    connector: str | None = None

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_json_schema(self.input_model))

    def output_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_json_schema(self.output_model))


@functools.cache
def _json_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Generating a schema costs about 1 ms per model, and tools/list shows 18 of them on every call
    # (bench/mcp.py: 2x the REST catalogue's time without this cache, 1.2x with it).
    return model.model_json_schema()


# --- Inputs and outputs the REST twins take from the path or return untyped -------------------


class FactRunIn(StrictSchema):
    runId: JsonUUID = Field(..., description="The runId facts.query answered.")


class NoArguments(StrictSchema):
    """The tool takes no arguments."""


class ServiceMapOut(Schema):
    """The signed service map (DESIGN §5.1): verify ``signature`` by recomputing it."""

    id: str
    brand: str
    generatedAt: str
    ttlSeconds: int
    connectors: list[dict[str, Any]]
    signature: str


# --- Handlers ------------------------------------------------------------------------------


def _facts_query(payload: FactQueryIn, context: CallContext) -> dict[str, Any]:
    run = wikidata_services.fact_query_submit(**payload.submit_arguments())
    run = wikidata_services.fact_run_wait(run=run, timeout=payload.waitSeconds)
    return wikidata_selectors.fact_run_outcome(run=run, base_url=context.base_url)


def _facts_run(payload: FactRunIn, context: CallContext) -> dict[str, Any]:
    run = wikidata_selectors.fact_run_get(run_id=payload.runId)
    return wikidata_selectors.fact_run_outcome(run=run, base_url=context.base_url)


def _arxiv_answer(run: Any) -> dict[str, Any]:
    run = arxiv_services.search_run_wait(run=run, timeout=settings.ARXIV_WAIT_SECONDS)
    return arxiv_services.search_run_outcome(run=run)


def _arxiv_search(payload: SearchIn, context: CallContext) -> dict[str, Any]:
    return _arxiv_answer(arxiv_services.search_submit(payload=payload))


def _arxiv_lookup(payload: LookupIn, context: CallContext) -> dict[str, Any]:
    return _arxiv_answer(arxiv_services.lookup_submit(ids=payload.ids))


def _knowledge_search(payload: KnowledgeSearchIn, context: CallContext) -> dict[str, Any]:
    hits = knowledge_selectors.knowledge_search(
        query=payload.query, domain=payload.domain, limit=payload.limit
    )
    return {"query": payload.query, "domain": payload.domain, "results": [hit.as_dict() for hit in hits]}


def _knowledge_verify(payload: VerifyIn, context: CallContext) -> dict[str, Any]:
    verification = grounding_services.claim_verify(claim=payload.claim, domain=payload.domain)
    return grounding_services.verification_result(verification=verification)


def _grounding_ground(payload: GroundIn, context: CallContext) -> dict[str, Any]:
    grounding = grounding_services.message_ground(
        message=payload.message, message_id=payload.messageId or "", mode=payload.mode
    )
    return grounding_services.grounding_message_result(grounding=grounding)


def _service_map(payload: NoArguments, context: CallContext) -> dict[str, Any]:
    return json.loads(connector_selectors.service_map_cached().body)


def _agents_plan(payload: PlanIn, context: CallContext) -> dict[str, Any]:
    return plan_create(intent=payload.intent, query=payload.query, scope=payload.scope)


def _memory_scope(context: CallContext, agent: str | None = None, session: str | None = None) -> Any:
    # The tool's scope check ran before the handler, so a token is there; memories are the token's.
    if context.token is None:
        raise AuthenticationRequired("Memory tools need a bearer token: memories belong to a token.")
    return memory_services.Scope(token=context.token, agent=agent or "", session=session or "")


def _tell(payload: TellIn, context: CallContext) -> dict[str, Any]:
    scope = _memory_scope(context, payload.agent, payload.session)
    return memory_services.memory_tell(scope=scope, items=[payload.tell_item()])[0]


def _ask(payload: AskIn, context: CallContext) -> dict[str, Any]:
    scope = _memory_scope(context, payload.agent, payload.session)
    return memory_answers.ask_result(scope=scope, **payload.ask_arguments())


def _memory_forget(payload: ForgetIn, context: CallContext) -> dict[str, Any]:
    scope = _memory_scope(context)
    return memory_services.memory_forget(scope=scope, memory_id=payload.id, mode=payload.mode)


def _memory_list(payload: ListIn, context: CallContext) -> dict[str, Any]:
    scope = _memory_scope(context, payload.agent, payload.session)
    return memory_selectors.memories_list(
        scope=scope, filters=payload.filters(), limit=payload.limit, offset=payload.offset
    )


def _memory_get(payload: MemoryIdIn, context: CallContext) -> dict[str, Any]:
    memory = memory_selectors.memory_get(scope=_memory_scope(context), memory_id=payload.id)
    return memory_selectors.memory_detail(memory=memory)


def _memory_update(payload: MemoryUpdateToolIn, context: CallContext) -> dict[str, Any]:
    updated = memory_services.memory_update(
        scope=_memory_scope(context), memory_id=payload.id, changes=payload.changes()
    )
    return {**memory_selectors.memory_detail(memory=updated["memory"]), "changed": updated["changed"]}


def _memory_history(payload: MemoryIdIn, context: CallContext) -> dict[str, Any]:
    return memory_selectors.memory_history(scope=_memory_scope(context), memory_id=payload.id)


def _memory_pin(payload: PinToolIn, context: CallContext) -> dict[str, Any]:
    memory = memory_services.memory_pin(
        scope=_memory_scope(context), memory_id=payload.id, pinned=payload.pinned
    )
    return memory_selectors.memory_detail(memory=memory)


def _memory_forget_all(payload: ForgetAllIn, context: CallContext) -> dict[str, Any]:
    scope = _memory_scope(context, payload.agent, payload.session)
    return memory_services.memories_forget_all(
        scope=scope, confirm=payload.confirm, domain=payload.domain or ""
    )


def _memory_export(payload: ExportIn, context: CallContext) -> dict[str, Any]:
    scope = _memory_scope(context, payload.agent, payload.session)
    content, media_type, count = memory_services.memories_export(
        scope=scope, fmt=payload.format, domain=payload.domain
    )
    return {"format": payload.format, "mediaType": media_type, "count": count, "content": content}


# The ontology read tools (seed 003): public like their /ontology-agent/ twins, the same selectors.
def _ontology_discover(payload: DiscoverIn, context: CallContext) -> dict[str, Any]:
    results = ontology_selectors.ontology_discover(
        query=payload.query, limit=payload.limit, domain=payload.domain
    )
    return {"success": True, "count": len(results), "results": results}


def _ontology_read(payload: ReadIn, context: CallContext) -> dict[str, Any]:
    return {"success": True, "note": ontology_selectors.ontology_read(iri=payload.iri)}


def _ontology_traverse(payload: TraverseIn, context: CallContext) -> dict[str, Any]:
    traversal = ontology_selectors.ontology_traverse(
        start_iri=payload.startIri, depth=payload.depth, relationship_types=payload.relationshipTypes
    )
    return {"success": True, "traversal": traversal}


def _ontology_validate(payload: ValidateIn, context: CallContext) -> dict[str, Any]:
    return ontology_selectors.ontology_validate(axioms=[axiom.dict() for axiom in payload.axioms])


def _ontology_status(payload: NoArguments, context: CallContext) -> dict[str, Any]:
    return ontology_selectors.ontology_status()


def _ontology_query(payload: QueryIn, context: CallContext) -> dict[str, Any]:
    # Exactly one of cypher (seed 003) and sparql; the schema checked it.
    return ontology_cypher.ontology_query_request(sparql=payload.sparql, cypher=payload.cypher)


def _ontology_propose(payload: ProposeIn, context: CallContext) -> dict[str, Any]:
    # The write scope was checked before the handler; the identity is the token's, never the body's.
    if context.token is None:
        raise AuthenticationRequired("ontology_propose needs a bearer token with the write scope.")
    result = ontology_proposals.ontology_propose(
        token=context.token,
        proposal=payload.proposal.model_dump(),
        agent_context=payload.agentContext.model_dump(exclude_none=True) if payload.agentContext else {},
    )
    return {"success": True, "proposal": result}


# --- Human-readable text beside the structured result ----------------------------------------


def _facts_summary(result: dict[str, Any]) -> str:
    if result.get("poll"):
        return (
            f"Fact run {result['runId']} is {result['status']}; call facts.run with "
            f'{{"runId": "{result["runId"]}"}} to get its facts.'
        )
    lines = [f"Fact run {result['runId']}: {result['status']}"]
    if result["status"] == "degraded":  # say what answered, so it is not taken for Wikidata's answer
        lines[0] += f", answered from {result['answeredFrom']}" if result.get("answeredFrom") else ""
    if result.get("degradedReason"):
        lines.append(f"Degraded because: {result['degradedReason']}")
    for item in result.get("results") or []:
        wikidata = item["metadata"].get("wikidata") or {}
        cite = wikidata.get("claimGuid") or (item["metadata"].get("knowledge") or {}).get("entryId") or ""
        lines.append(f"- {item['text']} [{cite}] (score {item['score']:.3f})")
    if result.get("error"):
        lines.append(f"Error: {result['error'].get('message')}")
    return "\n".join(lines)


def _arxiv_summary(result: dict[str, Any]) -> str:
    if result.get("poll"):
        return f"arXiv run {result['runId']} is {result['status']}; it is still waiting for arXiv."
    items = result.get("items") or []
    if result.get("degraded"):
        # arXiv was unreachable: the papers are the stored ones, and the reason says why.
        lines = [result.get("reason") or f"arXiv is unreachable; {len(items)} stored papers:"]
    else:
        lines = [f"{result.get('totalResults', len(items))} papers on arXiv; {len(items)} here:"]
    lines += [f"- {item['id']}: {item['title']} ({item.get('published', '')[:10]})" for item in items]
    return "\n".join(lines)


def _search_summary(result: dict[str, Any]) -> str:
    lines = [f"{len(result['results'])} knowledge entries for {result['query']!r}:"]
    lines += [f"- {hit['id']} ({hit['domain']}): {hit['topic']}" for hit in result["results"]]
    return "\n".join(lines)


def _verification_summary(result: dict[str, Any]) -> str:
    sources = ", ".join(source.get("id", "") for source in result["sources"] if source.get("id"))
    text = f"{result['verdict']} (confidence {result['confidence']:.2f}): {result['claim']}"
    if sources:
        text += f"\nSources: {sources}"
    if result.get("correction"):
        text += f"\nCorrection: {result['correction']}"
    if result.get("degraded"):  # an agent reading only the text must not take it for Wikidata's answer
        text += f"\nDegraded: {result.get('sourcesNote') or result.get('degradedReason')}"
    return text


def _grounding_summary(result: dict[str, Any]) -> str:
    return "\n".join([result["summary"], *(_verification_summary(item) for item in result["verifications"])])


def _service_map_summary(result: dict[str, Any]) -> str:
    names = [tool["name"] for connector in result["connectors"] for tool in connector.get("remoteTools", [])]
    return (
        f"Service map {result['id']} ({len(result['connectors'])} connectors, {len(names)} tools), "
        f"signed; valid {result['ttlSeconds']} s."
    )


def _tell_summary(result: dict[str, Any]) -> str:
    what = "Already remembered; reinforced" if result["status"] == "reinforced" else "Stored"
    chunks = f" in {len(result['chunks'])} chunks" if len(result["chunks"]) > 1 else ""
    text = f"{what}{chunks}: memory {result['id']}."
    if result.get("supersedes"):
        text += f" It supersedes {result['supersedes']}."
    return text


def _memory_line(memory: dict[str, Any], score: str = "") -> str:
    return f"- {memory['id']}{score}: {' '.join(memory['content'].split())[:200]}"


def _ask_summary(result: dict[str, Any]) -> str:
    answer = result["answer"]
    if result.get("reason"):
        # Said first, so an agent reading only the text does not take the nearest memories for an answer.
        lines = ["Nothing relevant remembered (no memory is about the question)."]
        if result["nearest"]:
            lines.append(f"Nearest memories, not answered from ({len(result['nearest'])}):")
            lines += [
                _memory_line(m, f" (similarity {m['scores']['semantic']:.3f})") for m in result["nearest"]
            ]
        return "\n".join(lines)
    lines = [answer["text"] or "Nothing remembered answers this."] if answer["method"] != "none" else []
    lines.append(f"{len(result['memories'])} memories:")
    lines += [_memory_line(memory, f" ({memory['relevance']:.3f})") for memory in result["memories"]]
    return "\n".join(lines)


def _memory_list_summary(result: dict[str, Any]) -> str:
    shown = len(result["memories"])
    head = f"{result['total']} memories; {shown} from offset {result['offset']}"
    # Structured content leaves nulls out: no nextOffset on the last page.
    head += f" (next page: offset {result['nextOffset']})." if result.get("nextOffset") is not None else "."
    return "\n".join([head, *(_memory_line(memory) for memory in result["memories"])])


def _memory_summary(result: dict[str, Any]) -> str:
    text = f"Memory {result['id']} (version {result['version']}"
    text += ", pinned)" if result["pinned"] else ")"
    if "changed" in result:
        text += ": " + (f"updated {', '.join(result['changed'])}" if result["changed"] else "nothing changed")
    return f"{text}:\n{result['content']}"


def _memory_history_summary(result: dict[str, Any]) -> str:
    lines = [f"Memory {result['id']}: {len(result['versions'])} versions, oldest first:"]
    lines += [
        f"- v{item['version']} ({item['validFrom']}"
        + (", current" if item["current"] else "")
        + "): "
        + " ".join(item["content"].split())[:200]
        for item in result["versions"]
    ]
    return "\n".join(lines)


def _forget_all_summary(result: dict[str, Any]) -> str:
    return f"{result['forgotten']} memories removed."


def _forget_summary(result: dict[str, Any]) -> str:
    return f"Memory {result['id']}: " + ("removed." if result["mode"] == "remove" else "faded.")


def _export_summary(result: dict[str, Any]) -> str:
    # The file itself: a client that reads only the text content still gets what it asked for.
    kind = "Turtle" if result["format"] == "turtle" else "JSON-LD"
    return f"{result['count']} memories as {kind} ({result['mediaType']}):\n\n{result['content']}"


def _plan_summary(result: dict[str, Any]) -> str:
    steps = [f"{step['order']}. {step['tool']} ({step['purpose']})" for step in result["steps"]]
    return "\n".join([f"Plan for {result['intent']}: {result['query']!r}", *steps])


def _discover_summary(result: dict[str, Any]) -> str:
    lines = [f"{result['count']} ontology classes:"]
    lines += [
        f"- {item['preferred_term']} <{item['iri']}> (relevance {item['relevance_score']}"
        + (", reached through an inferred subclass" if item["whelk_inferred"] else "")
        + ")"
        for item in result["results"]
    ]
    return "\n".join(lines)


def _read_summary(result: dict[str, Any]) -> str:
    note = result["note"]
    inferred = sum(1 for axiom in note["whelk_axioms"] if axiom["is_inferred"])
    return (
        f"{note['preferred_term']} <{note['iri']}> ({note['term_id']}): {len(note['whelk_axioms'])} axioms "
        f"({inferred} inferred), {len(note['related_notes'])} related notes.\n\n{note['schema_context']}"
    )


def _traverse_summary(result: dict[str, Any]) -> str:
    traversal = result["traversal"]
    nodes, edges = len(traversal["nodes"]), len(traversal["edges"])
    return f"From <{traversal['start_iri']}>: {nodes} classes, {edges} edges."


def _validate_summary(result: dict[str, Any]) -> str:
    head = f"{result['axiom_count']} axioms: " + ("valid." if result["valid"] else "not valid.")
    errors = [f"error: {error}" for error in result["errors"]]
    return "\n".join([head, *errors, *(f"hint: {hint}" for hint in result["hints"])])


def _ontology_query_summary(result: dict[str, Any]) -> str:
    validation, table = result["validation"], result.get("result")  # absent when refused or stopped
    lines = [f"error: {error}" for error in validation["errors"]]
    if table is not None:
        lines.append(f"{table['row_count']} rows" + (" (capped)" if table["truncated"] else "") + ":")
        lines += ["\t".join(table["columns"])]
        lines += [
            "\t".join(str(row.get(column, "")) for column in table["columns"]) for row in table["rows"][:50]
        ]
    return "\n".join([*lines, *(f"hint: {hint}" for hint in validation["hints"])])


def _ontology_propose_summary(result: dict[str, Any]) -> str:
    proposal = result["proposal"]
    consistency = proposal["consistency"]
    verdict = "consistent" if consistency["consistent"] else f"inconsistent: {consistency['explanation']}"
    return (
        f"Proposal {proposal['proposal_id']} ({proposal['action']} <{proposal['target_iri']}>) staged for "
        f"review; {verdict}; quality {proposal['quality_score']:.2f}.\n\n{proposal['markdown_preview']}"
    )


def _ontology_status_summary(result: dict[str, Any]) -> str:
    return (
        f"{result['service']} is {result['status']}: ontology version {result['ontology_version']}, "
        f"{result['class_count']} classes; tools: {', '.join(result['capabilities'])}."
    )


CORTEX_TOOLS: tuple[CortexTool, ...] = (
    CortexTool(
        name="facts.query",
        title="Ask a factual question (Wikidata, with provenance)",
        description="Answers a factual question from Wikidata statements, best first, each with its QID, "
        "statement GUID, rank, references and the SPARQL that enriched it. Waits up to waitSeconds; a run "
        "still going then is returned with its runId: poll it with facts.run.",
        input_model=FactQueryIn,
        output_model=FactRunOut,
        handler=_facts_query,
        summary=_facts_summary,
        scope=TokenScope.UPSTREAM,
        read_only=False,
        open_world=True,
        idempotent=False,
    ),
    CortexTool(
        name="facts.run",
        title="A fact run and its facts",
        description="The state of a fact run (facts.query's runId) and, once finished, its facts with "
        "provenance.",
        input_model=FactRunIn,
        output_model=FactRunOut,
        handler=_facts_run,
        summary=_facts_summary,
    ),
    CortexTool(
        name="arxiv.search",
        title="Search arXiv",
        description=arxiv_services.arxiv_tool_description(
            "searches arXiv (one request every 3 s across CortexWeb, identical searches served from "
            "stored results, stored papers when arXiv is down). Returns papers with ids, titles, summaries, "
            "authors, categories and links."
        ),
        input_model=SearchIn,
        output_model=RunOut,
        handler=_arxiv_search,
        summary=_arxiv_summary,
        scope=TokenScope.UPSTREAM,
        read_only=False,
        open_world=True,
        idempotent=False,
        connector="arxiv",
    ),
    CortexTool(
        name="arxiv.lookup",
        title="arXiv papers by id",
        description=arxiv_services.arxiv_tool_description(
            "fetches arXiv papers by id (latest version unless one is named), under arXiv's rate limit."
        ),
        input_model=LookupIn,
        output_model=RunOut,
        handler=_arxiv_lookup,
        summary=_arxiv_summary,
        scope=TokenScope.UPSTREAM,
        read_only=False,
        open_world=True,
        idempotent=False,
        connector="arxiv",
    ),
    CortexTool(
        name="knowledge.search",
        title="Search the curated knowledge base",
        description="Hybrid (semantic + full-text) search of the curated knowledge entries, optionally in "
        "one domain (security, performance, compliance, technology). Cite entries by their id.",
        input_model=KnowledgeSearchIn,
        output_model=KnowledgeSearchOut,
        handler=_knowledge_search,
        summary=_search_summary,
    ),
    CortexTool(
        name="knowledge.verify",
        title="Verify one claim",
        description="Checks one claim against the knowledge base (and Wikidata for named entities): "
        "supported, contradicted (with a correction) or unverified, with confidence and the sources it "
        "rests on. Every verification is stored for operators to review.",
        input_model=VerifyIn,
        output_model=VerificationOut,
        handler=_knowledge_verify,
        summary=_verification_summary,
        scope=TokenScope.VERIFY,
        read_only=False,
        idempotent=False,
    ),
    CortexTool(
        name="grounding.ground",
        title="Ground a whole message",
        description="Extracts the claims of a message, verifies each, and returns the verdicts, the "
        "knowledge to inject and a summary. Use it on a draft answer before sending it.",
        input_model=GroundIn,
        output_model=GroundingMessageOut,
        handler=_grounding_ground,
        summary=_grounding_summary,
        scope=TokenScope.VERIFY,
        read_only=False,
        idempotent=False,
    ),
    CortexTool(
        name="connectors.service_map",
        title="The signed service map",
        description="Every connector and its published tools with tags and scopes, signed (HMAC-SHA256 over "
        "RFC 8785 JSON). Public, like GET /v1/connectors/service-map.",
        input_model=NoArguments,
        output_model=ServiceMapOut,
        handler=_service_map,
        summary=_service_map_summary,
        scope=None,
    ),
    CortexTool(
        name="agents.plan",
        title="Plan tool steps for an intent",
        description="Ordered tool steps for a fact query or a literature search, chosen from the registry by "
        "tags and scopes.",
        input_model=PlanIn,
        output_model=PlanOut,
        handler=_agents_plan,
        summary=_plan_summary,
    ),
    CortexTool(
        name="tell",
        title="Remember something (memory tell)",
        description="Stores what you tell it in your token's memory (optionally in an agent/session "
        "namespace), with a domain, type, TTL, importance and pinning. A near-duplicate of something "
        "already remembered reinforces it instead; `supersedes` replaces an older memory and keeps it "
        "as history.",
        input_model=TellIn,
        output_model=TellOut,
        handler=_tell,
        summary=_tell_summary,
        scope=TokenScope.WRITE,
        read_only=False,
        idempotent=False,
    ),
    CortexTool(
        name="ask",
        title="Recall what matters (memory ask)",
        description="The memories relevant to a question, best first, ranked by domain match (0.35), "
        "recency (0.20), meaning (0.30) and use (0.15), each score shown, with an answer made from "
        "them that cites memory ids. Only your token's memories (and those shared in the domain), and "
        "only those about the question (semanticFloor): when none is, the answer is empty with reason "
        '"nothing relevant remembered" and the nearest memories are listed apart (nearest).',
        input_model=AskIn,
        output_model=AskOut,
        handler=_ask,
        summary=_ask_summary,
        # Asking reinforces what it returns (access counts): not read-only, but not idempotent either.
        read_only=False,
        idempotent=False,
    ),
    CortexTool(
        name="memory.forget",
        title="Forget a memory",
        description="fade: the memory decays to the floor and loses its pin (still findable, ranked "
        "last); remove: it is deleted.",
        input_model=ForgetIn,
        output_model=ForgetOut,
        handler=_memory_forget,
        summary=_forget_summary,
        scope=TokenScope.WRITE,
        read_only=False,
        idempotent=True,
    ),
    CortexTool(
        name="memory.list",
        title="List your memories",
        description="Your token's own memories, newest first, a page at a time (limit, offset; nextOffset "
        "gives the next page), filtered by domain, type, pinned, text (contained, any case), createdAfter/"
        "createdBefore, agent and session. As GET /v1/memory.",
        input_model=ListIn,
        output_model=MemoryListOut,
        handler=_memory_list,
        summary=_memory_list_summary,
    ),
    CortexTool(
        name="memory.get",
        title="One memory",
        description="One of your memories by id, with its version and supersession chain. As GET "
        "/v1/memory/{memory_id}.",
        input_model=MemoryIdIn,
        output_model=MemoryOut,
        handler=_memory_get,
        summary=_memory_summary,
    ),
    CortexTool(
        name="memory.update",
        title="Update a memory",
        description="Changes a memory's content (embedded again), metadata (replaced whole), importance or "
        "domain in place; what it said before is kept as a version (memory.history). As PATCH "
        "/v1/memory/{memory_id}.",
        input_model=MemoryUpdateToolIn,
        output_model=MemoryUpdateOut,
        handler=_memory_update,
        summary=_memory_summary,
        scope=TokenScope.WRITE,
        read_only=False,
        idempotent=True,
    ),
    CortexTool(
        name="memory.history",
        title="A memory's versions",
        description="What a memory said over time: each version an update replaced, then the current one, "
        "oldest first, with its supersession chain. As GET /v1/memory/{memory_id}/history.",
        input_model=MemoryIdIn,
        output_model=MemoryHistoryOut,
        handler=_memory_history,
        summary=_memory_history_summary,
    ),
    CortexTool(
        name="memory.pin",
        title="Pin or unpin a memory",
        description="pinned true (the default): the memory never expires; false: its TTL applies again. As "
        "POST /v1/memory/{memory_id}/pin.",
        input_model=PinToolIn,
        output_model=MemoryOut,
        handler=_memory_pin,
        summary=_memory_summary,
        scope=TokenScope.WRITE,
        read_only=False,
        idempotent=True,
    ),
    CortexTool(
        name="memory.forget_all",
        title="Forget all your memories",
        description="Removes every memory of your token (only those of agent, session or domain when given), "
        "with their versions. Cannot be undone: refused unless confirm is true. As POST "
        "/v1/memory/forget-all.",
        input_model=ForgetAllIn,
        output_model=ForgetAllOut,
        handler=_memory_forget_all,
        summary=_forget_all_summary,
        scope=TokenScope.WRITE,
        read_only=False,
        idempotent=True,
    ),
    CortexTool(
        name="memory.export",
        title="Export your memories as RDF",
        description="Your token's own memories (narrowed by agent, session and domain when given) as Turtle "
        "or JSON-LD in Semem's vocabulary (semem:Interaction, output, concepts, timestamp, accessCount, "
        "decayFactor, memoryType) with PROV-O for supersession. POST /v1/memory/import restores the file.",
        input_model=ExportIn,
        output_model=ExportOut,
        handler=_memory_export,
        summary=_export_summary,
    ),
    CortexTool(
        name="ontology_discover",
        title="Find ontology classes (ontology_discover)",
        description="Ontology classes matching a text lexically (terms, alternative terms, definitions) or "
        "by meaning (embeddings), expanded down the class hierarchy and scored. whelk_inferred marks a "
        "result reached only through a subsumption the OWL 2 RL reasoner inferred. Public, like POST "
        "/ontology-agent/discover.",
        input_model=DiscoverIn,
        output_model=DiscoverOut,
        handler=_ontology_discover,
        summary=_discover_summary,
        scope=None,
    ),
    CortexTool(
        name="ontology_read",
        title="Read an ontology class (ontology_read)",
        description="One class (full IRI or cw:Name) as an enriched note: markdown, metadata, axioms "
        "asserted and inferred (is_inferred), related notes with direction, and a schema_context for "
        "writing SPARQL. Public, like POST /ontology-agent/read.",
        input_model=ReadIn,
        output_model=ReadOut,
        handler=_ontology_read,
        summary=_read_summary,
        scope=None,
    ),
    CortexTool(
        name="ontology_query",
        title="Read-only SPARQL over the ontology (ontology_query)",
        description="Validates, then runs a SPARQL SELECT or ASK query on the ontology and its OWL 2 RL "
        "inferences (prefixes cw, prov, owl, rdfs, rdf, skos, xsd declared). Refused with errors and hints: "
        "syntax errors, updates, SERVICE, FROM, CONSTRUCT/DESCRIBE, unknown cw: names. At most 1000 rows "
        "within 5 s. Public, like POST /ontology-agent/query.",
        input_model=QueryIn,
        output_model=QueryOut,
        handler=_ontology_query,
        summary=_ontology_query_summary,
        scope=None,
    ),
    CortexTool(
        name="ontology_traverse",
        title="Walk the ontology from a class (ontology_traverse)",
        description="Breadth-first from startIri over subclass edges (both ways), disjointness and note "
        "relationships, depth 1 to 5 (default 3), optionally only relationshipTypes. Public, like POST "
        "/ontology-agent/traverse.",
        input_model=TraverseIn,
        output_model=TraverseOut,
        handler=_ontology_traverse,
        summary=_traverse_summary,
        scope=None,
    ),
    CortexTool(
        name="ontology_propose",
        title="Propose a class or an amendment for review (ontology_propose)",
        description="Stages a new class (action create) or an amendment (action amend) for an operator: "
        "checked for consistency (unknown parents, subclass cycles, disjointness, owl:Nothing) with an "
        "explanation, scored 0-1 and rendered as a note (with a diff for amend). Needs the write scope; 20 a "
        "minute per token; agent_id and user_id come from the token. As POST /ontology-agent/propose.",
        input_model=ProposeIn,
        output_model=ProposeOut,
        handler=_ontology_propose,
        summary=_ontology_propose_summary,
        scope=TokenScope.WRITE,
        read_only=False,
        idempotent=False,
    ),
    CortexTool(
        name="ontology_validate",
        title="Check candidate axioms (ontology_validate)",
        description="Checks axioms {axiom_type, subject, object} against the ontology and its OWL 2 RL "
        "closure: unknown classes, subclass cycles, disjointness contradictions are errors; valid only "
        "without errors. Public, like POST /ontology-agent/validate.",
        input_model=ValidateIn,
        output_model=ValidateOut,
        handler=_ontology_validate,
        summary=_validate_summary,
        scope=None,
    ),
    CortexTool(
        name="ontology_status",
        title="Ontology service health (ontology_status)",
        description="Health, the ontology tools offered, the ontology version, class count and graph build "
        "time. Public, like GET /ontology-agent/status.",
        input_model=NoArguments,
        output_model=StatusOut,
        handler=_ontology_status,
        summary=_ontology_status_summary,
        scope=None,
    ),
)

CORTEX_TOOLS_BY_NAME: dict[str, CortexTool] = {tool.name: tool for tool in CORTEX_TOOLS}
