"""deploy/prometheus/alerts.yml: each rule fires on series recorded from the app's real /metrics.

Each test puts CortexWeb in the rule's condition the way it happens (failing upstream requests, a
verification left waiting, a silent worker, limiter refusals, a full disk), scrapes /metrics as
Prometheus would (one scrape per minute of recorded time) and evaluates the rule over those series,
``for:`` included, with the small PromQL evaluator below (the subset the rules use). When
``promtool`` is on PATH (Debian's ``prometheus`` package) the same series are also run through
``promtool test rules``; the Python evaluation runs either way.
"""

from __future__ import annotations

import itertools
import math
import re
import shutil
import subprocess
import time
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.connectors import health
from apps.core.errors import RateLimited, UpstreamError
from apps.core.redis import get_redis
from apps.core.services import upstream_request_recorded
from apps.dashboard import alerts
from apps.grounding.models import Verdict, Verification

RULES_PATH = Path(settings.BASE_DIR) / "deploy" / "prometheus" / "alerts.yml"
SCRAPE_INTERVAL = 60  # seconds between the recorded scrapes
LOOKBACK = 300  # Prometheus's instant-vector lookback

Labels = frozenset  # of (name, value) pairs, without __name__


def rules() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(RULES_PATH.read_text(encoding="utf-8"))
    return {rule["alert"]: rule for group in document["groups"] for rule in group["rules"]}


def rule_metrics() -> frozenset[str]:
    """The metrics the rules read: the evaluator and promtool are given their series only."""
    return frozenset(
        name for rule in rules().values() for name in re.findall(r"\b(cortex_[a-z_]+)\b", rule["expr"])
    )


def _lines_about(text: str, names: frozenset[str]) -> str:
    """The lines of an exposition text about ``names`` (a counter's family and samples end in
    ``_total``). Parsing every line would cost more than the scrape: a test session's /metrics holds
    the histogram buckets of every route it served."""
    kept = []
    for line in text.splitlines():
        words = line.split(maxsplit=3)
        if not words:
            continue
        name = words[2] if words[0] == "#" and len(words) > 2 else re.split(r"[{ ]", line, maxsplit=1)[0]
        if name in names or f"{name}_total" in names:
            kept.append(line)
    return "\n".join(kept) + "\n"


# --- Recording ------------------------------------------------------------------------------------


@dataclass
class Recording:
    """Scrapes of /metrics, the i-th stamped at i minutes: series name → labels → [(t, value)]."""

    texts: list[str] = field(default_factory=list)
    series: dict[str, dict[Labels, list[tuple[float, float]]]] = field(default_factory=dict)

    def scrape(self, client: Client | None = None) -> str:
        response = (client or Client()).get("/metrics")
        assert response.status_code == 200
        text = response.content.decode()
        t = len(self.texts) * SCRAPE_INTERVAL
        self.texts.append(text)
        for family in text_string_to_metric_families(_lines_about(text, rule_metrics())):
            for sample in family.samples:
                labels = Labels(sample.labels.items())
                self.series.setdefault(sample.name, {}).setdefault(labels, []).append((t, sample.value))
        return text

    @property
    def end(self) -> float:
        return (len(self.texts) - 1) * SCRAPE_INTERVAL


# --- A PromQL subset: selectors, rate/increase, sum/max/min by, arithmetic, comparisons, and ------


Token = namedtuple("Token", "kind text")
_TOKENS = re.compile(
    r"\s*(?:(?P<number>\d+(?:\.\d+)?(?:e[+-]?\d+)?)|(?P<duration>\[\d+[smh]\])|"
    r"(?P<string>\"[^\"]*\")|(?P<op>==|!=|>=|<=|=~|!~|[-+*/(){}<>=,])|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*))"
)
COMPARISONS = {
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
ARITHMETIC = {"/": lambda a, b: a / b if b else math.nan, "*": lambda a, b: a * b,
              "+": lambda a, b: a + b, "-": lambda a, b: a - b}  # fmt: skip


def tokenize(expr: str) -> list[Token]:
    tokens, position = [], 0
    expr = expr.strip()
    while position < len(expr):
        match = _TOKENS.match(expr, position)
        assert match and match.end() > position, f"cannot read {expr[position:]!r}"
        kind = match.lastgroup
        tokens.append(Token(kind, match.group(kind)))
        position = match.end()
    return tokens


class Evaluator:
    """Evaluates one expression at time ``t`` over a recording: a vector is {labels: value}."""

    def __init__(self, expr: str, recording: Recording) -> None:
        self.tokens = tokenize(expr)
        self.recording = recording

    def at(self, t: float) -> dict[Labels, float] | float:
        self.position, self.t = 0, t
        value = self._and()
        assert self.position == len(self.tokens), f"unread: {self.tokens[self.position :]}"
        return value

    def _peek(self) -> Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self, text: str | None = None) -> Token:
        token = self.tokens[self.position]
        assert text is None or token.text == text, f"expected {text!r}, found {token.text!r}"
        self.position += 1
        return token

    def _and(self) -> Any:
        left = self._comparison()
        while (token := self._peek()) and token.text == "and":
            self._take()
            right = self._comparison()
            left = {labels: value for labels, value in left.items() if labels in right}
        return left

    def _comparison(self) -> Any:
        left = self._additive()
        token = self._peek()
        if token and token.text in COMPARISONS:
            self._take()
            right = self._additive()
            return self._binary(left, right, COMPARISONS[token.text], filtering=True)
        return left

    def _additive(self) -> Any:
        left = self._multiplicative()
        while (token := self._peek()) and token.text in "+-" and token.kind == "op":
            self._take()
            left = self._binary(left, self._multiplicative(), ARITHMETIC[token.text])
        return left

    def _multiplicative(self) -> Any:
        left = self._unary()
        while (token := self._peek()) and token.text in "*/" and token.kind == "op":
            self._take()
            left = self._binary(left, self._unary(), ARITHMETIC[token.text])
        return left

    @staticmethod
    def _binary(left: Any, right: Any, op: Any, *, filtering: bool = False) -> Any:
        if isinstance(left, float) and isinstance(right, float):
            return float(op(left, right))
        if isinstance(right, float):
            if filtering:
                return {labels: value for labels, value in left.items() if op(value, right)}
            return {labels: op(value, right) for labels, value in left.items()}
        if isinstance(left, float):
            return {labels: op(left, value) for labels, value in right.items()}
        # One-to-one matching on identical label sets; a comparison keeps the left value.
        if filtering:
            return {
                labels: value
                for labels, value in left.items()
                if labels in right and op(value, right[labels])
            }
        return {labels: op(value, right[labels]) for labels, value in left.items() if labels in right}

    def _unary(self) -> Any:
        token = self._take()
        if token.kind == "number":
            return float(token.text)
        if token.text == "(":
            value = self._and()
            self._take(")")
            return value
        if token.text in ("sum", "max", "min"):
            return self._aggregate(token.text)
        if token.text in ("rate", "increase"):
            self._take("(")
            name, matchers = self._selector(self._take().text)
            seconds = self._duration(self._take().text)
            self._take(")")
            return self._range(name, matchers, seconds, per_second=token.text == "rate")
        name, matchers = self._selector(token.text)
        return self._instant(name, matchers)

    def _aggregate(self, how: str) -> dict[Labels, float]:
        by: list[str] = []
        if self._peek().text == "by":
            self._take()
            self._take("(")
            while (token := self._take()).text != ")":
                if token.text != ",":
                    by.append(token.text)
        self._take("(")
        inner = self._and()
        self._take(")")
        groups: dict[Labels, list[float]] = {}
        for labels, value in inner.items():
            key = Labels((name, value_) for name, value_ in labels if name in by)
            groups.setdefault(key, []).append(value)
        reduce = {"sum": sum, "max": max, "min": min}[how]
        return {key: float(reduce(values)) for key, values in groups.items()}

    def _selector(self, name: str) -> tuple[str, list[tuple[str, str, str]]]:
        matchers = []
        if self._peek() and self._peek().text == "{":
            self._take()
            while (token := self._take()).text != "}":
                if token.text == ",":
                    continue
                op = self._take().text
                matchers.append((token.text, op, self._take().text.strip('"')))
        return name, matchers

    @staticmethod
    def _duration(text: str) -> float:
        number, unit = int(text[1:-2]), text[-2]
        return number * {"s": 1, "m": 60, "h": 3600}[unit]

    @staticmethod
    def _matches(labels: Labels, matchers: list[tuple[str, str, str]]) -> bool:
        found = dict(labels)
        for name, op, value in matchers:
            actual = found.get(name, "")
            ok = {
                "=": actual == value,
                "!=": actual != value,
                "=~": re.fullmatch(value, actual) is not None,
                "!~": re.fullmatch(value, actual) is None,
            }[op]
            if not ok:
                return False
        return True

    def _selected(
        self, name: str, matchers: list[tuple[str, str, str]]
    ) -> dict[Labels, list[tuple[float, float]]]:
        return {
            labels: samples
            for labels, samples in self.recording.series.get(name, {}).items()
            if self._matches(labels, matchers)
        }

    def _instant(self, name: str, matchers: list[tuple[str, str, str]]) -> dict[Labels, float]:
        vector = {}
        for labels, samples in self._selected(name, matchers).items():
            recent = [value for t, value in samples if self.t - LOOKBACK < t <= self.t]
            if recent:
                vector[labels] = recent[-1]
        return vector

    def _range(self, name: str, matchers: list, seconds: float, *, per_second: bool) -> dict[Labels, float]:
        """increase/rate as Prometheus computes them: the counter's rise over the samples in the window
        (resets counted), extrapolated towards the window's edges (promql/functions.go)."""
        vector = {}
        start = self.t - seconds
        for labels, samples in self._selected(name, matchers).items():
            window = [(t, value) for t, value in samples if start <= t <= self.t]
            if len(window) < 2:
                continue
            rise = 0.0
            for (_, before), (_, after) in itertools.pairwise(window):
                rise += after - before if after >= before else after  # a counter reset
            (first_t, first), (last_t, _) = window[0], window[-1]
            sampled = last_t - first_t
            average = sampled / (len(window) - 1)
            to_start, to_end = first_t - start, self.t - last_t
            if rise > 0 and first >= 0:
                to_start = min(to_start, sampled * (first / rise))  # a counter never goes below zero
            extrapolated = sampled
            extrapolated += to_start if to_start < average * 1.1 else average / 2
            extrapolated += to_end if to_end < average * 1.1 else average / 2
            rise *= extrapolated / sampled
            vector[labels] = rise / seconds if per_second else rise
        return vector


def _duration_seconds(text: str | None) -> float:
    if not text:
        return 0.0
    return sum(int(n) * {"s": 1, "m": 60, "h": 3600}[u] for n, u in re.findall(r"(\d+)([smh])", text))


def firing(rule: dict[str, Any], recording: Recording, at: float | None = None) -> list[dict[str, str]]:
    """The label sets the rule fires for at ``at`` (default: the last scrape), ``for:`` included:
    evaluated at every scrape, an alert fires once it has been active for the whole duration."""
    evaluator = Evaluator(rule["expr"], recording)
    end = recording.end if at is None else at
    hold = _duration_seconds(rule.get("for"))
    active_since: dict[Labels, float] = {}
    t = 0.0
    while t <= end:
        value = evaluator.at(t)
        assert isinstance(value, dict), "an alert expression is a vector"
        active_since = {labels: active_since.get(labels, t) for labels in value}
        t += SCRAPE_INTERVAL
    return sorted(
        (dict(labels) for labels, since in active_since.items() if end - since >= hold),
        key=lambda labels: sorted(labels.items()),
    )


# --- promtool -------------------------------------------------------------------------------------


def _promtool_value(value: float) -> str:
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return repr(value)


def promtool_agrees(tmp_path: Path, recording: Recording, name: str, expected: list[dict[str, str]]) -> None:
    """Run ``promtool test rules`` on the recorded series when promtool is installed: the rule (its
    annotations dropped: they are text, not the condition) must fire for exactly ``expected``."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return
    rule = {key: value for key, value in rules()[name].items() if key != "annotations"}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "t", "rules": [rule]}]}))
    steps = len(recording.texts)
    input_series = []
    for metric, by_labels in recording.series.items():
        for labels, samples in by_labels.items():
            values = dict(samples)
            rendered = " ".join(
                _promtool_value(values[i * SCRAPE_INTERVAL]) if i * SCRAPE_INTERVAL in values else "_"
                for i in range(steps)
            )
            selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels))
            input_series.append({"series": f"{metric}{{{selector}}}", "values": rendered})
    exp_alerts = [{"exp_labels": {**labels, **rule.get("labels", {})}} for labels in expected]
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": input_series,
            "alert_rule_test": [
                {"eval_time": f"{int(recording.end)}s", "alertname": name, "exp_alerts": exp_alerts}
            ],
        }],
    }  # fmt: skip
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    result = subprocess.run(
        [promtool, "test", "rules", "test.yml"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def check(tmp_path: Path, recording: Recording, name: str, expected: list[dict[str, str]]) -> None:
    assert firing(rules()[name], recording) == expected
    promtool_agrees(tmp_path, recording, name, expected)


# --- The rules ------------------------------------------------------------------------------------


def test_the_rules_file_is_valid_for_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus); the evaluations below still run")
    result = subprocess.run(
        [promtool, "check", "rules", str(RULES_PATH)], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 6 rules found" in result.stdout


def test_every_rule_reads_a_metric_the_app_exports(db) -> None:
    _requests("rules-exported", 1, None)  # a labelled counter is exported once it has counted
    recording = Recording()
    text = recording.scrape()
    exported = set(recording.series)
    for name, rule in rules().items():
        names = set(re.findall(r"\b(cortex_[a-z_]+)\b", rule["expr"]))
        assert names, name
        for metric in names:
            assert metric in exported or f"{metric}_total" in exported, f"{name}: {metric} is not in /metrics"
    assert "# TYPE cortex_health_state gauge" in text


def test_the_thresholds_are_the_banners_settings() -> None:
    """The banner (apps/dashboard/alerts.py) judges the same conditions: same numbers, same windows."""
    found = rules()
    expr = {name: " ".join(rule["expr"].split()) for name, rule in found.items()}
    assert expr["CortexUpstreamDown"] == 'max by (kind, target) (cortex_health_state{state="down"}) == 1'
    assert expr["CortexUpstreamErrorRate"] == (
        '( sum by (upstream) (increase(cortex_upstream_requests_total{outcome=~"failed|throttled"}[10m])) '
        '/ sum by (upstream) (increase(cortex_upstream_requests_total{outcome!="refused"}[10m])) ) '
        f"> {settings.CORTEX_ALERT_ERROR_RATIO} "
        'and sum by (upstream) (increase(cortex_upstream_requests_total{outcome!="refused"}[10m])) '
        f">= {alerts.ERROR_RATE_MIN_REQUESTS}"
    )
    assert alerts.ERROR_RATE_WINDOW.total_seconds() == 600
    assert expr["CortexReviewQueueStale"] == (
        f"cortex_review_queue_oldest_age_seconds > {int(settings.CORTEX_ALERT_REVIEW_QUEUE_HOURS * 3600)}"
    )
    assert expr["CortexWorkerSilent"] == (
        f"cortex_worker_heartbeat_age_seconds > {int(settings.CORTEX_ALERT_WORKER_SILENT_SECONDS)}"
    )
    assert expr["CortexRateLimitRefusals"] == (
        'sum by (upstream) (increase(cortex_upstream_requests_total{outcome="refused"}[15m])) '
        f"> {settings.CORTEX_ALERT_RATE_LIMIT_REFUSALS}"
    )
    assert alerts.REFUSALS_WINDOW.total_seconds() == 900
    assert expr["CortexDataDirDiskLow"] == (
        f"cortex_data_dir_free_bytes / cortex_data_dir_size_bytes < {settings.CORTEX_ALERT_DISK_FREE_RATIO}"
    )


@pytest.fixture
def heartbeat_fresh() -> Any:
    """A worker heartbeat stamped now (the worker-silent rule is tested on its own)."""
    redis = get_redis()
    before = redis.get(health.WORKER_HEARTBEAT_KEY)
    redis.set(health.WORKER_HEARTBEAT_KEY, str(time.time()))
    yield
    if before is None:
        redis.delete(health.WORKER_HEARTBEAT_KEY)
    else:
        redis.set(health.WORKER_HEARTBEAT_KEY, before)


def _requests(upstream: str, count: int, error: Exception | None) -> None:
    for _ in range(count):
        try:
            with upstream_request_recorded(upstream=upstream, budget_per_hour=3600.0):
                if error is not None:
                    raise error
        except (UpstreamError, RateLimited):
            pass


@pytest.mark.django_db
def test_upstream_down_fires_after_two_minutes_of_down(tmp_path, heartbeat_fresh) -> None:
    health.probes_forget()
    recording = Recording()
    recording.scrape()  # t=0: nothing known about it
    _requests("rules-down", 3, UpstreamError("HTTP 503", details={"httpStatus": 503}, retryable=True))
    for _ in range(3):  # t=1..3 min: down
        recording.scrape()
    down = {"kind": "upstream", "target": "rules-down"}
    assert firing(rules()["CortexUpstreamDown"], recording, at=2 * SCRAPE_INTERVAL) == []  # pending
    check(tmp_path, recording, "CortexUpstreamDown", [down])


@pytest.mark.django_db
def test_upstream_error_rate_fires_on_failing_requests_and_not_on_a_few(tmp_path, heartbeat_fresh) -> None:
    failure = UpstreamError("HTTP 502", details={"httpStatus": 502}, retryable=True)
    _requests("rules-errors", 1, failure)  # the series exists before the first scrape
    _requests("rules-few", 1, failure)
    recording = Recording()
    recording.scrape()
    _requests("rules-errors", 5, failure)
    _requests("rules-errors", 2, None)
    _requests("rules-few", 3, failure)  # 100 % failed, but only 3 requests: below the minimum
    for _ in range(6):
        recording.scrape()
    check(tmp_path, recording, "CortexUpstreamErrorRate", [{"upstream": "rules-errors"}])


@pytest.mark.django_db
def test_review_queue_stale_fires_on_a_verification_waiting_a_day(tmp_path, heartbeat_fresh) -> None:
    waiting = Verification.objects.create(
        claim="c", verdict=Verdict.UNVERIFIED, confidence=0.4, latency_ms=1.0
    )
    Verification.objects.filter(pk=waiting.pk).update(
        created_at=timezone.now() - timezone.timedelta(hours=23)
    )
    recording = Recording()
    for _ in range(11):
        recording.scrape()
    check(tmp_path, recording, "CortexReviewQueueStale", [])  # 23 h: not yet
    Verification.objects.filter(pk=waiting.pk).update(
        created_at=timezone.now() - timezone.timedelta(hours=25)
    )
    recording = Recording()
    for _ in range(11):
        recording.scrape()
    check(tmp_path, recording, "CortexReviewQueueStale", [{}])


@pytest.mark.django_db
def test_worker_silent_fires_when_no_worker_stamped_the_heartbeat(tmp_path, heartbeat_fresh) -> None:
    recording = Recording()
    for _ in range(2):
        recording.scrape()
    check(tmp_path, recording, "CortexWorkerSilent", [])
    get_redis().set(health.WORKER_HEARTBEAT_KEY, str(time.time() - 400))
    recording = Recording()
    for _ in range(2):
        recording.scrape()
    check(tmp_path, recording, "CortexWorkerSilent", [{}])
    get_redis().delete(health.WORKER_HEARTBEAT_KEY)  # never stamped: +Inf
    recording = Recording()
    for _ in range(2):
        recording.scrape()
    check(tmp_path, recording, "CortexWorkerSilent", [{}])


@pytest.mark.django_db
def test_rate_limit_refusals_fire_past_ten_in_fifteen_minutes(tmp_path, heartbeat_fresh) -> None:
    refused = RateLimited("Rate limit 'x' is saturated; retry after 1.0 s.", retry_after=1.0)
    _requests("rules-refused", 1, refused)
    _requests("rules-refused-few", 1, refused)
    recording = Recording()
    recording.scrape()
    _requests("rules-refused", 11, refused)
    _requests("rules-refused-few", 5, refused)  # half the threshold (increase extrapolates a little)
    recording.scrape()
    check(tmp_path, recording, "CortexRateLimitRefusals", [{"upstream": "rules-refused"}])


@pytest.mark.django_db
def test_data_dir_disk_low_fires_below_ten_percent_free(tmp_path, heartbeat_fresh, monkeypatch) -> None:
    recording = Recording()
    for _ in range(6):
        recording.scrape()
    check(tmp_path, recording, "CortexDataDirDiskLow", [])  # this machine's disk, with room
    # A disk that fills cannot be made here: the file system's answer is replaced, 5 % free.
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(alerts.shutil, "disk_usage", lambda path: usage(1000, 950, 50))
    recording = Recording()
    for _ in range(6):
        recording.scrape()
    check(tmp_path, recording, "CortexDataDirDiskLow", [{}])
