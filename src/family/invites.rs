//! Invite codes and the limits around them: a code is eight letters and digits from the
//! OS's randomness (about 40 bits), shown as `ABCD-EFGH` and read back whatever its case,
//! spaces or dashes; only its SHA-256 is stored. Wrong codes are limited per platform user
//! (`MAX_WRONG_CODES` an hour) and the reminder to strangers is said once a day at most;
//! both are kept in memory within a bound, so a flood of senders cannot grow them.

use std::collections::HashMap;

/// Letters and digits that cannot be mistaken for one another (no 0/O, 1/I/L).
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
pub const CODE_LENGTH: usize = 8;
/// Wrong codes a platform user may send an hour; then every code is refused until the
/// hour has passed.
pub const MAX_WRONG_CODES: usize = 5;
const WRONG_CODES_WINDOW_MS: i64 = 60 * 60 * 1000;
const STRANGER_TOLD_EVERY_MS: i64 = 24 * 60 * 60 * 1000;
/// Senders remembered by either limit; past it the oldest half is forgotten.
const REMEMBERED: usize = 4096;

pub use crate::secrets::NoRandomness;

/// A new code, as shown: `ABCD-EFGH`.
pub fn new_code() -> Result<String, NoRandomness> {
    let letters = crate::secrets::random_text::<CODE_LENGTH>(ALPHABET)?;
    Ok(format!("{}-{}", &letters[..4], &letters[4..]))
}

/// `text` as a code (`abcd efgh`, `ABCD-EFGH`), if it can be one.
pub fn read_code(text: &str) -> Option<String> {
    let code: String = text
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == CODE_LENGTH && code.bytes().all(|byte| ALPHABET.contains(&byte))).then_some(code)
}

/// What the database keeps of a code read by `read_code`.
pub fn code_hash(code: &str) -> String {
    crate::secrets::sha256_hex(code.as_bytes())
}

/// Per platform user, the times of their wrong codes in the last hour, and when a stranger
/// was last told how to join.
#[derive(Debug, Default)]
pub struct CodeLimits {
    wrong: HashMap<String, Vec<i64>>,
    told: HashMap<String, i64>,
}

impl CodeLimits {
    /// Whether `user` may try a code at `now_ms`.
    pub fn may_try(&mut self, user: &str, now_ms: i64) -> bool {
        let Some(times) = self.wrong.get_mut(user) else {
            return true;
        };
        times.retain(|at| now_ms - at < WRONG_CODES_WINDOW_MS);
        times.len() < MAX_WRONG_CODES
    }

    /// `user` sent a wrong code at `now_ms`.
    pub fn wrong_code(&mut self, user: &str, now_ms: i64) {
        if self.wrong.len() >= REMEMBERED && !self.wrong.contains_key(user) {
            forget_oldest(&mut self.wrong, |times| times.last().copied().unwrap_or(0));
        }
        self.wrong.entry(user.to_string()).or_default().push(now_ms);
    }

    /// Whether stranger `user` is to be told how to join now (once a day at most); noted.
    pub fn tell_stranger(&mut self, user: &str, now_ms: i64) -> bool {
        if self
            .told
            .get(user)
            .is_some_and(|at| now_ms - at < STRANGER_TOLD_EVERY_MS)
        {
            return false;
        }
        if self.told.len() >= REMEMBERED {
            forget_oldest(&mut self.told, |at| *at);
        }
        self.told.insert(user.to_string(), now_ms);
        true
    }
}

/// Forget the older half of `map` by `at`.
fn forget_oldest<V>(map: &mut HashMap<String, V>, at: impl Fn(&V) -> i64) {
    let mut times: Vec<i64> = map.values().map(&at).collect();
    times.sort_unstable();
    let middle = times[times.len() / 2];
    map.retain(|_, value| at(value) > middle);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_read_back_in_any_case_and_spacing() {
        let code = new_code().unwrap();
        assert_eq!(code.len(), CODE_LENGTH + 1);
        let plain = code.replace('-', "");
        assert_eq!(read_code(&code).as_deref(), Some(plain.as_str()));
        assert_eq!(
            read_code(&code.to_lowercase().replace('-', " ")).as_deref(),
            Some(plain.as_str())
        );
        assert_eq!(read_code("ABCD-EFG"), None);
        assert_eq!(read_code("ABCD-EFG0"), None, "0 is not in the alphabet");
        assert_ne!(new_code().unwrap(), code);
        assert_eq!(code_hash(&plain).len(), 64);
        assert!(!code_hash(&plain).contains(&plain));
    }

    #[test]
    fn five_wrong_codes_an_hour_then_none_until_it_passed() {
        let mut limits = CodeLimits::default();
        for n in 0..MAX_WRONG_CODES as i64 {
            assert!(limits.may_try("telegram:7", n));
            limits.wrong_code("telegram:7", n);
        }
        assert!(!limits.may_try("telegram:7", 10));
        assert!(
            limits.may_try("telegram:8", 10),
            "another user is not limited"
        );
        assert!(limits.may_try("telegram:7", WRONG_CODES_WINDOW_MS + 5));
    }

    #[test]
    fn a_stranger_is_told_once_a_day_and_the_memory_stays_bounded() {
        let mut limits = CodeLimits::default();
        assert!(limits.tell_stranger("matrix:@x:y", 0));
        assert!(!limits.tell_stranger("matrix:@x:y", STRANGER_TOLD_EVERY_MS - 1));
        assert!(limits.tell_stranger("matrix:@x:y", STRANGER_TOLD_EVERY_MS));
        for n in 0..(REMEMBERED * 3) {
            limits.tell_stranger(&format!("telegram:{n}"), n as i64);
            limits.wrong_code(&format!("telegram:{n}"), n as i64);
        }
        assert!(limits.told.len() <= REMEMBERED);
        assert!(limits.wrong.len() <= REMEMBERED);
    }
}
