"""What of a project is never a table, and where a project begins (declaration.py's default root).

A contract may come from another team than the one whose files it reads. With no roots declared
(the single-team default), a DuckDB or file server may open what lies under the project that holds
the contracts folder, but never a file that holds the project's credentials: a name of
CREDENTIAL_NAMES, or a file in a folder so named (`credentials.json`, `client_secret_1.json`,
`keys/id_rsa`, `secrets/x.csv`). The operator's `_ROOTS` draw the boundary themselves: inside them
any such name is readable. A hidden name (`.env`, `.git`) is never opened, whoever drew the roots.

This module is pure: no engine, no Dagster.
"""

from __future__ import annotations

import fnmatch
import os

# A file or folder name (lower case, fnmatch) that holds credentials, never data: cloud service
# accounts and OAuth clients, tokens, keys and certificates, SSH keys, netrc and pgpass files
CREDENTIAL_NAMES: tuple[str, ...] = (
    "*credential*", "*secret*", "*token*", "*password*", "*passwd*", "*apikey*", "*api_key*", "*api-key*",
    "*service-account*", "*service_account*", "*serviceaccount*", "client_secret*",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.netrc", "_netrc", "*.pgpass", "pgpass*",
)

# A file or folder whose presence makes a folder a project (not a contracts folder): Python's, Dagster's
# and dg's project files, a Git work tree, and the `contracts` folder a project holds
PROJECT_MARKERS: tuple[str, ...] = (
    "pyproject.toml", "setup.py", "setup.cfg", "workspace.yaml", "dagster.yaml", "dg.toml", ".git", "contracts",
)


def below(real: str, roots: tuple[str, ...]) -> list[str]:
    """The names of `real`'s path below the root it is in ([] when it is in none, or is a root)."""
    for root in roots:
        base = root.rstrip(os.sep)
        if real == base or real.startswith(base + os.sep):
            return [part for part in real[len(base):].split(os.sep) if part]
    return []


def hidden_below(real: str, roots: tuple[str, ...]) -> bool:
    """Whether a path holds a hidden name (`.env`, `.git`, `.dagster`) below the root it is in:
    such files hold a project's settings and secrets, never its data."""
    return any(part.startswith(".") for part in below(real, roots))


def credential_below(real: str, roots: tuple[str, ...]) -> str | None:
    """The first name of a path below its root that CREDENTIAL_NAMES holds a credential's, or None."""
    for part in below(real, roots):
        if any(fnmatch.fnmatchcase(part.lower(), pattern) for pattern in CREDENTIAL_NAMES):
            return part
    return None


def is_project(folder: str) -> bool:
    """Whether a folder holds one of PROJECT_MARKERS."""
    return any(os.path.lexists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS)


def project_root(folder: str, working_directory: str | None = None) -> str:
    """The default root of the contracts loaded from `folder` (absolute): the folder itself when it
    is a project, or when the command runs in or below it (`check .`) and its parent is no project;
    else its parent, the project that holds the contracts folder (`check contracts`). So the root is
    never above the folder named, or the project it is in: a sibling project's files stay out."""
    parent = os.path.dirname(folder)
    here = os.path.realpath(working_directory or os.getcwd())
    real = os.path.realpath(folder)
    holds_here = here == real or here.startswith(real.rstrip(os.sep) + os.sep)
    if is_project(folder) or (holds_here and not is_project(parent)):
        return folder
    return parent
