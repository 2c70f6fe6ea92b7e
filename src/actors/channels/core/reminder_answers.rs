//! An answer given to a fired reminder's prompt (Done or Snooze on a button, a reaction, a
//! reply) goes to the scheduler, not the request queue: its prompt id names the occurrence
//! (`PromptId::Reminder`). Only the member it is for may answer; the scheduler
//! closes the prompt itself, with the answer stored.

use actix::Recipient;

use super::adapter::AnswerOutcome;
use crate::config::FamilyMember;
use crate::ids::FiringId;
use crate::ports::AnswerRefused;
use crate::reminders::{
    CancelReminder, ListReminders, ReminderChoice, ReminderError, SettleReminder,
};

/// Where the channels send what members say about reminders (the scheduler): answers to a
/// fired one, `/reminders` and a cancel from its list (`reminder_lists.rs`); and how long a
/// snooze is (the button says).
#[derive(Clone)]
pub struct ReminderAnswers {
    pub settle: Recipient<SettleReminder>,
    pub list: Recipient<ListReminders>,
    pub cancel: Recipient<CancelReminder>,
    pub snooze_minutes: u64,
}

/// `member` answers occurrence `firing`: Done when `first_choice`, else Snooze. What to tell
/// them; `Failed` when it could not be stored and may be given again.
pub(crate) async fn settle(
    answers: Option<&ReminderAnswers>,
    member: &FamilyMember,
    firing: FiringId,
    first_choice: bool,
) -> AnswerOutcome {
    let Some(answers) = answers else {
        // Reminders are off here: the prompt is an old one.
        return AnswerOutcome::Refused(AnswerRefused::Unknown);
    };
    let choice = if first_choice {
        ReminderChoice::Done
    } else {
        ReminderChoice::Snooze(None)
    };
    let settled = answers
        .settle
        .send(SettleReminder {
            firing,
            member_id: member.id.clone(),
            choice,
        })
        .await;
    match settled {
        Ok(Ok(_)) if first_choice => AnswerOutcome::Done,
        Ok(Ok(_)) => AnswerOutcome::Snoozed,
        Ok(Err(ReminderError::NotYours(_))) => AnswerOutcome::Refused(AnswerRefused::NotYours),
        Ok(Err(ReminderError::AlreadySettled { .. })) => {
            AnswerOutcome::Refused(AnswerRefused::AlreadyAnswered)
        }
        Ok(Err(error)) => {
            tracing::warn!(%firing, member = %member.id, %error, "reminder answer not stored");
            AnswerOutcome::Failed
        }
        Err(_) => {
            tracing::warn!(%firing, "the scheduler is not running");
            AnswerOutcome::Failed
        }
    }
}
