//! `PendingActions` on PostgreSQL: table `pending_actions`, the confirmations a turn waits
//! for, and the inbox status `suspended` of the turn that asked (set, with its journal
//! cleared and its prompts queued, in the transaction that stores the confirmation).

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::outbox::insert_outgoing;
use super::{PostgresStore, conversation_from_row, database_error, id_column};
use crate::ids::{ConfirmationId, MemberId};
use crate::ports::{
    AnswerPlace, AnswerRefused, Decision, Fence, OpenConfirmation, OutgoingMessage, PendingActions,
    PendingConfirmation, StorageError, now_ms,
};

/// The columns of a confirmation, spelled once for every query that reads one.
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

fn json_column(row: &PgRow, column: &str) -> Result<serde_json::Value, StorageError> {
    let text: String = row.get(column);
    serde_json::from_str(&text)
        .map_err(|error| StorageError::Corrupt(format!("pending_actions.{column}: {error}")))
}

fn confirmation_from_row(row: &PgRow) -> Result<PendingConfirmation, StorageError> {
    Ok(PendingConfirmation {
        id: id_column(row, "pending_actions", "id")?,
        inbox_id: row.get("inbox_id"),
        member_id: id_column(row, "pending_actions", "member_id")?,
        conversation: conversation_from_row(row, "pending_actions")?,
        profile_id: row.get("profile_id"),
        tool_name: row.get("tool_name"),
        arguments: json_column(row, "arguments")?,
        prompt: row.get("prompt"),
        turn_state: json_column(row, "turn_state")?,
        expires_at_ms: row.get("expires_at_ms"),
        created_at_ms: row.get("created_at_ms"),
        approvers: serde_json::from_str(&row.get::<String, _>("approvers")).map_err(|error| {
            StorageError::Corrupt(format!("pending_actions.approvers: {error}"))
        })?,
    })
}

fn decision_from_row(row: &PgRow) -> Result<Option<Decision>, StorageError> {
    let decision: Option<String> = row.get("decision");
    decision.as_deref().map(Decision::parse).transpose()
}

impl PostgresStore {
    async fn confirmation_row(&self, id: &str) -> Result<Option<PgRow>, StorageError> {
        sqlx::query(select_confirmation!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)
    }
}

#[async_trait]
impl PendingActions for PostgresStore {
    async fn suspend_fenced(
        &self,
        confirmation: &PendingConfirmation,
        prompts: &[OutgoingMessage],
        fence: Option<&Fence>,
    ) -> Result<Vec<i64>, StorageError> {
        // The suspended turn, its question and the prompts asking it commit together.
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        super::coordination::hold_fence(&mut transaction, fence).await?;
        let suspended = sqlx::query(
            "UPDATE inbox SET status = 'suspended', updated_at_ms = $1 \
             WHERE id = $2 AND status IN ('accepted', 'suspended')",
        )
        .bind(now_ms())
        .bind(&confirmation.inbox_id)
        .execute(&mut *transaction)
        .await
        .map_err(database_error)?;
        if suspended.rows_affected() != 1 {
            return Err(StorageError::Corrupt(format!(
                "inbox message {:?} is unknown or already answered",
                confirmation.inbox_id
            )));
        }
        // The turn has ended here: it resumes from the confirmation, not its journal.
        super::turn_journal::clear(&mut transaction, &confirmation.inbox_id).await?;
        sqlx::query(
            "INSERT INTO pending_actions (id, inbox_id, member_id, channel, \
             conversation_id, profile_id, tool_name, arguments, prompt, turn_state, \
             expires_at_ms, created_at_ms, approvers) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
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
        .bind(serde_json::json!(confirmation.approvers).to_string())
        .execute(&mut *transaction)
        .await
        .map_err(database_error)?;
        let mut ids = Vec::with_capacity(prompts.len());
        for prompt in prompts {
            ids.push(insert_outgoing(&mut transaction, prompt).await?);
        }
        transaction.commit().await.map_err(database_error)?;
        Ok(ids)
    }

    async fn answer(
        &self,
        confirmation_id: &ConfirmationId,
        member_id: &MemberId,
        place: &AnswerPlace,
        approve: bool,
        now_ms: i64,
    ) -> Result<Result<PendingConfirmation, AnswerRefused>, StorageError> {
        // Asked elsewhere: as if it did not exist (its channel and conversation never change).
        match self.confirmation_row(confirmation_id.as_str()).await? {
            Some(row) if confirmation_from_row(&row)?.admits_place(place) => {}
            _ => return Ok(Err(AnswerRefused::Unknown)),
        }
        let decision = if approve {
            Decision::Approved
        } else {
            Decision::Denied
        };
        // One statement decides, so of two answers racing (from any worker) one wins.
        let answered = sqlx::query(concat!(
            "UPDATE pending_actions SET status = 'answered', decision = $1, ",
            "answered_at_ms = $2 WHERE id = $3 ",
            "AND ((jsonb_array_length(approvers::jsonb) = 0 AND member_id = $4) ",
            "OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(approvers::jsonb) ",
            "AS approver WHERE approver = $4)) ",
            "AND status = 'pending' AND expires_at_ms > $2 RETURNING ",
            columns!()
        ))
        .bind(decision.as_str())
        .bind(now_ms)
        .bind(confirmation_id.as_str())
        .bind(member_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        if let Some(row) = answered {
            return Ok(Ok(confirmation_from_row(&row)?));
        }
        let Some(row) = self.confirmation_row(confirmation_id.as_str()).await? else {
            return Ok(Err(AnswerRefused::Unknown));
        };
        let confirmation = confirmation_from_row(&row)?;
        let status: String = row.get("status");
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
        // Each expired row returned once: a worker expiring the same rows meanwhile
        // waits for this update, then finds them no longer pending.
        let rows = sqlx::query(concat!(
            "UPDATE pending_actions SET status = 'answered', decision = 'expired', ",
            "answered_at_ms = $1 WHERE status = 'pending' AND expires_at_ms <= $1 RETURNING ",
            columns!()
        ))
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
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
        let decision: Option<Option<String>> = sqlx::query_scalar(
            "UPDATE pending_actions SET status = 'consumed' \
             WHERE id = $1 AND status = 'answered' RETURNING decision",
        )
        .bind(confirmation_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        decision
            .flatten()
            .as_deref()
            .map(Decision::parse)
            .transpose()
    }

    async fn interrupted(&self) -> Result<Vec<PendingConfirmation>, StorageError> {
        let rows = sqlx::query(select_confirmation!(
            "WHERE status = 'consumed' \
             AND inbox_id IN (SELECT id FROM inbox WHERE status = 'suspended') \
             AND id = (SELECT latest.id FROM pending_actions AS latest \
                       WHERE latest.inbox_id = pending_actions.inbox_id \
                       ORDER BY latest.created_at_ms DESC, latest.id COLLATE \"C\" DESC \
                       LIMIT 1) \
             ORDER BY created_at_ms, id COLLATE \"C\""
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(confirmation_from_row).collect()
    }

    async fn waiting_for(
        &self,
        inbox_id: &str,
    ) -> Result<Option<PendingConfirmation>, StorageError> {
        let row = sqlx::query(select_confirmation!(
            "WHERE inbox_id = $1 AND status = 'pending' \
             ORDER BY created_at_ms DESC, id COLLATE \"C\" DESC LIMIT 1"
        ))
        .bind(inbox_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        row.as_ref().map(confirmation_from_row).transpose()
    }

    async fn open(&self) -> Result<Vec<OpenConfirmation>, StorageError> {
        let rows = sqlx::query(select_confirmation!(
            "WHERE status IN ('pending', 'answered') ORDER BY created_at_ms, id COLLATE \"C\""
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
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
