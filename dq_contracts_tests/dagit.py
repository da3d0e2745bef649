"""Drive a real `dagster dev` (or webserver + daemon) through its GraphQL endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dq_contracts_tests.pgcluster import free_port

LOCATION = "dq_contracts_demo"
# how often a wait asks again: one cheap GraphQL query, so a start or a run is seen ended within 0.2 s
POLL_SECONDS = 0.2

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""

RUN_STATUS = """
query Status($runId: ID!) { runOrError(runId: $runId) { __typename ... on Run { status } } }"""

METADATA = """
metadataEntries {
  label
  __typename
  ... on TextMetadataEntry { text }
  ... on IntMetadataEntry { intValue }
  ... on FloatMetadataEntry { floatValue }
  ... on MarkdownMetadataEntry { mdStr }
  ... on JsonMetadataEntry { jsonString }
}"""

ASSET_CHECKS = """
query Checks($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) {
    assetKey { path }
    assetChecksOrError {
      __typename
      ... on AssetChecks {
        checks {
          name
          description
          blocking
          executionForLatestMaterialization {
            runId status
            evaluation { success severity %s }
          }
        }
      }
    }
  }
}""" % METADATA

CHECK_EXECUTIONS = """
query Executions($key: AssetKeyInput!, $name: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $name, limit: 50) {
    id runId status timestamp
    evaluation { success severity %s }
  }
}""" % METADATA


def executions_in_run(dagit: "Dagit", checks: list[tuple[str, str]], run_id: str) -> dict[tuple[str, str], Any]:
    """Each check's execution in one run (None when it has none), looked up in its history: the latest
    execution may belong to a later run (the automation sensor's), which says nothing of this one."""
    found = {}
    for asset, name in checks:
        history = dagit.query(CHECK_EXECUTIONS, {"key": {"path": [asset]}, "name": name})["assetCheckExecutions"]
        found[(asset, name)] = next((h for h in history if h["runId"] == run_id), None)
    return found


def metadata_of(evaluation: dict[str, Any]) -> dict[str, Any]:
    values = {}
    for entry in evaluation.get("metadataEntries") or []:
        for field in ("text", "intValue", "floatValue", "mdStr", "jsonString"):
            if field in entry:
                values[entry["label"]] = entry[field]
    return values


@dataclass
class Dagit:
    """A running `dagster dev`; stop() ends the whole process group."""

    process: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    def query(self, text: str, variables: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        body = json.dumps({"query": text, "variables": variables or {}}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read())
        if payload.get("errors"):
            raise AssertionError(payload["errors"])
        return payload["data"]

    def wait_ready(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"dagster exited early:\n{self.log.read_text()[-4000:]}")
            try:
                data = self.query("{ workspaceOrError { __typename ... on Workspace { locationEntries "
                                  "{ name locationOrLoadError { __typename } } } } }", timeout=10)
                entries = data["workspaceOrError"].get("locationEntries") or []
                if entries and all(e["locationOrLoadError"] and
                                   e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries):
                    return
                if any(e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError"
                       for e in entries):
                    raise AssertionError(f"code location failed to load:\n{self.log.read_text()[-4000:]}")
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(POLL_SECONDS)
        raise AssertionError(f"dagster did not answer in {timeout}s:\n{self.log.read_text()[-4000:]}")

    def launch(self, job: str = "__ASSET_JOB", assets: list[list[str]] | None = None,
               checks: list[tuple[list[str], str]] | None = None) -> str:
        selector: dict[str, Any] = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__",
                                    "jobName": job}
        if assets is not None:
            selector["assetSelection"] = [{"path": a} for a in assets]
        if checks is not None:
            selector["assetCheckSelection"] = [{"assetKey": {"path": a}, "name": n} for a, n in checks]
        data = self.query(LAUNCH, {"params": {"selector": selector, "mode": "default"}})
        result = data["launchRun"]
        if result["__typename"] != "LaunchRunSuccess":
            raise AssertionError(result)
        return result["run"]["runId"]

    def wait_run(self, run_id: str, timeout: float = 300) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.query(RUN_STATUS, {"runId": run_id})["runOrError"].get("status")
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                return status
            time.sleep(POLL_SECONDS)
        raise AssertionError(f"run {run_id} did not finish in {timeout}s:\n{self.log.read_text()[-4000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def start_dagster_dev(cwd: Path, dagster_home: Path, log: Path, env: dict[str, str] | None = None,
                      port: int | None = None) -> Dagit:
    """`dagster dev` in `cwd` (which holds workspace.yaml) with its own DAGSTER_HOME."""
    port = port or free_port()
    dagster_home.mkdir(parents=True, exist_ok=True)
    environ = {**os.environ, **(env or {}), "DAGSTER_HOME": str(dagster_home)}
    bin_dir = os.path.dirname(sys.executable)
    environ["PATH"] = f"{bin_dir}:{environ.get('PATH', '')}"
    handle = log.open("w")
    process = subprocess.Popen([os.path.join(bin_dir, "dagster"), "dev", "-h", "127.0.0.1", "-p", str(port)],
                               cwd=cwd, env=environ, stdout=handle, stderr=subprocess.STDOUT,
                               start_new_session=True)
    return Dagit(process, port, log)
