//! One profile's calendars: its CalDAV account's calendars (found once, then kept) and its
//! subscribed `.ics` calendars. Searching fetches every source (async, each request with a
//! timeout), then reads and expands what came back on the blocking pool (`reading.rs`),
//! and reports the ones that fail beside what the others found; each failure and recovery
//! is told to readiness as `calendar:<profile>`, degraded but never holding the bot back.

use std::sync::Arc;

use reqwest::Url;
use tokio::sync::Mutex;

use super::caldav::{CalDavClient, CalDavError, Collection, Resource, fetch_subscription};
use super::events::read_events;
use super::expand::ExpansionBudget;
use super::read_cache::ReadCache;
use super::reading::{
    Fetched, OffThreadError, READ_TIME_LIMIT, SearchRange, Searched, off_the_actors_thread,
    read_and_expand,
};
use crate::config::{CalendarConfig, Secret, subscription_url};
use crate::readiness::Readiness;

/// What `ProfileCalendars::check` reached: the calendars' names, and each failure.
#[derive(Debug, Default)]
pub struct Checked {
    pub found: Vec<String>,
    pub problems: Vec<String>,
}

struct CaldavAccount {
    client: CalDavClient,
    url: Url,
    wanted: Vec<String>,
    read_only: bool,
    /// The calendars found, kept after the first success.
    collections: Mutex<Option<Vec<Collection>>>,
}

/// A profile's calendars.
pub struct ProfileCalendars {
    caldav: Option<CaldavAccount>,
    subscriptions: Vec<Url>,
    readiness: Arc<Readiness>,
    component: String,
    /// What the texts fetched lately read to, so a search does not parse them again.
    read_cache: Arc<ReadCache>,
}

impl ProfileCalendars {
    /// The calendars `config` names for `profile_id`; `password` is the value of
    /// `caldav.password_env` (validation made sure it is set).
    pub fn new(
        profile_id: &str,
        config: &CalendarConfig,
        password: Option<Secret>,
        readiness: Arc<Readiness>,
    ) -> Self {
        let caldav = config.caldav.as_ref().and_then(|caldav| {
            let url = Url::parse(caldav.url.trim()).ok()?;
            Some(CaldavAccount {
                client: CalDavClient::new(&caldav.username, password.clone()?, &url),
                url,
                wanted: caldav.calendars.clone(),
                read_only: caldav.read_only,
                collections: Mutex::new(None),
            })
        });
        let subscriptions = config
            .ical_urls
            .iter()
            .filter_map(|url| Url::parse(&subscription_url(url)).ok())
            .collect();
        ProfileCalendars {
            caldav,
            subscriptions,
            readiness,
            component: format!("calendar:{profile_id}"),
            read_cache: Arc::new(ReadCache::default()),
        }
    }

    /// How many calendars a search reads: the account (its calendars as one) and each
    /// subscription.
    pub fn source_count(&self) -> usize {
        usize::from(self.caldav.is_some()) + self.subscriptions.len()
    }

    pub fn read_only(&self) -> bool {
        self.caldav.as_ref().is_none_or(|account| account.read_only)
    }

    fn healthy(&self) {
        self.readiness.set_degraded(&self.component, None);
    }

    fn failed(&self, error: &CalDavError) {
        self.readiness
            .set_degraded(&self.component, Some(&error.to_string()));
    }

    /// The account's calendars this profile uses, in the order `calendars` names them.
    pub async fn writable(&self) -> Result<Vec<Collection>, CalendarProblem> {
        let Some(account) = &self.caldav else {
            return Err(CalendarProblem::NoAccount);
        };
        let mut kept = account.collections.lock().await;
        if let Some(collections) = kept.as_ref() {
            return Ok(collections.clone());
        }
        let listed = account
            .client
            .calendars(&account.url)
            .await
            .map_err(|error| {
                self.failed(&error);
                CalendarProblem::Server(error)
            })?;
        let chosen = choose(&listed, &account.wanted, &account.url)?;
        *kept = Some(chosen.clone());
        Ok(chosen)
    }

    /// The calendar a write goes to: the one named (display name, case ignored, or URL),
    /// else the first.
    pub async fn target(&self, named: Option<&str>) -> Result<Collection, CalendarProblem> {
        let calendars = self.writable().await?;
        match named.map(str::trim).filter(|name| !name.is_empty()) {
            None => calendars
                .into_iter()
                .next()
                .ok_or(CalendarProblem::NoAccount),
            Some(name) => calendars
                .iter()
                .find(|calendar| {
                    calendar.name.eq_ignore_ascii_case(name) || calendar.url.as_str() == name
                })
                .cloned()
                .ok_or_else(|| CalendarProblem::UnknownCalendar {
                    name: name.to_owned(),
                    known: calendars.iter().map(|c| c.name.clone()).collect(),
                }),
        }
    }

    pub fn client(&self) -> Result<&CalDavClient, CalendarProblem> {
        self.caldav
            .as_ref()
            .map(|account| &account.client)
            .ok_or(CalendarProblem::NoAccount)
    }

    /// The event resource `id` names (its address, as search showed it) and the calendar it
    /// is in; only in this profile's writable calendars.
    pub async fn event(&self, id: &str) -> Result<(Collection, Resource), CalendarProblem> {
        let calendars = self.writable().await?;
        let unknown = || CalendarProblem::UnknownEvent { id: id.to_owned() };
        let calendar = calendars
            .iter()
            .find_map(|calendar| {
                let url = calendar.url.join(id.trim()).ok()?;
                let inside = directly_inside(&calendar.url, &url);
                inside.then(|| (calendar.clone(), url))
            })
            .ok_or_else(unknown)?;
        let (calendar, url) = calendar;
        let client = self.client()?;
        match client.get(&url).await {
            Ok(Some(resource)) => {
                self.healthy();
                Ok((calendar, resource))
            }
            Ok(None) => Err(unknown()),
            Err(error) => {
                self.failed(&error);
                Err(CalendarProblem::Server(error))
            }
        }
    }

    /// Tells readiness how a write went (`error`: why it failed).
    pub fn note(&self, error: Option<&CalDavError>) {
        match error {
            Some(error @ (CalDavError::Unreachable { .. } | CalDavError::Unauthorized { .. })) => {
                self.failed(error)
            }
            _ => self.healthy(),
        }
    }

    /// Each calendar reached once, as a search would reach it (the account's calendars found
    /// by PROPFIND, each subscription's `.ics` read): the calendars found by name, and what
    /// failed.
    pub async fn check(&self) -> Checked {
        let mut checked = Checked::default();
        if self.caldav.is_some() {
            match self.writable().await {
                Ok(calendars) => checked
                    .found
                    .extend(calendars.into_iter().map(|calendar| calendar.name)),
                Err(problem) => checked.problems.push(problem.to_string()),
            }
        }
        for url in &self.subscriptions {
            let name = url.host_str().unwrap_or("subscribed calendar").to_owned();
            let text = match fetch_subscription(url).await {
                Ok(text) => text,
                Err(error) => {
                    checked.problems.push(format!("{name}: {error}"));
                    continue;
                }
            };
            let read = off_the_actors_thread("reading the calendar", READ_TIME_LIMIT, move || {
                let named = super::reading::calendar_name(&text);
                (named, read_events(&text).map(|_| ()))
            })
            .await;
            match read {
                Ok((named, Ok(()))) => checked.found.push(named.unwrap_or(name)),
                Ok((named, Err(error))) => checked.problems.push(format!(
                    "{}: the calendar could not be read ({error})",
                    named.unwrap_or(name)
                )),
                Err(error) => checked.problems.push(format!("{name}: {error}")),
            }
        }
        checked
    }

    /// Every occurrence `range` asks for across the calendars: each fetched here, then
    /// all read and expanded on the blocking pool within one [`ExpansionBudget`]. What
    /// could not be fetched or read is a problem beside what the others gave, and tells
    /// readiness; an error when the reading itself failed or ran past its time.
    pub async fn search(&self, range: SearchRange) -> Result<Searched, CalendarProblem> {
        let mut fetched = Vec::new();
        let mut problems = Vec::new();
        if self.caldav.is_some() {
            match self.writable().await {
                Ok(calendars) => {
                    let client = self.client()?;
                    for calendar in calendars {
                        match client
                            .events_between(&calendar.url, range.from, range.to)
                            .await
                        {
                            Ok(resources) => {
                                fetched.extend(resources.into_iter().map(|resource| Fetched {
                                    calendar: calendar.name.clone(),
                                    text: resource.text,
                                    resource: Some((resource.url, resource.etag)),
                                }))
                            }
                            Err(error) => problems.push(format!("{}: {error}", calendar.name)),
                        }
                    }
                }
                Err(problem) => problems.push(problem.to_string()),
            }
        }
        for url in &self.subscriptions {
            let name = url.host_str().unwrap_or("subscribed calendar").to_owned();
            match fetch_subscription(url).await {
                Ok(text) => fetched.push(Fetched {
                    calendar: name,
                    text,
                    resource: None,
                }),
                Err(error) => problems.push(format!("{name}: {error}")),
            }
        }
        let cache = Arc::clone(&self.read_cache);
        let read = off_the_actors_thread("reading the calendars", READ_TIME_LIMIT, move || {
            read_and_expand(fetched, &range, &ExpansionBudget::for_one_search(), &cache)
        })
        .await;
        let mut searched = match read {
            Ok(searched) => searched,
            Err(error) => {
                self.readiness
                    .set_degraded(&self.component, Some(&error.to_string()));
                return Err(CalendarProblem::Unread(error));
            }
        };
        problems.append(&mut searched.problems);
        searched.problems = problems;
        match searched.problems.is_empty() {
            true => self.healthy(),
            false => self
                .readiness
                .set_degraded(&self.component, Some(&searched.problems.join("; "))),
        }
        Ok(searched)
    }
}

/// Whether `url` is a resource right inside the collection `calendar`: no other collection
/// of the account, not by `..`, not by an encoded slash.
fn directly_inside(calendar: &Url, url: &Url) -> bool {
    let (Some(rest), true) = (
        url.path().strip_prefix(calendar.path()),
        url.origin() == calendar.origin() && url.query().is_none(),
    ) else {
        return false;
    };
    let rest = rest.to_ascii_lowercase();
    !rest.is_empty()
        && !rest.contains(['/', '\\'])
        && !rest.contains("%2f")
        && !rest.contains("%5c")
        && rest != "."
        && rest != ".."
}

/// The calendars `wanted` names among those listed (all of them when it names none).
fn choose(
    listed: &[Collection],
    wanted: &[String],
    base: &Url,
) -> Result<Vec<Collection>, CalendarProblem> {
    if wanted.is_empty() {
        if listed.is_empty() {
            return Err(CalendarProblem::NoCalendars);
        }
        return Ok(listed.to_vec());
    }
    wanted
        .iter()
        .map(|name| {
            let as_url = base.join(name.trim()).ok();
            listed
                .iter()
                .find(|calendar| {
                    calendar.name.eq_ignore_ascii_case(name.trim())
                        || as_url.as_ref().is_some_and(|url| {
                            url.as_str().trim_end_matches('/')
                                == calendar.url.as_str().trim_end_matches('/')
                        })
                })
                .cloned()
                .ok_or_else(|| CalendarProblem::UnknownCalendar {
                    name: name.clone(),
                    known: listed.iter().map(|c| c.name.clone()).collect(),
                })
        })
        .collect()
}

/// Why the calendar could not do what was asked, in words for the model and the member.
#[derive(Debug, thiserror::Error)]
pub enum CalendarProblem {
    #[error(
        "this profile has no calendar account to write to (processing_config.calendar_config.caldav)"
    )]
    NoAccount,
    #[error("the calendar account has no calendars")]
    NoCalendars,
    #[error("no calendar named {name:?} (calendars: {})", known.join(", "))]
    UnknownCalendar { name: String, known: Vec<String> },
    #[error(
        "no event {id:?} in this profile's calendars; search for it first and use the id it shows"
    )]
    UnknownEvent { id: String },
    #[error("{0}")]
    Server(CalDavError),
    #[error("the calendars could not be read: {0}")]
    Unread(OffThreadError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_resource_right_inside_a_calendar_is_its_event() {
        let calendar = Url::parse("http://127.0.0.1:5232/alice/family/").unwrap();
        let inside = |id: &str| directly_inside(&calendar, &calendar.join(id).unwrap());
        assert!(inside("/alice/family/swim.ics"));
        assert!(inside("swim.ics"));
        for outside in [
            "/alice/other/swim.ics",
            "/alice/family/",
            "/alice/family/sub/x.ics",
            "/alice/family/../other/x.ics",
            "/alice/family/a%2Fb.ics",
            "/alice/family/a%5Cb.ics",
            "http://elsewhere.example/alice/family/x.ics",
            "/alice/family/x.ics?export",
        ] {
            assert!(!inside(outside), "{outside}");
        }
    }
}
