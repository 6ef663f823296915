//! Provenance: what made an output file. Every `summary.json` and `reproduction.json`
//! carries a [`Provenance`], and every resolved configuration starts with it as comments,
//! so a result can be traced to the hugemm version and commit, the command and the date
//! that made it.
//!
//! The date honours `SOURCE_DATE_EPOCH` (the reproducible-builds convention), so two runs
//! of the same command with it set write byte-identical files.

use serde::Serialize;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The git commit hugemm was built from, if the build saw one (`build.rs`).
const GIT_COMMIT: Option<&str> = option_env!("HUGEMM_GIT_COMMIT");

/// What made an output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// hugemm's version (`Cargo.toml`).
    pub hugemm_version: String,
    /// The git commit checked out when the binary was built (`null` when built outside a
    /// git checkout). Uncommitted changes at build time are not recorded.
    pub git_commit: Option<String>,
    /// The command line, quoted as a POSIX shell would need it.
    pub command_line: String,
    /// When the command started, UTC, RFC 3339 (or `SOURCE_DATE_EPOCH`'s time).
    pub date: String,
}

impl Provenance {
    /// The provenance of this process: its arguments, now (or `SOURCE_DATE_EPOCH`).
    pub fn of_this_process() -> Result<Provenance, BadSourceDateEpoch> {
        let args: Vec<String> = std::env::args().collect();
        Ok(Provenance::new(&args, now()?))
    }

    /// The provenance of a command with arguments `args` started at `when`.
    pub fn new(args: &[String], when: SystemTime) -> Provenance {
        let command_line =
            shlex::try_join(args.iter().map(String::as_str)).unwrap_or_else(|_| args.join(" "));
        Provenance {
            hugemm_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: GIT_COMMIT.map(str::to_string),
            command_line,
            date: humantime::format_rfc3339_seconds(when).to_string(),
        }
    }

    /// The provenance as TOML comment lines, for the top of a resolved configuration.
    pub fn toml_comments(&self) -> String {
        format!(
            "# hugemm {} (commit {})\n# command: {}\n# date: {}\n",
            self.hugemm_version,
            self.git_commit.as_deref().unwrap_or("unknown"),
            self.command_line.replace('\n', "\\n"),
            self.date
        )
    }
}

/// `SOURCE_DATE_EPOCH` is set but is not a whole number of seconds since 1970.
#[derive(Debug, thiserror::Error)]
#[error(
    "environment variable SOURCE_DATE_EPOCH: expected whole seconds since 1970-01-01 UTC \
     (e.g. 1764000000), found {0:?}"
)]
pub struct BadSourceDateEpoch(pub String);

/// The current time, or `SOURCE_DATE_EPOCH`'s when it is set (the reproducible-builds
/// convention: a set but malformed value is an error, not silently today).
fn now() -> Result<SystemTime, BadSourceDateEpoch> {
    let Some(value) = std::env::var_os("SOURCE_DATE_EPOCH") else {
        return Ok(SystemTime::now());
    };
    let text = value.to_string_lossy();
    text.trim()
        .parse::<u64>()
        .map(|secs| UNIX_EPOCH + Duration::from_secs(secs))
        .map_err(|_| BadSourceDateEpoch(text.into_owned()))
}

/// An output with its provenance first: `{"provenance": {...}, ...the output's fields}`.
#[derive(Serialize)]
pub struct WithProvenance<'a, T: Serialize> {
    /// What made it.
    pub provenance: &'a Provenance,
    /// The output.
    #[serde(flatten)]
    pub output: &'a T,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_quoted_and_dates_are_rfc3339() {
        let args = ["hugemm", "run", "my exp.toml", "--set", "policy.name=x"].map(String::from);
        let p = Provenance::new(&args, UNIX_EPOCH + Duration::from_secs(1_764_000_000));
        assert_eq!(
            p.command_line,
            "hugemm run 'my exp.toml' --set 'policy.name=x'"
        );
        assert_eq!(p.date, "2025-11-24T16:00:00Z");
        assert_eq!(p.hugemm_version, env!("CARGO_PKG_VERSION"));
        let c = p.toml_comments();
        assert!(c.lines().all(|l| l.starts_with("# ")), "{c}");
        assert!(c.contains("# command: hugemm run 'my exp.toml'"), "{c}");
    }

    #[test]
    fn the_output_follows_its_provenance() {
        #[derive(Serialize)]
        struct Out {
            schema: u32,
        }
        let p = Provenance::new(&["hugemm".into()], UNIX_EPOCH);
        let json = serde_json::to_string(&WithProvenance {
            provenance: &p,
            output: &Out { schema: 3 },
        })
        .unwrap();
        assert!(
            json.starts_with("{\"provenance\":{\"hugemm_version\""),
            "{json}"
        );
        assert!(json.ends_with(",\"schema\":3}"), "{json}");
    }
}
