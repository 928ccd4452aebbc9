#!/bin/bash
# Fetches the version pairs of `krypta bench` table 14 (delta archives) into DIR/pairs/
# (default fixtures/data/pairs), as listed in fixtures/pairs.tsv: each side is one package
# version fetched by name with its ordinary client (pip, apt, npm, cargo), checked against
# the container's SHA-256, unpacked to a plain file (compression hides similarity) and
# checked again against the file's SHA-256. A file already there with the right digest is
# kept. A side that cannot be fetched (offline, client missing, version withdrawn) is named
# on stderr and left out; the bench names the pairs it skipped, so this never fails `make`.
#
# usage: scripts/fetch_pairs.sh [DIR]
set -u
cd "$(dirname "$0")/.."
MANIFEST="fixtures/pairs.tsv"
DEST="${1:-fixtures/data}/pairs"
mkdir -p "$DEST" || exit 1
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
CARGO="${CARGO:-cargo}"

sha() { sha256sum "$1" | cut -d' ' -f1; }
say() { echo "fetch_pairs.sh: $*" >&2; }

# fetch CLIENT PACKAGE VERSION OUTDIR: leaves exactly one container file in OUTDIR.
fetch() {
	local client=$1 pkg=$2 ver=$3 out=$4
	case "$client" in
	pip)
		# The manylinux x86-64 wheel whatever this machine is, so every host gets the same file.
		pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
			--python-version 3.12 -d "$out" "$pkg==$ver" >&2
		;;
	apt)
		(cd "$out" && apt-get download -q "$pkg=$ver" >&2)
		;;
	npm)
		npm pack --silent --pack-destination "$out" "$pkg@$ver" >/dev/null
		;;
	cargo)
		# cargo has no download command: a throwaway manifest depending on exactly this
		# version, `cargo fetch`, then the .crate from cargo's download cache.
		local proj="$WORK/cargo-$pkg-$ver"
		mkdir -p "$proj/src" && : >"$proj/src/lib.rs"
		printf '[package]\nname = "fetch-pair"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = "=%s"\n' \
			"$pkg" "$ver" >"$proj/Cargo.toml"
		"$CARGO" fetch --quiet --manifest-path "$proj/Cargo.toml" >&2 || return 1
		local crate
		crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$pkg-$ver.crate" 2>/dev/null | head -n 1)"
		[ -n "$crate" ] && cp "$crate" "$out/"
		;;
	*)
		say "unknown client $client"
		return 1
		;;
	esac
}

# unpack HOW CONTAINER OUTFILE
unpack() {
	case "$1" in
	gunzip) gzip -dc "$2" >"$3" ;;
	deb-data) dpkg-deb --fsys-tarfile "$2" >"$3" ;;
	wheel:*) unzip -p "$2" "${1#wheel:}" >"$3" ;;
	*) say "unknown unpack step $1" && return 1 ;;
	esac
}

missing=0
while IFS=$'\t' read -r pair side client pkg ver csha how file fsha _kind; do
	case "$pair" in '#'* | '') continue ;; esac
	target="$DEST/$file"
	if [ -f "$target" ] && [ "$(sha "$target")" = "$fsha" ]; then
		continue
	fi
	dl="$WORK/$pair-$side"
	mkdir -p "$dl"
	if ! fetch "$client" "$pkg" "$ver" "$dl"; then
		say "$pair ($side): $client could not fetch $pkg $ver; pair left out"
		missing=$((missing + 1))
		continue
	fi
	container="$(find "$dl" -maxdepth 1 -type f | head -n 1)"
	if [ -z "$container" ] || [ "$(sha "$container")" != "$csha" ]; then
		say "$pair ($side): $pkg $ver from $client is not the pinned file (SHA-256 differs or nothing came); pair left out"
		missing=$((missing + 1))
		continue
	fi
	if ! unpack "$how" "$container" "$target.part" || [ "$(sha "$target.part")" != "$fsha" ]; then
		say "$pair ($side): unpacking $container ($how) did not give the pinned $file; pair left out"
		rm -f "$target.part"
		missing=$((missing + 1))
		continue
	fi
	mv "$target.part" "$target"
	say "$pair ($side): $file ($(stat -c %s "$target") bytes)"
	rm -rf "$dl"
done <"$MANIFEST"
[ "$missing" -eq 0 ] || say "$missing side(s) missing; krypta bench skips their pairs and names them"
exit 0
