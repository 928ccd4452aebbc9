#!/usr/bin/env python3
"""Black-box mutation campaign: damaged and hostile archives through the real binary.

Usage: scripts/mutate_campaign.py KRYPTA_BINARY WORKDIR [--per-kind N] [--seed S] [--jobs J]
       (or `make mutate` with MUTATE_N=N)

Builds a corpus of real archives of every kind krypta writes (plain, stored, key file,
Argon2id and PBKDF2 passwords, pq-box, signed, delta, recovery data, multi-block, many small
files, level 9, a stdin stream, the golden format vectors), applies N mutations to each (bit
flips, zeroed runs, truncation at every structural boundary, inserted and deleted bytes, a
frame swapped in from another archive of the same key, another archive's header spliced on,
a duplicated frame, random overwrites) and runs `l`, `t`, `x -o DIR`, `x --stdout`, `x -`
from a pipe, `info` and `repair --check` on each, under a 20 s timeout and a 4 GiB address
space limit. It flags:

- exit 101, a signal, a timeout, a peak RSS over 1 GiB, "panicked" on stderr;
- exit 0 from `t` on bytes that are not the archive as written (7 is the answer with
  recovery data), `repair --check` exit 0 on changed bytes;
- exit 0 from `x`, `x --stdout`, `x -` or `l` whose output differs from the intact archive's;
- any file `x` leaves under a final name whose content is not the original's, any file
  outside -o, any temporary file left behind;
- a failure whose message does not name the archive;
- damage within the recovery data's capacity that `t` does not call repairable (exit 7).

Exit status 0 when nothing was flagged; the findings are printed and written to
WORKDIR/findings.txt with the mutated archive kept beside it.
"""

import argparse
import base64
import hashlib
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

MAGIC = b"\x89KRYPTA\n"
FOOTER_MAGIC = b"KRYPTAZ\n"
LIMIT_AS = 4 << 30
TIMEOUT = 20
RSS_FLAG_KIB = 1 << 20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- running


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))
    os.setsid()


def run(k, args, cwd, stdin_path=None):
    """Runs krypta; returns (rc, stdout, stderr, maxrss KiB, timed_out)."""
    out_p = os.path.join(cwd, ".o")
    err_p = os.path.join(cwd, ".e")
    with open(out_p, "wb") as o, open(err_p, "wb") as e:
        fin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        p = subprocess.Popen([k] + args, cwd=cwd, stdout=o, stderr=e, stdin=fin,
                             preexec_fn=limits)
        deadline = time.time() + TIMEOUT
        timed_out = False
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                timed_out = True
                os.killpg(p.pid, signal.SIGKILL)
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        p.returncode = 0  # reaped by hand
        if stdin_path:
            fin.close()
    rc = os.waitstatus_to_exitcode(status)
    with open(out_p, "rb") as f:
        out = f.read()
    with open(err_p, "rb") as f:
        err = f.read()
    os.unlink(out_p)
    os.unlink(err_p)
    return rc, out, err, ru.ru_maxrss, timed_out


# --------------------------------------------------------------------------- structure


def frames(b):
    """(start, end) of every frame after the header of archive bytes b, and the footer start."""
    if len(b) < 16 or b[:8] != MAGIC:
        return [], None
    h = struct.unpack_from("<I", b, 12)[0]
    pos, out = h, []
    while pos + 16 <= len(b) and b[pos] in (1, 2, 3):
        bl = struct.unpack_from("<I", b, pos + 4)[0]
        end = pos + 16 + bl + 32
        if end > len(b):
            break
        out.append((pos, end))
        pos = end
    footer = pos if b[pos + 24:pos + 32] == FOOTER_MAGIC else None
    return out, footer


def boundaries(b):
    """Every structural offset of b worth cutting at."""
    cuts = {0, 1, 8, 10, 12, 16, 32, 46, 48, len(b) - 1, len(b) - 32, len(b) - 64,
            len(b) - 80, len(b) - 81}
    if len(b) >= 16 and b[:8] == MAGIC:
        h = struct.unpack_from("<I", b, 12)[0]
        cuts |= {h - 32, h - 1, h, h + 1}
    fr, footer = frames(b)
    for s, e in fr:
        cuts |= {s, s + 1, s + 16, s + 16 + 24, e - 32, e - 1}
    if footer is not None:
        cuts |= {footer, footer + 8, footer + 32, footer + 63, footer + 64}
        p_end = footer + 64
        for k in range(p_end, len(b), 4096):
            cuts |= {k, k + 1}
    return sorted(c for c in cuts if 0 <= c < len(b))


# --------------------------------------------------------------------------- mutations


def mutate(b, rng, kind_i, peer, others):
    """One mutation of b: (name, bytes, small) — small: within 3 shards of damage in place."""
    n = len(b)
    fr, footer = frames(b)
    m = kind_i % 12
    if m == 0:
        out = bytearray(b)
        k = rng.randint(1, 3)
        for _ in range(k):
            i = rng.randrange(n)
            out[i] ^= 1 << rng.randrange(8)
        return f"flip{k}", bytes(out), True
    if m == 1:
        ln = rng.choice([1, 2, 16, 64, 512, 4096, rng.randint(1, 20000)])
        i = rng.randrange(n)
        out = bytearray(b)
        out[i:i + ln] = bytes(len(out[i:i + ln]))
        return f"zero{ln}@{i}", bytes(out), ln <= 4096
    if m == 2:
        cuts = boundaries(b)
        c = cuts[rng.randrange(len(cuts))]
        return f"cut@{c}", b[:c], False
    if m == 3:
        i = rng.randrange(n + 1)
        ln = rng.choice([1, 7, 64, 4096, rng.randint(1, 9000)])
        fill = rng.choice([bytes(ln), os.urandom(ln), (b[:ln] * (ln // max(1, len(b[:ln])) + 1))[:ln]])
        return f"insert{ln}@{i}", b[:i] + fill + b[i:], False
    if m == 4:
        i = rng.randrange(n)
        ln = rng.choice([1, 3, 16, 4096, rng.randint(1, 9000)])
        return f"delete{ln}@{i}", b[:i] + b[i + ln:], False
    if m == 5 and peer is not None:
        pf, _ = frames(peer)
        if fr and pf:
            j = rng.randrange(min(len(fr), len(pf)))
            (s, e), (ps, pe) = fr[j], pf[j]
            return f"swapframe{j}", b[:s] + peer[ps:pe] + b[e:], False
    if m == 6 and others:
        o = others[rng.randrange(len(others))]
        if len(o) >= 16 and o[:8] == MAGIC and len(b) >= 16 and b[:8] == MAGIC:
            oh = struct.unpack_from("<I", o, 12)[0]
            h = struct.unpack_from("<I", b, 12)[0]
            # An unencrypted header of the same archive id (the known-answer vectors share
            # one) carries no key: its checksum anyone can compute, so a reader accepting
            # it, with only informational fields changed, is by design ("-sameid").
            same = o[16:32] == b[16:32] and not (o[10] & 1)
            return "spliceheader" + ("-sameid" if same else ""), o[:oh] + b[h:], False
    if m == 7 and fr:
        j = rng.randrange(len(fr))
        s, e = fr[j]
        where = rng.choice(["after", "before_footer"])
        at = e if where == "after" or footer is None else footer
        return f"dupframe{j}_{where}", b[:at] + b[s:e] + b[at:], False
    if m == 8:
        out = bytearray(b)
        k = rng.randint(1, 40)
        for _ in range(k):
            out[rng.randrange(n)] = rng.randrange(256)
        return f"rand{k}", bytes(out), False
    if m == 9 and fr:
        # a field of a frame head or the footer set to a hostile value
        s, _ = fr[rng.randrange(len(fr))] if rng.random() < 0.7 or footer is None else (footer, 0)
        off = rng.choice([0, 1, 2, 4, 8, 16, 20, 24])
        val = rng.choice([0, 1, 2, 3, 0xFF, 0xFFFFFFFF, 0x7FFFFFFF, 0x10000018, 0x1000, 1 << 63])
        out = bytearray(b)
        size = 8 if off in (8, 16) else (4 if off in (4, 20) else 1)
        val &= (1 << (8 * size)) - 1
        if s + off + size <= n:
            out[s + off:s + off + size] = val.to_bytes(size, "little")
        return f"field{s}+{off}={val:#x}", bytes(out), False
    if m == 10 and len(fr) >= 2:
        # two frames swapped in place (reordering)
        i, j = sorted(rng.sample(range(len(fr)), 2))
        (a, ae), (c, ce) = fr[i], fr[j]
        return f"reorder{i}<>{j}", b[:a] + b[c:ce] + b[ae:c] + b[a:ae] + b[ce:], False
    if m == 11:
        out = bytearray(b)
        ln = rng.choice([512, 4096])
        i = rng.randrange(0, max(1, n - ln) + 1, ln) if n > ln else 0
        out[i:i + ln] = bytes(len(out[i:i + ln]))
        return f"sector{ln}@{i}", bytes(out), True
    out = bytearray(b)
    i = rng.randrange(n)
    out[i] ^= 0xFF
    return "byte", bytes(out), True


# --------------------------------------------------------------------------- checking


def tree(root):
    """{relative path: ('f', sha) | ('l', target) | ('d',)} under root."""
    res = {}
    for dp, dns, fns in os.walk(root):
        for d in dns:
            p = os.path.join(dp, d)
            rel = os.path.relpath(p, root)
            res[rel] = ("l", os.readlink(p)) if os.path.islink(p) else ("d",)
        for f in fns:
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                res[rel] = ("l", os.readlink(p))
            else:
                with open(p, "rb") as fh:
                    res[rel] = ("f", hashlib.sha256(fh.read()).hexdigest())
    return res


def check_case(job):
    k, kind, arch_name, data, mname, small, mut_base, readargs, ref, recovery, work = job
    wd = os.path.join(work, f"w{os.getpid()}")
    if os.path.exists(wd):
        shutil.rmtree(wd)
    os.makedirs(wd)
    a = os.path.join(wd, arch_name)
    orig = ref["bytes"]
    if mut_base:
        # the delta archive intact, its base mutated (read as --base base.kry)
        with open(os.path.join(wd, "base.kry"), "wb") as f:
            f.write(data)
        with open(a, "wb") as f:
            f.write(ref["bytes"])
        orig = ref["base"]
    else:
        with open(a, "wb") as f:
            f.write(data)
    flags = []
    rcs = {}
    changed = data != orig
    only_zero_tail = data.startswith(orig) and not data[len(orig):].strip(b"\0")

    def note(cmd, what, rc=None, err=b""):
        flags.append(f"{kind} {mname} [{cmd}] {what} (rc {rc}) {err[-300:].decode('utf8', 'replace')!r}")

    def basic(cmd, rc, err, rss, to):
        rcs[cmd] = "T" if to else rc
        if to:
            note(cmd, "TIMEOUT", rc, err)
        elif rc == 101 or rc < 0 or (rc > 128 and rc not in (130, 143)):
            note(cmd, "CRASH/SIGNAL", rc, err)
        if b"panicked" in err:
            note(cmd, "panic text", rc, err)
        if rss > RSS_FLAG_KIB:
            note(cmd, f"RSS {rss} KiB", rc, err)
        if rc not in (0,) and arch_name.encode() not in err and not to \
                and not (mut_base and b"base.kry" in err):
            note(cmd, "error does not name the archive", rc, err)

    ra = readargs + [arch_name]
    # l
    rc, out, err, rss, to = run(k, ["l"] + readargs + [arch_name], wd)
    basic("l", rc, err, rss, to)
    if rc == 0 and out != ref["l"]:
        note("l", "exit 0 with a listing that differs", rc, err)
    # info
    rc, out, err, rss, to = run(k, ["info", "base.kry" if mut_base else arch_name], wd)
    basic("info", rc, err, rss, to)
    # t
    rc, out, err, rss, to = run(k, ["t"] + ra, wd)
    basic("t", rc, err, rss, to)
    if rc == 0 and changed and not (only_zero_tail and not recovery) and "-sameid" not in mname:
        note("t", "exit 0 on changed bytes", rc, err)
    if recovery and small and changed and rc != 7 and len(data) == len(ref["bytes"]):
        note("t", "damage within recovery capacity not called repairable", rc, err)
    # repair --check
    rc, out, err, rss, to = run(k, ["repair", "--check", "base.kry" if mut_base else arch_name], wd)
    basic("repair", rc, err, rss, to)
    if rc == 0 and changed and recovery:
        note("repair --check", "exit 0 on changed bytes", rc, err)
    # x -o
    od = os.path.join(wd, "out")
    rc, out, err, rss, to = run(k, ["x", "-o", "out"] + ra, wd)
    basic("x", rc, err, rss, to)
    got = tree(od) if os.path.isdir(od) else {}
    for p, v in got.items():
        if ".krypta" in p or "tmp" in os.path.basename(p):
            note("x", f"temporary left: {p}", rc, err)
        elif p not in ref["tree"]:
            note("x", f"unknown file written: {p}", rc, err)
        elif v[0] != "d" and v != ref["tree"][p]:
            note("x", f"wrong content under final name: {p}", rc, err)
    if rc == 0 and got != ref["tree"]:
        note("x", "exit 0 but tree differs", rc, err)
    extra = set(os.listdir(wd)) - {arch_name, "out", "base.kry"}
    if extra:
        note("x", f"files outside -o: {sorted(extra)}", rc, err)
    shutil.rmtree(od, ignore_errors=True)
    # x --stdout
    rc, out, err, rss, to = run(k, ["x", "--stdout"] + ra, wd)
    basic("x --stdout", rc, err, rss, to)
    if rc == 0 and out != ref["stdout"]:
        note("x --stdout", "exit 0 with different bytes", rc, err)
    # x - from a pipe (stdin)
    rc, out, err, rss, to = run(k, ["x", "-o", "out"] + readargs + ["-"], wd, stdin_path=a)
    rcs["x -"] = "T" if to else rc
    if to or rc == 101 or rc < 0 or (rc > 128 and rc not in (130, 143)) or b"panicked" in err:
        note("x -", "CRASH/TIMEOUT", rc, err)
    got = tree(od) if os.path.isdir(od) else {}
    for p, v in got.items():
        if p in ref["tree"] and v[0] != "d" and v != ref["tree"][p]:
            note("x -", f"wrong content under final name: {p}", rc, err)
        elif p not in ref["tree"]:
            note("x -", f"unknown file written: {p}", rc, err)
    if rc == 0 and got != ref["tree"] and not recovery:
        note("x -", "exit 0 but tree differs", rc, err)
    kept = None
    if flags:
        kept = os.path.join(work, "findings", f"{kind}-{mname}.kry".replace("/", "_"))
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        with open(kept, "wb") as f:
            f.write(data)
    shutil.rmtree(wd, ignore_errors=True)
    return kind, flags, kept, rcs


# --------------------------------------------------------------------------- corpus


def sh(k, args, cwd, stdin=None):
    r = subprocess.run([k] + args, cwd=cwd, input=stdin, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"corpus: {' '.join(args)}: exit {r.returncode}: {r.stderr.decode()}")
    return r.stdout


def build_corpus(k, work, repo):
    c = os.path.join(work, "corpus")
    shutil.rmtree(c, ignore_errors=True)
    os.makedirs(c)
    rnd = random.Random(7)

    def write(p, data):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)

    # in: a small mixed tree
    write(f"{c}/in/a.txt", b"hello krypta\n" * 50)
    write(f"{c}/in/d/x.bin", bytes(range(256)) * 40)
    write(f"{c}/in/d/rand.bin", rnd.randbytes(30000))
    os.makedirs(f"{c}/in/empty")
    os.symlink("../a.txt", f"{c}/in/d/link")
    # in2: in with one file changed (delta against in)
    shutil.copytree(f"{c}/in", f"{c}/in2", symlinks=True)
    write(f"{c}/in2/d/rand.bin", rnd.randbytes(1000) + open(f"{c}/in/d/rand.bin", "rb").read())
    # big: multi-block input
    write(f"{c}/big/big.bin", rnd.randbytes(200000) + b"abcdefgh" * 40000 + rnd.randbytes(100000))
    # many: many small files
    for i in range(600):
        write(f"{c}/many/{i % 7}/f{i}.txt", f"file {i} ".encode() * (i % 50 + 1))
    # rec: incompressible, so the recovery section has many shards
    write(f"{c}/rec/r.bin", rnd.randbytes(400000))
    write(f"{c}/rec/t.txt", b"text\n" * 1000)
    write(f"{c}/pw", b"correct horse\n")
    sh(k, ["keygen", "-o", "key"], c)
    sh(k, ["keygen", "--box", "-o", "box"], c)
    sh(k, ["keygen", "--sign", "-o", "me"], c)
    cheap = ["--pass-file", "pw", "--kdf-memory", "8", "--kdf-iterations", "1"]
    kinds = [
        # name, create args, inputs, read args, recovery
        ("plain", ["-l", "3"], ["in"], [], False),
        ("stored", ["-s"], ["in"], [], False),
        ("keyfile", ["--keyfile", "key"], ["in"], ["--keyfile", "key"], False),
        ("argon2", cheap, ["in"], ["--pass-file", "pw"], False),
        ("pbkdf2", ["--pass-file", "pw", "--kdf", "pbkdf2", "--kdf-iterations", "100000"], ["in"], ["--pass-file", "pw"], False),
        ("pqbox", ["-r", "box.pub"], ["in"], ["-i", "box"], False),
        ("signed", ["--sign", "me", "--keyfile", "key"], ["in"], ["--keyfile", "key", "--signer", "me.pub"], False),
        ("signedplain", ["--sign", "me"], ["in"], ["--signer", "me.pub"], False),
        ("multiblock", ["-b", "64K"], ["big"], [], False),
        ("multiblockkey", ["-b", "64K", "--keyfile", "key"], ["big"], ["--keyfile", "key"], False),
        ("many", [], ["many"], [], False),
        ("level9", ["-l", "9", "-b", "64K"], ["big"], [], False),
        ("recovery", ["--recovery", "10", "-b", "64K"], ["rec"], [], True),
        ("recoverykey", ["--recovery", "10", "-b", "64K", "--keyfile", "key"], ["rec"], ["--keyfile", "key"], True),
        ("delta", ["--base", "base.kry"], ["in2"], ["--base", "base.kry"], False),
        ("deltakey", ["--base", "basek.kry", "--base-keyfile", "key", "--keyfile", "key"], ["in2"],
         ["--base", "basek.kry", "--base-keyfile", "key", "--keyfile", "key"], False),
    ]
    sh(k, ["c", "-q", "base.kry", "in"], c)
    sh(k, ["c", "-q", "--keyfile", "key", "basek.kry", "in"], c)
    out = []
    for name, cargs, inputs, rargs, rec in kinds:
        a = f"{name}.kry"
        sh(k, ["c", "-q"] + cargs + [a] + inputs, c)
        # a second archive of the same kind and key (frames to swap in)
        sh(k, ["c", "-q"] + cargs + [f"{name}.peer.kry"] + inputs, c)
        out.append((name, a, rargs, rec, inputs))
    # a stdin stream
    sh(k, ["c", "-q", "stream.kry", "-"], c, stdin=open(f"{c}/big/big.bin", "rb").read())
    sh(k, ["c", "-q", "stream.peer.kry", "-"], c, stdin=open(f"{c}/big/big.bin", "rb").read())
    out.append(("stream", "stream.kry", [], False, ["-"]))
    # the format-1 known-answer archives (test-vectors/krypta_archive.txt)
    for g in ("krypta_archive.txt", "krypta_archive_signed.txt", "krypta_archive_v2.txt"):
        cur = {}
        for line in open(os.path.join(repo, "test-vectors", g)).read().splitlines() + ["id = end"]:
            if " = " not in line or line.startswith("#"):
                continue
            key, val = line.split(" = ", 1)
            if key == "id" and "archive" in cur and "password_salt" not in cur:
                raw = bytes.fromhex(cur["archive"])
                nm = f"v{raw[8]}-" + cur["id"]
                write(f"{c}/{nm}.kry", raw)
                rargs = []
                if "keyfile_recipient" in cur:
                    kp = bytes.fromhex(cur["keyfile_recipient"])
                    pre = b"KRYPTA-KEY-1-"
                    ck = hashlib.sha256(pre + kp).digest()[:4]
                    txt = pre + base64.urlsafe_b64encode(kp + ck).rstrip(b"=") + b"\n"
                    write(f"{c}/{nm}.key", txt)
                    os.chmod(f"{c}/{nm}.key", 0o600)
                    rargs = ["--keyfile", f"{nm}.key"]
                out.append((nm, f"{nm}.kry", rargs, False, []))
            if key == "id":
                cur = {}
            cur[key] = val
    # the frozen delta archives of tests/golden/*.hex: a base, then deltas against it
    for g in sorted(os.listdir(os.path.join(repo, "tests/golden"))):
        if not g.endswith(".hex"):
            continue
        lines = [ln.strip() for ln in open(os.path.join(repo, "tests/golden", g))
                 if ln.strip() and not ln.startswith("#")]
        stem = g[:-4]
        write(f"{c}/golden-{stem}-base.kry", bytes.fromhex(lines[0]))
        for j, ln in enumerate(lines[1:]):
            nm = f"golden-{stem}-{j}"
            write(f"{c}/{nm}.kry", bytes.fromhex(ln))
            out.append((nm, f"{nm}.kry", ["--base", f"golden-{stem}-base.kry"], False, []))
    return c, out


def reference(k, c, name, a, rargs):
    """The intact archive's outputs."""
    wd = os.path.join(c, f"ref_{name}")
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    shutil.copy(os.path.join(c, a), os.path.join(wd, a))
    rargs = [os.path.join(c, x) if os.path.exists(os.path.join(c, x)) else x for x in rargs]
    rl = run(k, ["l"] + rargs + [a], wd)
    rt = run(k, ["t"] + rargs + [a], wd)
    rx = run(k, ["x", "-o", "out"] + rargs + [a], wd)
    rs = run(k, ["x", "--stdout"] + rargs + [a], wd)
    for r, what in ((rl, "l"), (rt, "t"), (rx, "x"), (rs, "x --stdout")):
        if r[0] != 0:
            raise SystemExit(f"reference {name} {what}: exit {r[0]}: {r[2].decode()}")
    ref = {"bytes": open(os.path.join(c, a), "rb").read(), "l": rl[1], "stdout": rs[1],
           "tree": tree(os.path.join(wd, "out"))}
    return ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("krypta")
    ap.add_argument("work")
    ap.add_argument("--per-kind", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kinds", default="")
    o = ap.parse_args()
    k = os.path.realpath(o.krypta)
    work = os.path.realpath(o.work)
    repo = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    os.makedirs(work, exist_ok=True)
    c, kinds = build_corpus(k, work, repo)
    others = [open(os.path.join(c, a), "rb").read() for _, a, _, _, _ in kinds]
    counts = {}
    want = set(o.kinds.split(",")) if o.kinds else None
    for name, a, rargs, rec, _ in kinds:
        if want and name not in want and name + ".base" not in want:
            continue
        peer_p = os.path.join(c, a.replace(".kry", ".peer.kry"))
        # key files and bases live in the corpus directory; a case runs in a directory of
        # its own, so read arguments that name them get absolute paths.
        rargs = [os.path.join(c, x) if os.path.exists(os.path.join(c, x)) else x for x in rargs]
        KINDS[name] = {
            "a": a, "rargs": rargs, "rec": rec, "ref": reference(k, c, name, a, rargs),
            "peer": open(peer_p, "rb").read() if os.path.exists(peer_p) else None,
            "mut_base": False,
        }
        counts[name] = o.per_kind
        base = [x for x in rargs if x.endswith("base.kry") and "--base" in rargs]
        if name in ("delta", "golden-delta_v2-0", "golden-delta_ref_v2-0") and (not want or name + ".base" in want):
            # the same delta archive, its base mutated
            bname = name + ".base"
            b = dict(KINDS[name])
            b["ref"] = dict(b["ref"])
            b["ref"]["base"] = open(base[0], "rb").read()
            b["rargs"] = [("base.kry" if x == base[0] else x) for x in rargs]
            b["mut_base"] = True
            b["peer"] = None
            KINDS[bname] = b
            counts[bname] = o.per_kind
    CTX.update(k=k, seed=o.seed, others=others, work=work)
    # the parent holds the references; the workers (forked) inherit them and make each
    # mutation from (kind, number) themselves
    jobs = [(name, i) for i in range(o.per_kind) for name in counts]
    log(f"{len(jobs)} mutations over {len(counts)} kinds")
    # the key/base files every case needs, in each worker's directory: copy on demand
    findings = []
    stats = {}
    done = 0
    per_kind_flags = {n: 0 for n in counts}
    t0 = time.time()
    with ProcessPoolExecutor(o.jobs) as ex:
        for kind, flags, kept, rcs in ex.map(check_job, jobs, chunksize=4):
            done += 1
            for cmd, rc in rcs.items():
                stats.setdefault(kind, {}).setdefault(cmd, {})
                stats[kind][cmd][rc] = stats[kind][cmd].get(rc, 0) + 1
            if flags:
                per_kind_flags[kind] += 1
                findings += flags
                for f in flags:
                    log("FLAG", f, "->", kept)
            if done % 200 == 0:
                log(f"{done}/{len(jobs)} in {time.time() - t0:.0f} s, {len(findings)} flags")
    with open(os.path.join(work, "findings.txt"), "w") as f:
        f.write("\n".join(findings) + "\n")
    for n in counts:
        log(f"{n}: {counts[n]} mutations, {per_kind_flags[n]} flagged")
        for cmd, h in stats.get(n, {}).items():
            log(f"    {cmd}: " + ", ".join(f"exit {rc}: {c}" for rc, c in sorted(h.items(), key=str)))
    log(f"total {len(jobs)} mutations, {len(findings)} flags, {time.time() - t0:.0f} s")
    return 1 if findings else 0


KINDS = {}
CTX = {}


def check_job(job):
    name, i = job
    kd = KINDS[name]
    ref = kd["ref"]["base"] if kd["mut_base"] else kd["ref"]["bytes"]
    rng = random.Random(f"{CTX['seed']}-{name}-{i}")
    cuts = boundaries(ref)
    if i % 3 == 2 and i // 3 < len(cuts):
        # every structural boundary gets its cut
        c = cuts[i // 3]
        mname, data, small = f"cut@{c}", ref[:c], False
    else:
        mname, data, small = mutate(ref, rng, i, kd["peer"], CTX["others"])
    return check_case((CTX["k"], name, kd["a"], data, f"{i}-{mname}", small, kd["mut_base"],
                       kd["rargs"], kd["ref"], kd["rec"], CTX["work"]))


if __name__ == "__main__":
    sys.exit(main())
