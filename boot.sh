#! /bin/sh
# Generates ./configure from configure.ac (make does this by itself).
set -e
cd "$(dirname "$0")"
autoconf
rm -rf autom4te.cache
