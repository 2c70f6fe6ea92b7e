//! A turn that asks: its confirmation is stored together with every message asking it, in
//! one transaction, then shown. The asking member sees the prompt (or, for a request
//! escalated to its approvers on a chat platform, that a parent was asked), and each
//! approver sees the prompt in their own chats. Because the approvers' prompts are outbox
//! rows of the same commit as the suspension, a stop right after it never leaves a child
//! told "I've asked a parent" while no parent is asked: a restart delivers them.

use actix::Context;
use futures::FutureExt;
use futures::future::LocalBoxFuture;

use super::{DeliverReply, Finished, ReplyKind, RequestQueue};
use crate::ports::{Fence, Inbound, OutgoingMessage, PendingConfirmation};
use crate::turn::TurnError;

/// What the member whose request was escalated to the parents is told on a chat platform.
pub const ASKED_A_PARENT: &str =
    "I've asked a parent to approve this; their answer will come here.";

/// One message asking a stored confirmation, to show once the suspension is stored.
pub(super) struct ShownPrompt {
    /// Where it goes: the asking member's conversation, or an approver's own chat.
    place: Inbound,
    text: String,
    kind: ReplyKind,
    /// Its outbox row, stored with the confirmation (`None`: a channel without the outbox,
    /// or a call waiting for the turn's reply).
    outbox_id: Option<i64>,
    /// The asking member's, who may have a call waiting for it; else an approver's.
    to_asking_member: bool,
}

impl RequestQueue {
    /// Store `confirmation` for the turn of `inbound` with every message asking it (the
    /// asking member's and each approver's), in one transaction, while `fence` (the
    /// conversation's lease the turn ran under, among workers) is current.
    pub(super) fn suspend_turn(
        &mut self,
        inbound: &Inbound,
        confirmation: Box<PendingConfirmation>,
        fence: Option<Fence>,
    ) -> LocalBoxFuture<'static, Result<Finished, TurnError>> {
        let (text, kind) = self.asking_member_sees(&confirmation);
        let asking_row = self.outgoing(inbound, &text, &kind);
        let mut prompts = vec![ShownPrompt {
            place: inbound.clone(),
            text,
            kind,
            outbox_id: None,
            to_asking_member: true,
        }];
        let mut rows: Vec<OutgoingMessage> = asking_row.into_iter().collect();
        let asking_is_a_row = !rows.is_empty();
        for place in self.approvers_places(inbound, &confirmation) {
            let kind = ReplyKind::AskConfirmation {
                confirmation_id: confirmation.id.clone(),
                expires_at_ms: confirmation.expires_at_ms,
            };
            rows.push(OutgoingMessage {
                conversation: place.conversation.clone(),
                inbox_id: Some(inbound.id.clone()),
                text: confirmation.prompt.clone(),
                kind: kind.outgoing_kind(&place.member_id),
                reply_to_event: None,
            });
            prompts.push(ShownPrompt {
                place,
                text: confirmation.prompt.clone(),
                kind,
                outbox_id: None,
                to_asking_member: false,
            });
        }
        let pending = self.pending.clone();
        async move {
            let ids = pending
                .suspend_fenced(&confirmation, &rows, fence.as_ref())
                .await?;
            if ids.len() != rows.len() {
                return Err(TurnError::BadTurnState(format!(
                    "{} prompts of confirmation {} stored as {} rows",
                    rows.len(),
                    confirmation.id,
                    ids.len()
                )));
            }
            let mut ids = ids.into_iter();
            for prompt in &mut prompts {
                if !prompt.to_asking_member || asking_is_a_row {
                    prompt.outbox_id = ids.next();
                }
            }
            Ok(Finished::Asked {
                confirmation,
                prompts,
            })
        }
        .boxed_local()
    }

    /// Hand each stored prompt of a suspended turn to its waiter or its channel.
    pub(super) fn show_prompts(&mut self, prompts: Vec<ShownPrompt>, ctx: &mut Context<Self>) {
        for prompt in prompts {
            if prompt.to_asking_member {
                self.deliver(
                    &prompt.place,
                    prompt.text,
                    prompt.kind,
                    prompt.outbox_id,
                    ctx,
                );
                continue;
            }
            // An approver's own chat: not the conversation of the turn (nor of any turn
            // of theirs running there), so nothing of a running turn's reply applies.
            let place = prompt.place;
            self.deliver_to_channel(
                place.conversation.channel(),
                DeliverReply {
                    inbox_id: place.id.clone(),
                    conversation: place.conversation.clone(),
                    member_id: place.member_id.clone(),
                    text: prompt.text,
                    kind: prompt.kind,
                    reply_to_event: None,
                    outbox_id: prompt.outbox_id,
                },
            );
        }
    }

    /// What the member who asked sees of `confirmation`: its prompt with the answers, or,
    /// when others approve it (an escalation) on a chat platform, that they were asked.
    /// Over HTTP the prompt is shown all the same (its id lets nobody but an approver answer).
    fn asking_member_sees(&self, confirmation: &PendingConfirmation) -> (String, ReplyKind) {
        if !confirmation.approvers.is_empty()
            && self
                .durable_channels
                .contains(confirmation.conversation.channel())
        {
            return (
                format!("{ASKED_A_PARENT}\n\n{}", confirmation.prompt),
                ReplyKind::Answer,
            );
        }
        (
            confirmation.prompt.clone(),
            ReplyKind::AskConfirmation {
                confirmation_id: confirmation.id.clone(),
                expires_at_ms: confirmation.expires_at_ms,
            },
        )
    }

    /// Each approver's own chats on the chat platforms, where an escalated confirmation is
    /// shown: as messages of `asked_for`'s turn, sent to the approver there.
    fn approvers_places(
        &self,
        asked_for: &Inbound,
        confirmation: &PendingConfirmation,
    ) -> Vec<Inbound> {
        let places: Vec<Inbound> = confirmation
            .approvers
            .iter()
            .flat_map(|approver| {
                self.own_chats
                    .of(approver)
                    .into_iter()
                    .filter(|chat| self.durable_channels.contains(chat.channel()))
                    .map(move |chat| Inbound {
                        conversation: chat,
                        member_id: approver.clone(),
                        platform_event_id: None,
                        extras: Default::default(),
                        ..asked_for.clone()
                    })
            })
            .collect();
        if places.is_empty() && !confirmation.approvers.is_empty() {
            tracing::warn!(confirmation = %confirmation.id,
                "no approver has a chat to be asked in; it can be answered over HTTP only");
        }
        places
    }
}
