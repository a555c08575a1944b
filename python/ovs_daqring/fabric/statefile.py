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


"""A switch agent's state file (--state-file): the last slice the agent
brought its switch to, kept on the disk so that a restarted agent holds
its switch to it before, or without, the fabric database.

It is written as a daemon's state is (save_cache()) and read without
trusting it (load_cache()): a file that is not the agent's own, or not
a slice the agent can hold, is said in the log and ignored (the agent
waits for the fabric database), never a crash, which --monitor would
only repeat."""

import errno
import json
import os
import stat
import tempfile
import typing
from dataclasses import fields
from typing import Any, Dict, List, Optional, Tuple

from ..daqctl.model import Dcm
from .flows import dcm_of_json, route_table
from .node import vlog

CACHE_VERSION = 1

# The largest state file read, in bytes.  The largest slice is of the
# largest fabric the agents are sized and measured for (daq-bench
# --fabric: 2048 DCMs): were a switch to hold a ring and a route each
# way for every DCM, of 16 four-tuples each (about 1 KB of ring and
# 1.5 KB of routes per DCM, tests/fabric/test_statefile.py), its file
# would be about 5 MB.  64 MiB leaves more than ten times that; a larger
# file is not one an agent wrote, and reading it would take several
# times its size in memory before the agent could even tell.
STATE_FILE_MAX = 64 << 20

_NONE = type(None)


# JSON's types as Python gives them, by name (bool first: a boolean is
# an int too).
_TYPE_NAMES = ((bool, "a boolean"), (int, "an integer"), (float, "a number"),
               (str, "a string"), (list, "an array"), (dict, "an object"),
               (_NONE, "null"))


def _kind(v: Any) -> str:
    """What a JSON value is, for a message."""
    return next((name for t, name in _TYPE_NAMES if isinstance(v, t)),
                type(v).__name__)


def _kinds(types: Tuple[Any, ...]) -> str:
    return " or ".join(dict(_TYPE_NAMES).get(t, t.__name__) for t in types)


def _is(v: Any, types: Tuple[Any, ...]) -> bool:
    """Whether JSON value 'v' is of one of 'types' (a boolean is not an
    integer, although Python says it is)."""
    if isinstance(v, bool):
        return bool in types
    return isinstance(v, types)


def _hint_types(hint: Any) -> Tuple[Any, ...]:
    if typing.get_origin(hint) is typing.Union:
        return tuple(typing.get_args(hint))
    return (hint,)


# The types of a ring's keys (flows.dcm_json(): Dcm's fields but 'where'),
# from Dcm's annotations (str, int, Optional of those); 'tuples' is a
# list, which parse_tuple() checks.
_RING_TYPES: Dict[str, Tuple[Any, ...]] = {
    f.name: _hint_types(typing.get_type_hints(Dcm)[f.name])
    for f in fields(Dcm) if f.name not in ("where", "tuples")}
_RING_TYPES["tuples"] = (list,)

# A route's keys (flows.slice_json()): required, and their types.  An
# agent of before the backups, priorities and MACs kept only the first
# three (flows.route_table() has defaults for the others).
_ROUTE_TYPES: Dict[str, Tuple[bool, Tuple[Any, ...]]] = {
    "dcm": (True, (str,)), "match": (True, (str,)), "port": (True, (str,)),
    "backups": (False, (list,)), "priority": (False, (int,)),
    "host": (False, (str,)), "dl_dst": (False, (str, _NONE))}


def _get(obj: Dict[str, Any], key: str, types: Tuple[Any, ...],
         where: str, required: bool = True) -> Any:
    """obj[key], which must be one of 'types' (None if not 'required'
    and absent)."""
    if key not in obj:
        if required:
            raise ValueError("%sno %r" % (where, key))
        return None
    v = obj[key]
    if not _is(v, types):
        raise ValueError("%s%r is %s, not %s" % (where, key, _kind(v),
                                                 _kinds(types)))
    return v


def _strings(v: Optional[List[Any]], what: str) -> None:
    for x in v or []:
        if not isinstance(x, str):
            raise ValueError("%s: %s in a list of strings"
                             % (what, _kind(x)))


def check_want(c: Any, node: str) -> Dict[str, Any]:
    """'c', a state file's JSON, if it is a want of 'node' (the format
    of SwitchHold.want) with all that the agent reads of it (SwitchHold
    and Agent) of the type the agent reads it as; else ValueError (or
    another exception) saying why."""
    if not isinstance(c, dict):
        raise ValueError("%s, not an object" % _kind(c))
    version = c.get("version")
    if not _is(version, (int,)) or version != CACHE_VERSION \
            or c.get("node") != node:
        raise ValueError("it is not node %s's (version %d)"
                         % (node, CACHE_VERSION))
    _get(c, "generation", (int,), "")
    t = _get(c, "target", (dict,), "")
    _get(t, "db", (str,), "target: ")
    _get(t, "bridge", (str,), "target: ")
    _get(t, "of", (str, _NONE), "target: ")
    _strings(_get(c, "ports", (list,), ""), "ports")
    for k, v in (_get(c, "bfd", (dict,), "", False) or {}).items():
        if not isinstance(v, str):
            raise ValueError("bfd: %r is %s, not a string" % (k, _kind(v)))
    _strings(_get(c, "bfd_ports", (list,), "", False), "bfd_ports")
    sl = _get(c, "slice", (dict,), "")
    rings = _get(sl, "rings", (list,), "slice: ")
    for i, d in enumerate(rings):
        where = "slice: ring %d: " % i
        if not isinstance(d, dict):
            raise ValueError("%s%s, not an object" % (where, _kind(d)))
        for k in d:
            if k not in _RING_TYPES:
                raise ValueError("%sunknown key %r" % (where, k))
            _get(d, k, _RING_TYPES[k], where)
        # Its required fields, its four-tuples.
        dcm_of_json(d)
    routes = _get(sl, "routes", (list,), "slice: ")
    for i, r in enumerate(routes):
        where = "slice: route %d: " % i
        if not isinstance(r, dict):
            raise ValueError("%s%s, not an object" % (where, _kind(r)))
        for k, (required, types) in _ROUTE_TYPES.items():
            _get(r, k, types, where, required)
        _strings(r.get("backups"), where + "backups")
    # Its matches.
    route_table(routes)
    return c


def read_state(path: str) -> bytes:
    """The bytes of state file 'path', read only if it is the agent's
    own: not a symbolic link (O_NOFOLLOW: it is not followed), a regular
    file (a FIFO is not waited on), of the agent's user, not writable by
    its group or others, of at most STATE_FILE_MAX bytes.  Raises
    FileNotFoundError (no file), another OSError, or ValueError (why the
    file is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError("it is a symbolic link (not followed)") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_uid != os.geteuid():
            raise ValueError("owned by uid %d, not by the agent's (%d)"
                             % (st.st_uid, os.geteuid()))
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ValueError("writable by others than its owner (mode %04o)"
                             % stat.S_IMODE(st.st_mode))
        too_big = ValueError("more than %d bytes, too large for a state "
                             "file" % STATE_FILE_MAX)
        if st.st_size > STATE_FILE_MAX:
            raise too_big
        chunks = []
        n = 0
        while True:
            b = os.read(fd, min(1 << 20, STATE_FILE_MAX + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
            if n > STATE_FILE_MAX:
                raise too_big
    finally:
        os.close(fd)
    return b"".join(chunks)


def load_cache(path: str, node: str) -> Optional[Dict[str, Any]]:
    """The last slice applied, or None: no file, or one that cannot be
    read (read_state()), or is not this node's or not a want the agent
    can hold (check_want()), said in the log.  Never raises."""
    try:
        c = json.loads(read_state(path).decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError, MemoryError) as e:
        # ValueError: the file refused, not UTF-8, not JSON;
        # RecursionError: JSON nested too deep.
        vlog.warn("%s: cannot read the last applied slice, ignored: %s"
                  % (path, e))
        return None
    try:
        return check_want(c, node)
    except Exception as e:
        # Whatever a file that is not a want makes the checks raise
        # (KeyError, TypeError, ValueError, AttributeError...): a crash
        # here would be one at every restart.
        vlog.warn("%s: ignoring the last applied slice: %s" % (path, e))
        return None


def save_cache(path: str, text: str) -> None:
    """Writes 'text' (a want as JSON) to 'path' as a daemon's state is
    written: into a new file of mode 0600 whatever the umask, of a name
    nobody can foresee in the same directory (tempfile.mkstemp(),
    O_EXCL: never through a link someone left there), flushed to the
    disk, renamed over 'path' (a symbolic link there is replaced, not
    followed), and the directory flushed too: a crash leaves the old
    file or the new one, and the new one once this returns.  Raises
    OSError, the temporary file removed."""
    d, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % name, suffix=".tmp", dir=d)
    renamed = False
    try:
        try:
            os.fchmod(fd, 0o600)
            data = (text + "\n").encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        renamed = True
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except BaseException:
        if not renamed:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
