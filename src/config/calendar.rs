//! A profile's calendars in config: `processing_config.calendar_config` (seed 004), merged
//! key by key like the rest of `processing_config`: `caldav` (one CalDAV account: the server
//! or one calendar collection, the user, the variable holding the password, which calendars)
//! and `ical_urls` (subscribed calendars, read only). Each key a layer writes replaces the
//! lower layer's, so the parents' profile can see the family calendar and a child's profile
//! only the school holidays.

use serde::{Deserialize, Serialize};

use super::error::Problems;

/// `processing_config.calendar_config.caldav`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaldavConfig {
    /// The server (its calendars are found through the account's principal) or one
    /// calendar collection.
    pub url: String,
    pub username: String,
    /// The environment variable holding the password; the password is never written here.
    pub password_env: String,
    /// Calendars by display name or URL; empty: the collection `url` names, or every
    /// calendar of the account when `url` is the server.
    #[serde(default)]
    pub calendars: Vec<String>,
    /// Searching only: the write tools refuse, naming this key.
    #[serde(default)]
    pub read_only: bool,
}

/// `caldav` as a layer writes it: an account, or `false` for none (a profile that must
/// not see the account the defaults name; `~` would inherit it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum CaldavSetting {
    Account(CaldavConfig),
    Off,
}

impl<'de> Deserialize<'de> for CaldavSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_yaml::Value::deserialize(deserializer)?;
        match value {
            serde_yaml::Value::Bool(false) => Ok(CaldavSetting::Off),
            serde_yaml::Value::Bool(true) => Err(serde::de::Error::custom(
                "caldav is an account ({url, username, password_env, calendars}) or false for none, found true",
            )),
            value => CaldavConfig::deserialize(value)
                .map(CaldavSetting::Account)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// One layer of `calendar_config` as written: `None` is "not set here, inherit".
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CalendarLayer {
    caldav: Option<CaldavSetting>,
    ical_urls: Option<Vec<String>>,
}

/// A profile's merged `calendar_config`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CalendarConfig {
    pub caldav: Option<CaldavConfig>,
    pub ical_urls: Vec<String>,
}

impl CalendarConfig {
    /// Whether the profile has any calendar at all.
    pub fn is_empty(&self) -> bool {
        self.caldav.is_none() && self.ical_urls.is_empty()
    }
}

impl CalendarLayer {
    pub(crate) fn overlaid_with(&self, upper: &Self) -> Self {
        Self {
            caldav: upper.caldav.clone().or_else(|| self.caldav.clone()),
            ical_urls: upper.ical_urls.clone().or_else(|| self.ical_urls.clone()),
        }
    }

    pub(crate) fn finish(self) -> CalendarConfig {
        CalendarConfig {
            caldav: match self.caldav {
                Some(CaldavSetting::Account(caldav)) => Some(caldav),
                Some(CaldavSetting::Off) | None => None,
            },
            ical_urls: self.ical_urls.unwrap_or_default(),
        }
    }

    /// The checks of what this layer writes, at `path` (`...processing_config.calendar_config`).
    /// The password variable is checked with the other secrets, where it is read.
    pub(crate) fn check(&self, path: &str, problems: &mut Problems) {
        if let Some(CaldavSetting::Account(caldav)) = &self.caldav {
            check_url(&format!("{path}.caldav.url"), &caldav.url, false, problems);
            if caldav.username.trim().is_empty() {
                problems.push(
                    format!("{path}.caldav.username"),
                    "must name the calendar account's user, found an empty string",
                );
            }
            for (index, calendar) in caldav.calendars.iter().enumerate() {
                if calendar.trim().is_empty() {
                    problems.push(
                        format!("{path}.caldav.calendars[{index}]"),
                        "must name a calendar (its display name or URL), found an empty string",
                    );
                }
            }
        }
        for (index, url) in self.ical_urls.iter().flatten().enumerate() {
            check_url(&format!("{path}.ical_urls[{index}]"), url, true, problems);
        }
    }
}

/// A subscribed calendar's `webcal://` address is its `https://` one.
pub fn subscription_url(written: &str) -> String {
    match written.trim().strip_prefix("webcal://") {
        Some(rest) => format!("https://{rest}"),
        None => written.trim().to_owned(),
    }
}

fn check_url(key_path: &str, written: &str, webcal_allowed: bool, problems: &mut Problems) {
    let text = if webcal_allowed {
        subscription_url(written)
    } else {
        written.trim().to_owned()
    };
    let schemes = if webcal_allowed {
        "http://, https:// or webcal://"
    } else {
        "http:// or https://"
    };
    match reqwest::Url::parse(&text) {
        Ok(url) if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() => {
            problems.push(
                key_path,
                format!("{:?} is not a web address: it must start with {schemes}", url.as_str()),
            );
        }
        // Never echo it: a password written into the address is a secret.
        Ok(url) if !url.username().is_empty() || url.password().is_some() => problems.push(
            key_path,
            "holds a user or password; write the user in caldav.username and the password in the variable caldav.password_env names",
        ),
        Ok(_) => {}
        Err(error) => problems.push(
            key_path,
            format!("{written:?} is not a web address ({error}); it must start with {schemes}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(yaml: &str) -> CalendarLayer {
        serde_yaml::from_str(yaml).expect("layer")
    }

    fn problems_of(yaml: &str) -> Vec<String> {
        let mut problems = Problems::default();
        layer(yaml).check("p.calendar_config", &mut problems);
        problems
            .into_vec()
            .into_iter()
            .map(|problem| format!("{}: {}", problem.key_path, problem.message))
            .collect()
    }

    #[test]
    fn an_upper_layer_replaces_each_key_it_writes_and_keeps_the_others() {
        let lower = layer(
            "caldav: {url: 'https://cal.example/', username: a, password_env: P}\nical_urls: ['https://school.example/h.ics']",
        );
        let upper = layer("ical_urls: []");
        let merged = lower.overlaid_with(&upper).finish();
        assert_eq!(merged.caldav.as_ref().unwrap().username, "a");
        assert!(merged.ical_urls.is_empty());
        // `false` takes the account away; `~` inherits it.
        let merged = lower.overlaid_with(&layer("caldav: false")).finish();
        assert_eq!(merged.caldav, None);
        assert_eq!(merged.ical_urls.len(), 1);
        let merged = lower.overlaid_with(&layer("caldav: ~")).finish();
        assert!(merged.caldav.is_some());
        // `false` takes the account away; `~` inherits it.
        let merged = lower.overlaid_with(&layer("caldav: false")).finish();
        assert_eq!(merged.caldav, None);
        assert_eq!(merged.ical_urls.len(), 1);
        let merged = lower.overlaid_with(&layer("caldav: ~")).finish();
        assert!(merged.caldav.is_some());
        let merged = lower.overlaid_with(&CalendarLayer::default()).finish();
        assert_eq!(merged.ical_urls, ["https://school.example/h.ics"]);
    }

    #[test]
    fn bad_addresses_are_named_and_a_password_in_one_never_echoed() {
        let found = problems_of(
            "caldav: {url: 'https://bob:hunter2@cal.example/', username: ' ', password_env: P, calendars: ['']}\nical_urls: ['ftp://x.example/a.ics', 'webcal://school.example/h.ics', 'nonsense']",
        );
        let text = found.join("\n");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("p.calendar_config.caldav.url"), "{text}");
        assert!(text.contains("p.calendar_config.caldav.username"), "{text}");
        assert!(
            text.contains("p.calendar_config.caldav.calendars[0]"),
            "{text}"
        );
        assert!(text.contains("p.calendar_config.ical_urls[0]"), "{text}");
        assert!(!text.contains("ical_urls[1]"), "webcal is accepted: {text}");
        assert!(text.contains("p.calendar_config.ical_urls[2]"), "{text}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let error = serde_yaml::from_str::<CalendarLayer>(
            "caldav: {url: u, username: a, password_env: P, pasword: x}",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("pasword"), "{error}");
        assert!(serde_yaml::from_str::<CalendarLayer>("caldav: true").is_err());
    }
}
