"""What a CI system reads of a run: JUnit XML (one suite per contract, one case per check), GitHub
Actions workflow commands (one annotation per broken check or problem, at its clause's line), and
the exit code of `dq-contracts check`.

Pure given the results and problems: the command line picks the format, nothing here connects. A
contract is hostile input: every text passes `visible` (nothing hidden or reordered), and what XML
1.0 cannot hold, or what would end a workflow command early, is escaped here.
"""

from __future__ import annotations

import re
from enum import IntEnum
import functools
from typing import TYPE_CHECKING, Iterable, Sequence

from dq_contracts.engine.results import CheckResult, Status
from dq_contracts.engine.sentences import observed_text, said
from dq_contracts.odcs.names import CONTRACT_VALID
from dq_contracts.odcs.plans import ContractPlan, Severity
from dq_contracts.odcs.problems import Problem, ProblemSeverity, Reach, contract_errors_of, errors_of
from dq_contracts.odcs.visible import one_line, uncommanded, visible

if TYPE_CHECKING:
    from xml.etree import ElementTree as ET


class Exit(IntEnum):
    """The command line's exit codes (README: Command line); 3 and 4 as pytest's."""

    PASSED = 0
    FAILED = 1  # an ERROR clause failed or could not be evaluated, or a contract has errors
    WARNED = 2  # only WARN clauses failed (or could not be evaluated): `check` alone
    INTERNAL = 3  # dq-contracts itself failed: a bug, said in one line on stderr
    USAGE = 4  # an unknown option, a missing argument (argparse's own 2 would read as WARNED)
    OUTPUT = 120  # the output could not be written (a full disk, EIO; not a closed pipe): Python's own code


def blocking(result: CheckResult) -> bool:
    """A broken ERROR clause: it fails the run, whether it failed or could not be evaluated."""
    return not result.passed and result.severity == Severity.ERROR


def exit_code(results: Iterable[CheckResult], problems: Sequence[Problem]) -> Exit:
    """0 when every check passed, 1 when an ERROR clause is broken or a contract has errors, 2 when
    only WARN clauses are: a WARN clause fails at its own severity, even when unevaluated (as in
    Dagster), so a warehouse down under a WARN clause alone is a warning."""
    results = list(results)
    if errors_of(problems) or any(blocking(r) for r in results):
        return Exit.FAILED
    return Exit.WARNED if any(not r.passed for r in results) else Exit.PASSED


# --- JUnit -----------------------------------------------------------------------------------------

# XML 1.0's Char production: a character outside it (a control, a lone surrogate, U+FFFE) makes the
# whole report unreadable. `visible` already escapes those; this is the last word before the bytes.
# Compiled when a report is written (some 4 ms): a plain `check` never writes one.
@functools.cache
def _not_xml() -> re.Pattern[str]:
    return re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    """Text XML can hold, on one line (`one_line`: a contract's text cannot add a line to the report,
    which may be printed to a job's log: without --output it is standard output), in which nothing
    reads as a CI runner's command."""
    return _not_xml().sub(lambda m: f"\\u{ord(m.group()):04x}", uncommanded(one_line(value)))


def junit_outcome(result: CheckResult) -> str | None:
    """The element a check's case holds: none when it passed; `skipped` for a broken WARN clause
    (shown, never failing the suite); `error` for an ERROR clause that could not be evaluated;
    `failure` for one that failed."""
    if result.passed:
        return None
    if result.severity != Severity.ERROR:
        return "skipped"
    return "error" if result.status == Status.ERROR else "failure"


def _detail(result: CheckResult) -> list[str]:
    """The case's lines: the sentence, observed, threshold and every clause's location."""
    lines = [said(result), f"observed: {observed_text(result)}", f"threshold: {result.threshold or '-'}"]
    if result.partition is not None:
        lines.append(f"partition: {result.partition}")
    lines += [f"clause: {where}" for where in result.locations]
    return lines


def _element(parent: ET.Element, tag: str, lines: Sequence[str] | None = None, **attributes: object) -> ET.Element:
    """An element whose attributes are each on one line, and whose text is `lines`, each on its own."""
    from xml.etree import ElementTree as ET

    element = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attributes.items()})
    if lines is not None:
        element.text = "\n".join(xml_text(line) for line in lines)
    return element


def _case(suite: ET.Element, result: CheckResult) -> str | None:
    case = _element(suite, "testcase", classname="/".join(result.asset_key), name=result.name)
    outcome = junit_outcome(result)
    if outcome is not None:
        # a WARN clause's message says so first: a skipped case reads as "not run" otherwise
        message = f"{result.status} ({result.severity}): {said(result)}"
        _element(case, outcome, _detail(result), type=result.status, message=message)
    return outcome


def _problems_case(suite: ET.Element, file: str, errors: list[Problem]) -> None:
    """Dagster's failing `contract_valid` check, as a failing case: a CI that reads only the XML sees
    why a contract did not run."""
    case = _element(suite, "testcase", classname=file, name=CONTRACT_VALID)
    first = errors[0].render()
    message = first if len(errors) == 1 else f"{len(errors)} errors, the first: {first}"
    _element(case, "failure", [p.render() for p in errors], type="contract", message=message)


def junit_xml(results: Sequence[CheckResult], plans: Sequence[ContractPlan], problems: Sequence[Problem]) -> bytes:
    """One <testsuite> per contract file (named by its id and file), one <testcase> per check
    (classname the asset key, name the check's), and a failing `contract_valid` case in each file
    that could not run, as Dagster has (an error confined to one clause, a refused SQL rule, is that
    clause's failing case already); UTF-8, with its declaration."""
    from xml.etree import ElementTree as ET

    errors: dict[str, list[Problem]] = {}
    for problem in contract_errors_of(problems):
        errors.setdefault(problem.file, []).append(problem)
    ids = {plan.file: plan.id for plan in plans}
    by_file: dict[str, list[CheckResult]] = {}
    for result in results:  # grouped once: a folder of 500 contracts is not 500 passes over every result
        by_file.setdefault(result.file, []).append(result)
    files = list(dict.fromkeys([*(p.file for p in plans), *errors]))  # as loaded, then files with no plan
    root = ET.Element("testsuites", name="dq-contracts check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for file in files:
        suite = _element(root, "testsuite", name=f"{ids[file]} ({file})" if file in ids else file, file=file)
        outcomes = [_case(suite, r) for r in by_file.get(file, [])]
        if file in errors:
            _problems_case(suite, file, errors[file])
            outcomes.append("failure")
        counts = {"tests": len(outcomes), "failures": outcomes.count("failure"), "errors": outcomes.count("error"),
                  "skipped": outcomes.count("skipped")}
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key in ("tests", "failures", "errors"):  # the schema's <testsuites> has no `skipped`
        root.set(key, str(totals[key]))
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False) + b"\n"


# --- GitHub Actions workflow commands --------------------------------------------------------------

# The runner's own escapes (actions/runner ActionCommand: data and property mappings): `%` first,
# so an escape is never escaped twice; in a property also `:` and `,`, which end it. Past these, a
# newline could start a command of the contract's choosing.
DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
PROPERTY_ESCAPES = (*DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def _escaped(value: object, escapes: tuple[tuple[str, str], ...]) -> str:
    text = visible(value)
    for char, escape in escapes:
        text = text.replace(char, escape)
    return text


def workflow_command(command: str, message: str, **properties: object) -> str:
    """`::error file=…,line=…,title=…::message`, each property and the message escaped; a property
    of None is left out."""
    given = ",".join(f"{key}={_escaped(value, PROPERTY_ESCAPES)}" for key, value in properties.items()
                     if value is not None)
    return f"::{command}{' ' + given if given else ''}::{_escaped(message, DATA_ESCAPES)}"


# an annotation's command by a check's outcome: a broken WARN clause is a warning, even unevaluated
ANNOTATION_OF_OUTCOME = {"failure": "error", "error": "error", "skipped": "warning"}


def result_annotation(result: CheckResult) -> str | None:
    outcome = junit_outcome(result)
    if outcome is None:
        return None
    more = [f"also {where}" for where in result.locations[1:]]
    message = "; ".join([said(result), f"observed {observed_text(result)}, threshold {result.threshold or '-'}",
                         *([f"partition {result.partition}"] if result.partition is not None else []), *more])
    return workflow_command(ANNOTATION_OF_OUTCOME[outcome], message, file=result.file or None, line=result.line,
                            title=f"dq-contracts: {'/'.join(result.asset_key)} {result.name} {result.status}")


def problem_annotation(problem: Problem, as_error: bool = False) -> str:
    """A contract problem where it is written; `as_error`: a warning counted as an error (--strict)."""
    command = "error" if as_error or problem.severity == ProblemSeverity.ERROR else "warning"
    return workflow_command(command, problem.message, file=problem.file, line=problem.line,
                            title=f"dq-contracts: {problem.path or 'contract'}")


def github_lines(results: Sequence[CheckResult], problems: Sequence[Problem]) -> list[str]:
    """One annotation per broken check, then one per problem but those a check's annotation says
    already (an error confined to one clause, such as a refused SQL rule: its check failed)."""
    lines = [a for a in map(result_annotation, results) if a is not None]
    return lines + [problem_annotation(p) for p in problems
                    if not (p.severity == ProblemSeverity.ERROR and p.reach == Reach.CLAUSE)]
