"""A throwaway PostgreSQL cluster on 127.0.0.1 for the tests: initdb, pg_ctl start, pg_ctl stop.

PostgreSQL refuses to run as root, so under root the server runs as the `postgres` system user
(Debian's package creates it) from a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "postgres"
PASSWORD = "s3cret-Test-pw"  # a throwaway cluster's password, also what the secret-leak tests look for


def find_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgCluster:
    root: Path
    port: int
    _as_user: list[str]

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres", user: str = SUPERUSER, password: str | None = PASSWORD) -> str:
        auth = f"{user}:{password}" if password is not None else user
        return f"postgresql+psycopg2://{auth}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([*self._as_user, *args], check=check, capture_output=True, text=True, timeout=120)

    @classmethod
    def start(cls) -> "PgCluster":
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if not initdb or not pg_ctl:
            raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
        root = Path(tempfile.mkdtemp(prefix="dq-pg-"))
        as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            # runuser is in sbin, which a minimal PATH (`env -i PATH=/usr/bin:/bin`) leaves out
            runuser = shutil.which("runuser") or next(
                (p for p in ("/usr/sbin/runuser", "/sbin/runuser") if os.access(p, os.X_OK)), "runuser")
            as_user = [runuser, "-u", "postgres", "--"]
        cluster = cls(root, free_port(), as_user)
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if as_user:
            shutil.chown(pwfile, "postgres", "postgres")
        cluster._run(initdb, "-D", str(cluster.data), "-U", SUPERUSER, "--pwfile", str(pwfile),
                     "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync")
        cluster._run(pg_ctl, "-D", str(cluster.data), "-o", cluster._options(), "-l", str(root / "log"), "-w",
                     "-t", "60", "start")
        return cluster

    def _options(self) -> str:
        options = f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} -c fsync=off"
        if self.has_statement_stats:  # what the server itself counts: every statement a client sent
            options += " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on"
        return options

    @property
    def has_statement_stats(self) -> bool:
        """Whether this PostgreSQL ships pg_stat_statements (Debian's server package does)."""
        initdb = find_bin("initdb")
        return bool(initdb) and (Path(initdb).resolve().parent.parent / "lib" / "pg_stat_statements.so").exists()

    def stop(self, mode: str = "fast") -> None:
        self._run(find_bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def restart(self) -> None:
        self._run(find_bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-o", self._options(), "-l", str(self.root / "log"),
                  "-w", "-t", "60", "start")

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
