//! Reminders and scheduled tasks in config: `reminders:` (grace for what was missed while
//! hearth was down, the snooze, a bound per member) and each member's `family[].timezone`,
//! checked here so a bad value stops start-up and check-config naming its key.

use serde::{Deserialize, Serialize};

use super::error::Problems;
use super::types::HearthConfig;
use crate::local_time::ZoneName;

/// How reminders behave (config `reminders`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemindersConfig {
    /// An occurrence missed while hearth was down is still sent, marked late, within this
    /// many minutes of its time; later, the member is told it was missed instead.
    pub grace_minutes: u64,
    /// How long Snooze puts a reminder off.
    pub snooze_minutes: u64,
    /// Most active reminders and tasks for one member: what the model may store is bounded.
    pub max_per_member: u64,
}

impl Default for RemindersConfig {
    fn default() -> Self {
        Self {
            grace_minutes: 60,
            snooze_minutes: 10,
            max_per_member: 200,
        }
    }
}

/// The bounds of `reminders` and each member's zone.
pub(crate) fn check_reminders(config: &HearthConfig, problems: &mut Problems) {
    let reminders = &config.reminders;
    if reminders.grace_minutes > 7 * 24 * 60 {
        problems.push(
            "reminders.grace_minutes",
            format!(
                "{} is out of range: at most 10080 (a week)",
                reminders.grace_minutes
            ),
        );
    }
    if !(1..=24 * 60).contains(&reminders.snooze_minutes) {
        problems.push(
            "reminders.snooze_minutes",
            format!(
                "{} is out of range: 1 to 1440 (a day)",
                reminders.snooze_minutes
            ),
        );
    }
    if !(1..=10_000).contains(&reminders.max_per_member) {
        problems.push(
            "reminders.max_per_member",
            format!("{} is out of range: 1 to 10000", reminders.max_per_member),
        );
    }
    for (index, member) in config.family.iter().enumerate() {
        if let Some(zone) = &member.timezone
            && let Err(error) = ZoneName::parse(zone)
        {
            problems.push(format!("family[{index}].timezone"), error.to_string());
        }
    }
}
