"""The console (issue 16, item 6): one log format per stream, Python warnings as one line (known
third-party ones once, in a sentence), /readyz's 503 not an error, and the human-readable
``embedded status`` and ``tokens create`` with ``--json`` for scripts."""

from __future__ import annotations

import io
import json
import logging
import os

import pytest
from django.core.management import call_command
from django.test import Client

from apps.core import logging as core_logging
from apps.core.logging import ConsoleHandler, json_formatter, readable_line
from apps.core.models import ApiToken


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("apps.test", logging.WARNING, __file__, 1, message, args, None)


def test_readable_line_puts_time_level_event_fields_and_the_logger_of_a_warning() -> None:
    record = {
        "event": "api_token.created",
        "level": "info",
        "logger": "apps.core.services",
        "timestamp": "2026-11-24T06:08:26.570496Z",
        "brand": "brAInwav",
        "token_id": 1,
        "scopes": ["read", "verify"],
    }
    assert readable_line(record) == "06:08:26 info    api_token.created token_id=1 scopes=read,verify"
    warning = {**record, "event": "two\nlines", "level": "warning", "scopes": {"a": 1}}
    assert readable_line(warning) == (
        '06:08:26 warning two lines token_id=1 scopes={"a": 1}  [apps.core.services]'
    )


def test_console_handler_writes_json_to_a_pipe_and_readable_lines_to_a_terminal() -> None:
    for stream, is_json in ((io.StringIO(), True), (_Terminal(), False)):
        handler = ConsoleHandler(stream)
        handler.setFormatter(json_formatter())
        handler.emit(_record("cache %s", "cold"))
        [line] = stream.getvalue().splitlines()
        if is_json:
            assert json.loads(line) | {"timestamp": "t"} == {
                "event": "cache cold",
                "level": "warning",
                "logger": "apps.test",
                "timestamp": "t",
                "brand": "brAInwav",
            }
        else:
            assert line.endswith(" warning cache cold  [apps.test]") and line[2] == ":"


def test_known_third_party_warning_is_one_sentence_once_and_others_one_line(caplog, monkeypatch) -> None:
    monkeypatch.setattr(core_logging, "_known_warnings_logged", set())
    security_warning = type("SecurityWarning", (UserWarning,), {})
    celery_text = (
        "You're running the worker with superuser privileges: this is\nabsolutely not recommended!\n\n"
        "Please specify a different user using the --uid option.\n"
    )
    platforms = "/venv/lib/python3.11/site-packages/celery/platforms.py"
    with caplog.at_level(logging.WARNING, logger="py.warnings"):
        core_logging._log_warning(security_warning(celery_text), security_warning, platforms, 893)
        core_logging._log_warning(security_warning(celery_text), security_warning, platforms, 893)
        core_logging._log_warning(DeprecationWarning("old\n  api"), DeprecationWarning, "/x/lib.py", 7)
    assert [record.getMessage() for record in caplog.records] == [
        core_logging.KNOWN_WARNINGS[0].text,
        "DeprecationWarning: old api (/x/lib.py:7)",
    ]
    assert "\n" not in core_logging.KNOWN_WARNINGS[0].text


@pytest.mark.django_db
def test_readyz_not_ready_is_logged_as_information_not_as_an_error(caplog, monkeypatch) -> None:
    from apps.core import views

    monkeypatch.setattr(views, "readiness", lambda: {"celery": {"ok": False, "error": "no worker"}})
    with caplog.at_level(logging.INFO):
        response = Client().get("/readyz")
    assert response.status_code == 503
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []
    [logged] = [record for record in caplog.records if record.name == "apps.core.views"]
    assert logged.levelno == logging.INFO and logged.msg["event"] == "readyz.not_ready"
    assert logged.msg["failed"] == ["celery"]


def test_embedded_status_is_readable_and_json_on_request() -> None:
    out = io.StringIO()
    call_command("embedded", "status", stdout=out)
    text = out.getvalue().splitlines()
    assert text[0].startswith("Embedded servers of ")
    assert text[1].startswith("  Postgres  running, pid ") and text[2].startswith("  Redis     running, pid ")
    assert f"{os.getpid():>7}  this command" in out.getvalue()

    out = io.StringIO()
    call_command("embedded", "status", "--json", stdout=out)
    status = json.loads(out.getvalue())
    assert list(status) == ["data_dir", "postgres_pid", "redis_pid", "redis_port", "leases"]
    assert os.getpid() in status["leases"]


@pytest.mark.django_db
def test_tokens_create_prints_its_message_then_the_token_and_no_log_line(capfd) -> None:
    handler = ConsoleHandler(io.StringIO())
    handler.setFormatter(json_formatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        stdout, stderr = io.StringIO(), io.StringIO()
        call_command("tokens", "create", "--name", "quiet", stdout=stdout, stderr=stderr)
    finally:
        root.removeHandler(handler)
    token = ApiToken.objects.get(name="quiet")
    assert handler.stream.getvalue() == ""  # the api_token.created line is not on the console
    assert stderr.getvalue().startswith(f"Created token {token.pk} 'quiet' with scopes read.")
    assert stdout.getvalue().strip().startswith("cwt_")


@pytest.mark.django_db
def test_tokens_create_json() -> None:
    stdout = io.StringIO()
    call_command("tokens", "create", "--name", "script", "--scopes", "read,verify", "--json", stdout=stdout)
    created = json.loads(stdout.getvalue())
    token = ApiToken.objects.get(name="script")
    assert created == {
        "id": token.pk,
        "name": "script",
        "scopes": ["read", "verify"],
        "expiresAt": None,
        "token": created["token"],
    }
    assert created["token"].startswith(token.prefix)
