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

dnl The pinned OVS base: Debian 12's openvswitch-source package.  Change these
dnl three values (and nothing else) to move the pin; see
dnl Documentation/internals/ovs-pin.rst.
m4_define([daq_pin_deb_package], [openvswitch-source])
m4_define([daq_pin_deb_version], [3.1.0-2+deb12u1])
m4_define([daq_pin_sha256],
          [82dde6737921b63b284ad8399f95c7f1de94e1b96b2036dcf4a78c9f969ab03f])
m4_define([daq_pin_ovs_version], [3.1.0])

dnl DAQ_CHECK_OVS
dnl
dnl Chooses the OVS base, in the spirit of OVN's OVN_CHECK_OVS:
dnl   --with-ovs-source=DIR (or OVS_SOURCE=DIR in the environment): an upstream
dnl       Open vSwitch v3.1.x checkout or release tree;
dnl   otherwise the pinned tarball of Debian's openvswitch-source package
dnl       (--with-ovs-tarball=FILE to point elsewhere), checked by package
dnl       version and sha256.
AC_DEFUN([DAQ_CHECK_OVS], [
  AC_ARG_VAR([OVS_SOURCE], [upstream Open vSwitch v3.1.x source tree to use
              instead of the pinned Debian tarball])
  AC_ARG_WITH([ovs-source],
    [AS_HELP_STRING([--with-ovs-source=DIR],
                    [use the Open vSwitch v3.1.x source tree in DIR instead
                     of the pinned Debian tarball])],
    [OVS_SOURCE=$withval])
  AC_ARG_WITH([ovs-tarball],
    [AS_HELP_STRING([--with-ovs-tarball=FILE],
                    [pinned OVS tarball (default: the one of Debian package
                     daq_pin_deb_package daq_pin_deb_version)])],
    [OVS_TARBALL=$withval],
    [OVS_TARBALL=/usr/src/openvswitch/openvswitch.tar.gz])

  AC_SUBST([DAQ_PIN_DEB_PACKAGE], [daq_pin_deb_package])
  AC_SUBST([DAQ_PIN_DEB_VERSION], [daq_pin_deb_version])
  AC_SUBST([DAQ_PIN_SHA256], [daq_pin_sha256])
  AC_SUBST([DAQ_PIN_OVS_VERSION], [daq_pin_ovs_version])

  if test -n "$OVS_SOURCE"; then
    AC_MSG_CHECKING([the Open vSwitch tree in $OVS_SOURCE])
    OVS_SOURCE=`cd "$OVS_SOURCE" 2>/dev/null && pwd`
    if test -z "$OVS_SOURCE" || test ! -f "$OVS_SOURCE/configure.ac"; then
      AC_MSG_ERROR([--with-ovs-source / OVS_SOURCE: no Open vSwitch source tree (configure.ac) there])
    fi
    ovs_version=`sed -n 's/^AC@&t@_INIT(openvswitch, *\([[^,]]*\),.*/\1/p' "$OVS_SOURCE/configure.ac"`
    case $ovs_version in
      3.1.*) AC_MSG_RESULT([version $ovs_version]) ;;
      *) AC_MSG_ERROR([$OVS_SOURCE is Open vSwitch '$ovs_version'; this series is for v3.1.x (see Documentation/internals/ovs-pin.rst to rebase)]) ;;
    esac
    OVS_BASE_KIND=source
    OVS_TARBALL=
    OVS_BASE_ID="source:$OVS_SOURCE"
    OVS_BASE_DESC="Open vSwitch $ovs_version from $OVS_SOURCE (unpinned)"
  else
    AC_MSG_CHECKING([for Debian package daq_pin_deb_package daq_pin_deb_version])
    deb_version=`dpkg-query -W -f='${Version}' daq_pin_deb_package 2>/dev/null`
    if test ! -f "$OVS_TARBALL"; then
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([the pinned OVS base $OVS_TARBALL is missing: install Debian package daq_pin_deb_package (version daq_pin_deb_version), e.g. with 'make deps', or use --with-ovs-source=DIR])
    fi
    if test "$OVS_TARBALL" = /usr/src/openvswitch/openvswitch.tar.gz \
       && test "$deb_version" != "daq_pin_deb_version"; then
      AC_MSG_RESULT([$deb_version])
      AC_MSG_ERROR([Debian package daq_pin_deb_package is version '$deb_version', the series is pinned to daq_pin_deb_version: install that version (apt-get install daq_pin_deb_package=daq_pin_deb_version) or use --with-ovs-source=DIR])
    fi
    AC_MSG_RESULT([yes])
    AC_MSG_CHECKING([sha256 of $OVS_TARBALL])
    sum=`sha256sum "$OVS_TARBALL" | cut -d' ' -f1`
    if test "$sum" != "daq_pin_sha256"; then
      AC_MSG_RESULT([$sum])
      AC_MSG_ERROR([$OVS_TARBALL has sha256 $sum, expected daq_pin_sha256 (Debian daq_pin_deb_package daq_pin_deb_version): reinstall the package or use --with-ovs-source=DIR])
    fi
    AC_MSG_RESULT([ok])
    OVS_BASE_KIND=tarball
    OVS_BASE_ID="tarball:daq_pin_sha256"
    OVS_BASE_DESC="Open vSwitch daq_pin_ovs_version (Debian daq_pin_deb_version, sha256 daq_pin_sha256)"
  fi
  AC_SUBST([OVS_SOURCE])
  AC_SUBST([OVS_TARBALL])
  AC_SUBST([OVS_BASE_KIND])
  AC_SUBST([OVS_BASE_ID])
  AC_SUBST([OVS_BASE_DESC])
])

dnl DAQ_CHECK_DPDK
dnl
dnl The daqring port needs OVS built with DPDK; we require Debian's 22.11.
AC_DEFUN([DAQ_CHECK_DPDK], [
  AC_PATH_PROG([PKG_CONFIG], [pkg-config], [no])
  AS_IF([test "$PKG_CONFIG" = no],
        [AC_MSG_ERROR([pkg-config is required (Debian package pkg-config; run 'make deps')])])
  AC_MSG_CHECKING([for DPDK 22.11 (libdpdk)])
  DPDK_VERSION=`$PKG_CONFIG --modversion libdpdk 2>/dev/null`
  case $DPDK_VERSION in
    22.11*) AC_MSG_RESULT([$DPDK_VERSION]) ;;
    "") AC_MSG_RESULT([no])
        AC_MSG_ERROR([DPDK not found by pkg-config: install Debian package libdpdk-dev (run 'make deps')]) ;;
    *) AC_MSG_RESULT([$DPDK_VERSION])
       AC_MSG_ERROR([DPDK $DPDK_VERSION found; Open vSwitch 3.1 needs DPDK 22.11 (Debian package libdpdk-dev)]) ;;
  esac
  AC_SUBST([DPDK_VERSION])
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
