"""Helpers shared by the pytest files of daq-incast's options (not a test
file itself)."""

import argparse
import json
import os
from typing import Any, Dict, List, Tuple

from ovs_daqring.hosts import HostInfo
from ovs_daqring.incast import config, options, switch, validation


def cfg(*argv: str) -> config.Config:
    """daq-incast's configuration for ARGV on a root host with 2 CPUs and
    hugepages, without looking at the machine it runs on."""
    h = HostInfo(is_root=True, cpus=[0, 1], hugepages_free_mb=4096,
                 hugetlbfs_mounted=True)
    ns: argparse.Namespace = options.parse_args(list(argv))
    return validation.validate(ns, h, check_env=False)


def fabric_run_skip_reason(ovs_build: str) -> str:
    """Why a real daq-incast run through a fabric cannot run here ("":
    it can): it needs root, the OVS build OVS_BUILD and OVS's Python
    library."""
    if os.geteuid() != 0:
        return "needs root (namespaces, hugepages)"
    if not os.access(os.path.join(ovs_build, "vswitchd", "ovs-vswitchd"),
                     os.X_OK):
        return "needs the OVS build in ovs/"
    try:
        import ovs  # noqa: F401
    except ImportError:
        return "needs python3-openvswitch (run with /usr/bin/python3)"
    return ""


def programmed_map(tmp_path: Any, monkeypatch: Any, run_cfg: Any,
                   plan: Any, *args: Any, **kw: Any
                   ) -> Tuple[str, Dict[str, Any]]:
    """The DCM map daq-incast hands to ovs-daqctl (switch.program_
    daqrings(switch, PLAN, *ARGS, **KW) on a switch of RUN_CFG in
    TMP_PATH that has DPDK and daqrings, ovs-daqctl not run): its path
    and its document.  It is handed over as one "apply"."""
    calls: List[List[str]] = []

    class FakeSwitch:
        dir = str(tmp_path)
        cfg = run_cfg

        def iface_types(self) -> List[str]:
            return ["daqring", "dpdk"]

        def _check_ports(self, names: List[str]) -> None:
            pass

    monkeypatch.setattr(switch, "daqctl",
                        lambda sw, *a, **k: calls.append(list(a)))
    switch.program_daqrings(FakeSwitch(), plan, *args,  # type: ignore
                            **kw)
    assert calls == [["apply", str(tmp_path / "dcm-map.json")]], calls
    with open(calls[0][1]) as f:
        doc: Dict[str, Any] = json.load(f)
    return calls[0][1], doc
