#!/bin/sh
# scripts/deb.sh OUT VERSION - build OUT/faultline_VERSION_ARCH.deb with
# dpkg-deb from what `make install DESTDIR=... PREFIX=/usr` stages: the five
# binaries (stripped), configs under /etc/faultline as conffiles, runbooks,
# the Grafana dashboard, man pages, bash completion, the systemd units and
# the docs.  Depends are computed by dpkg-shlibdeps; lintian checks the
# result when it is installed (`make deb` fails on a lintian error).
set -eu
out=$1
version=$2
arch=$(dpkg --print-architecture)
work=$out/deb
root=$work/debian/faultline
deb=$out/faultline_${version}_$arch.deb

rm -rf "$work"
mkdir -p "$root"
make --no-print-directory -s install OUT="$out" DESTDIR="$(cd "$root" && pwd)" PREFIX=/usr \
	>/dev/null

# Debian wants units in /lib/systemd/system (bookworm) and compressed man pages;
# sysusers.d stays in /usr/lib.
mkdir -p "$root/lib/systemd"
mv "$root/usr/lib/systemd/system" "$root/lib/systemd/system"
rmdir "$root/usr/lib/systemd" 2>/dev/null || true
gzip -9n "$root"/usr/share/man/man*/*
for b in "$root"/usr/bin/*; do
	strip --strip-unneeded --remove-section=.comment --remove-section=.note "$b"
done

doc=$root/usr/share/doc/faultline
mkdir -p "$doc"
install -m 0644 README.md "$doc/"
cp -r docs "$doc/docs"
find "$doc/docs" -type f -exec chmod 0644 {} +
cat > "$doc/copyright" <<EOC
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: faultline
Source: https://github.com/faultline/faultline

Files: *
Copyright: 2026 the faultline developers
License: GPL-2.0-only
 On Debian systems the full text of the GNU General Public License version 2
 is in /usr/share/common-licenses/GPL-2.
EOC
printf 'faultline (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- faultline developers <faultline@example.org>  %s\n' \
	"$version" "$version" "$(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")" |
	gzip -9n > "$doc/changelog.gz"

# shared-library dependencies, as dpkg-shlibdeps computes them
mkdir -p "$work/debian"
printf 'Source: faultline\n\nPackage: faultline\nArchitecture: any\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O $(for b in debian/faultline/usr/bin/*; do printf -- '-e%s ' "$b"; done) \
	| sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
	echo "deb: dpkg-shlibdeps found no dependencies (see its message above)" >&2
	exit 1
fi

mkdir -p "$root/DEBIAN"
(cd "$root" && find etc -type f | sed 's|^|/|' | sort) > "$root/DEBIAN/conffiles"
cat > "$root/DEBIAN/control" <<EOC
Package: faultline
Version: $version
Architecture: $arch
Maintainer: faultline developers <faultline@example.org>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: redis-server, smartmontools
Section: admin
Priority: optional
Homepage: https://github.com/faultline/faultline
Description: fleet health and anomaly alerting on eBPF
 faultline-probe measures each host (block I/O latency, TCP checksum errors
 by peer, CPU bursts, throttling, pressure, drive wear, CPU profiles) into
 Redis; faultline-rules rolls failures up by rack and switch and judges
 deploys against a baseline; faultline-alerter delivers signed webhooks
 with the top CPU stacks as evidence, or feeds an existing Alertmanager;
 faultline-web serves Prometheus' query API over the fleet's history and
 an incident page per alert.
EOC
cat > "$root/DEBIAN/postinst" <<'EOC'
#!/bin/sh
set -e
# the services' system user (etc/sysusers.d/faultline.conf)
if [ "$1" = configure ]; then
	if command -v systemd-sysusers >/dev/null 2>&1; then
		systemd-sysusers faultline.conf
	elif ! getent passwd faultline >/dev/null; then
		useradd --system --user-group --home-dir /var/lib/faultline --no-create-home \
			--shell /usr/sbin/nologin faultline
	fi
fi
# the units changed on disk: let a running systemd read them again
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
EOC
cat > "$root/DEBIAN/postrm" <<'EOC'
#!/bin/sh
set -e
# the units changed on disk: let a running systemd read them again (the
# faultline user stays, as Debian keeps system users: files may still be its)
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
EOC
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
	xargs md5sum) > "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "deb: $deb ($(du -k "$deb" | cut -f1) KiB)"
if command -v lintian >/dev/null; then
	# (as root lintian says it would rather not be; the check is the same)
	lintian --fail-on error "$deb" 2>&1 | grep -v 'running with root privileges' || true
	lintian --fail-on error "$deb" >/dev/null 2>&1 || {
		echo "deb: lintian found errors" >&2
		exit 1
	}
	echo "deb: lintian: no errors"
fi
