"""Seed 001's verification log file (``logs/grounding-verifications.jsonl``) and its verb
``manage.py knowledge verify`` (issue #25 item 5)."""

from __future__ import annotations

import json
import multiprocessing
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import Client

from apps.grounding import services
from apps.grounding.models import Verification
from apps.grounding.verification_log import verification_log_append
from tests.grounding import test_verify

pytestmark = pytest.mark.django_db

# The knowledge pack and calibration table of the verification tests.
pack = test_verify.pack
earned = test_verify.earned


@pytest.fixture
def log_file(settings, tmp_path: Path) -> Path:
    path = tmp_path / "logs" / "grounding-verifications.jsonl"
    settings.GROUNDING_VERIFICATION_LOG = str(path)
    return path


def test_default_file_is_the_seeds_name_in_the_data_dir(settings) -> None:
    expected = settings.CORTEX_DATA_DIR / "logs" / "grounding-verifications.jsonl"
    log = settings.GROUNDING_VERIFICATION_LOG
    assert log == str(expected)


def test_a_rest_verification_is_one_line_equal_to_its_export_line(
    pack: None, log_file: Path, verify_client: Client, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = verify_client.post(
            "/v1/knowledge/verify",
            {"claim": "Passwords should be stored using MD5."},
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    lines = log_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    assert lines == list(services.verification_log_lines())
    record = json.loads(lines[0])
    verification = Verification.objects.get()
    assert record["claim"] == "Passwords should be stored using MD5."
    assert (record["verdict"], record["domain"]) == (verification.verdict, "security")
    assert record["verdict"] == response.json()["verdict"]
    assert record["createdAt"] == verification.created_at.isoformat()
    assert (record["reviewer"], record["reviewedAt"], record["messageId"]) == (None, None, None)
    assert record["reviewStatus"] == verification.review_status
    assert record["latencyMs"] == verification.latency_ms


def test_a_rolled_back_verification_writes_no_line(
    pack: None, log_file: Path, django_capture_on_commit_callbacks
) -> None:
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        services.claim_verify(claim="Passwords should be stored using MD5.")
        raise RuntimeError("roll back")
    assert callbacks == [] and not log_file.exists()
    assert Verification.objects.count() == 0


def test_an_empty_setting_turns_the_file_off(
    pack: None, settings, tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    settings.GROUNDING_VERIFICATION_LOG = ""
    with django_capture_on_commit_callbacks(execute=True):
        services.claim_verify(claim="Passwords should be stored using MD5.")
    assert Verification.objects.count() == 1
    assert list(tmp_path.rglob("*.jsonl")) == []


def test_rotation_keeps_the_newest_lines_in_n_files(log_file: Path, settings) -> None:
    settings.GROUNDING_VERIFICATION_LOG_MAX_BYTES = 25  # two 10-byte lines fit, a third does not
    settings.GROUNDING_VERIFICATION_LOG_BACKUPS = 2
    for number in range(1, 8):
        verification_log_append(f'{{"n": {number:03d}}}')  # 10 bytes with its newline
    assert log_file.read_text() == '{"n": 007}\n'
    assert Path(f"{log_file}.1").read_text() == '{"n": 005}\n{"n": 006}\n'
    assert Path(f"{log_file}.2").read_text() == '{"n": 003}\n{"n": 004}\n'
    assert not Path(f"{log_file}.3").exists()


def _append_many(worker: int) -> None:
    for number in range(100):
        verification_log_append(json.dumps({"worker": worker, "n": number, "pad": "x" * 40}))


def test_several_processes_rotate_without_losing_or_splitting_a_line(log_file: Path, settings) -> None:
    settings.GROUNDING_VERIFICATION_LOG_MAX_BYTES = 2_000
    settings.GROUNDING_VERIFICATION_LOG_BACKUPS = 100
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_append_many, args=(worker,)) for worker in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    files = [log_file, *sorted(log_file.parent.glob("*.jsonl.*[0-9]"))]
    records = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    assert sorted((record["worker"], record["n"]) for record in records) == [
        (worker, number) for worker in range(4) for number in range(100)
    ]
    assert len(files) > 10 and all(path.stat().st_size <= 2_000 for path in files)


def test_knowledge_verify_is_grounding_verify(pack: None, earned: None, log_file: Path) -> None:
    outputs = []
    for command in ("knowledge", "grounding"):
        out = StringIO()
        call_command(command, "verify", "Passwords should be stored using MD5.", stdout=out)
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1] and outputs[0].startswith("verdict: contradicted")
    out = StringIO()
    call_command(
        "knowledge", "verify", "Binary search is O(log n).", "--domain", "performance", "--json", stdout=out
    )
    result = json.loads(out.getvalue())
    assert (result["claim"], result["domain"]) == ("Binary search is O(log n).", "performance")
    assert Verification.objects.count() == 3
