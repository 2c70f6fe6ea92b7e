//! The CalDAV requests hearth makes (RFC 4791), over reqwest: finding the account's
//! calendars (PROPFIND), reading a range of events (REPORT calendar-query), reading one
//! event (GET), writing one with its ETag (PUT with `If-Match`, or `If-None-Match: *` for a
//! new one) and deleting one (DELETE with `If-Match`). A subscribed calendar's `.ics` is a
//! plain GET. Every request has a timeout and every body read a bound; the password goes
//! only into the `Authorization` header and is in no error.
//!
//! The password goes only to the configured server: an account's client is made for the
//! origin (scheme, host, port) of its configured address, an address a `multistatus`
//! answer names elsewhere (a principal, a calendar home, a calendar, an event) is not
//! followed, a redirect elsewhere is not taken, and every request is checked against that
//! origin before it is sent.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode, Url, header};

use super::reading::{READ_TIME_LIMIT, off_the_actors_thread};
use super::xml::{Multistatus, MultistatusResponse};
use crate::config::Secret;

/// One request's time limit, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest answer read: a range of a family calendar is far below it.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// What went wrong talking to a calendar server, in words for the member and the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalDavError {
    #[error("the calendar server at {host} cannot be reached ({reason})")]
    Unreachable { host: String, reason: String },
    #[error(
        "the calendar server at {host} refused the user name or password (check caldav.username and the variable caldav.password_env names)"
    )]
    Unauthorized { host: String },
    #[error("the event changed in the calendar since it was read; nothing was overwritten")]
    Changed,
    #[error("the event is no longer in the calendar")]
    Gone,
    #[error("the calendar server at {host} answered {status} to {what}")]
    Refused {
        host: String,
        status: u16,
        what: String,
    },
    #[error("the calendar server at {host} sent an answer hearth cannot read: {reason}")]
    Unreadable { host: String, reason: String },
    #[error(
        "the calendar server at {host} pointed to another server ({elsewhere}); hearth sends the account's password only to {host}"
    )]
    Elsewhere { host: String, elsewhere: String },
}

/// An event resource as stored: where it is, its version, its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub url: Url,
    pub etag: Option<String>,
    pub text: String,
}

/// A calendar collection of the account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    pub url: Url,
    pub name: String,
}

/// One CalDAV account.
#[derive(Clone)]
pub struct CalDavClient {
    http: reqwest::Client,
    username: String,
    password: Secret,
    /// The configured server: its origin is the only one the password is sent to.
    server: Url,
}

impl std::fmt::Debug for CalDavClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CalDavClient")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

fn host_of(url: &Url) -> String {
    match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or("?")),
        None => url.host_str().unwrap_or("?").to_owned(),
    }
}

const PROPFIND_CALENDARS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<D:propfind xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop><D:resourcetype/><D:displayname/><D:current-user-principal/><C:calendar-home-set/></D:prop>
</D:propfind>"#;

impl CalDavClient {
    /// The account of `username` on the server of `server` (its origin is the only one
    /// requests go to).
    pub fn new(username: &str, password: Secret, server: &Url) -> Self {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .redirect(same_origin_redirects())
            .build()
            .unwrap_or_default();
        CalDavClient {
            http,
            username: username.to_owned(),
            password,
            server: server.clone(),
        }
    }

    /// Whether `url` is on the configured server.
    pub fn is_on_server(&self, url: &Url) -> bool {
        url.origin() == self.server.origin()
    }

    /// `url`, or the error saying the server pointed elsewhere (`asked`: the address the
    /// answer came from).
    fn on_server(&self, url: Url, asked: &Url) -> Result<Url, CalDavError> {
        if self.is_on_server(&url) {
            return Ok(url);
        }
        tracing::warn!(server = %host_of(asked), elsewhere = %host_of(&url), "calendar server named an address on another server; not followed");
        Err(CalDavError::Elsewhere {
            host: host_of(asked),
            elsewhere: host_of(&url),
        })
    }

    async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(header::HeaderName, String)],
        body: Option<String>,
        what: &str,
    ) -> Result<(StatusCode, header::HeaderMap, String), CalDavError> {
        let host = host_of(url);
        if !self.is_on_server(url) {
            return Err(CalDavError::Elsewhere {
                host: host_of(&self.server),
                elsewhere: host,
            });
        }
        let mut request = self
            .http
            .request(method, url.clone())
            .basic_auth(&self.username, Some(self.password.expose()));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let mut response = request
            .send()
            .await
            .map_err(|error| CalDavError::Unreachable {
                host: host.clone(),
                reason: plain_reason(error),
            })?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(CalDavError::Unauthorized { host });
        }
        let headers = response.headers().clone();
        let text = read_body(&mut response, &host, &format!("its answer to {what}")).await?;
        Ok((status, headers, text))
    }

    async fn multistatus(
        &self,
        method: &str,
        url: &Url,
        depth: &str,
        body: String,
        what: &str,
    ) -> Result<Multistatus, CalDavError> {
        let method = Method::from_bytes(method.as_bytes()).expect("a valid method name");
        let headers = [
            (header::HeaderName::from_static("depth"), depth.to_owned()),
            (
                header::CONTENT_TYPE,
                "application/xml; charset=utf-8".to_owned(),
            ),
        ];
        let (status, _, text) = self.send(method, url, &headers, Some(body), what).await?;
        if status != StatusCode::MULTI_STATUS {
            return Err(CalDavError::Refused {
                host: host_of(url),
                status: status.as_u16(),
                what: what.to_owned(),
            });
        }
        // Its cost grows with the answer: read on the blocking pool.
        let base = url.clone();
        let read = off_the_actors_thread("reading the answer", READ_TIME_LIMIT, move || {
            Multistatus::parse(&text, &base)
        })
        .await;
        read.map_err(|error| error.to_string())
            .and_then(|parsed| parsed)
            .map_err(|reason| CalDavError::Unreadable {
                host: host_of(url),
                reason,
            })
    }

    /// The calendars at `url`: the collection itself when it is one, else every calendar
    /// of the account whose principal it leads to.
    pub async fn calendars(&self, url: &Url) -> Result<Vec<Collection>, CalDavError> {
        let here = self
            .multistatus(
                "PROPFIND",
                url,
                "0",
                PROPFIND_CALENDARS.into(),
                "finding calendars",
            )
            .await?;
        let own = here.responses.first();
        if let Some(own) = own.filter(|response| response.is_calendar) {
            self.on_server(own.href.clone(), url)?;
            return Ok(vec![collection_of(own)]);
        }
        let home = match own.and_then(|response| response.calendar_home.clone()) {
            Some(home) => self.on_server(home, url)?,
            None => {
                let principal = own
                    .and_then(|response| response.principal.clone())
                    .ok_or_else(|| CalDavError::Unreadable {
                        host: host_of(url),
                        reason: format!(
                            "{url} is neither a calendar nor names the account's principal"
                        ),
                    })?;
                let principal = self.on_server(principal, url)?;
                let found = self
                    .multistatus(
                        "PROPFIND",
                        &principal,
                        "0",
                        PROPFIND_CALENDARS.into(),
                        "finding the calendar home",
                    )
                    .await?;
                let home = found
                    .responses
                    .first()
                    .and_then(|response| response.calendar_home.clone())
                    .ok_or_else(|| CalDavError::Unreadable {
                        host: host_of(url),
                        reason: "the account names no calendar home".into(),
                    })?;
                self.on_server(home, url)?
            }
        };
        let listed = self
            .multistatus(
                "PROPFIND",
                &home,
                "1",
                PROPFIND_CALENDARS.into(),
                "listing calendars",
            )
            .await?;
        Ok(listed
            .responses
            .iter()
            .filter(|response| response.is_calendar)
            .filter(|response| self.on_server(response.href.clone(), &home).is_ok())
            .map(collection_of)
            .collect())
    }

    /// The event resources of `collection` with an occurrence in `[from, to)`, as the server
    /// filters them (recurring ones whole: hearth expands them).
    pub async fn events_between(
        &self,
        collection: &Url,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Resource>, CalDavError> {
        let format = |instant: DateTime<Utc>| instant.format("%Y%m%dT%H%M%SZ").to_string();
        let body = format!(
            r#"<?xml version="1.0" encoding="utf-8"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop><D:getetag/><C:calendar-data/></D:prop>
  <C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">
    <C:time-range start="{}" end="{}"/>
  </C:comp-filter></C:comp-filter></C:filter>
</C:calendar-query>"#,
            format(from),
            format(to)
        );
        let found = self
            .multistatus("REPORT", collection, "1", body, "a search of events")
            .await?;
        Ok(found
            .responses
            .into_iter()
            .filter(|response| self.on_server(response.href.clone(), collection).is_ok())
            .filter_map(|response| {
                Some(Resource {
                    text: response.calendar_data?,
                    etag: response.etag,
                    url: response.href,
                })
            })
            .collect())
    }

    /// One event resource, or `None` when it is not there.
    pub async fn get(&self, url: &Url) -> Result<Option<Resource>, CalDavError> {
        let (status, headers, text) = self
            .send(Method::GET, url, &[], None, "reading an event")
            .await?;
        match status {
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(None),
            status if status.is_success() => Ok(Some(Resource {
                url: url.clone(),
                etag: etag_of(&headers),
                text,
            })),
            status => Err(CalDavError::Refused {
                host: host_of(url),
                status: status.as_u16(),
                what: "reading an event".into(),
            }),
        }
    }

    /// Writes `text` at `url`: a new resource when `etag` is `None` (`Ok(false)`: one is
    /// there already, nothing written), else only over that version (`Changed` otherwise).
    pub async fn put(
        &self,
        url: &Url,
        text: String,
        etag: Option<&str>,
    ) -> Result<bool, CalDavError> {
        let condition = match etag {
            Some(etag) => (header::IF_MATCH, etag.to_owned()),
            None => (header::IF_NONE_MATCH, "*".to_owned()),
        };
        let headers = [
            condition,
            (
                header::CONTENT_TYPE,
                "text/calendar; charset=utf-8".to_owned(),
            ),
        ];
        let (status, _, _) = self
            .send(Method::PUT, url, &headers, Some(text), "writing an event")
            .await?;
        match status {
            status if status.is_success() => Ok(true),
            StatusCode::PRECONDITION_FAILED if etag.is_none() => Ok(false),
            StatusCode::PRECONDITION_FAILED => Err(CalDavError::Changed),
            StatusCode::NOT_FOUND => Err(CalDavError::Gone),
            status => Err(CalDavError::Refused {
                host: host_of(url),
                status: status.as_u16(),
                what: "writing an event".into(),
            }),
        }
    }

    /// Deletes the resource at `url`, only in version `etag`.
    pub async fn delete(&self, url: &Url, etag: &str) -> Result<(), CalDavError> {
        let headers = [(header::IF_MATCH, etag.to_owned())];
        let (status, _, _) = self
            .send(Method::DELETE, url, &headers, None, "deleting an event")
            .await?;
        match status {
            status if status.is_success() => Ok(()),
            StatusCode::PRECONDITION_FAILED => Err(CalDavError::Changed),
            StatusCode::NOT_FOUND | StatusCode::GONE => Err(CalDavError::Gone),
            status => Err(CalDavError::Refused {
                host: host_of(url),
                status: status.as_u16(),
                what: "deleting an event".into(),
            }),
        }
    }
}

/// Redirects followed only on the server that was asked (a few at most): one elsewhere
/// is answered as the redirect itself, and nothing is sent there.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same && attempt.previous().len() <= 3 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// A subscribed calendar's text (no account: a public or secret-link `.ics`), read
/// within [`MAX_BODY_BYTES`].
pub async fn fetch_subscription(url: &Url) -> Result<String, CalDavError> {
    let host = host_of(url);
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap_or_default();
    let mut response =
        http.get(url.clone())
            .send()
            .await
            .map_err(|error| CalDavError::Unreachable {
                host: host.clone(),
                reason: plain_reason(error),
            })?;
    let status = response.status();
    if !status.is_success() {
        return Err(CalDavError::Refused {
            host,
            status: status.as_u16(),
            what: "reading a subscribed calendar".into(),
        });
    }
    read_body(&mut response, &host, "the calendar").await
}

/// A response's body as text, refused once it grows past [`MAX_BODY_BYTES`] (`subject` is
/// what the error says is too large).
async fn read_body(
    response: &mut reqwest::Response,
    host: &str,
    subject: &str,
) -> Result<String, CalDavError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| CalDavError::Unreachable {
            host: host.to_owned(),
            reason: plain_reason(error),
        })?
    {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(CalDavError::Unreadable {
                host: host.to_owned(),
                reason: format!(
                    "{subject} is larger than {} MB",
                    MAX_BODY_BYTES / (1024 * 1024)
                ),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

fn collection_of(response: &MultistatusResponse) -> Collection {
    let name = response.display_name.clone().unwrap_or_else(|| {
        response
            .href
            .path_segments()
            .and_then(|mut segments| segments.rfind(|s| !s.is_empty()).map(str::to_owned))
            .unwrap_or_else(|| response.href.to_string())
    });
    Collection {
        url: response.href.clone(),
        name,
    }
}

fn etag_of(headers: &header::HeaderMap) -> Option<String> {
    headers
        .get(header::ETAG)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// A request failure in words, without the url (it is named by host already).
fn plain_reason(error: reqwest::Error) -> String {
    if error.is_timeout() {
        "no answer in time".into()
    } else if error.is_connect() {
        "connection refused or no route".into()
    } else {
        error.without_url().to_string()
    }
}
