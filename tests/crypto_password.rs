//! Password sources that need a process of their own: `KRYPTA_PASSWORD` is read from the
//! environment, which a test may only set for a child process (setting it in-process is
//! `unsafe` in edition 2024). The test re-runs this test binary with the variable set.

use std::process::Command;

use krypta::crypto::password::{PasswordSource, read_password};

/// Runs `helper` from this test binary in a child with `KRYPTA_PASSWORD` set to `value`
/// (or unset) and returns whether it passed.
fn run_helper(helper: &str, value: Option<&str>) -> bool {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([helper, "--exact", "--ignored", "--nocapture"]);
    match value {
        Some(v) => cmd.env("KRYPTA_PASSWORD", v),
        None => cmd.env_remove("KRYPTA_PASSWORD"),
    };
    cmd.output().unwrap().status.success()
}

#[test]
fn env_password_is_taken_whole_including_non_ascii_and_newlines() {
    assert!(run_helper(
        "helper_env_password_is_expected_value",
        Some("pässwörd 密码\n")
    ));
    // The helper really runs (a filter matching nothing would pass vacuously).
    assert!(!run_helper(
        "helper_env_password_is_expected_value",
        Some("pässwörd 密码")
    ));
}

#[test]
fn unset_or_empty_env_password_is_refused_when_creating() {
    assert!(run_helper(
        "helper_env_password_is_refused_when_creating",
        None
    ));
    assert!(run_helper(
        "helper_env_password_is_refused_when_creating",
        Some("")
    ));
}

#[test]
#[ignore = "helper run by env_password_is_taken_whole_including_non_ascii_and_newlines"]
fn helper_env_password_is_expected_value() {
    let s = read_password(&PasswordSource::Env, true).unwrap();
    assert_eq!(s.as_bytes(), "pässwörd 密码\n".as_bytes());
}

#[test]
#[ignore = "helper run by unset_or_empty_env_password_is_refused_when_creating"]
fn helper_env_password_is_refused_when_creating() {
    let e = read_password(&PasswordSource::Env, true).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg == "KRYPTA_PASSWORD is not set" || msg == "KRYPTA_PASSWORD: empty password refused",
        "{msg}"
    );
}
