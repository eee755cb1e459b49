"""docker-compose.yml declares what tests/deploy runs: the same hosts, commands, settings and balancer."""

from __future__ import annotations

import ipaddress
import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from tests.deploy.cluster import (
    BEAT_COMMAND,
    HAPROXY_CONFIG,
    MIGRATE_COMMANDS,
    ROOT,
    TEST_ONLY_SETTINGS,
    WEB_COMMAND,
    WORKER_COMMAND,
    Cluster,
)

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE["services"]
DOCS = ROOT / "docs" / "deployment.md"


def test_the_hosts_are_the_deployment_tests_hosts() -> None:
    # The test's hosts, plus the one-off job and beat (which the test runs on web1 and work1);
    # its replay host stands in for the internet and has no service here.
    assert set(SERVICES) == {"db", "cache", "migrate", "web1", "web2", "lb", "work1", "work2", "beat"}


def test_each_role_runs_the_tests_command() -> None:
    assert SERVICES["web1"]["command"] == SERVICES["web2"]["command"] == WEB_COMMAND
    for host in ("work1", "work2"):
        assert SERVICES[host]["command"] == [*WORKER_COMMAND, "--hostname", f"worker@{host}"]
    assert SERVICES["beat"]["command"] == BEAT_COMMAND
    job = " && ".join(shlex.join(["python", *command]) for command in MIGRATE_COMMANDS)
    assert SERVICES["migrate"]["command"] == ["sh", "-c", job]


def test_workers_consume_every_queue_the_tasks_are_routed_to() -> None:
    queues = WORKER_COMMAND[WORKER_COMMAND.index("--queues") + 1].split(",")
    assert queues == settings.CELERY_WORKER_QUEUES


def test_every_app_host_gets_the_tests_settings() -> None:
    environment_keys = set(_app_environment_keys())
    for name in ("migrate", "web1", "web2", "work1", "work2", "beat"):
        assert set(SERVICES[name]["environment"]) == environment_keys, name


def _app_environment_keys() -> list[str]:
    cluster = Cluster.__new__(Cluster)  # no network: only the environment it would give a host
    cluster.subnet = ipaddress.ip_network("10.0.0.0/24")
    cluster.workdir = Path("/nonexistent")
    cluster.db_password = cluster.redis_password = cluster.secret_key = cluster.signing_key = "x"
    cluster.arxiv_interval = 0.5
    return sorted(set(cluster.app_environment("web1")) - TEST_ONLY_SETTINGS)


def test_the_balancer_is_the_tests_haproxy_configuration() -> None:
    assert SERVICES["lb"]["volumes"] == [
        f"./{HAPROXY_CONFIG.relative_to(ROOT)}:/usr/local/etc/haproxy/haproxy.cfg:ro"
    ]
    config = HAPROXY_CONFIG.read_text(encoding="utf-8")
    assert "option httpchk" in config and "uri /readyz" in config
    assert "server web1 web1:8000 check" in config and "server web2 web2:8000 check" in config


def test_docs_deployment_lists_every_environment_variable_the_settings_read() -> None:
    source = (ROOT / "cortexweb" / "settings.py").read_text(encoding="utf-8")
    read = set(re.findall(r'(?:env(?:\.[a-z]+)?|_secret)\(\s*"([A-Z][A-Z_0-9]+)"', source))
    documented = set(
        re.findall(r"^\| `([A-Z][A-Z_0-9]+)` \|", DOCS.read_text(encoding="utf-8"), re.MULTILINE)
    )
    assert len(read) > 100
    assert sorted(read - documented) == [], "add these to docs/deployment.md's table"
    assert sorted(documented - read) == [], "docs/deployment.md lists variables the settings no longer read"
