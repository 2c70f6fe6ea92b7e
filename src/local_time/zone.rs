//! A member's time zone: an IANA name checked against chrono-tz's database.

use std::fmt;
use std::str::FromStr;

use chrono_tz::Tz;

use super::LocalTimeError;
use super::error::shown;

/// An IANA time zone such as `Europe/Berlin`, as a member's profile or a tool names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZoneName(Tz);

impl ZoneName {
    /// Parses an IANA name. Letter case is forgiven (`europe/berlin` is `Europe/Berlin`)
    /// because it cannot change which zone is meant; anything else unknown is an error.
    pub fn parse(text: &str) -> Result<Self, LocalTimeError> {
        let trimmed = text.trim();
        Tz::from_str(trimmed)
            .ok()
            .or_else(|| {
                chrono_tz::TZ_VARIANTS
                    .iter()
                    .copied()
                    .find(|tz| tz.name().eq_ignore_ascii_case(trimmed))
            })
            .map(ZoneName)
            .ok_or_else(|| LocalTimeError::UnknownZone { value: shown(text) })
    }

    /// The zone's canonical IANA name, as stored and as shown to the member.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The chrono-tz zone, for computing.
    pub fn tz(&self) -> Tz {
        self.0
    }
}

impl From<Tz> for ZoneName {
    fn from(tz: Tz) -> Self {
        ZoneName(tz)
    }
}

impl FromStr for ZoneName {
    type Err = LocalTimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ZoneName::parse(text)
    }
}

impl fmt::Display for ZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
