//! A member's commands, parsed once for every platform (`/reminders` only where reminders
//! reach the channel), and what `/cancel` and an answer to a confirmation (a button, a
//! reaction, a "yes") do. Each returns the messages to
//! deliver; the platform only finds out who spoke, where, and shows the result.

use actix::Addr;

use super::texts::{DECLINED_OUTCOME, approved_outcome};
use crate::actors::channels::ChannelError;
use crate::actors::request_queue::{
    AnswerConfirmation, AnswerError, CANCELLED_OUTCOME, CancelPending, RequestQueue,
};
use crate::config::FamilyMember;
use crate::ids::{ConfirmationId, ConversationKey, MemberId};
use crate::ports::{AnswerPlace, AnswerRefused, OutgoingKind, OutgoingMessage};

/// A command at the start of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// `/help` or `/start`.
    Help,
    /// `/cancel`.
    Cancel,
    /// `/reminders`: the member's reminders, each with a way to cancel it.
    Reminders,
    /// The family's own commands, where members can be changed in chat: `/invite`, `/join`,
    /// `/link`, `/family`, each with the rest of the message.
    Membership(MembershipCommand, String),
    /// Another command (a profile's, which the queue routes): the message's text with the
    /// command written `/name` (lowercase, without `@bot`).
    Other(String),
    /// Addressed to another bot (`/cmd@otherbot`): not for hearth.
    NotForUs,
}

/// A command changing the family (`family::Membership`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MembershipCommand {
    Invite,
    Join,
    Link,
    Family,
    /// `/signin`: a one-time link to the web page, in the member's private chat.
    SignIn,
}

/// The command `text` starts with, if any: `/name` or `<alternate_prefix>name`, optionally
/// `@addressee`; a command addressed to anyone but `bot_username` (once known) is not for
/// us. `/reminders` is the channel's own only where `reminders` reach it, and `/invite`,
/// `/join`, `/link`, `/family` and `/signin` only where `membership` is; elsewhere each is
/// another command, which the queue routes.
pub(crate) fn parse_command(
    text: &str,
    alternate_prefix: Option<char>,
    bot_username: Option<&str>,
    reminders: bool,
    membership: bool,
) -> Option<Command> {
    let text = text.trim_start();
    let word = text.split_whitespace().next()?;
    let name = word
        .strip_prefix('/')
        .or_else(|| alternate_prefix.and_then(|prefix| word.strip_prefix(prefix)))?;
    let (name, addressee) = match name.split_once('@') {
        Some((name, addressee)) => (name, Some(addressee)),
        None => (name, None),
    };
    if let (Some(addressee), Some(username)) = (addressee, bot_username)
        && !addressee.eq_ignore_ascii_case(username)
    {
        return Some(Command::NotForUs);
    }
    let name = name.to_lowercase();
    Some(match name.as_str() {
        "help" | "start" => Command::Help,
        "cancel" => Command::Cancel,
        "reminders" if reminders => Command::Reminders,
        "invite" | "join" | "link" | "family" | "signin" if membership => {
            let which = match name.as_str() {
                "invite" => MembershipCommand::Invite,
                "join" => MembershipCommand::Join,
                "link" => MembershipCommand::Link,
                "signin" => MembershipCommand::SignIn,
                _ => MembershipCommand::Family,
            };
            Command::Membership(which, text[word.len()..].trim().to_string())
        }
        _ => {
            let rest = text[word.len()..].trim_start();
            Command::Other(format!("/{name} {rest}").trim_end().to_string())
        }
    })
}

/// `text` as markdown in `conversation`, threaded to `reply_to_event`.
pub(crate) fn say(
    conversation: &ConversationKey,
    text: impl Into<String>,
    reply_to_event: Option<String>,
) -> OutgoingMessage {
    OutgoingMessage {
        conversation: conversation.clone(),
        inbox_id: None,
        text: text.into(),
        kind: OutgoingKind::Reply,
        reply_to_event,
    }
}

/// Close confirmation `confirmation_id`'s prompt in `conversation`, ending it with
/// `outcome`.
pub(crate) fn close(
    conversation: &ConversationKey,
    confirmation_id: &ConfirmationId,
    outcome: impl Into<String>,
) -> OutgoingMessage {
    OutgoingMessage {
        conversation: conversation.clone(),
        inbox_id: None,
        text: outcome.into(),
        kind: OutgoingKind::Close {
            prompt: confirmation_id.clone().into(),
        },
        reply_to_event: None,
    }
}

/// `/cancel` from `member_id` in `conversation`: their confirmations there are denied
/// (their prompts closed), their question withdrawn, their pending plugin call dropped.
pub(crate) async fn cancel(
    queue: &Addr<RequestQueue>,
    member_id: &MemberId,
    conversation: &ConversationKey,
    reply_to_event: Option<String>,
) -> Result<Vec<OutgoingMessage>, ChannelError> {
    let cancelled = queue
        .send(CancelPending {
            member_id: member_id.clone(),
            conversation_key: conversation.clone(),
        })
        .await
        .map_err(|_| ChannelError::QueueStopped)??;
    if let Some(reply) = cancelled.reply() {
        return Ok(vec![say(conversation, reply, reply_to_event)]);
    }
    // The turns that waited go on and say what happened; the prompts close now.
    Ok(cancelled
        .confirmation_ids
        .iter()
        .map(|id| close(conversation, id, CANCELLED_OUTCOME))
        .collect())
}

/// `member` answered confirmation `confirmation_id` in `conversation`: the prompt's closing
/// message when the answer counts (the turn goes on), else why not.
pub(crate) async fn answer(
    queue: &Addr<RequestQueue>,
    member: &FamilyMember,
    conversation: &ConversationKey,
    confirmation_id: &ConfirmationId,
    approve: bool,
) -> Result<Result<OutgoingMessage, AnswerRefused>, ChannelError> {
    let answered = queue
        .send(AnswerConfirmation {
            confirmation_id: confirmation_id.clone(),
            member_id: member.id.clone(),
            place: AnswerPlace::Conversation(conversation.clone()),
            approve,
            reply_to: None,
        })
        .await
        .map_err(|_| ChannelError::QueueStopped)?;
    match answered {
        Ok(_) => {
            let name = member.name.clone().unwrap_or_else(|| member.id.to_string());
            let outcome = if approve {
                approved_outcome(&name)
            } else {
                DECLINED_OUTCOME.to_string()
            };
            Ok(Ok(close(conversation, confirmation_id, outcome)))
        }
        Err(AnswerError::Refused(refusal)) => Ok(Err(refusal)),
        Err(AnswerError::Storage(error)) => Err(ChannelError::Storage(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_for_this_bot_others_and_none() {
        let bot = Some("hearth_bot");
        assert_eq!(
            parse_command("/help", None, bot, false, false),
            Some(Command::Help)
        );
        assert_eq!(
            parse_command("/START", None, bot, false, false),
            Some(Command::Help)
        );
        assert_eq!(
            parse_command("/Tools@Hearth_Bot list it", None, bot, false, false),
            Some(Command::Other("/tools list it".into()))
        );
        assert_eq!(
            parse_command("/tools@other_bot x", None, bot, false, false),
            Some(Command::NotForUs)
        );
        assert_eq!(
            parse_command("/cancel@x", None, None, false, false),
            Some(Command::Cancel)
        );
        assert_eq!(parse_command("hello /help", None, bot, false, false), None);
        assert_eq!(parse_command("", None, None, false, false), None);
    }

    #[test]
    fn the_alternate_prefix_counts_only_where_the_platform_has_one() {
        assert_eq!(
            parse_command("!cancel", Some('!'), None, false, false),
            Some(Command::Cancel)
        );
        assert_eq!(
            parse_command("!Focus be brief", Some('!'), None, false, false),
            Some(Command::Other("/focus be brief".into()))
        );
        assert_eq!(parse_command("!cancel", None, None, false, false), None);
        assert_eq!(parse_command("wow!", Some('!'), None, false, false), None);
    }

    #[test]
    fn reminders_is_the_channel_s_own_only_where_reminders_reach_it() {
        let bot = Some("hearth_bot");
        for text in [
            "/reminders",
            "/REMINDERS",
            "/Reminders@Hearth_Bot",
            "/reminders all",
        ] {
            assert_eq!(
                parse_command(text, None, bot, true, false),
                Some(Command::Reminders),
                "{text}"
            );
        }
        assert_eq!(
            parse_command("!reminders", Some('!'), None, true, false),
            Some(Command::Reminders)
        );
        assert_eq!(
            parse_command("/reminders@other_bot", None, bot, true, false),
            Some(Command::NotForUs)
        );
        assert_eq!(
            parse_command("/reminders", None, bot, false, false),
            Some(Command::Other("/reminders".into()))
        );
        assert_eq!(parse_command("my reminders", None, bot, true, false), None);
    }
}
