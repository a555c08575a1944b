"""ovs-daqctl (utilities/ovs-daqctl, ovs-daqctl(8)): daqring ports and the
DCM steering flows of a switch, from a DCM map."""
