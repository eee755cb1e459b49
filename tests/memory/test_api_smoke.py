"""Tell and ask over /v1/memory/: the seed's flow, end to end through the real embedding model."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(make_token) -> Client:
    _, raw = make_token("read", "write", name="agent")
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_tell_then_ask_returns_the_told_fact_first(agent: Client) -> None:
    told = agent.post(
        "/v1/memory/tell",
        {"content": "The staging database runs on Postgres 16 in Frankfurt.", "domain": "infra"},
        content_type="application/json",
    )
    assert told.status_code == 200, told.content
    agent.post(
        "/v1/memory/tell",
        {"content": "Alice prefers window seats on long flights.", "domain": "travel"},
        content_type="application/json",
    )
    asked = agent.post(
        "/v1/memory/ask",
        {"question": "Where does the staging database run?"},
        content_type="application/json",
    )
    assert asked.status_code == 200, asked.content
    body = asked.json()
    assert body["memories"][0]["id"] == told.json()["id"]
    assert set(body["memories"][0]["scores"]) == {"domain", "temporal", "semantic", "frequency"}
    assert body["answer"]["method"] == "extractive"
    assert "Frankfurt" in body["answer"]["text"]
