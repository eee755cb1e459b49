"""The fact workflow's own cost per question (issue target: < 100 ms for topK 5 on this machine).

The three Wikidata upstreams are a local replay (``tests/wikidata/replay_server.py``) that answers
from the recorded responses at once, so what is timed is CortexWeb: planning, the limiter, HTTP
on loopback, parsing ~330 statements of Q42, labels in batches, embedding and ranking, the SPARQL
read-only check, and the writes. Runs execute in this process (no Celery hop) inside a rolled-back
transaction. Figures: whole run and each step, first with an empty embedding cache (every statement
text embedded) and then warm (statement texts already embedded by an earlier question).
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict

from django.db import transaction
from django.test import override_settings

import apps.embeddings.services as embedding_services
from apps.connectors.services import manifest_import, registry_changed
from apps.core.redis import get_redis
from apps.wikidata import action_api, clients, labels, services, sparql, vectordb
from bench import timed
from tests.wikidata.conftest import DEFAULT_MANIFEST_PATH
from tests.wikidata.replay_server import ReplayWikidata, Reply

QUESTIONS = (
    "What is Douglas Adams an instance of?",
    "When was Douglas Adams born?",
    "Where was Douglas Adams born?",
    "What was the occupation of Douglas Adams?",
    "Which school did Douglas Adams attend?",
)
Q42_HIT = [{"QID": "Q42", "similarity_score": 0.87, "rrf_score": 0.02, "source": "Vector Search"}]


class _Rollback(Exception):
    pass


def run(report) -> None:

    replay = ReplayWikidata().start()
    # Constructed vector answer (no recording holds Q42): the entity whose recorded statements are ranked.
    replay.default_vector = Reply(body=Q42_HIT)
    namespace = uuid.uuid4().hex[:8]
    # The bench's caches live under their own keys: the replay knows few labels, and the product's
    # Redis must not keep "no label" for real properties.
    original_key, original_label_key = embedding_services._cache_key, labels.label_cache_key
    embedding_services._cache_key = lambda model, text: f"bench-{namespace}:" + original_key(model, text)
    labels.label_cache_key = lambda language, entity_id: (
        f"bench-{namespace}:" + original_label_key(language, entity_id)
    )
    overrides = override_settings(
        CORTEX_OUTBOUND_ALLOW_NETWORKS=["127.0.0.0/8"],  # the replay listens on loopback
        WIKIDATA_API_URL=replay.api_url,
        WIKIDATA_SPARQL_URL=replay.sparql_url,
        WIKIDATA_VECTOR_URL=replay.vector_url,
        WIKIDATA_API_INTERVAL_SECONDS=1e-6,
        WIKIDATA_API_BURST=1_000_000,
        WIKIDATA_VECTOR_INTERVAL_SECONDS=1e-6,
        WIKIDATA_VECTOR_BURST=1_000_000,
        WIKIDATA_SPARQL_INTERVAL_SECONDS=1e-6,
        WIKIDATA_SPARQL_BURST=1_000_000,
    )
    steps: dict[str, list[float]] = defaultdict(list)

    def one(question: str) -> None:
        run_ = services.fact_query_submit(query=question, top_k=5)
        run_ = services.fact_run_execute(run_id=str(run_.pk))
        assert run_.facts.count() == 5 and not run_.degraded, run_.steps
        for step in run_.steps:
            steps[step["name"]].append(step["durationMs"] / 1000)

    try:
        with overrides, transaction.atomic():
            for upstream in (action_api.UPSTREAM, vectordb.UPSTREAM, sparql.UPSTREAM):
                clients.upstream_limiter(upstream).reset()
            manifest_import(data=json.loads(DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8")), actor="bench")
            started = time.perf_counter()
            one(QUESTIONS[0])
            cold = time.perf_counter() - started
            report("facts.run_cold_embedding_cache(topK 5, 332 statements)", [cold])
            steps.clear()
            samples = []
            for _ in range(4):
                for question in QUESTIONS:
                    samples.extend(timed(lambda question=question: one(question), 1))
            report("facts.run_warm(topK 5)", samples)
            for name, values in steps.items():
                report(f"facts.step.{name}", values)
            raise _Rollback
    except _Rollback:
        pass
    finally:
        embedding_services._cache_key, labels.label_cache_key = original_key, original_label_key
        keys = list(get_redis().scan_iter(f"bench-{namespace}:*"))
        if keys:
            get_redis().delete(*keys)
        registry_changed()
        replay.stop()
