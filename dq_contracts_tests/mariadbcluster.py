"""A throwaway MariaDB server on 127.0.0.1 for the tests: mariadb-install-db, mariadbd, shutdown.

Debian's `mariadb-server` package ships both (and creates the `mysql` system user); under root the
server runs as that user from a folder it owns, as pgcluster.py runs PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dq_contracts_tests.pgcluster import free_port

ROOT_PASSWORD = "Maria-root-pw-5e2a"  # a throwaway server's password, also what leak tests look for
READER, READER_PASSWORD = "dq_reader", "Maria-reader-pw-41c7"  # a user the tests grant SELECT alone


def find_bin(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
                                      None)


@dataclass
class MariaDB:
    root: Path
    port: int
    process: subprocess.Popen

    def url(self, database: str = "", user: str = "root", password: str = ROOT_PASSWORD) -> str:
        return f"mysql+pymysql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    @classmethod
    def start(cls) -> "MariaDB":
        install, server = find_bin("mariadb-install-db") or find_bin("mysql_install_db"), find_bin("mariadbd")
        if not install or not server:
            raise FileNotFoundError("MariaDB server binaries (mariadb-install-db, mariadbd) not found")
        root = Path(tempfile.mkdtemp(prefix="dq-maria-"))
        user = ["--user=mysql"] if os.geteuid() == 0 else []
        if user:
            shutil.chown(root, "mysql", "mysql")
        subprocess.run([install, "--no-defaults", *user, f"--datadir={root / 'data'}", "--skip-test-db",
                        "--auth-root-authentication-method=normal"], check=True, capture_output=True, timeout=120)
        port = free_port()
        # small and unsafe on purpose (a test server): no binary log, no fsync, a small buffer pool
        process = subprocess.Popen(
            [server, "--no-defaults", *user, f"--datadir={root / 'data'}", "--bind-address=127.0.0.1",
             f"--port={port}", f"--socket={root / 'sock'}", f"--pid-file={root / 'pid'}", "--skip-log-bin",
             "--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=0", "--skip-name-resolve",
             f"--log-error={root / 'log'}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cluster = cls(root, port, process)
        try:
            cluster._set_root_password()
        except BaseException:  # a server that never became usable is not left running
            cluster.destroy()
            raise
        return cluster

    def _set_root_password(self) -> None:
        import pymysql

        deadline = time.monotonic() + 60
        while True:
            try:
                connection = pymysql.connect(unix_socket=str(self.root / "sock"), user="root")
                break
            except pymysql.err.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
                    raise RuntimeError(f"mariadbd did not start: {log[-2000:]}") from None
                time.sleep(0.1)
        with connection, connection.cursor() as cursor:
            cursor.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (ROOT_PASSWORD,))
            cursor.execute("CREATE OR REPLACE USER 'root'@'127.0.0.1' IDENTIFIED BY %s", (ROOT_PASSWORD,))
            cursor.execute("GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")

    def destroy(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
