"""A query template run with values is the queryset compiled with those values
(``apps/core/query_templates.py``), for every shape of memory ``ask``'s candidate query."""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime

import numpy as np
import pytest
from django.utils import timezone
from pgvector import Vector

from apps.core.query_templates import QueryTemplate
from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.memory import selectors
from apps.memory.models import Memory
from apps.memory.services import Scope, TellItem, memory_tell

pytestmark = pytest.mark.django_db

SHAPES = [
    selectors._AskShape(*flags, candidates=candidates)
    for flags in itertools.product((False, True), repeat=5)
    for candidates in (50, 250)
]


def _values(rng: np.random.Generator) -> dict[str, object]:
    vector = rng.standard_normal(EMBEDDING_DIMENSION).astype(np.float32)
    return {
        "token_id": int(rng.integers(1, 10**6)),
        "agent": f"agent-{rng.integers(100)}",
        "session": f"s-{rng.integers(100)}",
        "domain": "ops",
        "memory_type": "long_term",
        "now": timezone.now(),
        "vector": Vector(vector / np.linalg.norm(vector)).to_text(),
    }


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_shape_fills_in_to_the_freshly_compiled_query(shape: selectors._AskShape) -> None:
    rng = np.random.default_rng(hash(shape) % 2**32)
    for _ in range(3):  # the template is compiled on the first round, reused on the others
        values = _values(rng)
        fresh = selectors._ask_candidates(shape=shape, **values)
        assert selectors._ASK_CANDIDATES.sql_with_params(shape=shape, values=values) == (
            fresh.query.sql_with_params()
        )


def test_rows_are_converted_as_the_orm_converts_them(make_token) -> None:
    token, _ = make_token("read", "write")
    memory_tell(
        scope=Scope(token=token),
        items=[TellItem(content="The build farm moved to Oslo.", domain="ops", metadata={"ticket": 7})],
    )
    shape = selectors._AskShape(False, False, True, False, False, candidates=50)
    values = _values(np.random.default_rng(1)) | {"token_id": token.pk}
    rows = selectors._ASK_CANDIDATES.rows(shape=shape, values=values)
    assert rows == list(selectors._ask_candidates(shape=shape, **values))
    metadata = rows[0][selectors._ROW_FIELDS.index("metadata")]
    assert metadata == {"ticket": 7} and isinstance(rows[0][0], uuid.UUID)


def test_a_value_changed_on_its_way_is_refused() -> None:
    template = QueryTemplate(
        lambda *, shape, text: Memory.objects.filter(content__icontains=text).values_list("id"),
        kinds={"text": str},
    )
    with pytest.raises(ValueError, match="changed on its way"):
        template.sql_with_params(shape=None, values={"text": "x"})


def test_only_database_types_are_accepted() -> None:
    with pytest.raises(TypeError):
        QueryTemplate(lambda *, shape, when: Memory.objects.values_list("id"), kinds={"when": datetime.date})
