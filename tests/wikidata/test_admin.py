"""The Wikidata admin: runs and facts are read-only provenance with filters and search; superusers
may delete runs; "Re-run the selected runs" queues new runs through the service."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.test import Client

from apps.wikidata import tasks
from apps.wikidata.models import Fact, FactRun, FactRunStatus

pytestmark = pytest.mark.django_db

RUNS = "/admin/wikidata/factrun/"
FACTS = "/admin/wikidata/fact/"


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.fixture
def runs() -> dict[str, FactRun]:
    done = FactRun.objects.create(
        question="When was <em>Douglas Adams</em> born?",
        scope="facts",
        top_k=3,
        include_sparql=False,
        status=FactRunStatus.SUCCEEDED,
        plan={
            "intent": "fact_query",
            "scope": "facts",
            "steps": [{"order": 1, "tool": "wikidata.vector_search_items"}],
        },
        steps=[{"name": "search", "status": "ok", "durationMs": 12.5}],
        duration_ms=1834.5,
        correlation_id="corr-done",
    )
    degraded = FactRun.objects.create(
        question="Where was Ada Lovelace born?",
        scope="facts",
        status=FactRunStatus.SUCCEEDED,
        degraded=True,
        degraded_reason="Wikidata search failed: HTTP 503",
        correlation_id="corr-degraded",
    )
    failed = FactRun.objects.create(
        question="Which properties describe birth?",
        scope="properties",
        status=FactRunStatus.FAILED,
        error="boom <b>bad</b>",
        error_type="internal",
        correlation_id="corr-failed",
    )
    return {"done": done, "degraded": degraded, "failed": failed}


@pytest.fixture
def fact(runs: dict[str, FactRun]) -> Fact:
    return Fact.objects.create(
        run=runs["done"],
        position=1,
        text="Douglas Adams — date of birth — 1952-03-11",
        score=0.8123,
        qid="Q42",
        qid_label="Douglas Adams",
        pid="P569",
        pid_label="date of birth",
        datatype="time",
        value={"type": "time", "time": "+1952-03-11T00:00:00Z"},
        value_text="1952-03-11",
        claim_guid="Q42$D8404CDA-25E4-4334-AF13-A3290BCD9C0F",
        rank="normal",
        references=[{"hash": "r1", "snaks": [], "snaksOrder": []}],
        sparql="SELECT ?v WHERE { wd:Q42 wdt:P569 ?v }",
        endpoint="https://www.wikidata.org/w/api.php",
        retrieved_at=datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
    )


@pytest.fixture
def viewer() -> Client:
    """A staff member with only the view permissions (what an analyst would get)."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=["view_factrun", "view_fact"]))
    client = Client()
    client.force_login(user)
    return client


def _listed_runs(response) -> list[str]:
    return [run.question for run in response.context["cl"].result_list]


def test_run_changelist_shows_columns_and_filters(admin_client: Client, runs: dict, fact: Fact) -> None:
    response = admin_client.get(RUNS)
    assert response.status_code == 200
    content = response.content.decode()
    for column in ("question_short", "status", "degraded_flag", "scope", "created_at", "duration_ms"):
        assert re.search(rf'<th scope="col" class="(sortable )?column-{column}[ "]', content)
    assert "3 fact runs" in content
    assert "When was &lt;em&gt;Douglas Adams&lt;/em&gt; born?" in content
    assert '<td class="field-duration_ms">1834.5</td>' in content
    assert 'href="/admin/wikidata/factrun/add/"' not in content
    assert '<option value="rerun">Re-run the selected runs</option>' in content

    assert _listed_runs(admin_client.get(RUNS, {"status__exact": "failed"})) == [
        "Which properties describe birth?"
    ]
    assert _listed_runs(admin_client.get(RUNS, {"degraded__exact": "1"})) == ["Where was Ada Lovelace born?"]
    assert _listed_runs(admin_client.get(RUNS, {"scope": "properties"})) == [
        "Which properties describe birth?"
    ]


def test_run_search_by_question_correlation_id_or_run_id(admin_client: Client, runs: dict) -> None:
    assert _listed_runs(admin_client.get(RUNS, {"q": "lovelace"})) == ["Where was Ada Lovelace born?"]
    assert _listed_runs(admin_client.get(RUNS, {"q": "corr-failed"})) == ["Which properties describe birth?"]
    assert _listed_runs(admin_client.get(RUNS, {"q": str(runs["done"].pk)})) == [runs["done"].question]
    assert _listed_runs(admin_client.get(RUNS, {"q": "corr"})) == []  # correlation ids match exactly


def test_run_detail_is_read_only_with_plan_steps_and_facts(
    admin_client: Client, runs: dict, fact: Fact
) -> None:
    done = runs["done"]
    response = admin_client.get(f"{RUNS}{done.pk}/change/")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'name="_save"' not in content
    assert "&quot;tool&quot;: &quot;wikidata.vector_search_items&quot;" in content  # plan, pretty JSON
    assert "&quot;durationMs&quot;: 12.5" in content  # steps
    assert f'<a href="/facts/runs/{done.pk}">/facts/runs/{done.pk}</a>' in content
    # The facts inline, read-only, each linking to its admin page.
    assert re.findall(r'<td class="field-text">\s*<p>([^<]+)</p>', content) == [
        "Douglas Adams — date of birth — 1952-03-11"
    ]
    assert f'<a href="/admin/wikidata/fact/{fact.pk}/change/">{fact.pk}</a>' in content

    content = admin_client.get(f"{RUNS}{runs['failed'].pk}/change/").content.decode()
    assert "boom &lt;b&gt;bad&lt;/b&gt;" in content

    assert admin_client.get(f"{RUNS}add/").status_code == 403
    assert admin_client.post(f"{RUNS}{done.pk}/change/", {"question": "x"}).status_code == 403
    done.refresh_from_db()
    assert done.question == "When was <em>Douglas Adams</em> born?"


def test_superusers_may_delete_runs_and_their_facts_go_too(
    admin_client: Client, runs: dict, fact: Fact
) -> None:
    done = runs["done"]
    assert admin_client.get(f"{RUNS}{done.pk}/delete/").status_code == 200
    response = admin_client.post(f"{RUNS}{done.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not FactRun.objects.filter(pk=done.pk).exists()
    assert not Fact.objects.filter(pk=fact.pk).exists()


def test_staff_with_view_permission_can_read_but_not_delete_or_rerun(
    viewer: Client, runs: dict, fact: Fact
) -> None:
    content = viewer.get(RUNS).content.decode()
    assert "3 fact runs" in content
    assert "Re-run the selected runs" not in content
    assert viewer.get(f"{RUNS}{runs['done'].pk}/change/").status_code == 200
    assert viewer.get(f"{FACTS}{fact.pk}/change/").status_code == 200
    assert viewer.post(f"{RUNS}{runs['done'].pk}/delete/", {"post": "yes"}).status_code == 403
    assert FactRun.objects.count() == 3


def test_rerun_action_queues_new_runs_linked_to_the_old_ones(
    admin_client: Client, wikidata_registry: None, runs: dict, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    enqueued: list[str] = []
    monkeypatch.setattr(tasks.fact_run_execute_task, "delay", enqueued.append)
    done, failed = runs["done"], runs["failed"]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            RUNS, {"action": "rerun", "_selected_action": [str(done.pk), str(failed.pk)]}
        )
    assert response.status_code == 302
    assert _messages(response) == ["Queued 2 new run(s)."]
    again = FactRun.objects.get(rerun_of=done)
    assert (again.question, again.scope, again.top_k, again.include_sparql, again.status) == (
        "When was <em>Douglas Adams</em> born?",
        "facts",
        3,
        False,
        FactRunStatus.QUEUED,
    )
    assert FactRun.objects.get(rerun_of=failed).scope == "properties"
    assert sorted(enqueued) == sorted(
        str(pk) for pk in FactRun.objects.filter(rerun_of__isnull=False).values_list("pk", flat=True)
    )

    content = admin_client.get(f"{RUNS}{again.pk}/change/").content.decode()
    assert f'<a href="/admin/wikidata/factrun/{done.pk}/change/">{done.pk}</a>' in content


def test_rerun_reports_a_question_that_cannot_be_planned(admin_client: Client, runs: dict) -> None:
    # No connector registered: the planner finds no tool, the action says so and queues nothing.
    response = admin_client.post(RUNS, {"action": "rerun", "_selected_action": [str(runs["done"].pk)]})
    assert response.status_code == 302
    [message] = _messages(response)
    assert message.startswith("When was <em>Douglas Adams</em> born?: Cannot plan this step")
    assert FactRun.objects.count() == 3


def test_fact_changelist_and_detail(admin_client: Client, fact: Fact) -> None:
    response = admin_client.get(FACTS)
    assert response.status_code == 200
    content = response.content.decode()
    for column in ("text_short", "qid", "pid", "rank", "score", "run_link"):
        assert re.search(rf'<th scope="col" class="(sortable )?column-{column}[ "]', content)
    assert "1 fact" in content
    assert 'href="/admin/wikidata/fact/add/"' not in content
    assert "1 fact" in admin_client.get(FACTS, {"q": "Q42"}).content.decode()
    assert "0 facts" in admin_client.get(FACTS, {"q": "Q4"}).content.decode()  # ids match exactly
    assert "1 fact" in admin_client.get(FACTS, {"q": fact.claim_guid}).content.decode()
    assert "1 fact" in admin_client.get(FACTS, {"q": "date of birth"}).content.decode()
    assert "0 facts" in admin_client.get(FACTS, {"rank__exact": "preferred"}).content.decode()
    assert "1 fact" in admin_client.get(FACTS, {"datatype__exact": "time"}).content.decode()

    response = admin_client.get(f"{FACTS}{fact.pk}/change/")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'name="_save"' not in content
    assert "&quot;time&quot;: &quot;+1952-03-11T00:00:00Z&quot;" in content
    assert f'<a href="/facts/{fact.pk}">/facts/{fact.pk}</a>' in content
    assert f'<a href="/admin/wikidata/factrun/{fact.run_id}/change/">' in content
    assert "embedding" not in content
    assert admin_client.post(f"{FACTS}{fact.pk}/delete/", {"post": "yes"}).status_code == 403


def test_anonymous_is_sent_to_login(client: Client) -> None:
    response = client.get(RUNS)
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/wikidata/factrun/"
