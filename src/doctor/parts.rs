//! The parts beside the models and the chats: the database (read-only, never created or
//! migrated), the MCP servers (each started or reached once, then closed), the calendars
//! (each distinct account and subscription reached once) and the family scripts (their
//! manifest loaded as start-up loads it).

use std::sync::Arc;

use super::{CHECK_TIMEOUT, Check, within};
use crate::config::{CalendarConfig, LoadedConfig};
use crate::readiness::Readiness;
use crate::redaction::redact_url_password;
use crate::storage::instance_lock::sqlite_database_file;

const DATABASE: &str = "database";

/// The database `database_url` names, opened read-only when its file is there: a missing
/// file is created at the first run, and a schema older than this binary's says to migrate.
pub(super) async fn database(loaded: &LoadedConfig) -> Check {
    let url = &loaded.config.database_url;
    if crate::storage::is_postgres_url(url) {
        let shown = redact_url_password(url);
        let look_at = format!("whether PostgreSQL at {shown} answers");
        let check = async {
            match crate::storage::open_read_only(url).await {
                Ok(stores) => {
                    stores.close().await;
                    Check::ok(DATABASE, format!("{shown} (schema up to date)"))
                }
                Err(error) => Check::failed(DATABASE, error.to_string()),
            }
        };
        return within(CHECK_TIMEOUT, DATABASE, &look_at, check).await;
    }
    let Some(file) = sqlite_database_file(url) else {
        return Check::failed(
            DATABASE,
            format!(
                "{} names no database file; set database_url to sqlite://<file> or postgres://<user>@<host>/<database>",
                redact_url_password(url)
            ),
        );
    };
    let look_at = format!("whether another program holds {}", file.display());
    let check = async {
        match crate::storage::open_existing_read_only(url).await {
            Ok(None) => Check::ok(
                DATABASE,
                format!(
                    "{} is not there yet; it will be created at the first run",
                    file.display()
                ),
            ),
            Ok(Some(stores)) => {
                stores.close().await;
                Check::ok(DATABASE, format!("{} (schema up to date)", file.display()))
            }
            Err(error) => Check::failed(DATABASE, error.to_string()),
        }
    };
    within(CHECK_TIMEOUT, DATABASE, &look_at, check).await
}

#[cfg(not(feature = "mcp"))]
pub(super) async fn mcp_servers(_loaded: &LoadedConfig) -> Vec<Check> {
    vec![Check::skipped("mcp servers", super::NOT_BUILT)]
}

/// Each server of `mcp_servers`: `initialize` and `tools/list`, then closed.
#[cfg(feature = "mcp")]
pub(super) async fn mcp_servers(loaded: &LoadedConfig) -> Vec<Check> {
    use crate::tools::mcp::check_server;

    let servers = &loaded.config.mcp_servers;
    if servers.is_empty() {
        return vec![Check::skipped("mcp servers", "none configured")];
    }
    let checks = servers.iter().map(|(id, config)| async move {
        let subject = format!("mcp server {id:?}");
        let how = match (&config.command, &config.url) {
            (Some(command), _) => {
                let mut line = vec![command.as_str()];
                line.extend(config.args.iter().map(String::as_str));
                format!("stdio: `{}`", line.join(" "))
            }
            (None, Some(url)) => redact_url_password(url),
            (None, None) => String::new(),
        };
        // The server's own timeouts are bounded by `CHECK_TIMEOUT` inside the check, and
        // closing a connection has a bound of its own.
        match check_server(id, config, CHECK_TIMEOUT).await {
            Ok(checked) => {
                let server = checked
                    .server
                    .map(|server| format!("{server}, "))
                    .unwrap_or_default();
                Check::ok(
                    subject,
                    format!("{server}{} ({how})", super::counted(checked.tools, "tool")),
                )
            }
            Err(error) => {
                let keys = if config.command.is_some() {
                    "command and args"
                } else {
                    "url (and whether the server runs)"
                };
                Check::failed(
                    subject,
                    format!("{how}: {error} — check {keys} in mcp_servers.{id}"),
                )
            }
        }
    });
    futures::future::join_all(checks).await
}

/// Each distinct `calendar_config` once, named by the profiles that share it.
pub(super) async fn calendars(loaded: &LoadedConfig, readiness: &Arc<Readiness>) -> Vec<Check> {
    let mut groups: Vec<(&CalendarConfig, Vec<&str>)> = Vec::new();
    for profile in &loaded.profiles {
        let calendar = &profile.processing.calendar;
        if calendar.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(config, _)| *config == calendar) {
            Some((_, profiles)) => profiles.push(&profile.id),
            None => groups.push((calendar, vec![&profile.id])),
        }
    }
    if groups.is_empty() {
        return vec![Check::skipped("calendars", "none configured")];
    }
    let calendars = crate::app::profile_calendars(loaded, readiness);
    let checks = groups.into_iter().map(|(_, profiles)| {
        let subject = match profiles.as_slice() {
            [profile] => format!("calendars of profile {profile}"),
            profiles => format!("calendars of profiles {}", profiles.join(", ")),
        };
        let look_at = format!(
            "processing_config.calendar_config of profile {} and the network",
            profiles[0]
        );
        let calendars = calendars.get(profiles[0]).cloned();
        async move {
            let Some(calendars) = calendars else {
                return Check::failed(subject, "no calendar could be made of this configuration");
            };
            let check = async {
                let checked = calendars.check().await;
                if checked.found.is_empty() && checked.problems.is_empty() {
                    Check::failed(&subject, format!("no calendar found; check {look_at}"))
                } else if checked.problems.is_empty() {
                    Check::ok(&subject, format!("found {}", checked.found.join(", ")))
                } else {
                    Check::failed(
                        &subject,
                        format!("{}; check {look_at}", checked.problems.join("; ")),
                    )
                }
            };
            within(CHECK_TIMEOUT, &subject, &look_at, check).await
        }
    });
    futures::future::join_all(checks).await
}

/// The family scripts, when a profile enables them.
pub(super) async fn scripts(loaded: &LoadedConfig) -> Check {
    const SCRIPTS: &str = "family scripts";
    match crate::scripts::load_if_used(loaded).await {
        Ok(None) => Check::skipped(SCRIPTS, "skipped (no profile enables them)"),
        Ok(Some(catalog)) => Check::ok(
            SCRIPTS,
            format!(
                "{} (in {})",
                catalog.names().join(", "),
                catalog.folder().display()
            ),
        ),
        Err(error) => Check::failed(
            SCRIPTS,
            format!("cannot be loaded (scripts_dir and its manifest.json):\n{error}"),
        ),
    }
}
