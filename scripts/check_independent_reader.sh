#!/usr/bin/env bash
# Checks that scripts/independent_reader.py (a reader written from docs/FORMAT.md alone)
# restores, bit for bit and with metadata, archives the krypta binary given as $1 writes,
# and the golden archives (format 1 and 2) of test-vectors/ and tests/golden/.
#
#   scripts/check_independent_reader.sh target/release/krypta
#
# Needs: python3 with `pip install zstandard cryptography blake3 argon2-cffi`; setfattr and
# setfacl are used when present. About 30 s on one core. Exit 0 when every case passed.
set -euo pipefail
K=$(realpath "$1")
HERE=$(cd "$(dirname "$0")/.." && pwd)
R="$HERE/scripts/independent_reader.py"
W=$(mktemp -d "${TMPDIR:-/tmp}/kry-indep.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
fails=0

# --- helpers ------------------------------------------------------------------------
cat > cmp.py <<'EOF'
# Compare two trees: names, types, content, modes, mtimes (ns), owners, symlink targets,
# hard-link groups and extended attributes.
import os, stat, sys
def walk(root):
    out = {}
    for dp, dns, fns in os.walk(root):
        for n in dns + fns:
            p = os.path.join(dp, n)
            out[os.path.relpath(p, root)] = p
    return out
def desc(p, inodes):
    st = os.lstat(p)
    d = {"fmt": stat.S_IFMT(st.st_mode), "owner": (st.st_uid, st.st_gid)}
    if stat.S_ISLNK(st.st_mode):
        d["link"] = os.readlink(p)
    else:
        d["mode"], d["mtime"] = stat.S_IMODE(st.st_mode), st.st_mtime_ns
    if stat.S_ISREG(st.st_mode):
        d["data"] = open(p, "rb").read()
        d["linkgroup"] = inodes.setdefault(st.st_ino, len(inodes))
    try:
        d["xattr"] = {k: os.getxattr(p, k, follow_symlinks=False)
                      for k in os.listxattr(p, follow_symlinks=False)}
    except OSError:
        pass
    return d
a, b = walk(sys.argv[1]), walk(sys.argv[2])
bad = set(a) ^ set(b)
ia, ib = {}, {}
for k in sorted(set(a) & set(b)):
    da, db = desc(a[k], ia), desc(b[k], ib)
    for f in set(da) | set(db):
        if da.get(f) != db.get(f):
            bad.add(f"{k}: {f}")
if bad:
    print("differs:", sorted(bad)[:10])
sys.exit(1 if bad else 0)
EOF

ok()   { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# restore NAME TREE ARCHIVE AT [reader options]: the reader restores ARCHIVE, and
# OUTDIR/AT equals TREE
restore() {
    local name=$1 tree=$2 kry=$3 at=$4; shift 4
    rm -rf "out_$name"
    if python3 "$R" "$@" "$kry" "out_$name" >"log_$name" 2>&1 \
        && python3 cmp.py "$tree" "out_$name/$at" >>"log_$name" 2>&1; then
        ok "$name"
    else
        fail "$name"; sed 's/^/     /' "log_$name"
    fi
}
# refuse NAME CODE ARCHIVE [reader options]: the reader refuses with exit CODE
refuse() {
    local name=$1 code=$2 kry=$3; shift 3
    rm -rf "out_$name"
    local rc=0
    python3 "$R" "$@" "$kry" "out_$name" >"log_$name" 2>&1 || rc=$?
    if [ "$rc" = "$code" ]; then ok "$name (exit $rc)"; else fail "$name: exit $rc, want $code"; cat "log_$name"; fi
}

# --- a tree with every kind of entry ------------------------------------------------
mkdir -p src/sub/deeper src/emptydir src/many
(
    cd src
    echo hello > a.txt
    : > empty
    head -c 300000 /dev/urandom > rand.bin
    python3 - <<'EOF'
import os, random
random.seed(1)
open("text.txt", "w").write("".join(random.choice(["alpha ", "beta ", "gamma\n", "delta "])
                                    for _ in range(200000)))
for i in range(400):
    open("many/file_with_a_long_name_%04d" % i, "w").write("x" * (i % 7))
open(b"bad\xffname", "w").write("not UTF-8")
open("exact4096", "wb").write(b"a" * 4096)
open("old", "w").write("1959")
t = -315619200 * 10**9 + 250000000
os.utime("old", ns=(t, t))
EOF
    cp /usr/bin/ls ls                                              # x86-64 ELF: BCJ x86
    # A shared library too (any ELF will do where libz is elsewhere: the case is "a second binary").
    lib=$(ls /usr/lib/x86_64-linux-gnu/libz.so.* /lib/x86_64-linux-gnu/libz.so.* 2>/dev/null | head -1 || true)
    cp "${lib:-/usr/bin/ls}" libz.so
    ln -s a.txt link
    ln -s /nonexistent/abs dangling
    ln a.txt sub/hard
    echo x > sub/deeper/f
    chmod 4755 sub/deeper/f
    truncate -s 5M sparse
    printf data | dd of=sparse bs=1 seek=3000000 conv=notrunc status=none
    setfattr -n user.test -v value a.txt 2>/dev/null || true
    setfacl -m u:nobody:r exact4096 2>/dev/null || true
    setfacl -d -m u:nobody:rx many 2>/dev/null || true
)
"$K" keygen -q -o k.key
"$K" keygen -q -o k2.key
"$K" keygen -q --sign -o signer
printf 'pass word \xc3\xbc\n' > pw.txt
export PW_NFC=$'pass word \xc3\xbc' PW_NFD=$'pass word u\xcc\x88' PW_BAD=wrong

# --- format 2, as krypta writes it today --------------------------------------------
c() { "$K" c -q "$@"; }
c -b 64K plain.kry src;                         restore plain src plain.kry src
c -s -b 64K stored.kry src;                     restore stored src stored.kry src
c -l 9 -b 64K l9.kry src;                       restore level9-refs src l9.kry src
c --bcj arm64 -b 64K arm64.kry src;             restore bcj-arm64 src arm64.kry src
mkdir -p bcjsrc && cp src/ls src/rand.bin bcjsrc/   # every filter, forced, on code and noise
for f in arm armthumb powerpc sparc ia64 riscv; do
    c --bcj $f -b 64K bcj_$f.kry bcjsrc;         restore bcj-$f bcjsrc bcj_$f.kry bcjsrc
done
c --recovery 5 rec.kry src;                     restore recovery src rec.kry src
(cd src && "$K" c -q ../dot.kry .);             restore dot-root src dot.kry .
cat src/text.txt | "$K" c -q -b 64K - - > stream.kry        # stored as "stdin", mtime now
if python3 "$R" stream.kry out_stream >log_stream 2>&1 && cmp -s src/text.txt out_stream/stdin
then ok stdin-stream; else fail stdin-stream; cat log_stream; fi
c -b 64K --keyfile k.key kf.kry src;            restore keyfile src kf.kry src --keyfile k.key
c --pass-file pw.txt --kdf-memory 8M pw.kry src
restore argon2id src pw.kry src --password-env PW_NFC
restore argon2id-nfd-password src pw.kry src --password-env PW_NFD
c --pass-file pw.txt --kdf pbkdf2 --kdf-iterations 100000 pb.kry src
restore pbkdf2 src pb.kry src --password-env PW_NFC
c --keyfile k.key --keyfile k2.key --pass-file pw.txt --kdf-memory 8M multi.kry src
restore multi-stanza src multi.kry src --keyfile k2.key
c --sign signer --keyfile k.key -l 9 signed.kry src
restore signed src signed.kry src --keyfile k.key
refuse wrong-keyfile 2 kf.kry --keyfile k2.key
refuse wrong-password 2 pw.kry --password-env PW_BAD
refuse no-key 1 kf.kry
refuse key-for-plain 2 plain.kry --keyfile k.key

# --- delta archives -----------------------------------------------------------------
cp -a src src2
python3 - <<'EOF'
s = open("src2/text.txt").read()
open("src2/text.txt", "w").write(s[:500000] + "INSERTED" * 100 + s[500000:])
open("src2/newfile", "w").write("new")
EOF
rm src2/empty
mv src src.orig && mv src2 src          # same paths as the base's
c -b 64K --base plain.kry delta.kry src
c -l 9 --base plain.kry delta9.kry src
c -l 7 -b 64K --base plain.kry delta7.kry src   # diff+base blocks (codec 3, FORMAT.md §16.6)
c --base kf.kry --base-keyfile k.key --keyfile k2.key deltaenc.kry src
mv src src2 && mv src.orig src
restore delta src2 delta.kry src --base plain.kry
restore delta-l9 src2 delta9.kry src --base plain.kry
restore delta-l7-diff src2 delta7.kry src --base plain.kry
restore delta-encrypted src2 deltaenc.kry src --keyfile k2.key --base kf.kry --base-keyfile k.key
refuse delta-without-base 9 delta.kry
refuse delta-wrong-base 9 delta.kry --base stored.kry
# same archive id (SOURCE_DATE_EPOCH, FORMAT.md 12.4), other frames: only the binding differs
mkdir -p same1 same2 && cp src/text.txt same1/ && cp src/text.txt same2/ && echo other > same2/more
(cd same1 && SOURCE_DATE_EPOCH=1700000000 "$K" c -q ../same1.kry .)
(cd same2 && SOURCE_DATE_EPOCH=1700000000 "$K" c -q ../same2.kry .)
(cd same1 && "$K" c -q --base ../same1.kry ../same-delta.kry .)
restore delta-reproducible-base same1 same-delta.kry . --base same1.kry
refuse delta-same-id-other-binding 9 same-delta.kry --base same2.kry

# --- golden archives: format 1 and 2 (test-vectors/), delta (tests/golden/) ---------
python3 - "$R" "$HERE" <<'EOF' && ok "golden vectors" || { fail "golden vectors"; }
import base64, hashlib, os, subprocess, sys
R, HERE = sys.argv[1], sys.argv[2]
def vectors(fn):
    cur = None
    for line in open(fn):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#") or line == "[set]":
            continue
        k, _, v = line.partition(" = ")
        if k == "id":
            if cur:
                yield cur
            cur = {}
        if cur is not None:
            cur[k] = v
    if cur:
        yield cur
def keytext(raw):  # FORMAT.md 3.5
    p = b"KRYPTA-KEY-1-"
    return p + base64.urlsafe_b64encode(raw + hashlib.sha256(p + raw).digest()[:4]).rstrip(b"=")
bad = 0
for fn in ("krypta_archive.txt", "krypta_archive_v2.txt", "krypta_archive_signed.txt"):
    for v in vectors(os.path.join(HERE, "test-vectors", fn)):
        name = "gold_" + fn[:-4] + "_" + v["id"]
        open(name + ".kry", "wb").write(bytes.fromhex(v["archive"]))
        args = []
        if "keyfile_recipient" in v:
            open(name + ".key", "wb").write(keytext(bytes.fromhex(v["keyfile_recipient"])))
            args = ["--keyfile", name + ".key"]
        elif "password_salt" in v:
            os.environ["KATPW"] = "krypta known-answer password"
            args = ["--password-env", "KATPW"]
        if subprocess.call([sys.executable, R] + args + [name + ".kry", "out_" + name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            print("FAIL", name); bad += 1; continue
        want = {"bin/tool": v["tool"], "docs/readme.txt": v["readme"],
                "docs/readme-link.txt": v["readme"]}
        if "big" in v:
            want["docs/big.bin"] = v["big"]
        for p, hx in want.items():
            if open(os.path.join("out_" + name, p), "rb").read() != bytes.fromhex(hx):
                print("FAIL content", name, p); bad += 1
        if os.readlink(os.path.join("out_" + name, "latest")) != "docs/readme.txt":
            print("FAIL symlink", name); bad += 1
for fn in ("delta_v2", "delta_diff_v2", "delta_diff_v2_session28", "delta_ref_v2",
           "delta_ref_unmarked_v2"):
    lines = [l.strip() for l in open(os.path.join(HERE, "tests/golden", fn + ".hex"))]
    if fn == "delta_ref_unmarked_v2":   # one archive a line
        arcs = [l for l in lines if l and not l.startswith("#")]
    else:                               # a "# ..." line before each archive's hex lines
        arcs = []
        for l in lines:
            if l.startswith("#"):
                arcs.append("")
            elif l:
                arcs[-1] += l
    for i, hx in enumerate(arcs):
        open(f"{fn}_{i}.kry", "wb").write(bytes.fromhex(hx))
    for i in range(1, len(arcs)):
        if subprocess.call([sys.executable, R, "--base", f"{fn}_0.kry", f"{fn}_{i}.kry",
                            f"out_{fn}_{i}"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL):
            print("FAIL", fn, i); bad += 1
sys.exit(1 if bad else 0)
EOF

if [ "$fails" = 0 ]; then echo "independent reader: all cases passed"; else echo "independent reader: $fails case(s) FAILED"; fi
[ "$fails" = 0 ]
