//! `hearth doctor`: every part the configuration names tried once, each reported on one
//! line, ok or what to fix: the configuration, the database, each model a profile uses (one
//! tiny request), Telegram (`getMe`), Matrix (login and one sync), the MCP servers
//! (`initialize` and `tools/list`), the calendars and the family scripts.
//!
//! Every check goes through the code hearth runs with (the configuration loader, the
//! read-only database open, the LLM providers, the channels' and the MCP client's own
//! checks, a profile's calendars, the scripts' manifest), each within a time limit, the
//! independent ones at once (`models.rs`, `chats.rs`, `parts.rs`). Nothing a running hearth
//! keeps is changed: the database is read without its lock and never migrated, and Matrix
//! is checked without the bot's device store. No line shows a secret the configuration
//! names: each goes through the redaction readiness uses.

mod chats;
mod models;
mod parts;

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{self, LoadOptions};
use crate::readiness::Readiness;

/// How long one check may take (a model's answer, `getMe`, an MCP server's start).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Failed,
    /// Not tried: disabled, unused, or not built into this binary.
    Skipped,
}

/// One line of the report: what was checked, and how it went or what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub status: Status,
    pub subject: String,
    pub detail: String,
}

impl Check {
    pub fn ok(subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(Status::Ok, subject, detail)
    }

    pub fn failed(subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(Status::Failed, subject, detail)
    }

    pub fn skipped(subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(Status::Skipped, subject, detail)
    }

    fn new(status: Status, subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Check {
            status,
            subject: subject.into(),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match self.status {
            Status::Ok => "ok",
            Status::Failed => "FAIL",
            Status::Skipped => "-",
        };
        // A detail of several lines (every problem of a configuration) stays under its check.
        let detail = self.detail.replace('\n', "\n      ");
        write!(formatter, "{status:<6}{}: {detail}", self.subject)
    }
}

/// Every check, in a fixed order: the configuration first, then what it names.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks failed.
    pub fn failures(&self) -> usize {
        self.checks
            .iter()
            .filter(|check| check.status == Status::Failed)
            .count()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            writeln!(formatter, "{check}")?;
        }
        Ok(())
    }
}

/// Loads the configuration in `file` as `hearth run` would and, when it loads, checks what
/// it names.
pub async fn run(file: &Path, options: &LoadOptions<'_>) -> Report {
    let loaded = match config::load(file, options) {
        Ok(loaded) => loaded,
        Err(error) => {
            return Report {
                checks: vec![
                    Check::failed("config", error.to_string()),
                    Check::skipped(
                        "everything else",
                        "not checked until the configuration loads",
                    ),
                ],
            };
        }
    };
    // The readiness of this run only: the calendars tell it their failures, and its
    // redaction knows every secret the configuration names.
    let readiness = Arc::new(Readiness::with_secrets(loaded.secrets.values()));
    let config_line = Check::ok(
        "config",
        format!(
            "{} ({}, {})",
            file.display(),
            counted(loaded.profiles.len(), "profile"),
            counted(loaded.config.family.len(), "family member")
        ),
    );
    let (database, models, telegram, matrix, mcp, calendars, scripts) = tokio::join!(
        parts::database(&loaded),
        models::check(&loaded),
        chats::telegram(&loaded),
        chats::matrix(&loaded),
        parts::mcp_servers(&loaded),
        parts::calendars(&loaded, &readiness),
        parts::scripts(&loaded),
    );
    let mut checks = vec![config_line, database];
    checks.extend(models);
    checks.extend([telegram, matrix]);
    checks.extend(mcp);
    checks.extend(calendars);
    checks.push(scripts);
    for check in &mut checks {
        check.detail = readiness.redacted(&check.detail);
    }
    Report { checks }
}

/// "1 profile", "2 profiles".
fn counted(count: usize, thing: &str) -> String {
    if count == 1 {
        format!("1 {thing}")
    } else {
        format!("{count} {thing}s")
    }
}

/// `check` within `limit`, or a failure saying it did not finish and what to look at.
async fn within(
    limit: Duration,
    subject: &str,
    look_at: &str,
    check: impl Future<Output = Check>,
) -> Check {
    match tokio::time::timeout(limit, check).await {
        Ok(check) => check,
        Err(_) => Check::failed(
            subject,
            format!("no answer within {} s; check {look_at}", limit.as_secs()),
        ),
    }
}

/// What a check of a part this binary was built without says.
#[cfg(any(
    not(feature = "telegram"),
    not(feature = "matrix"),
    not(feature = "mcp")
))]
const NOT_BUILT: &str = "not built into this hearth";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_is_one_line_and_a_long_detail_stays_under_it() {
        let report = Report {
            checks: vec![
                Check::ok("telegram", "@family_bot (getMe)"),
                Check::failed(
                    "config",
                    "hearth.yaml: llms.main: one\nhearth.yaml: queue: two",
                ),
                Check::skipped("matrix", "skipped (disabled)"),
            ],
        };
        assert_eq!(
            report.to_string(),
            "ok    telegram: @family_bot (getMe)\n\
             FAIL  config: hearth.yaml: llms.main: one\n      hearth.yaml: queue: two\n\
             -     matrix: skipped (disabled)\n"
        );
        assert_eq!(report.failures(), 1);
        assert_eq!(counted(1, "tool"), "1 tool");
        assert_eq!(counted(13, "tool"), "13 tools");
    }
}
