//! What a member answers with a button or a reply: a confirmation a turn waits on, or a
//! fired reminder's occurrence (Done or Snooze). Both travel in the same places (an
//! outbox prompt, Telegram's callback data, a Matrix prompt's note), so one type says
//! which it is, and only this file knows how a reminder's is written.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ConfirmationId, IdError, deserialize_parsed, serialize_as_text};

/// What a reminder's prompt id starts with; a confirmation id never holds ':'.
const REMINDER_PREFIX: &str = "reminder:";

/// One occurrence of a schedule: its schedule and the instant it was due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiringId {
    pub schedule_id: i64,
    pub due_ms: i64,
}

impl fmt::Display for FiringId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.schedule_id, self.due_ms)
    }
}

impl FromStr for FiringId {
    type Err = IdError;

    /// `<schedule>.<due ms>`, as `Display` writes it.
    fn from_str(text: &str) -> Result<Self, IdError> {
        let bad = || IdError::BadFiringId(text.to_owned());
        let (schedule, due) = text.split_once('.').ok_or_else(bad)?;
        Ok(FiringId {
            schedule_id: schedule.parse().map_err(|_| bad())?,
            due_ms: due.parse().map_err(|_| bad())?,
        })
    }
}

/// A prompt a member answers: written as the confirmation's id, or as
/// `reminder:<schedule>.<due ms>` for a fired reminder.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PromptId {
    Confirmation(ConfirmationId),
    Reminder(FiringId),
}

impl PromptId {
    /// The fired occurrence it names, when it is a reminder's.
    pub fn reminder(&self) -> Option<FiringId> {
        match self {
            PromptId::Reminder(firing) => Some(*firing),
            PromptId::Confirmation(_) => None,
        }
    }
}

impl From<ConfirmationId> for PromptId {
    fn from(id: ConfirmationId) -> Self {
        PromptId::Confirmation(id)
    }
}

impl From<FiringId> for PromptId {
    fn from(firing: FiringId) -> Self {
        PromptId::Reminder(firing)
    }
}

impl fmt::Display for PromptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromptId::Confirmation(id) => write!(f, "{id}"),
            PromptId::Reminder(firing) => write!(f, "{REMINDER_PREFIX}{firing}"),
        }
    }
}

impl FromStr for PromptId {
    type Err = IdError;

    fn from_str(text: &str) -> Result<Self, IdError> {
        match text.strip_prefix(REMINDER_PREFIX) {
            Some(firing) => firing
                .parse()
                .map(PromptId::Reminder)
                .map_err(|_| IdError::BadFiringId(text.to_owned())),
            None => text.parse().map(PromptId::Confirmation),
        }
    }
}

impl Serialize for PromptId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_as_text(&self.to_string(), serializer)
    }
}

impl<'de> Deserialize<'de> for PromptId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_parsed(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_round_trip_in_their_stored_forms() {
        let firing = FiringId {
            schedule_id: 7,
            due_ms: 1_700_000_000_000,
        };
        let reminder = PromptId::from(firing);
        assert_eq!(reminder.to_string(), "reminder:7.1700000000000");
        assert_eq!("reminder:7.1700000000000".parse(), Ok(reminder.clone()));
        assert_eq!(reminder.reminder(), Some(firing));
        let confirmation: ConfirmationId = "0193-abc_D".parse().unwrap();
        let asked = PromptId::from(confirmation.clone());
        assert_eq!(asked.to_string(), "0193-abc_D");
        assert_eq!("0193-abc_D".parse(), Ok(asked.clone()));
        assert_eq!(asked.reminder(), None);
        assert_eq!(
            serde_json::to_string(&reminder).unwrap(),
            "\"reminder:7.1700000000000\""
        );
        assert_eq!(
            serde_json::from_str::<PromptId>("\"0193-abc_D\"").unwrap(),
            asked
        );
    }

    #[test]
    fn a_malformed_prompt_is_refused_naming_it() {
        for bad in [
            "reminder:",
            "reminder:7",
            "reminder:7.x",
            "reminder:a.1",
            "reminder:7.1.2",
        ] {
            assert_eq!(
                bad.parse::<PromptId>(),
                Err(IdError::BadFiringId(bad.to_owned())),
                "{bad}"
            );
        }
        assert_eq!(
            "a:b".parse::<PromptId>(),
            Err(IdError::BadConfirmationId("a:b".into()))
        );
        assert_eq!(
            "reminder:x".parse::<PromptId>().unwrap_err().to_string(),
            "\"reminder:x\" names no occurrence of a reminder (`reminder:<schedule>.<due ms>`)"
        );
    }
}
