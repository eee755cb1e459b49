"""OpenTelemetry spans for multi-step workflows (DESIGN §2.10).

One SDK ``TracerProvider`` per process, sampling everything, exporting as
``OTEL_TRACES_EXPORTER`` says: ``none`` (the default: spans are made, so the code
path is the same, but go nowhere), ``console`` (one JSON object per span on
stdout), or ``otlp`` (OTLP over HTTP, configured by the SDK's own
``OTEL_EXPORTER_OTLP_*`` variables). The provider is ours rather than the global
one, so a test can add an in-memory processor without fighting the set-once global.
"""

from __future__ import annotations

import functools

from django.conf import settings
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Tracer

EXPORTERS = ("none", "console", "otlp")


@functools.cache
def tracer_provider() -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": settings.OTEL_SERVICE_NAME}))
    exporter = settings.OTEL_TRACES_EXPORTER
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def span_processor_add(processor: SpanProcessor) -> None:
    """Send this process's spans to one more processor as well (an in-memory one in tests)."""
    tracer_provider().add_span_processor(processor)


def get_tracer(name: str) -> Tracer:
    return tracer_provider().get_tracer(name)
