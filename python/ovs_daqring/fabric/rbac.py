# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at:
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""The fabric database's trust boundary: OVSDB role-based access control,
as OVN's southbound database has it (ovsdb-server(7), "RBAC").

The agents of the switches and of the hosts connect through a remote whose
Connection row has the role "daqfabric-agent".  On such a remote,
ovsdb-server takes the client's identity from its SSL certificate's
common name (CN) and lets it insert, update and delete only the Node row
whose name is that CN, and update in it only the columns an agent
reports; every other write (another node's row, Switch, Link, Host, DCM,
Assignment, Fabric, these tables) is refused with "permission error".
The planner (an agent started with --planner) and the operator's
ovs-daqctl connect through a remote without a role, as ovn-northd does.

The member's helper (ovs-daqfabric-db rbac, at every start, after the
schema upgrade) writes the rows with ensure(): the role, its permission
and one Connection row per agent remote.  It is idempotent: it reads
them first and writes only what differs (all of them, in one
transaction), so that every member can run it at every start."""

import argparse
import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import SCHEMA_NAME

AGENT_ROLE = "daqfabric-agent"

# The Node columns an agent writes in its own row (node.py's report,
# with agent.py's and hostagent.py's columns): all but its name, which is
# what authorizes it (renaming its row would make it another node's).
AGENT_NODE_COLUMNS = ("agent", "bfd", "error", "failed_generation",
                      "generation", "links", "report_interval",
                      "ring_drops", "ring_high_watermark", "ring_occupancy",
                      "updated")

# The remote whose rows give the agents' remotes their role: the
# ovsdb-server option --remote, or ovsdb-server/add-remote.
ROLE_REMOTES = "db:%s,DB_Global,connections" % SCHEMA_NAME

# The tables this module writes (and owns).
TABLES = ("RBAC_Role", "RBAC_Permission", "DB_Global", "Connection")

# An agent remote: the same on every member of the cluster (the rows are
# the cluster's), so any address of the member (no IP), and SSL (over TCP
# a client has no identity and could write nothing).
TARGET_RE = re.compile(r"^pssl:([0-9]{1,5})$")

# Perm: (table, authorization, insert_delete, update), sorted.
Perm = Tuple[str, Tuple[str, ...], bool, Tuple[str, ...]]
# A state: (role -> table -> Perm, the agents' (target, role) sorted).
State = Tuple[Dict[str, Dict[str, Perm]], Tuple[Tuple[str, str], ...]]


class RbacError(Exception):
    """The rows cannot be read or written (a clear message)."""


def permissions() -> Dict[str, Dict[str, Perm]]:
    """role -> table -> what the role may do in it."""
    return {AGENT_ROLE: {"Node": ("Node", ("name",), True,
                                  tuple(sorted(AGENT_NODE_COLUMNS)))}}


def check_targets(targets: Sequence[str]) -> List[str]:
    """The agents' remotes, checked: pssl:PORT each, no duplicates."""
    out: List[str] = []
    for t in targets:
        m = TARGET_RE.match(t)
        if not m or not 1 <= int(m.group(1)) <= 65535:
            raise RbacError("agent remote %r: expected pssl:PORT (the same "
                            "on every member, and over SSL: the role "
                            "needs the client's certificate)" % t)
        if t in out:
            raise RbacError("agent remote %r given twice" % t)
        out.append(t)
    return out


def desired(targets: Sequence[str]) -> State:
    return permissions(), tuple(sorted((t, AGENT_ROLE) for t in targets))


# ------------------------------------------------------- the wire's values

def _atoms(value: Any, what: str) -> List[Any]:
    """An OVSDB set (or a single atom) as a list."""
    if isinstance(value, list) and len(value) == 2 and value[0] == "set":
        if not isinstance(value[1], list):
            raise RbacError("%s: malformed set %r" % (what, value))
        return list(value[1])
    return [value]


def _uuid(value: Any, what: str) -> str:
    if (isinstance(value, list) and len(value) == 2 and value[0] == "uuid"
            and isinstance(value[1], str)):
        return value[1]
    raise RbacError("%s: expected a uuid, got %r" % (what, value))


def _strings(value: Any, what: str) -> Tuple[str, ...]:
    out = _atoms(value, what)
    if not all(isinstance(s, str) for s in out):
        raise RbacError("%s: expected strings, got %r" % (what, value))
    return tuple(sorted(out))


def _map(value: Any, what: str) -> List[Tuple[Any, Any]]:
    if (isinstance(value, list) and len(value) == 2 and value[0] == "map"
            and isinstance(value[1], list)
            and all(isinstance(p, list) and len(p) == 2
                    for p in value[1])):
        return [(k, v) for k, v in value[1]]
    raise RbacError("%s: expected a map, got %r" % (what, value))


def current(rows: Dict[str, List[Dict[str, Any]]]) -> State:
    """The state the rows of TABLES (table -> rows, as "select" gives
    them) make."""
    perms = {}
    for r in rows["RBAC_Permission"]:
        what = "RBAC_Permission row %r" % (r.get("_uuid"),)
        if not isinstance(r.get("table"), str) or not isinstance(
                r.get("insert_delete"), bool):
            raise RbacError("%s: malformed" % what)
        perms[_uuid(r.get("_uuid"), what)] = (
            r["table"], _strings(r.get("authorization"), what),
            r["insert_delete"], _strings(r.get("update"), what))
    roles: Dict[str, Dict[str, Perm]] = {}
    for r in rows["RBAC_Role"]:
        what = "RBAC_Role row %r" % (r.get("name"),)
        if not isinstance(r.get("name"), str) or r["name"] in roles:
            # A name twice: not the state wanted, whatever it says.
            roles[""] = {}
            continue
        roles[r["name"]] = {
            k: perms.get(_uuid(v, what), ("", (), False, ()))
            for k, v in _map(r.get("permissions"), what)}
    conns = {}
    for r in rows["Connection"]:
        what = "Connection row %r" % (r.get("target"),)
        conns[_uuid(r.get("_uuid"), what)] = (r.get("target"), r.get("role"))
    agents: List[Tuple[str, str]] = []
    for r in rows["DB_Global"]:
        what = "DB_Global row"
        agents += [conns.get(_uuid(u, what), ("", ""))
                   for u in _atoms(r.get("connections"), what)]
    if len(rows["DB_Global"]) != 1:
        agents.append(("", "%d DB_Global rows" % len(rows["DB_Global"])))
    return roles, tuple(sorted(agents))


def write_ops(targets: Sequence[str]) -> List[Dict[str, Any]]:
    """The operations that replace the rows of TABLES with the desired
    ones."""
    ops: List[Dict[str, Any]] = [
        {"op": "delete", "table": t, "where": []} for t in TABLES]
    roles = permissions()
    for role, tables in sorted(roles.items()):
        refs = []
        for i, (table, perm) in enumerate(sorted(tables.items())):
            name = "perm%d" % i
            ops.append({"op": "insert", "table": "RBAC_Permission",
                        "uuid-name": name,
                        "row": {"table": perm[0],
                                "authorization": ["set", list(perm[1])],
                                "insert_delete": perm[2],
                                "update": ["set", list(perm[3])]}})
            refs.append([table, ["named-uuid", name]])
        ops.append({"op": "insert", "table": "RBAC_Role",
                    "row": {"name": role,
                            "permissions": ["map", refs]}})
    conns = []
    for i, t in enumerate(targets):
        name = "conn%d" % i
        ops.append({"op": "insert", "table": "Connection",
                    "uuid-name": name,
                    "row": {"target": t, "role": AGENT_ROLE}})
        conns.append(["named-uuid", name])
    ops.append({"op": "insert", "table": "DB_Global",
                "row": {"connections": ["set", conns]}})
    ops.append({"op": "comment",
                "comment": "ovs-daqfabric-db: RBAC roles and agent remotes"})
    return ops


# ------------------------------------------------------------ the server

def transact(remote: str, ops: List[Dict[str, Any]], timeout: int,
             client: Optional[str] = None) -> List[Any]:
    """Runs 'ops' in one transaction with ovsdb-client: their results
    (RbacError if it failed, whole)."""
    client = client or os.environ.get("OVSDB_CLIENT") or "ovsdb-client"
    try:
        p = subprocess.run(
            [client, "--timeout=%d" % timeout, "transact", remote,
             json.dumps([SCHEMA_NAME] + ops)],
            capture_output=True, text=True, timeout=timeout + 10)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RbacError("%s transact %s: %s" % (client, remote, e))
    if p.returncode != 0:
        raise RbacError("%s transact %s: %s" % (
            client, remote, p.stderr.strip() or "exit %d" % p.returncode))
    try:
        results = json.loads(p.stdout)
    except ValueError:
        raise RbacError("%s transact %s: not JSON: %r"
                        % (client, remote, p.stdout[:200]))
    if not isinstance(results, list):
        raise RbacError("%s: unexpected reply %r" % (remote, results))
    for r in results:
        if isinstance(r, dict) and "error" in r:
            raise RbacError("%s: %s: %s" % (remote, r["error"],
                                            r.get("details", "")))
    if len(results) < len(ops):
        raise RbacError("%s: unexpected reply %r" % (remote, results))
    return results


def read(remote: str, timeout: int, client: Optional[str] = None
         ) -> Dict[str, List[Dict[str, Any]]]:
    """The rows of TABLES."""
    try:
        results = transact(remote, [{"op": "select", "table": t,
                                     "where": []} for t in TABLES],
                           timeout, client)
    except RbacError as e:
        if "no table named" in str(e).lower():
            raise RbacError("%s: the fabric database has no RBAC tables "
                            "(schema older than 1.7.0): convert it first "
                            "(ovs-daqfabric-db upgrade): %s" % (remote, e))
        raise
    out = {}
    for t, r in zip(TABLES, results):
        if not isinstance(r, dict) or not isinstance(r.get("rows"), list):
            raise RbacError("%s: select %s: unexpected reply %r"
                            % (remote, t, r))
        out[t] = [row for row in r["rows"] if isinstance(row, dict)]
    return out


def ensure(remote: str, targets: Sequence[str], timeout: int = 60,
           client: Optional[str] = None) -> bool:
    """Makes the RBAC rows and the agents' Connection rows of the
    database at 'remote' (a remote without a role) what they should be:
    whether it wrote them (false: they already were)."""
    targets = check_targets(targets)
    want = desired(targets)
    rows = read(remote, timeout, client)
    try:
        have: Optional[State] = current(rows)
    except RbacError:
        # Rows this module cannot make sense of: replaced.
        have = None
    if have == want:
        return False
    transact(remote, write_ops(targets), timeout, client)
    return True


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m ovs_daqring.fabric.rbac",
        description="Write the fabric database's RBAC role %r (agents "
        "write only their own Node row, named by their certificate's CN) "
        "and the Connection rows of the agents' remotes, if they differ. "
        "The member serves them with --remote=%s." % (AGENT_ROLE,
                                                      ROLE_REMOTES))
    parser.add_argument("db", help="the database, through a remote "
                        "without a role, e.g. unix:/run/openvswitch/"
                        "daqfabric.sock")
    parser.add_argument("targets", nargs="*", metavar="pssl:PORT",
                        help="the agents' remotes (none: no agent remote)")
    parser.add_argument("--timeout", type=int, default=60,
                        help="seconds (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        wrote = ensure(args.db, args.targets, args.timeout)
    except RbacError as e:
        print("ovs-daqfabric-db: error: %s" % e, file=sys.stderr)
        return 1
    print("ovs-daqfabric-db: role %s, agent remotes: %s (%s)" % (
        AGENT_ROLE, " ".join(args.targets) or "none",
        "written" if wrote else "unchanged"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
