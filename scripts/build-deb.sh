#!/usr/bin/env bash
# Builds the Debian package build/stagewatch_<version>_<arch>.deb from the built agent:
# /usr/bin/stagewatch, the systemd unit, /etc/stagewatch/config.yaml (a conffile), the docs and
# runbooks under /usr/share/doc/stagewatch/ and the maintainer scripts in deploy/debian/. Depends is computed by dpkg-shlibdeps from the binary.
#
#   scripts/build-deb.sh [BUILD_DIR]     (default: build; configured and built if needed)
#
# Prints the path of the .deb on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build}")

for tool in dpkg-deb dpkg-shlibdeps strip; do
  command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing; run scripts/install-deps.sh as root" >&2; exit 1; }
done

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target stagewatch -j"$(nproc)" >/dev/null

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "build-deb: no project version in $build/CMakeCache.txt" >&2; exit 1; }
arch=$(dpkg --print-architecture)
deb="$build/stagewatch_${version}_${arch}.deb"

# dpkg-shlibdeps wants the debhelper layout: debian/control and debian/<package>/.
work="$build/deb"
pkg="$work/debian/stagewatch"
rm -rf "$work"
mkdir -p "$pkg/DEBIAN"
install -D -m 0755 "$build/stagewatch" "$pkg/usr/bin/stagewatch"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pkg/usr/bin/stagewatch"
install -D -m 0644 "$root/deploy/stagewatch.service" "$pkg/lib/systemd/system/stagewatch.service"
install -D -m 0644 "$root/agent/config/default_config.yaml" "$pkg/etc/stagewatch/config.yaml"
install -D -m 0644 "$root/deploy/debian/default" "$pkg/etc/default/stagewatch"
install -D -m 0644 -t "$pkg/usr/share/doc/stagewatch" "$root/README.md" "$root/docs/deploy.md" \
  "$root/docs/configuration.md" "$root/docs/metrics.md"
# The runbooks every alert links (alerts/config.yaml, runbook_url_base), for a site to publish.
install -D -m 0644 -t "$pkg/usr/share/doc/stagewatch/runbooks" "$root"/docs/runbooks/*.md
for script in postinst prerm postrm; do
  install -m 0755 "$root/deploy/debian/$script" "$pkg/DEBIAN/$script"
done
printf '/etc/stagewatch/config.yaml\n/etc/default/stagewatch\n' > "$pkg/DEBIAN/conffiles"

printf 'Source: stagewatch\n\nPackage: stagewatch\nArchitecture: any\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -edebian/stagewatch/usr/bin/stagewatch | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

# passwd: useradd in postinst.
cat > "$pkg/DEBIAN/control" <<EOF
Package: stagewatch
Version: $version
Architecture: $arch
Maintainer: stagewatch maintainers <stagewatch@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: $shlibs, passwd
Section: admin
Priority: optional
Description: eBPF node agent: OOM, memory and CPU contention per pipeline stage
 stagewatch traces with eBPF what the stages of research and ML pipelines do
 to each other on one server (OOM kills, page faults, reclaim stalls, context
 switches, run-queue latency, preemptions), names cgroups as pipeline stages
 and exports Prometheus metrics per stage.
 .
 The systemd unit runs it as the user stagewatch with only CAP_BPF and
 CAP_PERFMON.
EOF
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
