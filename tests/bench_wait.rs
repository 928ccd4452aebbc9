//! `krypta bench --quick --table 15` (issue 13's comparisons, `src/bench/wait_tables.rs`)
//! through the binary: every comparison is there, on tmpfs and (when the temporary directory
//! is elsewhere) on disk, with positive ratios and a verdict for each goal. The peers are
//! real: `tar`, `zstd`, and `age` / `argon2` / `7z` / `openssl` / `/usr/bin/time` when
//! installed (.ci/run installs them); a row whose peer is missing is left out, and the
//! reading says so.

mod common;

use std::process::Command;

use common::krypta;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn table_15_measures_every_comparison_of_issue_13_with_its_goal() {
    let tmp = tempfile::tempdir().unwrap();
    let o = krypta()
        .args(["bench", "--quick", "--table", "15", "--json"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tables = v["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1);
    let t = &tables[0];
    assert_eq!(t["number"], 15);
    let rows = t["rows"].as_array().unwrap();
    let tmpfs: Vec<&str> = rows
        .iter()
        .filter(|r| r["where"] == "tmpfs")
        .map(|r| r["comparison"].as_str().unwrap())
        .collect();
    let mut want = Vec::new();
    if have("age") && have("age-keygen") {
        want.extend([
            "c -s --keyfile (fsync, the default), 16 MiB",
            "c -s --keyfile --no-fsync, 16 MiB",
            "c -s --keyfile --no-fsync -j 1, 16 MiB",
        ]);
    }
    want.extend([
        "c -s --keyfile --no-fsync, 16 MiB",
        "c -s from a pipe (≥ 0.8× the file's speed), 16 MiB",
    ]);
    // What the same pipe costs the peers (context for the row above).
    if have("age") && have("age-keygen") {
        want.push("age -r from a pipe (context: the peer's own pipe price), 16 MiB");
    }
    if have("zstd") {
        want.push("zstd -1 -T2 from a pipe (context: the peer's own pipe price), 16 MiB");
    }
    if !(have("tar") && have("zstd")) {
        // The rows with a tar or zstd peer are left out where those are missing.
        assert_eq!(tmpfs, want);
        return;
    }
    want.extend([
        "2000 small files: archive size, -l 3",
        "2000 small files: c -l 3",
        "2000 small files: x",
        "2000 small files: x -j 1",
    ]);
    if have("7z") || have("7zz") {
        want.extend([
            "2000 small files: archive size, -l 3",
            "2000 small files: c -l 3",
            "2000 small files: x",
        ]);
    }
    want.extend([
        "tree of 4 MB: x -l 3 -j 1",
        "one file of 16 MB: x -l 3 -j 1",
        "one file of 16 MB: x -j 2 (≥ 1.6× faster than -j 1)",
        "level 9, 8 MB: size",
    ]);
    let time = std::path::Path::new("/usr/bin/time").exists();
    if time {
        want.push("level 9, 8 MB: peak memory compressing (-j 1)");
    }
    want.extend(["level 9, 8 MB: c -j 1", "level 9, 8 MB: x"]);
    if time {
        want.push("level 9, 8 MB: peak memory extracting");
    }
    want.push("level 9, 8 MB: x --stdout to /dev/null");
    assert_eq!(tmpfs, want);
    if have("openssl") {
        let limit = rows
            .iter()
            .find(|r| r["where"] == "memory" && r["goal"] == "≤ 1.25")
            .expect("the one-core CTR+HMAC limit row");
        assert_eq!(
            limit["comparison"],
            "c -s --keyfile -j 1 to /dev/null, 16 MiB: time vs the one-core CTR+HMAC limit"
        );
        let peer = limit["peer"].as_str().unwrap();
        assert!(peer.starts_with("openssl speed: "), "{peer}");
    }
    // With one write size (quick), no linear-in-size row; the full plan has one per place.
    assert!(
        !rows
            .iter()
            .any(|r| r["comparison"].as_str().unwrap().contains("linear in size"))
    );
    if time {
        let reading = t["reading"].as_array().unwrap();
        let said = |start: &str| {
            reading
                .iter()
                .any(|l| l.as_str().unwrap().starts_with(start))
        };
        assert!(said("`x -j 1` of the 16 MB file used "), "{reading:?}");
        // The floor under the pipe row, from its own CPU time (krypta and cat).
        assert!(
            said("`c -s` from a pipe on tmpfs, 16 MiB: krypta and `cat` used "),
            "{reading:?}"
        );
    }
    let argon = rows
        .iter()
        .find(|r| r["where"] == "memory" && r["goal"] == "≤ 350 ms")
        .expect("the Argon2id row");
    assert_eq!(
        argon["comparison"],
        "Argon2id, default parameters (256 MiB, t=2, p=1)"
    );
    assert_eq!(argon["goal"], "≤ 350 ms");
    assert_eq!(argon["krypta / peer"].is_number(), have("argon2"));
    let mut goals = 0;
    for r in rows {
        let what = r["comparison"].as_str().unwrap();
        if let Some(ratio) = r["krypta / peer"].as_f64() {
            assert!(ratio > 0.0 && ratio.is_finite(), "{what}: {ratio}");
        }
        match r["goal"].as_str().unwrap() {
            "–" => assert!(r["met"].is_null(), "{what}"),
            _ => {
                let met = r["met"].as_str().unwrap();
                assert!(met == "yes" || met == "no", "{what}: {met}");
                goals += 1;
            }
        }
    }
    let reading = t["reading"].as_array().unwrap();
    let met = rows.iter().filter(|r| r["met"] == "yes").count();
    assert_eq!(
        reading.last().unwrap(),
        &serde_json::json!(format!("{met} of the {goals} goals are met in this run."))
    );
    // The small-file archive is real: within a factor of two of tar | zstd -3 either way.
    let size = rows
        .iter()
        .find(|r| r["comparison"] == "2000 small files: archive size, -l 3")
        .unwrap()["krypta / peer"]
        .as_f64()
        .unwrap();
    assert!((0.5..2.0).contains(&size), "{size}");
}
