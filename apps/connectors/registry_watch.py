"""Cross-process invalidation of the registry's in-process caches, without a Redis read per request.

Every process subscribes, from one daemon thread started on first use (per pid, so forked
workers get their own), to the channel ``registry_changed`` publishes on after each commit.
While the subscription is up, a process may trust what it cached; every message moves
``generation`` on, which makes those copies stale. When the subscription is lost, nothing is
trusted until it is back: callers then read the registry version from Redis on each request.
"""

from __future__ import annotations

import atexit
import os
import threading
import time

import redis
from django.conf import settings

from apps.core.logging import get_logger

CHANNEL = "cortex:connectors:registry-changed"

logger = get_logger(__name__)


class RegistryWatch:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self.generation = 0
        self.subscribed = False
        self._stopping = False
        # Registered after the embedded servers' own exit handler, so it runs first: the servers
        # going away at exit is not an outage worth a warning.
        atexit.register(self._stop)

    def _stop(self) -> None:
        self._stopping = True

    def changed(self) -> None:
        """Make every copy cached so far stale (a message arrived, or this process changed the registry)."""
        with self._lock:
            self.generation += 1

    def trusted_generation(self) -> int | None:
        """The current generation while subscribed, else ``None`` (then nothing cached may be trusted)."""
        self._start_if_needed()
        return self.generation if self.subscribed else None

    def _start_if_needed(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self.subscribed = False
            self.generation += 1
        threading.Thread(target=self._listen_forever, name="registry-watch", daemon=True).start()

    def _listen_forever(self) -> None:
        pause = 0.5
        while True:
            try:
                # A client of its own: no socket timeout (the wait for messages is unbounded),
                # pings every 30 s so a dead connection is noticed.
                client = redis.Redis.from_url(
                    settings.REDIS_URL, health_check_interval=30, socket_connect_timeout=2
                )
                with client.pubsub() as pubsub:
                    pubsub.subscribe(CHANNEL)
                    for message in pubsub.listen():
                        self.changed()  # messages missed before (re)subscribing count as changes too
                        if message["type"] == "subscribe":
                            self.subscribed, pause = True, 0.5
            except Exception as error:  # noqa: BLE001 - any failure means: stop trusting, retry
                if self._stopping or not threading.main_thread().is_alive():
                    return  # the process is exiting; its servers may be going away with it
                if self.subscribed:  # say it once per outage, not once per retry
                    logger.warning("connectors.registry_watch_lost", error=str(error))
                self.subscribed = False
                self.changed()
                time.sleep(pause)
                pause = min(pause * 2, 5.0)


watch = RegistryWatch()
