//! `PendingActions` on either SQL database: table `pending_actions`, the confirmations a
//! turn waits for, and the inbox status `suspended` of the turn that asked (set, with its
//! journal cleared and its prompts queued, in the transaction that stores the
//! confirmation).

use async_trait::async_trait;

use super::outbox::insert_each;
use super::{
    SqlBackend, SqlConnection, SqlRow, conversation_from_row, id_column, per_dialect, sql,
};
use crate::ids::{ConfirmationId, MemberId};
use crate::ports::{
    AnswerPlace, AnswerRefused, Decision, Fence, OpenConfirmation, OutgoingMessage, PendingActions,
    PendingConfirmation, StorageError, now_ms,
};

/// The columns of a confirmation, spelled once for every statement that reads one.
macro_rules! columns {
    () => {
        "id, inbox_id, member_id, channel, conversation_id, profile_id, tool_name, \
         arguments, prompt, turn_state, status, decision, expires_at_ms, created_at_ms, \
         approvers"
    };
}

macro_rules! select_confirmation {
    ($tail:literal) => {
        concat!("SELECT ", columns!(), " FROM pending_actions ", $tail)
    };
}

fn confirmation_from_row(row: &impl SqlRow) -> Result<PendingConfirmation, StorageError> {
    Ok(PendingConfirmation {
        id: id_column(row, "pending_actions", "id")?,
        inbox_id: row.text("inbox_id")?,
        member_id: id_column(row, "pending_actions", "member_id")?,
        conversation: conversation_from_row(row, "pending_actions")?,
        profile_id: row.text("profile_id")?,
        tool_name: row.text("tool_name")?,
        arguments: row.json("pending_actions", "arguments")?,
        prompt: row.text("prompt")?,
        turn_state: row.json("pending_actions", "turn_state")?,
        expires_at_ms: row.integer("expires_at_ms")?,
        created_at_ms: row.integer("created_at_ms")?,
        approvers: row.json("pending_actions", "approvers")?,
    })
}

fn decision_from_row(row: &impl SqlRow) -> Result<Option<Decision>, StorageError> {
    let decision = row.optional_text("decision")?;
    decision.as_deref().map(Decision::parse).transpose()
}

#[async_trait]
impl<B: SqlBackend> PendingActions for B {
    async fn suspend_fenced(
        &self,
        confirmation: &PendingConfirmation,
        prompts: &[OutgoingMessage],
        fence: Option<&Fence>,
    ) -> Result<Vec<i64>, StorageError> {
        let (confirmation, prompts) = (confirmation.clone(), prompts.to_vec());
        // The suspended turn, its question and the prompts asking it commit together.
        self.atomically_fenced(fence, move |connection| {
            Box::pin(async move {
                let suspend = sql("UPDATE inbox SET status = 'suspended', updated_at_ms = $1 \
                     WHERE id = $2 AND status IN ('accepted', 'suspended')");
                let suspend = suspend.bind(now_ms()).bind(&confirmation.inbox_id);
                if connection.execute(suspend).await? != 1 {
                    return Err(StorageError::Corrupt(format!(
                        "inbox message {:?} is unknown or already answered",
                        confirmation.inbox_id
                    )));
                }
                // The turn has ended here: it resumes from the confirmation, not its
                // journal.
                let forget = sql("DELETE FROM turn_journal WHERE inbox_id = $1");
                connection
                    .execute(forget.bind(&confirmation.inbox_id))
                    .await?;
                let insert = sql("INSERT INTO pending_actions (id, inbox_id, member_id, \
                     channel, conversation_id, profile_id, tool_name, arguments, prompt, \
                     turn_state, expires_at_ms, created_at_ms, approvers) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)")
                .bind(confirmation.id.as_str())
                .bind(&confirmation.inbox_id)
                .bind(confirmation.member_id.as_str())
                .bind(confirmation.conversation.channel())
                .bind(confirmation.conversation.conversation_id())
                .bind(&confirmation.profile_id)
                .bind(&confirmation.tool_name)
                .bind(confirmation.arguments.to_string())
                .bind(&confirmation.prompt)
                .bind(confirmation.turn_state.to_string())
                .bind(confirmation.expires_at_ms)
                .bind(confirmation.created_at_ms)
                .bind(serde_json::json!(confirmation.approvers).to_string());
                connection.execute(insert).await?;
                insert_each(connection, &prompts).await
            })
        })
        .await
    }

    async fn answer(
        &self,
        confirmation_id: &ConfirmationId,
        member_id: &MemberId,
        place: &AnswerPlace,
        approve: bool,
        now_ms: i64,
    ) -> Result<Result<PendingConfirmation, AnswerRefused>, StorageError> {
        let read = || sql(select_confirmation!("WHERE id = $1")).bind(confirmation_id.as_str());
        // Asked elsewhere: as if it did not exist (its channel and conversation never change).
        match self.read_optional(read()).await? {
            Some(row) if confirmation_from_row(&row)?.admits_place(place) => {}
            _ => return Ok(Err(AnswerRefused::Unknown)),
        }
        let decision = if approve {
            Decision::Approved
        } else {
            Decision::Denied
        };
        // One statement decides, so of two answers racing (from any worker) one wins.
        let answer = per_dialect!(B::DIALECT, |dialect| format!(
            "UPDATE pending_actions SET status = 'answered', decision = $1, \
             answered_at_ms = $2 WHERE id = $3 AND {} \
             AND status = 'pending' AND expires_at_ms > $2 RETURNING {}",
            dialect.may_answer("$4"),
            columns!()
        ));
        let answer = sql(answer)
            .bind(decision.as_str())
            .bind(now_ms)
            .bind(confirmation_id.as_str())
            .bind(member_id.as_str());
        if let Some(row) = self.write_optional(answer).await? {
            return Ok(Ok(confirmation_from_row(&row)?));
        }
        let Some(row) = self.read_optional(read()).await? else {
            return Ok(Err(AnswerRefused::Unknown));
        };
        let confirmation = confirmation_from_row(&row)?;
        let status = row.text("status")?;
        Ok(Err(if !confirmation.answerable_by(member_id) {
            AnswerRefused::NotYours
        } else if status == "pending" || decision_from_row(&row)? == Some(Decision::Expired) {
            // Still pending yet not answerable: its time has passed.
            AnswerRefused::Expired
        } else if status == "answered" {
            AnswerRefused::InProgress
        } else {
            AnswerRefused::AlreadyAnswered
        }))
    }

    async fn expire_due(&self, now_ms: i64) -> Result<Vec<PendingConfirmation>, StorageError> {
        // Each expired row returned once: a worker expiring the same rows meanwhile waits
        // for this update, then finds them no longer pending.
        let expire = sql(concat!(
            "UPDATE pending_actions SET status = 'answered', decision = 'expired', ",
            "answered_at_ms = $1 WHERE status = 'pending' AND expires_at_ms <= $1 RETURNING ",
            columns!()
        ));
        let rows = self.write(expire.bind(now_ms)).await?;
        let mut expired = rows
            .iter()
            .map(confirmation_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        expired.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(expired)
    }

    async fn consume(
        &self,
        confirmation_id: &ConfirmationId,
    ) -> Result<Option<Decision>, StorageError> {
        let consume = sql("UPDATE pending_actions SET status = 'consumed' \
             WHERE id = $1 AND status = 'answered' RETURNING decision");
        match self
            .write_optional(consume.bind(confirmation_id.as_str()))
            .await?
        {
            Some(row) => decision_from_row(&row),
            None => Ok(None),
        }
    }

    async fn interrupted(&self) -> Result<Vec<PendingConfirmation>, StorageError> {
        let interrupted = per_dialect!(B::DIALECT, |dialect| format!(
            "{} WHERE status = 'consumed' \
             AND inbox_id IN (SELECT id FROM inbox WHERE status = 'suspended') \
             AND id = (SELECT latest.id FROM pending_actions AS latest \
                       WHERE latest.inbox_id = pending_actions.inbox_id \
                       ORDER BY latest.created_at_ms DESC, latest.id{order} DESC LIMIT 1) \
             ORDER BY created_at_ms, id{order}",
            select_confirmation!(""),
            order = dialect.byte_order()
        ));
        let rows = self.read(sql(interrupted)).await?;
        rows.iter().map(confirmation_from_row).collect()
    }

    async fn waiting_for(
        &self,
        inbox_id: &str,
    ) -> Result<Option<PendingConfirmation>, StorageError> {
        let waiting = per_dialect!(B::DIALECT, |dialect| format!(
            "{} WHERE inbox_id = $1 AND status = 'pending' \
             ORDER BY created_at_ms DESC, id{} DESC LIMIT 1",
            select_confirmation!(""),
            dialect.byte_order()
        ));
        let row = self.read_optional(sql(waiting).bind(inbox_id)).await?;
        row.as_ref().map(confirmation_from_row).transpose()
    }

    async fn open(&self) -> Result<Vec<OpenConfirmation>, StorageError> {
        let open = per_dialect!(B::DIALECT, |dialect| format!(
            "{} WHERE status IN ('pending', 'answered') ORDER BY created_at_ms, id{}",
            select_confirmation!(""),
            dialect.byte_order()
        ));
        let rows = self.read(sql(open)).await?;
        rows.iter()
            .map(|row| {
                Ok(OpenConfirmation {
                    confirmation: confirmation_from_row(row)?,
                    decision: decision_from_row(row)?,
                })
            })
            .collect()
    }
}
