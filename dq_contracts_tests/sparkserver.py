"""A throwaway Spark Thrift server on 127.0.0.1 for the tests: pyspark's jars and Debian's Java.

pyspark ships the Thrift server's jar but no start script, so it is started as its class through
`spark-submit`, one local core, no UI, an in-memory catalog and a warehouse folder of its own. It
starts in some 15 s and holds 0.4-0.7 GB; the tests share one per session (conftest.py).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dq_contracts_tests.pgcluster import free_port

START_SECONDS = 120


def spark_submit() -> str | None:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None or shutil.which("java") is None:
        return None
    script = Path(spec.origin).parent / "bin" / "spark-submit"
    return str(script) if script.exists() else None


@dataclass
class SparkServer:
    root: Path
    port: int
    process: subprocess.Popen

    @functools.cached_property
    def admin(self):
        """One engine for the tests' DDL, never disposed before the server stops."""
        import sqlalchemy as sa

        return sa.create_engine(self.url())

    def url(self, database: str = "default") -> str:
        return f"hive://127.0.0.1:{self.port}/{database}"

    @classmethod
    def start(cls) -> "SparkServer":
        submit = spark_submit()
        if submit is None:
            raise FileNotFoundError("Spark (pyspark's spark-submit) or a Java runtime not found")
        root = Path(tempfile.mkdtemp(prefix="dq-spark-"))
        port = free_port()
        conf = {
            "spark.ui.enabled": "false", "spark.driver.memory": "768m", "spark.sql.shuffle.partitions": "1",
            "spark.sql.catalogImplementation": "in-memory", "spark.sql.warehouse.dir": str(root / "warehouse"),
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            # the tests' rows are written as text (PyHive renders every value): let INSERT cast them
            "spark.sql.storeAssignmentPolicy": "LEGACY",
            # no derby.system.home: under one, Derby reads Spark's in-memory metastore URL (`memory:`) as
            # a folder, and each session's close then retries booting it 10 times 2 s apart (20 s a
            # session); its files go to the working directory, `root`, all the same
        }
        command = [submit, "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
                   "--master", "local[1]", *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}")),
                   "--hiveconf", f"hive.server2.thrift.port={port}",
                   "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1", "spark-internal"]
        log = open(root / "server.log", "wb")
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(Path(submit).parent.parent)}
        process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        server = cls(root, port, process)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the Spark Thrift server exited: {(root / 'server.log').read_text()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return server
            time.sleep(0.5)
        server.stop()
        raise RuntimeError(f"the Spark Thrift server did not listen within {START_SECONDS} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)
