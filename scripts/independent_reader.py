#!/usr/bin/env python3
"""An independent reader of krypta archives, written from docs/FORMAT.md alone.

    independent_reader.py [--keyfile K | --password-env VAR] [--base BASE.kry
        [--base-keyfile K | --base-password-env VAR]] ARCHIVE OUTDIR

It exists to test the promise that docs/FORMAT.md is enough to write a reader: it was
written from FORMAT.md (and docs/SECURITY.md, test-vectors/) without reading krypta's
Rust source. It verifies every tag, MAC, checksum and structural rule it implements,
and only then writes the entries into OUTDIR (which must be empty or absent). Any failed
check exits non-zero with the exit code FORMAT.md §11 gives for it (1 usage, 2
authentication, 3 structure, 5 checksum, 9 delta base).

Covered: formats 1 and 2; unencrypted, key file (§3.5 KRYPTA-KEY-1), argon2id and pbkdf2
password stanzas; stored / zstd / zstd-with-reference-prefix / zstd+base blocks; all eight BCJ
filters (from xz's algorithms, §5.2); every record kind; typed fields; the index (both
encodings) checked against the stream; the footer; delta archives with base regions and
BASE_REF (§16) including the base binding; a recovery section is skipped (its trailer
gives the protected length; its own checksums are not verified); a signature frame
is verified (ML-DSA-65 and Ed25519 with pyca/cryptography >= 46, else only its check value).
Not covered: pq-box stanzas, salvage of damaged
archives, the one-bit header repair, the hole-hashing budget (§13: holes are always
hashed), streaming (the archive and its decoded record stream are held in memory).

Needs: Python 3.9+, `pip install zstandard cryptography blake3` (+ argon2-cffi for
argon2id password stanzas).
"""

import argparse
import base64
import hashlib
import hmac
import os
import struct
import sys
import unicodedata

import blake3
import zstandard
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MiB = 1 << 20


# ---------------------------------------------------------------------------------------
# Errors: each carries the exit code of FORMAT.md §11.
# ---------------------------------------------------------------------------------------
class Fail(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def need(cond, code, msg):
    if not cond:
        raise Fail(code, msg)


# ---------------------------------------------------------------------------------------
# Primitives (Conventions of FORMAT.md)
# ---------------------------------------------------------------------------------------
def blake3_dk(ctx, *parts):
    h = blake3.blake3(derive_key_context=ctx)
    for p in parts:
        h.update(p)
    return h.digest()


def hkdf(ikm, salt, info, n):
    return HKDF(algorithm=hashes.SHA256(), length=n, salt=salt, info=info).derive(ikm)


def hmac256(k, *parts):
    m = hmac.new(k, digestmod=hashlib.sha256)
    for p in parts:
        m.update(p)
    return m.digest()


def aes_ctr(key, iv, data):
    d = Cipher(algorithms.AES(key), modes.CTR(iv)).decryptor()
    return d.update(bytes(data)) + d.finalize()


class Reader:
    """A bounds-checked little-endian cursor over bytes."""

    def __init__(self, buf, pos=0, end=None, code=3, what="structure"):
        self.b = buf
        self.p = pos
        self.end = len(buf) if end is None else end
        self.code = code
        self.what = what

    def take(self, n):
        need(n >= 0 and self.p + n <= self.end, self.code, f"{self.what}: truncated")
        v = self.b[self.p:self.p + n]
        self.p += n
        return bytes(v)

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def i64(self):
        return struct.unpack("<q", self.take(8))[0]

    def left(self):
        return self.end - self.p


# ---------------------------------------------------------------------------------------
# §3.5 key files and §3.2 stanzas
# ---------------------------------------------------------------------------------------
def b64url_nopad(s):
    need(all(c.isalnum() or c in "-_" for c in s), 3, "key file: not base64url")
    raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    # the unused low bits of the last character must be zero: re-encode and compare
    need(base64.urlsafe_b64encode(raw).decode().rstrip("=") == s, 3,
         "key file: non-canonical base64url")
    return raw


def read_key_file(path):
    data = open(path, "rb").read()
    need(len(data) <= 65536, 1, "key file larger than 64 KiB")
    lines = [ln.strip() for ln in data.decode("utf-8").split("\n")]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    need(len(lines) == 1, 1, "key file: exactly one key line expected")
    prefix = "KRYPTA-KEY-1-"
    need(lines[0].startswith(prefix), 1, "key file: not a KRYPTA-KEY-1 key")
    raw = b64url_nopad(lines[0][len(prefix):])
    need(len(raw) == 36, 1, "key file: wrong length")
    payload, check = raw[:32], raw[32:]
    need(hashlib.sha256(prefix.encode() + payload).digest()[:4] == check, 1,
         "key file: checksum mismatch")
    return payload


STANZA_NAMES = {1: b"argon2id", 2: b"pbkdf2", 3: b"keyfile", 4: b"pq-box"}
STANZA_LEN = {1: 92, 2: 84, 3: 64, 4: 1184}


def try_unwrap(kind, body, kek, archive_id):
    """§3.2 the wrap: returns the file key, or None when the tag does not verify."""
    params, wrapped, tag = body[:-64], body[-64:-32], body[-32:]
    okm = hkdf(kek, archive_id, b"krypta/v1/wrap/" + STANZA_NAMES[kind], 64)
    enc, mac = okm[:32], okm[32:]
    want = hmac256(mac, bytes([kind]), params, wrapped)
    if not hmac.compare_digest(want, tag):
        return None
    return aes_ctr(enc, bytes(16), wrapped)


def open_stanzas(hdr, keyfiles, password):
    """§3.3: key files first (header order), then the one password stanza."""
    for kf in keyfiles:
        for kind, body in hdr.stanzas:
            if kind == 3:
                fk = try_unwrap(3, body, kf, hdr.archive_id)
                if fk is not None:
                    return fk
    if password is not None:
        # §3.2: the KDF input is the NFC form of a UTF-8 password (else its bytes); for
        # format 1, whose writers used the bytes as typed, also the bytes and the NFD form
        try:
            text = password.decode("utf-8")
            forms = [unicodedata.normalize("NFC", text).encode()]
            if hdr.version == 1:
                for f in (password, unicodedata.normalize("NFD", text).encode()):
                    if f not in forms:
                        forms.append(f)
        except UnicodeDecodeError:
            forms = [password]
    for password in (forms if password is not None else []):
        for kind, body in hdr.stanzas:
            if kind == 1:
                m, t, p = struct.unpack("<III", body[:12])
                salt = body[12:28]
                need(8192 <= m <= 4194304, 3, f"argon2id memory {m} KiB beyond bounds")
                need(1 <= t <= 16, 3, f"argon2id iterations {t} beyond bounds")
                need(1 <= p <= 16, 3, f"argon2id lanes {p} beyond bounds")
                from argon2.low_level import Type, hash_secret_raw
                kek = hash_secret_raw(password, salt, time_cost=t, memory_cost=m,
                                      parallelism=p, hash_len=32, type=Type.ID, version=19)
            elif kind == 2:
                (c,) = struct.unpack("<I", body[:4])
                salt = body[4:20]
                need(100000 <= c <= 10000000, 3, f"pbkdf2 iterations {c} beyond bounds")
                kek = hashlib.pbkdf2_hmac("sha256", password, salt, c, 32)
            else:
                continue
            fk = try_unwrap(kind, body, kek, hdr.archive_id)
            if fk is not None:
                return fk
    raise Fail(2, "authentication failed: no stanza opens with the key given")


class Keys:
    """§3.1 subkeys of the file key."""

    def __init__(self, file_key, archive_id):
        k = lambda label: hkdf(file_key, archive_id, label, 32)  # noqa: E731
        self.block_enc = k(b"krypta/v1/block-enc")
        self.block_mac = k(b"krypta/v1/block-mac")
        self.header_mac = k(b"krypta/v1/header-mac")
        self.footer_mac = k(b"krypta/v1/footer-mac")


# ---------------------------------------------------------------------------------------
# §2 header (format 2) and §14 (format 1)
# ---------------------------------------------------------------------------------------
MAGIC = b"\x89KRYPTA\n"
EXT_RECOVERY, EXT_SIGNER, EXT_DELTA = 0x0001, 0x0002, 0x8001


class Header:
    pass


def parse_header(buf):
    h = Header()
    need(len(buf) >= 16 and buf[:8] == MAGIC, 3, "not a krypta archive")
    h.version, h.flags, h.H = struct.unpack("<HHI", buf[8:16])
    need(h.version in (1, 2), 3, f"unsupported format version {h.version}")
    allowed = 0x1 if h.version == 1 else 0x3
    need(h.flags & ~allowed == 0, 3, f"header flags {h.flags:#x}")
    need((84 if h.version == 1 else 86) <= h.H <= MiB, 3, f"header length {h.H}")
    need(len(buf) >= h.H, 3, "header truncated")
    h.bytes = bytes(buf[:h.H])
    r = Reader(h.bytes, 16, h.H - 32, what="header")
    h.archive_id = r.take(16)
    h.created = r.i64()
    h.block_size = r.u32()
    h.level = r.u8()
    need(r.u8() == 0, 3, "header reserved byte")
    need(h.level <= 9, 3, f"level {h.level}")
    if h.version == 2:
        need(65536 <= h.block_size <= 268435456, 3, f"block size {h.block_size}")
    S = r.u16()
    need(S <= 64, 3, f"stanza count {S}")
    need((S > 0) == bool(h.flags & 1), 3, "stanza count disagrees with the encrypted flag")
    h.stanzas = []
    for _ in range(S):
        kind = r.u8()
        need(r.take(3) == b"\0\0\0", 3, "stanza reserved bytes")
        body = r.take(r.u32())
        if kind in STANZA_LEN:
            need(len(body) == STANZA_LEN[kind], 3, f"stanza kind {kind} body length")
        else:
            need(h.version == 2, 3, f"unknown stanza kind {kind} in format 1")
        h.stanzas.append((kind, body))
    need(sum(1 for k, _ in h.stanzas if k in (1, 2)) <= 1, 3, "two password stanzas")
    n = r.u32()
    need(n <= 4096, 3, "comment too long")
    try:
        h.comment = r.take(n).decode("utf-8")
    except UnicodeDecodeError:
        raise Fail(3, "header: comment is not UTF-8")
    h.ext = {}
    if h.version == 2:
        E = r.u16()
        need(E <= 64, 3, f"extension count {E}")
        last = -1
        for _ in range(E):
            t = r.u16()
            need(r.u16() == 0, 3, "extension reserved")
            v = r.take(r.u32())
            need(t > last and t not in (0, 0x8000), 3, f"extension type {t:#x} order/reserved")
            last = t
            if t == EXT_RECOVERY:
                need(len(v) == 1 and 1 <= v[0] <= 50, 3, "recovery extension")
            elif t == EXT_SIGNER:
                need(len(v) == 32, 3, "signer extension")
            elif t == EXT_DELTA:
                need(len(v) == 48, 3, "delta base extension")
            elif t & 0x8000:
                raise Fail(3, f"critical extension {t:#06x}: needs a newer krypta")
            h.ext[t] = v
        need(bool(h.flags & 2) == (EXT_RECOVERY in h.ext), 3,
             "recovery flag and extension disagree")
    need(r.p == h.H - 32, 3, "bytes between the last header field and the tag")
    h.tag = h.bytes[h.H - 32:]
    h.encrypted = bool(h.flags & 1)
    return h


def verify_header_tag(h, keys):
    if keys is None:
        want = blake3_dk("krypta v1 header checksum", h.bytes[:h.H - 32])
        need(want == h.tag, 5, "header checksum mismatch")
    else:
        want = hmac256(keys.header_mac, h.bytes[:h.H - 32])
        need(hmac.compare_digest(want, h.tag), 2, "header MAC mismatch")


# ---------------------------------------------------------------------------------------
# §5.2 BCJ filters (decoders), from xz's simple/x86.c and simple/arm64.c
# ---------------------------------------------------------------------------------------
def bcj_x86_decode(buf, now_pos):
    """xz simple/x86.c, decoding direction, state fresh for the buffer."""
    allowed = (True, True, True, False, True, False, False, False)
    bitnum = (0, 1, 2, 2, 3, 3, 3, 3)
    ms = lambda b: ((b + 1) & 0xFE) == 0  # noqa: E731  (Test86MSByte: 0x00 or 0xFF)
    size = len(buf)
    if size < 5:
        return
    prev_mask = 0
    prev_pos = (now_pos - 5) & 0xFFFFFFFF  # xz starts at (uint32_t)-5 and clamps to now_pos-5
    i = 0
    limit = size - 5
    find = buf.find
    while i <= limit:
        # jump to the next E8/E9 (speed; same as xz's byte-by-byte loop)
        j8 = find(b"\xe8", i, limit + 1)
        j9 = find(b"\xe9", i, limit + 1)
        cands = [j for j in (j8, j9) if j >= 0]
        if not cands:
            break
        i = min(cands)
        offset = (now_pos + i - prev_pos) & 0xFFFFFFFF
        prev_pos = (now_pos + i) & 0xFFFFFFFF
        if offset > 5:
            prev_mask = 0
        else:
            for _ in range(offset):
                prev_mask &= 0x77
                prev_mask <<= 1
        b = buf[i + 4]
        if ms(b) and allowed[(prev_mask >> 1) & 7] and (prev_mask >> 1) < 0x10:
            src = b << 24 | buf[i + 3] << 16 | buf[i + 2] << 8 | buf[i + 1]
            while True:
                dest = (src - (now_pos + i + 5)) & 0xFFFFFFFF
                if prev_mask == 0:
                    break
                k = bitnum[prev_mask >> 1]
                b = (dest >> (24 - k * 8)) & 0xFF
                if not ms(b):
                    break
                src = dest ^ ((1 << (32 - k * 8)) - 1)
            buf[i + 4] = 0xFF if (dest >> 24) & 1 else 0x00
            buf[i + 3] = (dest >> 16) & 0xFF
            buf[i + 2] = (dest >> 8) & 0xFF
            buf[i + 1] = dest & 0xFF
            i += 5
            prev_mask = 0
        else:
            i += 1
            prev_mask |= 1
            if ms(b):
                prev_mask |= 0x10


def bcj_arm64_decode(buf, now_pos):
    """xz 5.4.0 simple/arm64.c (BL and ADRP), decoding direction."""
    for i in range(0, len(buf) - 3, 4):
        pc = (now_pos + i) & 0xFFFFFFFF
        instr = struct.unpack_from("<I", buf, i)[0]
        if (instr >> 26) == 0x25:  # BL
            pc = (-(pc >> 2)) & 0xFFFFFFFF
            instr = 0x94000000 | ((instr + pc) & 0x03FFFFFF)
            struct.pack_into("<I", buf, i, instr)
        elif (instr & 0x9F000000) == 0x90000000:  # ADRP
            src = ((instr >> 29) & 3) | ((instr >> 3) & 0x001FFFFC)
            if (src + 0x00020000) & 0x001C0000:
                continue
            instr &= 0x9000001F
            pc = (-(pc >> 12)) & 0xFFFFFFFF
            dest = (src + pc) & 0xFFFFFFFF
            instr |= (dest & 3) << 29
            instr |= (dest & 0x0003FFFC) << 3
            instr |= ((-(dest & 0x00020000)) & 0xFFFFFFFF) & 0x00E00000
            struct.pack_into("<I", buf, i, instr)


def bcj_arm_decode(buf, now_pos):
    """xz simple/arm.c: BL (cond AL, byte 3 = 0xEB), pc = now_pos + i + 8."""
    for i in range(0, len(buf) - 3, 4):
        if buf[i + 3] == 0xEB:
            src = (buf[i + 2] << 16 | buf[i + 1] << 8 | buf[i]) << 2
            dest = ((src - (now_pos + i + 8)) & 0xFFFFFFFF) >> 2
            buf[i + 2], buf[i + 1], buf[i] = dest >> 16 & 0xFF, dest >> 8 & 0xFF, dest & 0xFF


def bcj_armthumb_decode(buf, now_pos):
    """xz simple/armthumb.c: BL pairs, pc = now_pos + i + 4."""
    i = 0
    while i + 4 <= len(buf):
        if (buf[i + 1] & 0xF8) == 0xF0 and (buf[i + 3] & 0xF8) == 0xF8:
            src = ((buf[i + 1] & 7) << 19 | buf[i] << 11 | (buf[i + 3] & 7) << 8 | buf[i + 2]) << 1
            dest = ((src - (now_pos + i + 4)) & 0xFFFFFFFF) >> 1
            buf[i + 1] = 0xF0 | (dest >> 19 & 7)
            buf[i] = dest >> 11 & 0xFF
            buf[i + 3] = 0xF8 | (dest >> 8 & 7)
            buf[i + 2] = dest & 0xFF
            i += 2
        i += 2


def bcj_powerpc_decode(buf, now_pos):
    """xz simple/powerpc.c: big-endian b/bl with AA = 0, LK = 1."""
    for i in range(0, len(buf) - 3, 4):
        if (buf[i] >> 2) == 0x12 and (buf[i + 3] & 3) == 1:
            src = (buf[i] & 3) << 24 | buf[i + 1] << 16 | buf[i + 2] << 8 | (buf[i + 3] & ~3 & 0xFF)
            dest = (src - (now_pos + i)) & 0xFFFFFFFF
            buf[i] = 0x48 | (dest >> 24 & 3)
            buf[i + 1] = dest >> 16 & 0xFF
            buf[i + 2] = dest >> 8 & 0xFF
            buf[i + 3] = (buf[i + 3] & 3) | (dest & 0xFF)


def bcj_sparc_decode(buf, now_pos):
    """xz simple/sparc.c: call."""
    for i in range(0, len(buf) - 3, 4):
        if (buf[i] == 0x40 and (buf[i + 1] & 0xC0) == 0) or \
                (buf[i] == 0x7F and (buf[i + 1] & 0xC0) == 0xC0):
            src = (struct.unpack_from(">I", buf, i)[0] << 2) & 0xFFFFFFFF
            dest = ((src - (now_pos + i)) & 0xFFFFFFFF) >> 2
            dest = (((-((dest >> 22) & 1)) << 22) & 0x3FFFFFFF) | (dest & 0x3FFFFF) | 0x40000000
            struct.pack_into(">I", buf, i, dest & 0xFFFFFFFF)


def bcj_riscv_decode(buf, now_pos):
    """xz 5.6.0 simple/riscv.c, decoder: JAL, and AUIPC pairs (special and "fake")."""
    M = 0xFFFFFFFF
    if len(buf) < 8:
        return
    last = len(buf) - 8
    i = 0
    while i <= last:
        inst = buf[i]
        if inst == 0xEF:  # JAL
            b1 = buf[i + 1]
            if b1 & 0x0D == 0:
                b2, b3 = buf[i + 2], buf[i + 3]
                addr = (((b1 & 0xF0) << 13 | b2 << 9 | b3 << 1) - (now_pos + i)) & M
                buf[i + 1] = (b1 & 0x0F) | (addr >> 8 & 0xF0)
                buf[i + 2] = (addr >> 16 & 0x0F) | (addr >> 7 & 0x10) | (addr << 4 & 0xE0)
                buf[i + 3] = (addr >> 4 & 0x7F) | (addr >> 13 & 0x80)
                i += 4
                continue
        elif inst & 0x7F == 0x17:  # AUIPC
            inst = struct.unpack_from("<I", buf, i)[0]
            if inst & 0xE80:  # rd is not x0 or x2: maybe a "fake" pair
                inst2 = struct.unpack_from("<I", buf, i + 4)[0]
                if ((inst << 8) ^ (inst2 - 3)) & 0xF8003:
                    i += 6
                    continue
                addr = ((inst & 0xFFFFF000) + (inst2 >> 20)) & M
                inst = (0x17 | (2 << 7) | (inst2 << 12)) & M
                inst2 = addr
            else:  # rd is x0 or x2: a special pair
                rs1 = inst >> 27
                if (((inst - 0x3117) << 18) & M) >= (rs1 & 0x1D):
                    i += 4
                    continue
                addr = (struct.unpack_from(">I", buf, i + 4)[0] - (now_pos + i)) & M
                inst2 = ((inst >> 12) | (addr << 20)) & M
                inst = (0x17 | (rs1 << 7) | ((addr + 0x800) & 0xFFFFF000)) & M
            struct.pack_into("<II", buf, i, inst, inst2)
            i += 8
            continue
        i += 2


IA64_BRANCH = (0,) * 16 + (4, 4, 6, 6, 0, 0, 7, 7, 4, 4, 0, 0, 4, 4, 0, 0)


def bcj_ia64_decode(buf, now_pos):
    """xz simple/ia64.c: bundle templates, slot branches."""
    for i in range(0, len(buf) - 15, 16):
        mask = IA64_BRANCH[buf[i] & 0x1F]
        bit_pos = 5
        for slot in range(3):
            if (mask >> slot) & 1:
                byte_pos, bit_res = bit_pos >> 3, bit_pos & 7
                instr = int.from_bytes(buf[i + byte_pos:i + byte_pos + 6], "little")
                norm = instr >> bit_res
                if (norm >> 37) & 0xF == 0x5 and (norm >> 9) & 7 == 0:
                    src = ((norm >> 13) & 0xFFFFF) | (((norm >> 36) & 1) << 20)
                    src <<= 4
                    dest = ((src - (now_pos + i)) & 0xFFFFFFFF) >> 4
                    norm &= ~(0x8FFFFF << 13)
                    norm |= (dest & 0xFFFFF) << 13
                    norm |= (dest & 0x100000) << (36 - 20)
                    instr = (instr & ((1 << bit_res) - 1)) | (norm << bit_res)
                    buf[i + byte_pos:i + byte_pos + 6] = (instr & (1 << 48) - 1).to_bytes(6, "little")
            bit_pos += 41


BCJ = {1: (bcj_x86_decode, 1), 2: (bcj_arm64_decode, 4), 3: (bcj_arm_decode, 4),
       4: (bcj_armthumb_decode, 2), 5: (bcj_powerpc_decode, 4), 6: (bcj_sparc_decode, 4),
       7: (bcj_ia64_decode, 16), 8: (bcj_riscv_decode, 2)}
BCJ_ALIGN = {0: 1, 1: 1, 2: 4, 3: 4, 4: 2, 5: 4, 6: 4, 7: 16, 8: 2}


# ---------------------------------------------------------------------------------------
# §5.1 zstd frame rules
# ---------------------------------------------------------------------------------------
def zstd_check_frame(payload, R, version, code):
    """Check one zstd frame against §5.1 (format 1: §14); returns nothing, raises Fail."""
    p = bytes(payload)
    need(len(p) >= 6 and p[:4] == b"\x28\xb5\x2f\xfd", code, "zstd payload: bad magic")
    fhd = p[4]
    fcs_flag, single, reserved, has_cksum, did_flag = fhd >> 6, fhd >> 5 & 1, fhd >> 3 & 1, fhd >> 2 & 1, fhd & 3
    pos = 5
    window = None
    if not single:
        wd = p[pos]
        pos += 1
        wlog = 10 + (wd >> 3)
        window = (1 << wlog) + ((1 << wlog) >> 3) * (wd & 7)
    did_size = (0, 1, 2, 4)[did_flag]
    did = int.from_bytes(p[pos:pos + did_size], "little")
    pos += did_size
    fcs_size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    need(fcs_size > 0, code, "zstd frame does not declare its content size")
    fcs = int.from_bytes(p[pos:pos + fcs_size], "little") + (256 if fcs_size == 2 else 0)
    pos += fcs_size
    need(fcs == R, code, f"zstd content size {fcs} != raw length {R}")
    if version == 2:
        need(reserved == 0, code, "zstd reserved bit set")
        need(did == 0, code, "zstd frame has a dictionary id")
        if single:
            window = fcs
        need(window <= 1 << 29, code, f"zstd window {window} > 512 MiB")
    # walk the blocks to find where the frame ends: nothing may follow it
    while True:
        need(pos + 3 <= len(p), code, "zstd frame truncated")
        bh = int.from_bytes(p[pos:pos + 3], "little")
        pos += 3
        last, btype, bsize = bh & 1, bh >> 1 & 3, bh >> 3
        need(btype != 3, code, "zstd reserved block type")
        pos += 1 if btype == 1 else bsize
        if last:
            break
    pos += 4 if has_cksum else 0
    need(pos == len(p), code, "bytes after the zstd frame (or frame truncated)")


def zstd_content_size(p, code):
    """Frame_Content_Size from a zstd frame header (§5.1), or Fail when absent."""
    need(len(p) >= 6 and p[:4] == b"\x28\xb5\x2f\xfd", code, "zstd payload: bad magic")
    fhd = p[4]
    single = fhd >> 5 & 1
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    fcs_size = (1 if single else 0, 2, 4, 8)[fhd >> 6]
    need(fcs_size > 0 and pos + fcs_size <= len(p), code, "zstd frame does not declare its content size")
    return int.from_bytes(p[pos:pos + fcs_size], "little") + (256 if fcs_size == 2 else 0)


def diff_decode(payload, R, region, code):
    """A diff+base payload after its region descriptor (§16.6) against `region`."""
    p = bytes(payload)
    need(len(p) >= 17 and p[0] == 0, code, "diff payload head / version")
    lens = struct.unpack_from("<4I", p, 1)
    need(sum(lens) == len(p) - 17, code, "diff stream lengths")
    streams, pos = [], 17
    for k, n in enumerate(lens):
        f = p[pos:pos + n]
        pos += n
        if n == 0:
            streams.append(b"")
            continue
        size = zstd_content_size(f, code)
        need(k == 0 or size <= R, code, "diff stream longer than the block")
        zstd_check_frame(f, size, 2, code)
        if k == 0:
            fhd = f[4]
            if not fhd >> 5 & 1:
                wlog = 10 + (f[5] >> 3)
                need((1 << wlog) + ((1 << wlog) >> 3) * (f[5] & 7) <= 1 << 24, code, "ctrl window")
            else:
                need(size <= 1 << 24, code, "ctrl window")
        try:
            out = zstandard.ZstdDecompressor().decompress(f, max_output_size=max(size, 1))
        except zstandard.ZstdError as e:
            raise Fail(code, f"zstd: {e}")
        need(len(out) == size, code, "diff stream size")
        streams.append(out)
    ctrl, gaps, vals, extra = streams

    def numbers(b):
        i = 0
        while i < len(b):
            v, sh = 0, 0
            for j in range(5):
                need(i < len(b), code, "diff number cut off")
                x = b[i]
                i += 1
                v |= (x & 0x7F) << sh
                sh += 7
                if not x & 0x80:
                    break
                need(j < 4, code, "diff number over 5 bytes")
            need(v < 1 << 32, code, "diff number over 32 bits")
            yield v

    cmds = list(numbers(ctrl))
    need(len(cmds) % 3 == 0, code, "diff ctrl cut inside a command")
    gap_list = list(numbers(gaps))
    need(len(gap_list) == len(vals) and all(vals), code, "diff gaps / vals")
    # the diff bytes: position (in copied bytes) of each value
    val_at, t = {}, 0
    for g, v in zip(gap_list, vals):
        t += g
        val_at[t] = v
        t += 1
    out = bytearray()
    N = len(region)
    c, d, e = 0, 0, 0  # cursor, diff bytes used, extra bytes used
    for i in range(0, len(cmds), 3):
        v, copy, add = cmds[i:i + 3]
        seek = v >> 1 if v % 2 == 0 else -((v + 1) >> 1)
        c += seek
        need(0 <= c <= N + len(out), code, "diff seek out of range")
        need(copy + add >= 1 and len(out) + copy + add <= R, code, "diff command size")
        for _ in range(copy):
            need(c < N + len(out), code, "diff copy past the source")
            b = region[c] if c < N else out[c - N]
            out.append((b + val_at.get(d, 0)) & 0xFF)
            d += 1
            c += 1
        need(e + add <= len(extra), code, "diff extra runs out")
        out += extra[e:e + add]
        e += add
    need(len(out) == R, code, "diff output length")
    need(t <= d and e == len(extra), code, "diff streams left over")
    return out


def zstd_decode(payload, R, prefix, code):
    kw = {"max_window_size": 1 << 29}
    if prefix:
        kw["dict_data"] = zstandard.ZstdCompressionDict(
            bytes(prefix), dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    try:
        out = zstandard.ZstdDecompressor(**kw).decompress(bytes(payload), max_output_size=R)
    except zstandard.ZstdError as e:
        raise Fail(code, f"zstd: {e}")
    need(len(out) == R, code, "zstd frame does not decode to R bytes")
    return out


# ---------------------------------------------------------------------------------------
# The archive: frames (§4), blocks (§5), index (§8), footer (§9)
# ---------------------------------------------------------------------------------------
class Block:
    pass


class Archive:
    def __init__(self, path, keyfiles=(), password=None, base=None, is_base=False):
        self.path = path
        self.data = open(path, "rb").read()
        self.hdr = h = parse_header(self.data)
        self.v = h.version
        self.id = h.archive_id
        self.is_base = is_base
        # §11 step 3/4: keys
        if (keyfiles or password is not None) and not h.encrypted:
            raise Fail(2, "a key was given but the archive is not encrypted")
        if h.encrypted:
            if not keyfiles and password is None:
                raise Fail(1, "the archive is encrypted: a key is needed")
            self.keys = Keys(open_stanzas(h, keyfiles, password), self.id)
        else:
            self.keys = None
        E = self.enc = h.encrypted
        self.c_struct = 2 if E else 3   # inconsistent authenticated structure
        self.c_sum = 2 if E else 5      # a tag/checksum mismatch
        verify_header_tag(h, self.keys)  # step 5
        # §16.4: delta archives need their base, and only they take one
        self.delta = EXT_DELTA in h.ext
        if base is not None and not self.delta:
            raise Fail(1, "--base given for an archive that is not a delta archive")
        if self.delta and base is None and not is_base:
            raise Fail(9, f"delta archive: needs its base {h.ext[EXT_DELTA][:16].hex()}")
        if self.delta:
            need(not is_base, 3, "a base must not itself be a delta archive")
            bid, binding = h.ext[EXT_DELTA][:16], h.ext[EXT_DELTA][16:]
            need(base.id == bid, 9, f"base id {base.id.hex()} is not {bid.hex()}")
            need(base.binding() == binding, 9, "the base's binding differs (another archive)")
        self.base = base
        self.P = self.protected_length()
        self.walk_frames()
        self.read_footer()
        self.decode_index()
        self.decode_data()
        self.check_index_against_stream()

    # P ends at the footer; with a recovery section, its trailer says where (§15.7)
    def protected_length(self):
        d = self.data
        if not self.hdr.flags & 2:
            return len(d)
        t = d[-80:]
        need(len(d) >= 80 and t[:8] == b"KRYRECZ\n", 3,
             "recovery section announced but no trailer (this reader does not scan)")
        L = struct.unpack_from("<Q", t, 8 + 16)[0]
        need(L < len(d), 3, "recovery trailer: protected length")
        return L

    def frame_tag(self, head, body, seq):
        if self.keys is None:
            return blake3_dk("krypta v1 frame checksum", self.id, head, body)
        iv = struct.pack(">Q", seq) + bytes(8)
        return hmac256(self.keys.block_mac, b"krypta/v1/frame", self.id, head, iv, body)

    def walk_frames(self):
        """§4: the frames front to back from byte H; verify each tag, decrypt each body."""
        d, v = self.data, self.v
        pos, seq = self.hdr.H, 0
        self.frames = []  # (kind, offset, body_len, tag, plain body)
        seen_index = False
        end = self.P - 64
        bmin = 24 if v == 2 else 16
        while True:
            need(pos + 16 <= end, 3, f"truncated: frame {seq} head at byte {pos}")
            head = d[pos:pos + 16]
            kind, flags, res, B, fseq = struct.unpack("<BBHIQ", head)
            need(kind in (1, 2), 3, f"frame {seq}: kind {kind}")
            need(flags & ~1 == 0 and res == 0, 3, f"frame {seq}: flags/reserved")
            need(bmin <= B <= bmin + 256 * MiB, 3, f"frame {seq}: body length {B}")
            need(pos + 16 + B + 32 <= end, 3, f"truncated: frame {seq} body at byte {pos}")
            body = d[pos + 16:pos + 16 + B]
            tag = d[pos + 16 + B:pos + 48 + B]
            order_bad = (kind == 1 and seen_index) or fseq != seq or (kind == 1 and flags & 1)
            want = self.frame_tag(head, body, fseq)
            ok = hmac.compare_digest(want, tag)
            if order_bad:
                # §11 step 6: decided with the tag
                raise Fail(self.c_struct if ok else self.c_sum,
                           f"frame {seq} at byte {pos}: out of sequence")
            need(ok, self.c_sum, f"frame {seq} at byte {pos}: tag mismatch")
            if self.keys is not None:
                iv = struct.pack(">Q", seq) + bytes(8)
                body = aes_ctr(self.keys.block_enc, iv, body)
            self.frames.append((kind, pos, B, bytes(tag), body))
            seen_index |= kind == 2
            pos += 48 + B
            seq += 1
            if flags & 1:
                break
        self.index_end = pos
        self.sig_frame_at = None
        if v == 2 and pos + 16 <= end and d[pos] == 3:
            self.sig_frame_at = pos
        self.D = sum(1 for f in self.frames if f[0] == 1)
        self.I = len(self.frames) - self.D
        need(self.I >= 1, 3, "no index frame")

    def read_footer(self):
        d, v = self.data, self.v
        fpos = self.P - 64
        foot = d[fpos:fpos + 64]
        # §11 step 8: the footer parses (3), then its tag verifies, then it agrees
        need(foot[24:32] == b"KRYPTAZ\n", 3, "footer magic missing")
        if v == 2:
            ioff, D, I, flags = struct.unpack_from("<QQII", foot)
            need(flags & ~1 == 0, 3, "footer flags")
        else:
            ioff, D, I = struct.unpack_from("<QQQ", foot)
            flags = 0
        if self.keys is None:
            want = blake3_dk("krypta v1 footer checksum", self.id, foot[:32])
        else:
            want = hmac256(self.keys.footer_mac, self.id, foot[:32])
        need(hmac.compare_digest(want, foot[32:]), self.c_sum, "footer tag mismatch")
        signed = EXT_SIGNER in self.hdr.ext
        need(bool(flags & 1) == signed, self.c_struct, "footer signature flag vs header")
        first_index = self.frames[self.D][1]
        need((ioff, D, I) == (first_index, self.D, self.I), self.c_struct,
             f"footer ({ioff}, {D}, {I}) disagrees with the frames "
             f"({first_index}, {self.D}, {self.I})")
        if signed:
            self.check_signature_frame(fpos)
        else:
            need(self.index_end == fpos, 3, "bytes between the last index frame and the footer")
        self.footer = bytes(foot)

    def check_signature_frame(self, fpos):
        """§9.1: head and check value only; the signatures are not verified here."""
        S = self.sig_frame_at
        need(S is not None and S + 5405 == fpos, 3, "signature frame not before the footer")
        f = self.data[S:S + 5405]
        need(f[:8] == bytes([3, 0, 0, 0]) + struct.pack("<I", 5357), 3, "signature frame head")
        need(struct.unpack_from("<Q", f, 8)[0] == self.D + self.I, 3, "signature frame seq")
        want = blake3_dk("krypta v2 signature frame checksum", self.id, f[:5373])
        need(want == f[5373:], 3, "signature frame check mismatch")
        pk_m, pk_e = f[16:1968], f[1968:2000]
        fp = hashlib.sha256(b"krypta/v2/signer" + pk_m + pk_e).digest()
        need(fp == self.hdr.ext[EXT_SIGNER], 8, "signature frame key is not the header's signer")
        sig_m, sig_e = f[2000:5309], f[5309:5373]
        tags = b"".join(fr[3] for fr in self.frames)
        M = (b"krypta/v2/signature" + pk_m + pk_e + hashlib.sha512(self.hdr.bytes).digest()
             + struct.pack("<Q", len(self.frames)) + hashlib.sha512(tags).digest()
             + self.data[fpos:fpos + 64])
        try:
            from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PublicKey
        except ImportError:
            warn(f"{self.path}: signed; this pyca has no ML-DSA-65: signatures NOT verified")
            return
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        try:
            MLDSA65PublicKey.from_public_bytes(pk_m).verify(sig_m, M, b"krypta archive signature")
            Ed25519PublicKey.from_public_bytes(pk_e).verify(sig_e, M)
        except (InvalidSignature, ValueError) as err:
            raise Fail(8, f"signature does not verify: {err!r}")
        print(f"independent_reader: {self.path}: signature by {fp.hex()} verifies "
              "(ML-DSA-65 and Ed25519)", file=sys.stderr)

    # --- blocks ---
    def parse_block(self, body, kind):
        r = Reader(body, what="block header", code=self.c_struct)
        b = Block()
        b.codec, b.filt = r.u8(), r.u8()
        need(r.u16() == 0, self.c_struct, "block reserved")
        b.R = r.u32()
        b.offset = r.u64()
        if self.v == 2:
            b.first, b.L = r.u32(), r.u32()
        else:
            b.first, b.L = None, 0
        b.payload = body[r.p:]
        need(1 <= b.R <= 256 * MiB, self.c_struct, f"block raw length {b.R}")
        need(b.codec in ((0, 1, 2, 3) if self.delta and kind == 1 else (0, 1)),
             self.c_struct, f"block codec {b.codec}")
        need(b.filt <= 8, self.c_struct, f"BCJ filter {b.filt}")
        return b

    def decode_block(self, b, stream, group_start, kind):
        cs = self.c_struct
        if b.codec == 0:
            need(b.L == 0 and len(b.payload) == b.R, cs, "stored block length")
            out = bytearray(b.payload)
        elif b.codec == 1:
            need(len(b.payload) < b.R, cs, "zstd block does not shrink")
            zstd_check_frame(b.payload, b.R, self.v, cs)
            if self.v == 2:
                need(b.L <= 256 * MiB and b.L <= b.offset - group_start, cs,
                     "reference length beyond the group")
            prefix = stream[len(stream) - b.L:] if b.L else None
            out = bytearray(zstd_decode(b.payload, b.R, prefix, cs))
        elif b.codec == 3:  # diff+base (§16.6)
            need(b.L == 0, cs, "diff+base block with a reference length")
            need(len(b.payload) >= 33 and len(b.payload) - 16 < b.R, cs, "diff+base payload size")
            bseq, boff, N = struct.unpack_from("<QII", b.payload)
            need(1 <= N <= 256 * MiB, cs, "diff+base region length")
            region = self.base.region(bseq, boff, N)
            out = diff_decode(b.payload[16:], b.R, region, cs)
        else:  # codec 2: zstd+base (§16.2)
            need(b.L == 0, cs, "zstd+base block with a reference length")
            need(len(b.payload) >= 20 and len(b.payload) - 16 < b.R, cs, "zstd+base payload size")
            bseq, boff, N = struct.unpack_from("<QII", b.payload)
            need(1 <= N <= 256 * MiB, cs, "zstd+base region length")
            zstd_check_frame(b.payload[16:], b.R, self.v, cs)
            region = self.base.region(bseq, boff, N)
            out = bytearray(zstd_decode(b.payload[16:], b.R, region, cs))
        if b.filt:
            need(b.filt in BCJ, 3, f"BCJ filter {b.filt} not implemented by this reader")
            fn, align = BCJ[b.filt]
            if self.v == 2:
                need(b.offset % align == 0, cs, "BCJ block not aligned")
                start = b.offset
            else:
                start = b.offset - b.offset % align  # §14: rounded down
            fn(out, start & 0xFFFFFFFF)
        return out

    def decode_stream(self, frames, kind):
        stream = bytearray()
        blocks = []
        group_start = 0
        for (_, pos, B, tag, body) in frames:
            b = self.parse_block(body, kind)
            if self.v == 2 or kind == 1:
                # §5: stream offset = sum of previous raw lengths (format 1 does not check)
                if self.v == 2:
                    need(b.offset == len(stream), self.c_struct,
                         f"block stream offset {b.offset} != {len(stream)}")
            if kind == 2 and self.v == 2:
                need(b.filt == 0 and b.first == 0 and b.L == 0, self.c_struct,
                     "index block with filter / first record / reference")
            if self.v == 2 and b.L == 0:
                group_start = b.offset
            if self.v == 2 and b.first != 0xFFFFFFFF and kind == 1:
                need(b.first < b.R, self.c_struct, "first record beyond the block")
            b.start = len(stream)
            stream += self.decode_block(b, stream, group_start, kind)
            b.end = len(stream)
            blocks.append(b)
        return stream, blocks

    def decode_index(self):
        idx, _ = self.decode_stream(self.frames[self.D:], 2)
        need(len(idx) <= 2 << 30, 3, "index larger than 2 GiB")
        r = Reader(idx, code=self.c_struct, what="index")
        N = r.u64()
        self.index = []
        prev = b""
        for _ in range(N):
            e = {}
            if self.v == 2:
                e["flags"] = fl = r.u8()
                need(fl & ~1 == 0, self.c_struct, "index entry flags")
                shared = r.u32()
                need(shared <= len(prev), self.c_struct, "index shared prefix too long")
                meta = parse_meta(r, self.v, self.c_struct, prefix=prev[:shared])
                p = meta["path"]
                # front coding is canonical: shared is exactly the common prefix
                common = 0
                while common < min(len(p), len(prev)) and p[common] == prev[common]:
                    common += 1
                need(shared == common, self.c_struct, "index front coding not canonical")
                e["meta"] = meta
                e["size"] = r.u64()
                e["digest"] = r.take(32) if fl & 1 else None
                need(fl & 1 == 0 or meta["type"] == 1, self.c_struct, "digest on a non-file")
            else:
                meta = parse_meta(r, self.v, self.c_struct)
                e["meta"] = meta
                e["size"] = r.u64()
                e["digest"] = r.take(32)
            e["first_seq"], e["first_offset"], e["last_seq"] = r.u64(), r.u32(), r.u64()
            self.index.append(e)
            prev = meta["path"]
        D = r.u64()
        table = []
        for _ in range(D):
            table.append((r.u32(), r.u32()) if self.v == 2 else (r.u32(), 0))
        need(r.left() == 0, self.c_struct, "bytes after the index's frame table")
        need(D == self.D, self.c_struct, "index frame table count")
        for k, (bl, rl) in enumerate(table):
            need(bl == self.frames[k][2], self.c_struct, f"frame table body length of frame {k}")
        self.table = table
        check_entry_set([e["meta"] for e in self.index], self.v, self.c_struct)
        prevloc = None
        for e in self.index:
            loc = (e["first_seq"], e["first_offset"])
            need(prevloc is None or loc > prevloc, self.c_struct, "index locations not increasing")
            need(e["last_seq"] >= e["first_seq"], self.c_struct, "index last_seq < first_seq")
            prevloc = loc
        if self.index:
            need(self.index[-1]["last_seq"] < self.D, self.c_struct, "index last_seq >= D")

    def decode_data(self):
        self.stream, self.blocks = self.decode_stream(self.frames[:self.D], 1)
        if self.v == 2:
            for k, b in enumerate(self.blocks):
                need(self.table[k][1] == b.L, self.c_struct, f"frame table reference length {k}")

    # where a stream position lies: (frame seq, offset in its block)
    def locate(self, pos):
        import bisect
        starts = [b.start for b in self.blocks]
        k = bisect.bisect_right(starts, pos) - 1
        return k, pos - self.blocks[k].start

    def check_index_against_stream(self):
        self.entries = parse_records(self)
        need(len(self.entries) == len(self.index), self.c_struct,
             f"index has {len(self.index)} entries, the stream {len(self.entries)}")
        for s, e in zip(self.entries, self.index):
            p = s["meta"]["path"]
            need(s["meta"] == e["meta"], self.c_struct, f"index metadata of {p!r} differs")
            need(s["size"] == e["size"], self.c_struct, f"index size of {p!r} differs")
            if self.v == 2:
                need(s["digest"] == e["digest"], self.c_struct, f"index digest of {p!r} differs")
            else:
                want = s["digest"] if s["meta"]["type"] == 1 else bytes(32)
                need(want == e["digest"], self.c_struct, f"index digest of {p!r} differs")
            fs, fo = self.locate(s["start"])
            ls, _ = self.locate(s["last_byte"])
            need((fs, fo, ls) == (e["first_seq"], e["first_offset"], e["last_seq"]),
                 self.c_struct, f"index location of {p!r}: stream says {(fs, fo, ls)}, "
                 f"index {(e['first_seq'], e['first_offset'], e['last_seq'])}")

    # --- as a delta base (§16) ---
    def binding(self):
        tags = b"".join(f[3] for f in self.frames)
        return blake3_dk("krypta v2 delta base binding", self.id,
                         struct.pack("<Q", len(self.frames)), tags)

    def region(self, seq, off, N):
        need(seq < self.D, 9, f"base region frame {seq} beyond the base's data frames")
        b = self.blocks[seq]
        need(off < b.R, 9, "base region offset beyond its block")
        start = b.start + off
        need(start + N <= len(self.stream), 9, "base region runs past the base's data frames")
        return self.stream[start:start + N]


# ---------------------------------------------------------------------------------------
# §7 entries
# ---------------------------------------------------------------------------------------
def valid_path(p):
    if p == b".":
        return True
    if not p or b"\0" in p:
        return False
    return all(c not in (b"", b".", b"..") for c in p.split(b"/"))


def parse_meta(r, v, code, prefix=None):
    m = {}
    m["type"] = r.u8()
    need(m["type"] in (1, 2, 3, 4), code, f"entry type {m['type']}")
    need(r.take(3) == b"\0\0\0", code, "entry reserved bytes")
    m["mode"] = r.u32()
    m["mtime"] = r.i64()
    m["mtime_ns"] = r.u32()
    m["uid"], m["gid"] = r.u32(), r.u32()
    n = r.u32()
    if prefix is None:
        need(1 <= n <= 65536, code, "path length")
        m["path"] = r.take(n)
    else:
        m["path"] = prefix + r.take(n)
        need(1 <= len(m["path"]) <= 65536, code, "path length")
    m["link"] = r.take(r.u32())
    need(m["mtime_ns"] < 10**9, code, "mtime nanoseconds")
    need(valid_path(m["path"]), code, f"invalid path {m['path']!r}")
    t = m["type"]
    if v == 2:
        need(m["mode"] & ~0o7777 == 0, code, f"mode {m['mode']:o}")
        F = r.u32()
        need(F <= MiB, code, "fields area too large")
        m["fields"] = parse_fields(r.take(F), code)
        if t == 3:
            need(m["mode"] == 0o777, code, "symlink mode is not 0o777")
        if t == 4:
            need(not m["fields"], code, "hard link with fields")
        need(m["path"] != b"." or t == 2, code, "'.' that is not a directory")
    else:
        m["fields"] = []
        need(m["path"] != b".", code, "'.' entry in format 1")
    if t == 3:
        need(1 <= len(m["link"]) <= 65536 and b"\0" not in m["link"], code, "symlink target")
    elif t == 4:
        need(valid_path(m["link"]) and m["link"] != b".", code, "hard link target")
    else:
        need(m["link"] == b"", code, "link on a file or directory")
    return m


def parse_fields(buf, code):
    """§7.2 typed fields, canonical order."""
    r = Reader(buf, code=code, what="fields")
    out = []
    last = None
    xnames = set()
    while r.left():
        t = r.u16()
        val = r.take(r.u32())
        need(t != 0, code, "field type 0")
        key = (t, val)
        need(last is None or key > last, code, "fields not in canonical order")
        last = key
        if t in (1, 2):
            need(1 <= len(val) <= 256 and b"\0" not in val, code, "owner name")
            need(not any(ft == t for ft, _ in out), code, "owner name twice")
        elif t == 3:
            z = val.find(b"\0")
            need(1 <= z <= 255, code, "xattr name")
            need(len(val) - z - 1 <= 65536, code, "xattr value too long")
            need(val[:z] not in xnames, code, "xattr name twice")
            xnames.add(val[:z])
        elif t & 0x8000:
            raise Fail(3, f"critical field type {t:#06x}: needs a newer krypta")
        out.append((t, val))
    return out


def check_entry_set(metas, v, code):
    """§7.3 (format 1: §14, repeated paths of the same type replace)."""
    seen = {}
    for i, m in enumerate(metas):
        p = m["path"]
        if p in seen:
            need(v == 1 and seen[p]["type"] == m["type"], code, f"path {p!r} twice")
        if p == b".":
            need(i == 0, code, "'.' not the first entry")
        if m["type"] == 4:
            tgt = seen.get(m["link"])
            need(tgt is not None and tgt["type"] == 1, code,
                 f"hard link {p!r}: target not an earlier file")
            if v == 2:
                for k in ("mode", "mtime", "mtime_ns", "uid", "gid"):
                    need(m[k] == tgt[k], code, f"hard link {p!r}: {k} differs from its target")
        seen[p] = m
    # rule 3: nothing below a non-directory
    nondir = {p for p, m in seen.items() if m["type"] != 2}
    for p in seen:
        parts = p.split(b"/")
        for k in range(1, len(parts)):
            need(b"/".join(parts[:k]) not in nondir, code, f"{p!r} lies below a non-directory")


# ---------------------------------------------------------------------------------------
# §6 the record stream
# ---------------------------------------------------------------------------------------
def parse_records(a):
    """Parse a's record stream; check §6 and the blocks' first-record fields; return the
    entries in stream order with their content segments (not yet hashed)."""
    S, v, cs = a.stream, a.v, a.c_struct
    pos, n = 0, len(S)
    entries = []
    cur = None  # the open file entry
    starts = []  # (position, tag)
    while pos < n:
        tag = S[pos]
        starts.append((pos, tag))
        r = Reader(S, pos + 1, code=cs, what="record")
        if tag == 0 and v == 2:
            pos += 1
            continue
        if tag == 1:
            need(cur is None, cs, "ENTRY inside a file's records")
            meta = parse_meta(r, v, cs)
            e = {"meta": meta, "start": pos, "segments": [], "size": 0, "digest": None,
                 "base_ref": None}
            entries.append(e)
            e["last_byte"] = r.p - 1
            if meta["type"] == 1:
                cur = e
        elif tag == 2:
            need(cur is not None and cur["base_ref"] is None, cs, "DATA outside a file")
            off, L = r.u64(), r.u32()
            need(1 <= L <= 16 * MiB, cs, "DATA length")
            segs = cur["segments"]
            need(not segs or off >= segs[-1][0] + segs[-1][2], cs, "DATA offsets not increasing")
            need(off + L <= 1 << 44, cs, "DATA beyond 16 TiB")
            segs.append((off, r.p, L))
            r.take(L)
        elif tag == 3:
            need(cur is not None, cs, "END outside a file")
            need(cur["base_ref"] is None, cs, "END after BASE_REF (END_DIGEST required)")
            size = r.u64()
            if v == 1:
                cur["digest"] = r.take(32)
            cur.update(size=size, last_byte=r.p - 1)
            cur = None
        elif tag == 4 and v == 2:
            need(cur is not None, cs, "END_DIGEST outside a file")
            size = r.u64()
            cur.update(size=size, digest=r.take(32), last_byte=r.p - 1)
            cur = None
        elif tag == 5 and v == 2:
            need(a.delta, cs, "BASE_REF in an archive without a base")
            need(cur is not None and not cur["segments"] and cur["base_ref"] is None, cs,
                 "BASE_REF not right after a file's ENTRY")
            cur["base_ref"] = r.u64()
        else:
            raise Fail(cs, f"unknown record tag {tag} at stream byte {pos}")
        if cur is not None:
            need(not cur["segments"] or cur["segments"][-1][0] + cur["segments"][-1][2] <= (1 << 44),
                 cs, "file too large")
        pos = r.p
    need(cur is None, cs, "the stream ends inside a file")
    for e in entries:
        if e["meta"]["type"] == 1:
            need(e["size"] <= 1 << 44, cs, "file size beyond 16 TiB")
            if e["segments"]:
                o, _, L = e["segments"][-1]
                need(o + L <= e["size"], cs, f"DATA beyond the size of {e['meta']['path']!r}")
    check_entry_set([e["meta"] for e in entries], v, cs)
    if v == 2:
        check_first_records(a, starts)
    return entries


def check_first_records(a, starts):
    """§5 first record, with the 2026-12-02..06 BASE_REF exception."""
    import bisect
    positions = [p for p, _ in starts]
    for k, b in enumerate(a.blocks):
        i = bisect.bisect_left(positions, b.start)
        # the exception: a BASE_REF right after an ENTRY, an END_DIGEST right after a
        # BASE_REF, starting before the offset the block names, are left unchecked
        while (i < len(starts) and starts[i][0] < b.end and i > 0 and
               ((starts[i][1] == 5 and starts[i - 1][1] == 1) or
                (starts[i][1] == 4 and starts[i - 1][1] == 5)) and
               (b.first == 0xFFFFFFFF or starts[i][0] - b.start < b.first)):
            i += 1
        got = starts[i][0] - b.start if i < len(starts) and starts[i][0] < b.end else 0xFFFFFFFF
        need(got == b.first, a.c_struct,
             f"block {k}: first record {b.first:#x}, the stream has {got:#x}")


# ---------------------------------------------------------------------------------------
# Content, digests and BASE_REF (§6, §16.5)
# ---------------------------------------------------------------------------------------
def content_chunks(S, segments, size):
    """Yield (offset, bytes-or-None-for-hole, length) covering [0, size)."""
    at = 0
    for off, p, L in segments:
        if off > at:
            yield at, None, off - at
        yield off, S[p:p + L], L
        at = off + L
    if size > at:
        yield at, None, size - at


def digest_of(chunks):
    h = blake3.blake3()
    zeros = bytes(MiB)
    for _, data, L in chunks:
        if data is None:
            while L:
                k = min(L, MiB)
                h.update(zeros[:k])
                L -= k
        else:
            h.update(data)
    return h.digest()


def base_ref_content(base, n, want_size):
    """§16.5 reading the content of base entry n from the base's record stream."""
    need(n < len(base.index), 3 if not base.enc else 2, f"BASE_REF {n} beyond the base's entries")
    e = base.index[n]
    need(e["meta"]["type"] == 1, 3, f"BASE_REF {n} is not a file")
    need(e["size"] == want_size, 3, f"BASE_REF {n}: size differs from END_DIGEST")
    s = base.entries[n]  # the base's stream entries are its index's, in order (checked)
    need(s["meta"] == e["meta"], 9, "base stream entry is not the index's")
    return list(content_chunks(base.stream, s["segments"], s["size"]))


# ---------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------
def warn(msg):
    print(f"independent_reader: warning: {msg}", file=sys.stderr)


def check_contents(a):
    """Verify every file's digest (END_DIGEST, format-1 END) before anything is written."""
    for e in a.entries:
        if e["meta"]["type"] != 1:
            continue
        if e["base_ref"] is not None:
            e["chunks"] = base_ref_content(a.base, e["base_ref"], e["size"])
        else:
            e["chunks"] = list(content_chunks(a.stream, e["segments"], e["size"]))
        if e["digest"] is not None:
            code = 9 if e["base_ref"] is not None else a.c_sum
            need(digest_of(e["chunks"]) == e["digest"], code,
                 f"content digest mismatch: {e['meta']['path']!r}")


def extract(a, outdir):
    out = os.fsencode(outdir)
    os.makedirs(out, exist_ok=True)
    need(not os.listdir(out), 1, "OUTDIR is not empty")
    dirs = []
    for e in a.entries:
        m = e["meta"]
        dest = os.path.join(out, m["path"]) if m["path"] != b"." else out
        os.makedirs(os.path.dirname(dest) or out, exist_ok=True)
        t = m["type"]
        if t == 2:
            os.makedirs(dest, exist_ok=True)
            dirs.append((dest, m))
            continue
        if os.path.lexists(dest):  # format 1: a repeated path replaces the earlier entry
            os.unlink(dest)
        if t == 1:
            tmp = dest + b".independent-reader-tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                for off, data, L in e["chunks"]:
                    if data is not None:
                        f.seek(off)
                        f.write(data)
                f.truncate(e["size"])
            os.rename(tmp, dest)
            set_meta(dest, m)
        elif t == 3:
            os.symlink(m["link"], dest)
            set_meta(dest, m, link=True)
        elif t == 4:
            os.link(os.path.join(out, m["link"]), dest, follow_symlinks=False)
    for dest, m in sorted(dirs, key=lambda x: -len(x[0])):
        set_meta(dest, m)


def set_meta(path, m, link=False):
    v = m.get("fields", [])
    for t, val in v:
        if t == 3:
            name, value = val.split(b"\0", 1)
            try:
                os.setxattr(path, name, value, follow_symlinks=False)
            except OSError as err:
                warn(f"xattr {name!r} on {path!r}: {err}")
    if os.geteuid() == 0:
        os.lchown(path, m["uid"], m["gid"])
    if not link:
        os.chmod(path, m["mode"] & 0o7777)
    ns = m["mtime"] * 10**9 + m["mtime_ns"]
    os.utime(path, ns=(ns, ns), follow_symlinks=False)


# ---------------------------------------------------------------------------------------
def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--keyfile")
    g.add_argument("--password-env", metavar="VAR")
    ap.add_argument("--base")
    gb = ap.add_mutually_exclusive_group()
    gb.add_argument("--base-keyfile")
    gb.add_argument("--base-password-env", metavar="VAR")
    ap.add_argument("archive")
    ap.add_argument("outdir")
    o = ap.parse_args(argv)
    try:
        def creds(keyfile, env):
            kfs = [read_key_file(keyfile)] if keyfile else []
            pw = None
            if env:
                need(env in os.environ, 1, f"${env} is not set")
                pw = os.environb[env.encode()]
            return kfs, pw
        base = None
        if o.base:
            kfs, pw = creds(o.base_keyfile, o.base_password_env)
            base = Archive(o.base, kfs, pw, is_base=True)
            need(base.v == 2, 9, "a base must be a format-2 archive")
            need(all(b.L == 0 for b in base.blocks), 9, "a base must not reference blocks")
            base.entries  # parsed and checked with the base
            check_contents(base)
        kfs, pw = creds(o.keyfile, o.password_env)
        a = Archive(o.archive, kfs, pw, base=base)
        check_contents(a)
        extract(a, o.outdir)
    except Fail as f:
        print(f"independent_reader: {o.archive}: {f} (exit {f.code})", file=sys.stderr)
        return f.code
    n = len(a.entries)
    print(f"independent_reader: {o.archive}: format {a.v}, {'encrypted' if a.enc else 'plain'}"
          f"{', delta' if a.delta else ''}: {n} entries, {a.D} data frames, "
          f"{a.I} index frames verified and extracted")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
