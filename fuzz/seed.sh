#!/bin/sh
# Seeds fuzz/corpus/<target>/ with real small archives and the structures cut out of them.
# Usage: fuzz/seed.sh [KRYPTA_BINARY]   (default: target/debug/krypta; build it first)
# Archives: stored, zstd, multi-block, key file (the archive target's fixed key 0x4b × 32),
# argon2id and pbkdf2 (cheap costs), pq-box, and a stdin stream.
set -eu
K=${1:-target/debug/krypta}
K=$(realpath "$K")
C=$(realpath "$(dirname "$0")")/corpus
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
cd "$S"
mkdir -p in/d/sub out rec
python3 - <<'PY'
import base64, hashlib, random
p = b"\x4b" * 32
pre = "KRYPTA-KEY-1-"
ck = hashlib.sha256(pre.encode() + p).digest()[:4]
open("key.txt", "w").write(pre + base64.urlsafe_b64encode(p + ck).decode().rstrip("=") + "\n")
open("in/a.txt", "w").write("hello krypta\n")
open("in/d/empty", "w").close()
open("in/d/sub/x.bin", "wb").write(bytes(range(256)) * 4)
random.seed(1)
open("big.bin", "wb").write(bytes(random.getrandbits(8) for _ in range(70000)) + b"A" * 60000)
open("pw", "w").write("correct horse\n")
PY
chmod 600 key.txt
ln -s ../a.txt in/d/link
ln in/a.txt in/d/hard
"$K" c -q -s out/plain_store.kry in
"$K" c -q -l 1 out/plain_z1.kry in
"$K" c -q -l 3 -b 64K out/multiblock.kry big.bin
"$K" c -q --keyfile key.txt out/keyfile.kry in
"$K" c -q --pass-file pw --kdf-memory 8 --kdf-iterations 1 out/argon2.kry in/a.txt
"$K" c -q --pass-file pw --kdf pbkdf2 --kdf-iterations 100000 out/pbkdf2.kry in/a.txt
"$K" keygen --box -o box > /dev/null
"$K" c -q -r box.pub out/pqbox.kry in/a.txt
printf 'just a stream' | "$K" c -q out/stdin.kry -
mkdir -p "$C/header" "$C/stanza" "$C/index" "$C/record" "$C/frame" "$C/archive" \
    "$C/keytext" "$C/block_decode"
cp out/*.kry "$C/archive/"
# salvage: the same archives, and damaged copies (a flipped byte mid-data, a zeroed run, a
# cut-off tail) so the walk starts from real frames.
mkdir -p "$C/salvage" "$C/recovery"
cp out/*.kry "$C/salvage/"
python3 - "$C/salvage" out/multiblock.kry <<'PY'
import sys
d, src = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
f = bytearray(b); f[len(b) // 2] ^= 1; open(d + "/flip.kry", "wb").write(f)
z = bytearray(b); z[len(b) // 3 : len(b) // 3 + 4096] = bytes(4096); open(d + "/zero.kry", "wb").write(z)
open(d + "/cut.kry", "wb").write(b[: len(b) * 2 // 3])
PY
# recovery: its input is a whole file (bytes, then a recovery section). Seeded with the
# archives without a section (the locator's not-found and backward-scan paths) and with
# archives made by `c --recovery`, intact and damaged (a flipped byte in P, a zeroed
# descriptor packet, a cut into the section, a damaged trailer).
cp out/*.kry "$C/recovery/"
"$K" c -q --recovery 10 -l 3 -b 64K rec/r10.kry big.bin
"$K" c -q --recovery 1 --keyfile key.txt rec/r1k.kry in
cp rec/*.kry "$C/recovery/"
cp rec/*.kry "$C/salvage/"
python3 - "$C/recovery" rec/r10.kry <<'PY'
import sys
d, src = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
f = bytearray(b); f[len(b) // 3] ^= 1; open(d + "/r10_flip.kry", "wb").write(f)
a = (len(b) * 100 // 112) // 4096 * 4096
z = bytearray(b); z[a : a + 4096] = bytes(4096); open(d + "/r10_packet.kry", "wb").write(z)
open(d + "/r10_cut.kry", "wb").write(b[: len(b) - 6000])
t = bytearray(b); t[-40] ^= 0xFF; open(d + "/r10_trailer.kry", "wb").write(t)
PY
cp key.txt box box.pub "$C/keytext/"
C="$C" python3 - <<'PY'
import glob, os, struct
C = os.environ["C"]
for f in glob.glob("out/*.kry"):
    n = os.path.basename(f)[:-4]
    b = open(f, "rb").read()
    hl = struct.unpack_from("<I", b, 12)[0]
    open(f"{C}/header/{n}", "wb").write(b[:hl])
    nst = struct.unpack_from("<H", b, 46)[0]
    pos = 48
    for i in range(nst):
        bl = struct.unpack_from("<I", b, pos + 4)[0]
        open(f"{C}/stanza/{n}_{i}", "wb").write(b[pos:pos + 8 + bl])
        pos += 8 + bl
    if nst:
        continue  # encrypted bodies: nothing more to cut out
    pos, k, data, idx = hl, 0, b"", b""
    while pos < len(b) - 64:
        kind, flags, _, bl, seq = struct.unpack_from("<BBHIQ", b, pos)
        body = b[pos + 16:pos + 16 + bl]
        open(f"{C}/frame/{n}_{k}", "wb").write(b[pos:pos + 16] + body)
        codec, filt, _, raw, start = struct.unpack_from("<BBHIQ", body, 0)
        open(f"{C}/block_decode/{n}_{k}", "wb").write(
            bytes([codec, filt]) + struct.pack("<IQ", raw, start) + body[16:])
        if codec == 0:  # stored: the payload is the decoded block
            if kind == 1:
                data += body[16:]
            else:
                idx += body[16:]
        pos += 16 + bl + 32
        k += 1
    if idx:
        open(f"{C}/index/{n}", "wb").write(idx)
    if data:
        open(f"{C}/record/{n}", "wb").write(b"\0" + data)
        open(f"{C}/record/{n}_entry", "wb").write(b"\1" + data[1:])
PY
# delta: the frozen delta archives of tests/golden/*.hex (each file's first archive is the
# base the target reads them with; the rest are deltas against it).
mkdir -p "$C/delta"
C="$C" G="$C/../../tests/golden" python3 - <<'PY'
import glob, os
for f in glob.glob(os.environ["G"] + "/*.hex"):
    lines = [l.strip() for l in open(f) if l.strip() and not l.startswith("#")]
    for i, l in enumerate(lines[1:]):
        n = os.path.basename(f)[:-4]
        open(f"{os.environ['C']}/delta/{n}_{i}", "wb").write(bytes.fromhex(l))
PY
# index_refs: the golden format-2 vectors without a password (the target holds them; an
# input picks one, edits its index and the file: see its module doc). Seeds: each vector as
# written, with recovery data, cut at half, and with one index edit of each kind.
mkdir -p "$C/index_refs"
C="$C" python3 - <<'PY'
import os
C = os.environ["C"]
for g in range(3):
    for opt in (0, 0x08, 0x10, 0x18):
        open(f"{C}/index_refs/g{g}_o{opt}", "wb").write(bytes([g | opt, 0]))
    for op in range(6):
        open(f"{C}/index_refs/g{g}_op{op}", "wb").write(bytes([g, 1, op, 40 + op, 0, 7]))
    open(f"{C}/index_refs/g{g}_rec_edit", "wb").write(bytes([g | 0x08, 0, 1, 200, 0, 0xFF]))
PY
for d in "$C"/*; do echo "$(basename "$d"): $(ls "$d" | wc -l) seeds"; done
