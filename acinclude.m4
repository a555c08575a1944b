# -*- autoconf -*-

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

dnl The pinned OVS bases.  Change these values (and nothing else) to move a
dnl pin; see Documentation/internals/ovs-pin.rst.
dnl
dnl 3.1 (the default): Debian 12's openvswitch-source package, installed by
dnl 'make deps'; its tarball is checked.  DPDK 22.11 is Debian 12's
dnl libdpdk-dev, linked shared.
m4_define([daq_pin31_deb_package], [openvswitch-source])
m4_define([daq_pin31_deb_version], [3.1.0-2+deb12u1])
m4_define([daq_pin31_sha256],
          [82dde6737921b63b284ad8399f95c7f1de94e1b96b2036dcf4a78c9f969ab03f])
m4_define([daq_pin31_ovs_version], [3.1.0])
dnl 3.5: Debian 13's openvswitch-source package (architecture all; it ships
dnl the source tree unpacked, so the .deb itself is pinned) and Debian 13's
dnl libdpdk-dev (DPDK 24.11, whose static archives are linked), both
dnl downloaded into the machine's cache by build-aux/fetch-deb, never
dnl installed.
m4_define([daq_pin35_deb_package], [openvswitch-source])
m4_define([daq_pin35_deb_version], [3.5.0-1])
m4_define([daq_pin35_sha256],
          [aca60ac8c4ad49a6908c9d8201b97bd75898c54357f880ad50540b0461461bb9])
m4_define([daq_pin35_ovs_version], [3.5.0])
m4_define([daq_pin35_dpdk_deb_package], [libdpdk-dev])
m4_define([daq_pin35_dpdk_deb_version], [24.11.8-0+deb13u1])
m4_define([daq_pin35_dpdk_sha256],
          [a555a71c1fc3ca45fb9bd70e777fb06db5bf861232d9aedb421e2a7ef538d195])
dnl 4.0: Debian unstable's (sid's) openvswitch-source package (architecture
dnl all, the source tree as for 3.5) and libdpdk-dev (DPDK 25.11, static
dnl archives), fetched like base 3.5's.  Unstable moves fastest: see "When
dnl Debian moves" in Documentation/internals/ovs-pin.rst.
m4_define([daq_pin40_deb_package], [openvswitch-source])
m4_define([daq_pin40_deb_version], [4.0.0-2])
m4_define([daq_pin40_sha256],
          [9ba8f509b7b1e4fa2c2a592e9fd51242749dfcf42c594e043e0d6abdb8105be4])
m4_define([daq_pin40_ovs_version], [4.0.0])
m4_define([daq_pin40_dpdk_deb_package], [libdpdk-dev])
m4_define([daq_pin40_dpdk_deb_version], [25.11.4-1])
m4_define([daq_pin40_dpdk_sha256],
          [46033a751d45f7737e79f06282379aafadd26775e151495a2144b58ada083ebf])
dnl The DPDK drivers linked into ovs-vswitchd on bases 3.5 and 4.0: what the tests
dnl use (vdev bus, null, ring, pcap, af_packet, tap, vhost) and the PCI NICs
dnl of server-switch nodes; see Documentation/internals/ovs-pin.rst.
m4_define([daq_pin35_dpdk_drivers],
          [bus_vdev bus_pci mempool_ring net_null net_ring net_pcap dnl
net_af_packet net_tap net_vhost net_ixgbe net_i40e net_ice net_bnxt])
dnl The DPDK drivers linked into the EL9 RPM ("make rpm", which always builds
dnl base 3.5): the vdev and PCI buses, the NICs of server-switch nodes and
dnl the software ports, without net_pcap (Debian's libpcap.so.0.8 is
dnl libpcap.so.1 on EL9) and without drivers of other base libraries; mlx5
dnl needs libibverbs.so.1 and libmlx5.so.1, which EL9's rdma-core package
dnl libibverbs ships.  See Documentation/intro/install/rpm.rst.
m4_define([daq_rpm_dpdk_drivers],
          [bus_vdev bus_pci mempool_ring net_null net_ring net_af_packet dnl
net_ixgbe net_i40e net_ice net_bnxt net_mlx5])

dnl DAQ_DEB_USED(DEB, PINNED-VERSION)
dnl
dnl After build-aux/fetch-deb: sets daq_deb_version and daq_deb_sha256 to
dnl the version and sha256 of the .deb it returned, which is the pinned one
dnl or, once Debian no longer serves the pin, the newest of the same
dnl upstream series (checked against the suite's signed index); warns in
dnl the latter case, so that the build log says which one was used.
AC_DEFUN([DAQ_DEB_USED], [
  daq_deb_version=`dpkg-deb -f "$1" Version 2>/dev/null`
  daq_deb_sha256=`sha256sum "$1" | cut -d' ' -f1`
  if test "$daq_deb_version" != "$2"; then
    AC_MSG_WARN([the pinned $2 is no longer served by Debian: using $daq_deb_version of the same upstream series (sha256 $daq_deb_sha256, checked against the signed index); move the pin (Documentation/internals/ovs-pin.rst)])
  fi
])

dnl DAQ_RPM_PINS
dnl
dnl "make rpm" builds the EL9 RPMs from base 3.5 whatever base this tree is
dnl configured with: its pins go to config.mk as DAQ_RPM_*.
AC_DEFUN([DAQ_RPM_PINS], [
  AC_SUBST([DAQ_RPM_BASE_VERSION], [daq_pin35_ovs_version])
  AC_SUBST([DAQ_RPM_OVS_DEB_PACKAGE], [daq_pin35_deb_package])
  AC_SUBST([DAQ_RPM_OVS_DEB_VERSION], [daq_pin35_deb_version])
  AC_SUBST([DAQ_RPM_OVS_SHA256], [daq_pin35_sha256])
  AC_SUBST([DAQ_RPM_DPDK_DEB_PACKAGE], [daq_pin35_dpdk_deb_package])
  AC_SUBST([DAQ_RPM_DPDK_DEB_VERSION], [daq_pin35_dpdk_deb_version])
  AC_SUBST([DAQ_RPM_DPDK_SHA256], [daq_pin35_dpdk_sha256])
  AC_SUBST([DAQ_RPM_DPDK_DRIVERS], ["m4_normalize(daq_rpm_dpdk_drivers)"])
])

dnl DAQ_CHECK_OVS
dnl
dnl Chooses the OVS base, in the spirit of OVN's OVN_CHECK_OVS:
dnl   --with-ovs-base=3.1|3.5 picks one of the pinned bases (default 3.1);
dnl   --with-ovs-source=DIR (or OVS_SOURCE=DIR in the environment): an upstream
dnl       Open vSwitch checkout or release tree of the chosen base's series;
dnl   otherwise the pinned Debian package, checked by version and sha256
dnl       (--with-ovs-tarball=FILE to point elsewhere, base 3.1 only).
AC_DEFUN([DAQ_CHECK_OVS], [
  AC_ARG_WITH([ovs-base],
    [AS_HELP_STRING([--with-ovs-base=3.1|3.5|4.0],
                    [the pinned OVS base to build on: 3.1 (Debian 12, DPDK
                     22.11; the default), 3.5 (Debian 13, DPDK 24.11) or
                     4.0 (Debian unstable, DPDK 25.11)])],
    [], [with_ovs_base=3.1])
  case $with_ovs_base in
    3.1|3.5|4.0) DAQ_BASE=$with_ovs_base ;;
    *) AC_MSG_ERROR([--with-ovs-base=$with_ovs_base: expected 3.1, 3.5 or 4.0]) ;;
  esac
  dnl The Debian suite of the bases whose .deb files build-aux/fetch-deb
  dnl downloads.
  case $DAQ_BASE in
    3.5) daq_deb_suite=trixie daq_deb_release="Debian 13" ;;
    4.0) daq_deb_suite=sid daq_deb_release="Debian unstable" ;;
    *) daq_deb_suite= daq_deb_release= ;;
  esac
  AC_SUBST([DAQ_BASE])
  AC_ARG_VAR([OVS_SOURCE], [upstream Open vSwitch source tree (of the chosen
              base's series) to use instead of the pinned Debian package])
  AC_ARG_WITH([ovs-source],
    [AS_HELP_STRING([--with-ovs-source=DIR],
                    [use the Open vSwitch v3.1.x (or, with
                     --with-ovs-base=3.5 or 4.0, v3.5.x or v4.0.x) source
                     tree in DIR instead of the pinned Debian package])],
    [OVS_SOURCE=$withval])
  AC_ARG_WITH([ovs-tarball],
    [AS_HELP_STRING([--with-ovs-tarball=FILE],
                    [pinned OVS tarball of base 3.1 (default: the one of
                     Debian package daq_pin31_deb_package
                     daq_pin31_deb_version)])],
    [OVS_TARBALL=$withval],
    [OVS_TARBALL=/usr/src/openvswitch/openvswitch.tar.gz])

  if test $DAQ_BASE = 3.1; then
    DAQ_PIN_DEB_PACKAGE=daq_pin31_deb_package
    DAQ_PIN_DEB_VERSION=daq_pin31_deb_version
    DAQ_PIN_SHA256=daq_pin31_sha256
    DAQ_PIN_OVS_VERSION=daq_pin31_ovs_version
  elif test $DAQ_BASE = 3.5; then
    DAQ_PIN_DEB_PACKAGE=daq_pin35_deb_package
    DAQ_PIN_DEB_VERSION=daq_pin35_deb_version
    DAQ_PIN_SHA256=daq_pin35_sha256
    DAQ_PIN_OVS_VERSION=daq_pin35_ovs_version
  else
    DAQ_PIN_DEB_PACKAGE=daq_pin40_deb_package
    DAQ_PIN_DEB_VERSION=daq_pin40_deb_version
    DAQ_PIN_SHA256=daq_pin40_sha256
    DAQ_PIN_OVS_VERSION=daq_pin40_ovs_version
  fi
  AC_SUBST([DAQ_PIN_DEB_PACKAGE])
  AC_SUBST([DAQ_PIN_DEB_VERSION])
  AC_SUBST([DAQ_PIN_SHA256])
  AC_SUBST([DAQ_PIN_OVS_VERSION])

  OVS_DEB=
  if test -n "$OVS_SOURCE"; then
    AC_MSG_CHECKING([the Open vSwitch tree in $OVS_SOURCE])
    OVS_SOURCE=`cd "$OVS_SOURCE" 2>/dev/null && pwd`
    if test -z "$OVS_SOURCE" || test ! -f "$OVS_SOURCE/configure.ac"; then
      AC_MSG_ERROR([--with-ovs-source / OVS_SOURCE: no Open vSwitch source tree (configure.ac) there])
    fi
    ovs_version=`sed -n 's/^AC@&t@_INIT(openvswitch, *\([[^,]]*\),.*/\1/p' "$OVS_SOURCE/configure.ac"`
    case $ovs_version in
      $DAQ_BASE.*) AC_MSG_RESULT([version $ovs_version]) ;;
      *) AC_MSG_ERROR([$OVS_SOURCE is Open vSwitch '$ovs_version'; base $DAQ_BASE needs v$DAQ_BASE.x (--with-ovs-base chooses the base; see Documentation/internals/ovs-pin.rst to add one)]) ;;
    esac
    OVS_BASE_KIND=source
    OVS_TARBALL=
    OVS_BASE_ID="source:$OVS_SOURCE"
    OVS_BASE_DESC="Open vSwitch $ovs_version from $OVS_SOURCE (unpinned)"
  elif test -n "$daq_deb_suite"; then
    AC_MSG_CHECKING([for $daq_deb_release package $DAQ_PIN_DEB_PACKAGE $DAQ_PIN_DEB_VERSION])
    OVS_DEB=`build-aux/fetch-deb $DAQ_PIN_DEB_PACKAGE $DAQ_PIN_DEB_VERSION $DAQ_PIN_SHA256 $daq_deb_suite 2>&AS_MESSAGE_LOG_FD`
    if test -z "$OVS_DEB"; then
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([could not fetch $DAQ_PIN_DEB_PACKAGE $DAQ_PIN_DEB_VERSION from $daq_deb_release with the pinned sha256 $DAQ_PIN_SHA256 (see config.log)])
    fi
    AC_MSG_RESULT([$OVS_DEB (sha256 ok)])
    DAQ_DEB_USED([$OVS_DEB], [$DAQ_PIN_DEB_VERSION])
    OVS_BASE_KIND=deb
    OVS_TARBALL=
    OVS_BASE_ID="deb:$daq_deb_sha256"
    OVS_BASE_DESC="Open vSwitch $DAQ_PIN_OVS_VERSION (Debian $daq_deb_version, .deb sha256 $daq_deb_sha256)"
  else
    AC_MSG_CHECKING([for Debian package daq_pin31_deb_package daq_pin31_deb_version])
    deb_version=`dpkg-query -W -f='${Version}' daq_pin31_deb_package 2>/dev/null`
    if test ! -f "$OVS_TARBALL"; then
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([the pinned OVS base $OVS_TARBALL is missing: install Debian package daq_pin31_deb_package (version daq_pin31_deb_version), e.g. with 'make deps', or use --with-ovs-source=DIR])
    fi
    sum=`sha256sum "$OVS_TARBALL" | cut -d' ' -f1`
    if test "$OVS_TARBALL" = /usr/src/openvswitch/openvswitch.tar.gz \
       && test "$deb_version" != "daq_pin31_deb_version"; then
      dnl Debian keeps only the current version: after a point release the
      dnl pin can no longer be installed.  The installed package of the
      dnl same upstream series is taken, when apt's signed index knows it
      dnl and its files are those of the package (build-aux/deb-pin-check).
      AC_MSG_RESULT([$deb_version])
      if ! why=`build-aux/deb-pin-check daq_pin31_deb_package daq_pin31_deb_version 2>&1`; then
        AC_MSG_ERROR([$why; or use --with-ovs-source=DIR])
      fi
      AC_MSG_WARN([$why])
    else
      AC_MSG_RESULT([yes])
      AC_MSG_CHECKING([sha256 of $OVS_TARBALL])
      if test "$sum" != "daq_pin31_sha256"; then
        AC_MSG_RESULT([$sum])
        AC_MSG_ERROR([$OVS_TARBALL has sha256 $sum, expected daq_pin31_sha256 (Debian daq_pin31_deb_package daq_pin31_deb_version): reinstall the package or use --with-ovs-source=DIR])
      fi
      AC_MSG_RESULT([ok])
    fi
    OVS_BASE_KIND=tarball
    OVS_BASE_ID="tarball:$sum"
    OVS_BASE_DESC="Open vSwitch daq_pin31_ovs_version (Debian ${deb_version:-daq_pin31_deb_version}, sha256 $sum)"
  fi
  AC_SUBST([OVS_SOURCE])
  AC_SUBST([OVS_TARBALL])
  AC_SUBST([OVS_DEB])
  AC_SUBST([OVS_BASE_KIND])
  AC_SUBST([OVS_BASE_ID])
  AC_SUBST([OVS_BASE_DESC])
])

dnl DAQ_CHECK_DPDK
dnl
dnl The daqring port needs OVS built with DPDK.  Base 3.1: Debian 12's
dnl DPDK 22.11 (libdpdk-dev), linked shared.  Base 3.5: DPDK 24.11 from
dnl Debian 13's libdpdk-dev, base 4.0: DPDK 25.11 from Debian unstable's,
dnl linked static from a private prefix with the drivers of
dnl --with-dpdk-drivers (build-aux/dpdk-prefix).
AC_DEFUN([DAQ_CHECK_DPDK], [
  AC_PATH_PROG([PKG_CONFIG], [pkg-config], [no])
  AS_IF([test "$PKG_CONFIG" = no],
        [AC_MSG_ERROR([pkg-config is required (Debian package pkg-config; run 'make deps')])])
  AC_ARG_WITH([dpdk-drivers],
    [AS_HELP_STRING([--with-dpdk-drivers=LIST],
                    [bases 3.5 and 4.0: the DPDK drivers to link, as librte_ names
                     without the prefix (default: "daq_pin35_dpdk_drivers")])],
    [], [with_dpdk_drivers="daq_pin35_dpdk_drivers"])
  DAQ_DPDK_PKG_CONFIG_PATH=
  DAQ_DPDK_DRIVERS=
  if test $DAQ_BASE = 3.1; then
    DAQ_DPDK_MODE=shared
    AC_MSG_CHECKING([for DPDK 22.11 (libdpdk)])
    DPDK_VERSION=`$PKG_CONFIG --modversion libdpdk 2>/dev/null`
    case $DPDK_VERSION in
      22.11*) AC_MSG_RESULT([$DPDK_VERSION]) ;;
      "") AC_MSG_RESULT([no])
          AC_MSG_ERROR([DPDK not found by pkg-config: install Debian package libdpdk-dev (run 'make deps')]) ;;
      *) AC_MSG_RESULT([$DPDK_VERSION])
         AC_MSG_ERROR([DPDK $DPDK_VERSION found; Open vSwitch 3.1 needs DPDK 22.11 (Debian package libdpdk-dev)]) ;;
    esac
  else
    DAQ_DPDK_MODE=static
    DAQ_DPDK_DRIVERS=`echo $with_dpdk_drivers`
    if test $DAQ_BASE = 3.5; then
      dpdk_pkg=daq_pin35_dpdk_deb_package
      dpdk_pin=daq_pin35_dpdk_deb_version
      dpdk_sha=daq_pin35_dpdk_sha256
      dpdk_series=24.11
    else
      dpdk_pkg=daq_pin40_dpdk_deb_package
      dpdk_pin=daq_pin40_dpdk_deb_version
      dpdk_sha=daq_pin40_dpdk_sha256
      dpdk_series=25.11
    fi
    AC_MSG_CHECKING([for $daq_deb_release package $dpdk_pkg $dpdk_pin])
    dpdk_deb=`build-aux/fetch-deb $dpdk_pkg $dpdk_pin $dpdk_sha $daq_deb_suite 2>&AS_MESSAGE_LOG_FD`
    if test -z "$dpdk_deb"; then
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([could not fetch $dpdk_pkg $dpdk_pin from $daq_deb_release with the pinned sha256 $dpdk_sha (see config.log)])
    fi
    AC_MSG_RESULT([$dpdk_deb (sha256 ok)])
    DAQ_DEB_USED([$dpdk_deb], [$dpdk_pin])
    daq_dpdk_deb_version=$daq_deb_version
    AC_MSG_CHECKING([for the private static DPDK prefix])
    dpdk_prefix=`build-aux/dpdk-prefix "$dpdk_deb" "$DAQ_DPDK_DRIVERS" 2>&AS_MESSAGE_LOG_FD`
    if test -z "$dpdk_prefix"; then
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([build-aux/dpdk-prefix failed (see config.log)])
    fi
    AC_MSG_RESULT([$dpdk_prefix])
    DAQ_DPDK_PKG_CONFIG_PATH=$dpdk_prefix/lib/pkgconfig
    DPDK_VERSION=`PKG_CONFIG_PATH=$DAQ_DPDK_PKG_CONFIG_PATH $PKG_CONFIG --modversion libdpdk`
    case $DPDK_VERSION in
      $dpdk_series*) ;;
      *) AC_MSG_ERROR([DPDK '$DPDK_VERSION' in $dpdk_prefix; Open vSwitch $DAQ_BASE needs DPDK $dpdk_series]) ;;
    esac
    DPDK_VERSION="$DPDK_VERSION (Debian $daq_dpdk_deb_version, static: $DAQ_DPDK_DRIVERS)"
  fi
  AC_SUBST([DPDK_VERSION])
  AC_SUBST([DAQ_DPDK_MODE])
  AC_SUBST([DAQ_DPDK_DRIVERS])
  AC_SUBST([DAQ_DPDK_PKG_CONFIG_PATH])
])

dnl DAQ_CHECK_OPTIMIZATION
dnl
dnl --with-opt-level=LEVEL (0, 1, 2, 3, s; default 2) and
dnl --with-march=ARCH (default: none, i.e. the distribution's baseline).
AC_DEFUN([DAQ_CHECK_OPTIMIZATION], [
  AC_ARG_WITH([opt-level],
    [AS_HELP_STRING([--with-opt-level=LEVEL],
                    [compiler optimisation level for ovs-vswitchd:
                     0, 1, 2, 3 or s (default: 2)])],
    [], [with_opt_level=2])
  case $with_opt_level in
    0|1|2|3|s) ;;
    *) AC_MSG_ERROR([--with-opt-level=$with_opt_level: expected 0, 1, 2, 3 or s]) ;;
  esac
  AC_ARG_WITH([march],
    [AS_HELP_STRING([--with-march=ARCH],
                    [pass -march=ARCH to the compiler, e.g. native
                     (default: none; binaries then run on any x86-64)])],
    [], [with_march=no])
  DAQ_OPT_CFLAGS="-g -O$with_opt_level"
  if test "$with_march" != no && test "$with_march" != yes; then
    AC_MSG_CHECKING([whether the compiler accepts -march=$with_march])
    if echo 'int x;' | ${CC:-cc} -march="$with_march" -x c -c -o /dev/null - \
         >/dev/null 2>&1; then
      AC_MSG_RESULT([yes])
    else
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([--with-march=$with_march is not accepted by ${CC:-cc}])
    fi
    DAQ_OPT_CFLAGS="$DAQ_OPT_CFLAGS -march=$with_march"
  fi
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers],
                    [build ovs-vswitchd with AddressSanitizer and
                     UndefinedBehaviorSanitizer, to run the tests under them])],
    [], [enable_sanitizers=no])
  if test "$enable_sanitizers" = yes; then
    DAQ_OPT_CFLAGS="$DAQ_OPT_CFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-common"
  fi
  AC_SUBST([DAQ_OPT_CFLAGS])
])
