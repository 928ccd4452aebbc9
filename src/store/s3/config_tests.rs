//! The AWS configuration lookup, against files and environments written here.

use super::*;
use std::collections::HashMap;

struct Env {
    vars: HashMap<String, String>,
    _dir: tempfile::TempDir,
}

impl Env {
    /// An environment with HOME in a fresh directory holding the given ~/.aws files.
    fn new(credentials: Option<&str>, config: Option<&str>) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let aws = dir.path().join(".aws");
        std::fs::create_dir(&aws).unwrap();
        if let Some(c) = credentials {
            std::fs::write(aws.join("credentials"), c).unwrap();
        }
        if let Some(c) = config {
            std::fs::write(aws.join("config"), c).unwrap();
        }
        let mut vars = HashMap::new();
        vars.insert("HOME".into(), dir.path().display().to_string());
        Env { vars, _dir: dir }
    }
    fn set(mut self, k: &str, v: &str) -> Env {
        self.vars.insert(k.into(), v.into());
        self
    }
    fn home(&self) -> String {
        self.vars["HOME"].clone()
    }
    fn resolve(&self, endpoint: Option<&str>) -> Result<Settings, ConfigError> {
        let get = |k: &str| self.vars.get(k).cloned();
        super::resolve(&get, endpoint)
    }
}

const CREDS: &str = "\
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = secretdefault

[work]
aws_access_key_id = AKIDWORK
aws_secret_access_key = secretwork
aws_session_token = tokenwork
";

const CONFIG: &str = "\
[default]
region = eu-west-1

[profile work]
region = ap-south-1
endpoint_url = http://10.0.0.1:9000
s3 =
  addressing_style = virtual
max_attempts = 3

[profile conf-only]
aws_access_key_id = AKIDCONF
aws_secret_access_key = secretconf
services = local-s3

[services local-s3]
s3 =
  endpoint_url = http://127.0.0.1:8333

[profile role]
role_arn = arn:aws:iam::123456789012:role/x
source_profile = default

[profile sso]
sso_session = corp
";

#[test]
fn environment_keys_win_over_every_profile() {
    let e = Env::new(Some(CREDS), Some(CONFIG))
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "secretenv")
        .set("AWS_SESSION_TOKEN", "tokenenv")
        .set("AWS_PROFILE", "work");
    let s = e.resolve(None).unwrap();
    assert_eq!(s.keys.access_key_id, "AKIDENV");
    assert_eq!(s.keys.secret_access_key, "secretenv");
    assert_eq!(s.keys.session_token.as_deref(), Some("tokenenv"));
    assert_eq!(s.credentials_from, "the environment");
    // The profile still gives the region and endpoint.
    assert_eq!(s.region, "ap-south-1");
    assert_eq!(s.endpoint.as_deref(), Some("http://10.0.0.1:9000"));
    assert_eq!(s.path_style, Some(false));
    assert_eq!(s.max_attempts, 3);
}

#[test]
fn the_default_profile_comes_from_the_credentials_file() {
    let e = Env::new(Some(CREDS), Some(CONFIG));
    let s = e.resolve(None).unwrap();
    assert_eq!(s.keys.access_key_id, "AKIDDEFAULT");
    assert_eq!(s.keys.session_token, None);
    assert_eq!(
        s.credentials_from,
        format!("profile 'default' in {}/.aws/credentials", e.home())
    );
    assert_eq!(s.region, "eu-west-1");
    assert_eq!(s.endpoint, None);
    assert_eq!(s.path_style, None);
    assert_eq!(s.max_attempts, DEFAULT_MAX_ATTEMPTS);
}

#[test]
fn a_named_profile_reads_profile_sections_of_the_config_file() {
    let e = Env::new(Some(CREDS), Some(CONFIG)).set("AWS_PROFILE", "work");
    let s = e.resolve(None).unwrap();
    assert_eq!(s.keys.access_key_id, "AKIDWORK");
    assert_eq!(s.keys.session_token.as_deref(), Some("tokenwork"));
    assert_eq!(s.region, "ap-south-1");
    // Keys only in the config file, endpoint from its services section.
    let e = Env::new(Some(CREDS), Some(CONFIG)).set("AWS_PROFILE", "conf-only");
    let s = e.resolve(None).unwrap();
    assert_eq!(s.keys.access_key_id, "AKIDCONF");
    assert_eq!(
        s.credentials_from,
        format!("profile 'conf-only' in {}/.aws/config", e.home())
    );
    assert_eq!(s.endpoint.as_deref(), Some("http://127.0.0.1:8333"));
    assert_eq!(s.region, DEFAULT_REGION);
}

#[test]
fn region_and_endpoint_variables_override_the_profile_in_sdk_order() {
    let e = Env::new(Some(CREDS), Some(CONFIG))
        .set("AWS_PROFILE", "work")
        .set("AWS_DEFAULT_REGION", "us-west-2")
        .set("AWS_ENDPOINT_URL", "http://env:1");
    let s = e.resolve(None).unwrap();
    assert_eq!(s.region, "us-west-2");
    assert_eq!(s.endpoint.as_deref(), Some("http://env:1"));
    let e = e
        .set("AWS_REGION", "sa-east-1")
        .set("AWS_ENDPOINT_URL_S3", "http://env-s3:2");
    let s = e.resolve(None).unwrap();
    assert_eq!(s.region, "sa-east-1");
    assert_eq!(s.endpoint.as_deref(), Some("http://env-s3:2"));
    // --endpoint-url beats them all; the ignore switch drops only configured ones.
    let s = e.resolve(Some("http://flag:3")).unwrap();
    assert_eq!(s.endpoint.as_deref(), Some("http://flag:3"));
    let e = e.set("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true");
    assert_eq!(e.resolve(None).unwrap().endpoint, None);
    assert_eq!(
        e.resolve(Some("http://flag:3"))
            .unwrap()
            .endpoint
            .as_deref(),
        Some("http://flag:3")
    );
}

#[test]
fn file_locations_follow_the_sdk_variables() {
    let e = Env::new(None, None);
    let dir = e.home();
    std::fs::write(
        format!("{dir}/creds.ini"),
        "[x]\naws_access_key_id = AKIDX\naws_secret_access_key = sx\n",
    )
    .unwrap();
    std::fs::write(
        format!("{dir}/conf.ini"),
        "[profile x]\nregion = eu-north-1\n",
    )
    .unwrap();
    let e = e
        .set("AWS_SHARED_CREDENTIALS_FILE", "~/creds.ini")
        .set("AWS_CONFIG_FILE", &format!("{dir}/conf.ini"))
        .set("AWS_PROFILE", "x");
    let s = e.resolve(None).unwrap();
    assert_eq!(s.keys.access_key_id, "AKIDX");
    assert_eq!(s.region, "eu-north-1");
    assert_eq!(
        s.credentials_from,
        format!("profile 'x' in {dir}/creds.ini")
    );
}

#[test]
fn missing_or_unusable_credentials_are_named() {
    let e = Env::new(None, None);
    match e.resolve(None) {
        Err(ConfigError::NoCredentials {
            credentials_file, ..
        }) => assert_eq!(credentials_file, format!("{}/.aws/credentials", e.home())),
        other => panic!("{other:?}"),
    }
    let e = Env::new(Some(CREDS), Some(CONFIG)).set("AWS_PROFILE", "nope");
    assert!(
        matches!(e.resolve(None), Err(ConfigError::NoProfile { profile, .. }) if profile == "nope")
    );
    let e = Env::new(Some(CREDS), Some(CONFIG)).set("AWS_PROFILE", "role");
    assert!(matches!(
        e.resolve(None),
        Err(ConfigError::Unsupported {
            how: "role_arn (assume role)",
            ..
        })
    ));
    let e = Env::new(Some(CREDS), Some(CONFIG)).set("AWS_PROFILE", "sso");
    assert!(matches!(
        e.resolve(None),
        Err(ConfigError::Unsupported {
            how: "AWS IAM Identity Center (SSO)",
            ..
        })
    ));
    let e = Env::new(None, None).set("AWS_ACCESS_KEY_ID", "AKID");
    assert!(matches!(
        e.resolve(None),
        Err(ConfigError::HalfPair {
            missing: "AWS_SECRET_ACCESS_KEY",
            ..
        })
    ));
    let e = Env::new(None, None)
        .set("AWS_ACCESS_KEY_ID", "AKID")
        .set("AWS_SECRET_ACCESS_KEY", "s")
        .set("AWS_MAX_ATTEMPTS", "0");
    assert!(matches!(e.resolve(None), Err(ConfigError::BadValue { .. })));
}

#[test]
fn debug_output_shows_no_secret() {
    let e = Env::new(Some(CREDS), Some(CONFIG)).set("AWS_PROFILE", "work");
    let s = e.resolve(None).unwrap();
    let d = format!("{s:?}");
    assert!(!d.contains("secretwork"), "{d}");
    assert!(!d.contains("tokenwork"), "{d}");
    assert!(!d.contains("AKIDWORK"), "{d}");
    assert!(d.contains("…WORK"), "{d}");
}
