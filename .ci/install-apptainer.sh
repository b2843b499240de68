#!/usr/bin/env bash
# Install Apptainer on a Debian 12 (bookworm) machine without touching the system's libraries,
# and print the folder to put on PATH. Does nothing but print it when the install exists.
#
# Bookworm has no apptainer package; Debian sid's needs glibc >= 2.38 (bookworm has 2.36). So:
# download apptainer, libc6, libseccomp2 and libsqlite3-0 from sid with a private apt
# configuration (only sid listed; mirror read from this machine's apt sources), unpack them
# into one folder, point the binaries' ELF interpreter and DT_RPATH at that folder's glibc
# (patchelf --force-rpath: with a DT_RUNPATH, sid's libsqlite3 would load the host's libm and
# fail on GLIBC_2.38), and lay the tree out as Apptainer expects when it relocates itself
# (starter under usr/libexec/apptainer, config under usr/etc/apptainer, state under usr/var).
# The .deb files are cached, so later runs do not depend on sid. Needs root (apt-get).
#
# Cache: ${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/rnnbench}/apptainer-{debs,<sha of debs+script>}
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnbench}
debs=$cache/apptainer-debs
packages="apptainer libc6 libseccomp2 libsqlite3-0"

missing=""
for tool in patchelf:patchelf mksquashfs:squashfs-tools debootstrap:debootstrap; do
    command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"
done
if [ -n "$missing" ]; then
    echo "install-apptainer: installing$missing from the machine's apt sources" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2
fi

if [ ! -d "$debs" ]; then
    mirror=$("$here/../containers/debian-mirror")
    apt_dir=$(mktemp -d)
    trap 'rm -rf "$apt_dir"' EXIT
    mkdir -p "$apt_dir"/lists/partial "$apt_dir"/archives/partial "$apt_dir"/debs
    echo "deb $mirror sid main" > "$apt_dir/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
              -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
              -o "APT::Get::List-Cleanup=0" -q)
    echo "install-apptainer: downloading $packages from $mirror sid" >&2
    apt-get "${apt_opts[@]}" update >&2
    (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download $packages >&2)
    mkdir -p "$cache" && mv "$apt_dir/debs" "$debs"
fi

key=$(cat "$debs"/*.deb "$0" | sha256sum | cut -c1-16)  # the debs and this layout
root=$cache/apptainer-$key
if [ ! -x "$root/bin/apptainer" ]; then
    rm -rf "$root" "$root.tmp"
    for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root.tmp"; done
    lib=$root/usr/lib/x86_64-linux-gnu
    # apptainer looks for its starter under lib/x86_64-linux-gnu/apptainer; the starter takes the
    # folder four levels above its real path as its prefix: so libexec, with a link from lib
    (cd "$root.tmp/usr/lib/x86_64-linux-gnu" && mkdir -p ../../libexec \
        && mv apptainer ../../libexec/ && ln -s ../../libexec/apptainer apptainer)
    mkdir -p "$root.tmp/usr/etc" && mv "$root.tmp/etc/apptainer" "$root.tmp/usr/etc/apptainer"
    mv "$root.tmp/var" "$root.tmp/usr/var"
    for exe in usr/bin/apptainer usr/libexec/apptainer/bin/starter; do
        patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" \
            "$root.tmp/$exe"
    done
    # Where root lacks CAP_SYS_RESOURCE in its bounding set (as in some sandboxes), Apptainer
    # must not ask for it ("Requesting capability set ... while permitted capability set is").
    drop=""
    bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
    if [ "$(id -u)" = 0 ] && (( (0x$bounding >> 24 & 1) == 0 )); then
        drop='export APPTAINER_DROP_CAPS=${APPTAINER_DROP_CAPS:-CAP_SYS_RESOURCE}'
    fi
    mkdir -p "$root.tmp/bin"
    printf '#!/bin/sh\n# Apptainer from Debian sid, relocated by .ci/install-apptainer.sh\n%s\nexec %s "$@"\n' \
        "$drop" "$root/usr/bin/apptainer" > "$root.tmp/bin/apptainer"
    chmod +x "$root.tmp/bin/apptainer"
    mv "$root.tmp" "$root"
    "$root/bin/apptainer" --version >&2
fi
echo "$root/bin"
