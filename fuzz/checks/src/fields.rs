//! A target's input written as `key: value` lines, so that its corpus is readable and the
//! fuzzer's mutations stay meaningful: `zone: Europe/Berlin`, `now: 2025-03-30T00:30:00Z`.
//! A line without a known key belongs to the value above it (a multi-line value); a
//! value that does not read falls back to the target's default.

use chrono::{DateTime, NaiveDateTime, Utc};

/// The fields of one input, in order; a key may come more than once.
pub struct Fields<'a> {
    entries: Vec<(&'a str, String)>,
}

impl<'a> Fields<'a> {
    /// Reads `text` with `keys` as the known keys.
    pub fn read(text: &'a str, keys: &[&'a str]) -> Self {
        let mut entries: Vec<(&'a str, String)> = Vec::new();
        for line in text.split('\n') {
            let known = line.split_once(':').and_then(|(key, value)| {
                let key = keys.iter().find(|known| **known == key.trim())?;
                Some((*key, value.strip_prefix(' ').unwrap_or(value)))
            });
            match (known, entries.last_mut()) {
                (Some((key, value)), _) => entries.push((key, value.to_string())),
                (None, Some((_, value))) => {
                    value.push('\n');
                    value.push_str(line);
                }
                (None, None) => {}
            }
        }
        Fields { entries }
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.as_str())
    }

    /// Every value of `key`, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|(name, _)| *name == key)
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// `key` as an instant (RFC 3339), or `default`.
    pub fn instant(&self, key: &str, default: &str) -> DateTime<Utc> {
        // A leap second (`23:59:60`) is no instant a clock hands hearth (chrono's `Utc::now`
        // never does), and chrono's arithmetic across one is off by that second.
        let read = |text: &str| {
            DateTime::parse_from_rfc3339(text.trim())
                .ok()
                .map(|instant| instant.with_timezone(&Utc))
                .filter(|instant| instant.timestamp_subsec_nanos() < 1_000_000_000)
        };
        self.get(key)
            .and_then(read)
            .or_else(|| read(default))
            .expect("the default instant reads")
    }

    /// `key` as a local date and time (`2025-03-30 02:30`), or `default`.
    pub fn local(&self, key: &str, default: &str) -> NaiveDateTime {
        let read = |text: &str| NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M").ok();
        self.get(key)
            .and_then(read)
            .or_else(|| read(default))
            .expect("the default local time reads")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_run_over_lines_until_the_next_key() {
        let fields = Fields::read("a: 1\nb: two\nlines\nnot a key: x\na: 3", &["a", "b"]);
        assert_eq!(fields.get("a"), Some("1"));
        assert_eq!(fields.get("b"), Some("two\nlines\nnot a key: x"));
        assert_eq!(fields.all("a"), ["1", "3"]);
        assert_eq!(fields.get("c"), None);
    }

    #[test]
    fn a_leap_second_is_no_instant_and_the_default_stands() {
        let fields = Fields::read("now: 2010-11-29T00:00:60Z", &["now"]);
        let default = "2025-03-30T00:30:00Z";
        assert_eq!(
            fields.instant("now", default).to_rfc3339(),
            "2025-03-30T00:30:00+00:00"
        );
    }
}
