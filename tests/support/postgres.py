"""A real PostgreSQL server for the store tests: Debian's `postgresql` package, started by the tests as an
unprivileged cluster in a temporary folder, reachable only through a Unix socket in that folder (no TCP
port, so parallel test runs never collide), and stopped afterwards, also when a test fails.

Without the package the tests skip with the reason; under `make test` (GPUFLEET_POSTGRES_REQUIRED=1)
that is a failure instead. tools/ensure_system_packages.sh installs the package.
"""

import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

import pytest

REQUIRED_ENV = "GPUFLEET_POSTGRES_REQUIRED"
BIN_GLOB = "/usr/lib/postgresql/*/bin"
SERVICE_USER = "postgres"
SUPERUSER = "gpufleet"
SOCKET_PORT = 5432  # names the socket file inside the private folder; no TCP listener
START_SECONDS = 60
_DATABASE_NUMBERS = itertools.count(1)


def required():
    return os.environ.get(REQUIRED_ENV, "").strip() not in ("", "0", "false", "no")


def server_bin():
    """The newest installed server's bin folder, or None."""
    def version(path):
        name = os.path.basename(os.path.dirname(path))
        return int(name) if name.isdigit() else 0
    found = [path for path in glob.glob(BIN_GLOB) if os.path.exists(os.path.join(path, "initdb"))]
    return max(found, key=version) if found else None


def missing_reason():
    if "ansible_forked" in os.environ.get("PYTEST_PLUGINS", "").split(","):
        # ansible-test units runs each test in a fork that ends with os._exit: a session fixture started there is
        # never torn down, and every server it started would outlive the run
        return ("ansible-test units runs each test in its own fork, where the server could not be stopped; "
                "the PostgreSQL store tests run under pytest (make test-unit)")
    if server_bin() is None:
        return ("PostgreSQL is not installed (no %s/initdb; Debian's postgresql package, "
                "tools/ensure_system_packages.sh installs it)" % BIN_GLOB)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVICE_USER)
        except KeyError:
            return "running as root and there is no %r user to run the PostgreSQL server as" % SERVICE_USER
    return None


def as_service_user(command):
    """PostgreSQL refuses to run as root: run it as the package's postgres user when we are root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVICE_USER, "--"] + command
    return command


class Cluster:
    """initdb + pg_ctl in a temporary folder; url() gives a SQLAlchemy URL of a database in it."""

    def __init__(self):
        self.bin = server_bin()
        self.folder = tempfile.mkdtemp(prefix="gpufleet-pg-")
        self.data = os.path.join(self.folder, "data")
        self.log = os.path.join(self.folder, "server.log")
        self.started = False

    def _run(self, *command, timeout=START_SECONDS):
        return subprocess.run(as_service_user(list(command)), check=True, capture_output=True, text=True,
                              timeout=timeout)

    def start(self):
        if os.geteuid() == 0:
            user = pwd.getpwnam(SERVICE_USER)
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        self._run(os.path.join(self.bin, "initdb"), "-D", self.data, "-U", SUPERUSER, "--auth=trust",
                  "--encoding=UTF8", "--no-sync")
        options = "-c listen_addresses='' -k %s -p %d -c fsync=off" % (self.folder, SOCKET_PORT)
        try:
            self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", self.log, "-o", options, "-w",
                      "-t", str(START_SECONDS), "start")
        except subprocess.CalledProcessError as exc:
            raise RuntimeError("PostgreSQL did not start: %s %s\n%s" % (exc.stdout, exc.stderr, self.server_log()))
        self.started = True
        return self

    def server_log(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as stream:
                return stream.read()[-4000:]
        except OSError:
            return ""

    def url(self, database="postgres"):
        return "postgresql+psycopg://%s@/%s?host=%s&port=%d" % (SUPERUSER, database, self.folder, SOCKET_PORT)

    def new_database(self):
        """A fresh, empty database; returns its URL."""
        from sqlalchemy import create_engine, text
        name = "store_test_%d_%d" % (os.getpid(), next(_DATABASE_NUMBERS))
        engine = create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(text('CREATE DATABASE "%s"' % name))
        finally:
            engine.dispose()
        return self.url(name)

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid"), encoding="ascii") as stream:
                return int(stream.readline().strip())
        except (OSError, ValueError):
            return None

    def stop(self):
        """pg_ctl stop; when that fails (a loaded machine, a stuck server), the server's own process is killed
        by the id it wrote, so no server outlives its folder."""
        if self.started:
            server = self.postmaster_pid()
            try:
                self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop")
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                if server is not None:
                    try:
                        os.kill(server, signal.SIGKILL)
                    except OSError:
                        pass
            self.started = False
        shutil.rmtree(self.folder, ignore_errors=True)


def skip_or_fail(reason):
    if required():
        pytest.fail("%s (%s is set: the PostgreSQL store tests must run)" % (reason, REQUIRED_ENV), pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_cluster():
    """One server for the session (the store tests each take a fresh database of it)."""
    reason = missing_reason()
    if reason:
        skip_or_fail(reason)
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """The same test against the embedded SQLite store and a real PostgreSQL server."""
    if request.param == "sqlite":
        return "sqlite:///%s" % (tmp_path / "store" / "gpufleet.sqlite")
    return request.getfixturevalue("postgres_cluster").new_database()
