//! AWS configuration, found where the AWS CLI and SDKs look, in the same order, so an
//! existing setup just works.
//!
//! - Credentials: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//!   else the profile (`AWS_PROFILE`, else `AWS_DEFAULT_PROFILE`, else `default`) in the
//!   shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`,
//!   sections `[NAME]`), then in the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`,
//!   sections `[default]` and `[profile NAME]`). Static keys only: a profile that gets its
//!   keys from a role, SSO, a web identity or a process is refused with a message saying so
//!   (`aws configure export-credentials` turns any of them into the environment variables).
//! - Region: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`, else `us-east-1`.
//! - Endpoint: `--endpoint-url`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the `s3`
//!   `endpoint_url` of the profile's `services` section, the profile's `endpoint_url`
//!   (the environment and profile ones are skipped when `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`
//!   or the profile's `ignore_configured_endpoint_urls` is true). None: AWS itself.
//! - Addressing: virtual-host style for AWS (path style for bucket names with dots, which
//!   TLS wildcards do not cover), path style for a custom endpoint; the profile's nested
//!   `s3 = addressing_style = path|virtual` overrides.
//! - Attempts per request: `AWS_MAX_ATTEMPTS`, the profile's `max_attempts`, else 5.
//! - TLS roots: `AWS_CA_BUNDLE` or the profile's `ca_bundle` (PEM), else the webpki roots.
//!
//! The INI files are read with `configparser` (case-sensitive, nested values as multiline).
//! Values are never shown: [`Settings`]'s `Debug` leaves the secret and token out, and the
//! descriptions name only where credentials came from.

use std::path::PathBuf;

use configparser::ini::Ini;

/// Attempts per request when neither `AWS_MAX_ATTEMPTS` nor `max_attempts` says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// Region when none is configured (what the AWS CLI uses for S3 then).
pub const DEFAULT_REGION: &str = "us-east-1";

/// Static credentials (the secret and token are kept out of `Debug`).
#[derive(Clone)]
pub struct Keys {
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token of temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("access_key_id", &key_hint(&self.access_key_id))
            .finish_non_exhaustive()
    }
}

/// The last four characters of an access key id, which is all messages show of it.
pub fn key_hint(id: &str) -> String {
    let n = id.chars().count();
    let tail: String = id.chars().skip(n.saturating_sub(4)).collect();
    format!("…{tail}")
}

/// Everything resolved for talking to the store.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Credentials.
    pub keys: Keys,
    /// Where they came from, for messages: "the environment", "profile 'x' in FILE".
    pub credentials_from: String,
    /// Region requests are signed for.
    pub region: String,
    /// Custom endpoint URL (None: AWS).
    pub endpoint: Option<String>,
    /// Path-style addressing (else virtual-host style).
    pub path_style: Option<bool>,
    /// Attempts per request, at least 1.
    pub max_attempts: u32,
    /// PEM file of TLS roots to trust instead of the webpki roots.
    pub ca_bundle: Option<PathBuf>,
}

/// Why no usable configuration was found.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Nothing gave credentials.
    #[error(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with keys in {credentials_file} or {config_file}"
    )]
    NoCredentials {
        /// The credentials file looked at.
        credentials_file: String,
        /// The config file looked at.
        config_file: String,
    },
    /// Half of a key pair in the environment.
    #[error("{set} is set but {missing} is not")]
    HalfPair {
        /// The variable that is set.
        set: &'static str,
        /// The one missing.
        missing: &'static str,
    },
    /// AWS_PROFILE names a profile in neither file.
    #[error("profile '{profile}' is in neither {credentials_file} nor {config_file}")]
    NoProfile {
        /// The profile name.
        profile: String,
        /// The credentials file looked at.
        credentials_file: String,
        /// The config file looked at.
        config_file: String,
    },
    /// The profile gets credentials in a way krypta does not implement.
    #[error(
        "profile '{profile}' gets its credentials through {how}, which krypta does not support: run `eval \"$(aws configure export-credentials --profile {profile} --format env)\"` first"
    )]
    Unsupported {
        /// The profile name.
        profile: String,
        /// "role_arn (assume role)", "sso", "credential_process", ...
        how: &'static str,
    },
    /// A profile has a key id without a secret or the reverse.
    #[error("profile '{profile}' in {file} has {set} but not {missing}")]
    ProfileHalfPair {
        /// The profile name.
        profile: String,
        /// The file.
        file: String,
        /// The key that is set.
        set: &'static str,
        /// The one missing.
        missing: &'static str,
    },
    /// A configuration file could not be parsed.
    #[error("{file}: {problem}")]
    BadFile {
        /// The file.
        file: String,
        /// The parser's complaint.
        problem: String,
    },
    /// A value is malformed.
    #[error("{name} = '{value}': {problem}")]
    BadValue {
        /// Variable or setting name.
        name: &'static str,
        /// Its value (never a secret).
        value: String,
        /// What is wrong.
        problem: &'static str,
    },
}

/// Reads the environment through `env` (so tests can give their own) and the files it names.
pub fn resolve(
    env: &dyn Fn(&str) -> Option<String>,
    endpoint_override: Option<&str>,
) -> Result<Settings, ConfigError> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    let home = var("HOME").unwrap_or_default();
    let expand = |p: String| match p.strip_prefix("~/") {
        Some(rest) => format!("{home}/{rest}"),
        None => p,
    };
    let cred_path =
        expand(var("AWS_SHARED_CREDENTIALS_FILE").unwrap_or_else(|| "~/.aws/credentials".into()));
    let conf_path = expand(var("AWS_CONFIG_FILE").unwrap_or_else(|| "~/.aws/config".into()));
    let explicit_profile = var("AWS_PROFILE").or_else(|| var("AWS_DEFAULT_PROFILE"));
    let profile = explicit_profile.clone().unwrap_or_else(|| "default".into());
    let cred_file = load(&cred_path)?;
    let conf_file = load(&conf_path)?;
    let cred_section = cred_file.as_ref().and_then(|f| section(f, &profile));
    let conf_section = conf_file.as_ref().and_then(|f| {
        if profile == "default" {
            section(f, "default").or_else(|| section(f, "profile default"))
        } else {
            section(f, &format!("profile {profile}"))
        }
    });
    if explicit_profile.is_some() && cred_section.is_none() && conf_section.is_none() {
        return Err(ConfigError::NoProfile {
            profile,
            credentials_file: cred_path,
            config_file: conf_path,
        });
    }
    let setting = |k: &str| -> Option<String> {
        conf_section
            .as_ref()
            .and_then(|s| s.get(k))
            .cloned()
            .flatten()
            .filter(|v| !v.is_empty())
    };

    let keys_from_env = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Some(Keys {
            access_key_id: id,
            secret_access_key: secret,
            session_token: var("AWS_SESSION_TOKEN"),
        }),
        (Some(_), None) => {
            return Err(ConfigError::HalfPair {
                set: "AWS_ACCESS_KEY_ID",
                missing: "AWS_SECRET_ACCESS_KEY",
            });
        }
        (None, Some(_)) => {
            return Err(ConfigError::HalfPair {
                set: "AWS_SECRET_ACCESS_KEY",
                missing: "AWS_ACCESS_KEY_ID",
            });
        }
        (None, None) => None,
    };
    let (keys, credentials_from) = match keys_from_env {
        Some(k) => (k, "the environment".to_string()),
        None => {
            let from_cred = profile_keys(cred_section.as_ref(), &profile, &cred_path)?;
            let from_conf = profile_keys(conf_section.as_ref(), &profile, &conf_path)?;
            match (from_cred, from_conf) {
                (Some(k), _) => (k, format!("profile '{profile}' in {cred_path}")),
                (None, Some(k)) => (k, format!("profile '{profile}' in {conf_path}")),
                (None, None) => {
                    if let Some(how) = unsupported_source(conf_section.as_ref())
                        .or_else(|| unsupported_source(cred_section.as_ref()))
                    {
                        return Err(ConfigError::Unsupported { profile, how });
                    }
                    return Err(ConfigError::NoCredentials {
                        credentials_file: cred_path,
                        config_file: conf_path,
                    });
                }
            }
        }
    };

    let region = var("AWS_REGION")
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .or_else(|| setting("region"))
        .unwrap_or_else(|| DEFAULT_REGION.to_string());

    let ignore_configured = is_true(var("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS").as_deref())
        || is_true(setting("ignore_configured_endpoint_urls").as_deref());
    let services_endpoint = setting("services").and_then(|name| {
        let f = conf_file.as_ref()?;
        let s = section(f, &format!("services {name}"))?;
        nested(s.get("s3")?.as_deref()?, "endpoint_url")
    });
    let configured = || {
        var("AWS_ENDPOINT_URL_S3")
            .or_else(|| var("AWS_ENDPOINT_URL"))
            .or(services_endpoint.clone())
            .or_else(|| setting("endpoint_url"))
    };
    let endpoint = match endpoint_override.filter(|e| !e.is_empty()) {
        Some(e) => Some(e.to_string()),
        None if ignore_configured => None,
        None => configured(),
    };

    let path_style = match setting("s3").and_then(|s| nested(&s, "addressing_style")) {
        Some(s) if s == "path" => Some(true),
        Some(s) if s == "virtual" => Some(false),
        _ => None,
    };

    let max_attempts = match var("AWS_MAX_ATTEMPTS").or_else(|| setting("max_attempts")) {
        None => DEFAULT_MAX_ATTEMPTS,
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => {
                return Err(ConfigError::BadValue {
                    name: "AWS_MAX_ATTEMPTS",
                    value: v,
                    problem: "expected a whole number from 1 to 100",
                });
            }
        },
    };
    let ca_bundle = var("AWS_CA_BUNDLE")
        .or_else(|| setting("ca_bundle"))
        .map(|p| PathBuf::from(expand(p)));
    Ok(Settings {
        keys,
        credentials_from,
        region,
        endpoint,
        path_style,
        max_attempts,
        ca_bundle,
    })
}

type Section = std::collections::HashMap<String, Option<String>>;

/// Parses an INI file; None when it does not exist.
fn load(path: &str) -> Result<Option<Ini>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::BadFile {
                file: path.to_string(),
                problem: e.to_string(),
            });
        }
    };
    let mut ini = Ini::new_cs();
    // Keys before any section must not land in the `[default]` profile.
    ini.set_default_section("\u{0}top");
    ini.set_multiline(true);
    ini.read(text).map_err(|problem| ConfigError::BadFile {
        file: path.to_string(),
        problem,
    })?;
    Ok(Some(ini))
}

fn section(ini: &Ini, name: &str) -> Option<Section> {
    ini.get_map_ref()
        .get(name)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// A setting inside a nested value (`s3 =` followed by indented `key = value` lines).
fn nested(value: &str, key: &str) -> Option<String> {
    value.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn is_true(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn profile_keys(
    s: Option<&Section>,
    profile: &str,
    file: &str,
) -> Result<Option<Keys>, ConfigError> {
    let Some(s) = s else { return Ok(None) };
    let get = |k: &str| s.get(k).cloned().flatten().filter(|v| !v.is_empty());
    match (get("aws_access_key_id"), get("aws_secret_access_key")) {
        (Some(id), Some(secret)) => Ok(Some(Keys {
            access_key_id: id,
            secret_access_key: secret,
            session_token: get("aws_session_token"),
        })),
        (None, None) => Ok(None),
        (id, _) => {
            let (set, missing) = if id.is_some() {
                ("aws_access_key_id", "aws_secret_access_key")
            } else {
                ("aws_secret_access_key", "aws_access_key_id")
            };
            Err(ConfigError::ProfileHalfPair {
                profile: profile.to_string(),
                file: file.to_string(),
                set,
                missing,
            })
        }
    }
}

/// How a profile without static keys would get them, if it says.
fn unsupported_source(s: Option<&Section>) -> Option<&'static str> {
    let s = s?;
    let has = |k: &str| s.contains_key(k);
    if has("role_arn") {
        Some("role_arn (assume role)")
    } else if has("sso_session") || has("sso_start_url") {
        Some("AWS IAM Identity Center (SSO)")
    } else if has("credential_process") {
        Some("credential_process")
    } else if has("web_identity_token_file") {
        Some("web_identity_token_file")
    } else if has("login_session") {
        Some("aws login")
    } else {
        None
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
